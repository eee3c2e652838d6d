"""The CLI skeleton: help for every command, exit codes, no torch on import."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from dlbench.cli.app import get_app


def _walk(command, path=()):
    import click

    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _walk(sub, (*path, name))


def test_every_command_and_option_has_help():
    import typer.main

    root = typer.main.get_command(get_app())
    missing = []
    for path, command in _walk(root):
        if path and not (command.help or command.short_help):
            missing.append(" ".join(path))
        for param in command.params:
            if param.param_type_name == "option" and not getattr(param, "help", None):
                missing.append(f"{' '.join(path)} {param.opts[0]}")
    assert not missing, f"commands/options without help text: {missing}"


def test_version():
    result = CliRunner().invoke(get_app(), ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("dlbench ")


def test_help_does_not_import_torch():
    code = "import sys\nfrom dlbench.cli.app import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\nassert 'torch' not in sys.modules, 'torch imported by --help'\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout


def test_unknown_command_exits_2():
    proc = subprocess.run([sys.executable, "-m", "dlbench", "no-such-command"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
