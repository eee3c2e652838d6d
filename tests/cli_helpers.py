"""Running `dlbench ARGS` in the test process through the real entry point (`dlbench.cli.app.main`)."""

from __future__ import annotations

from dlbench.cli.app import main


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """`dlbench ARGS` through the real entry point in this process: (exit code, stdout, stderr)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    captured = capsys.readouterr()
    return code, captured.out, captured.err
