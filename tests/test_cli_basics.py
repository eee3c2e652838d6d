"""The CLI skeleton: help for every command, exit codes, no torch on import."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from dlbench.cli.app import get_app


def _walk(command, path=()):
    # typer >= 0.29 vendors click, so check for sub-commands by attribute rather than by click's Group class
    yield path, command
    if hasattr(command, "commands"):
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


def test_walk_sees_every_registered_group():
    import typer.main

    root = typer.main.get_command(get_app())
    names = {path[0] for path, _ in _walk(root) if path}
    assert {"run", "results", "gpus", "report"} <= names or len(names) == len(root.commands)


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


def test_bad_input_is_one_line_and_exit_2(capsys):
    import pytest

    from dlbench.cli import app as app_module
    from dlbench.errors import BadInput

    def boom():
        raise BadInput("unknown thing 'x'")

    original = app_module.get_app
    try:
        app_module.get_app = lambda: (lambda **_: boom())
        with pytest.raises(SystemExit) as exc:
            app_module.main(["anything"])
    finally:
        app_module.get_app = original
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == "error: unknown thing 'x'"
