"""The `dlbench` command: `dlbench --help` lists every command group.

Each command group lives in its own module under `dlbench.cli` and exposes `register(app)`; adding a group is
one line in `COMMAND_MODULES`. Command modules import heavy libraries (torch, matplotlib, SQLAlchemy) inside
their functions, so `dlbench --help`, `dlbench gpus` and `dlbench advise` never import torch.
"""

from __future__ import annotations

import importlib
import os
import sys
from functools import lru_cache

import typer

from dlbench import __version__
from dlbench.errors import BadInput

# Order is the order in `dlbench --help`.
COMMAND_MODULES: tuple[str, ...] = (
    "run",
    "results",
    "reference",
    "compare",
    "report",
    "gpus",
    "cost",
    "estimate",
    "advise",
    "fit",
    "comm",
    "doctor",
    "fleet",
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"dlbench {__version__}")
        raise typer.Exit()


@lru_cache(maxsize=1)
def get_app() -> typer.Typer:
    """Build the typer application with every command group registered."""
    app = typer.Typer(
        name="dlbench",
        help="Deep-learning GPU benchmark: measure training throughput, compare with published results, "
        "and choose a GPU.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode="rich",
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", help="Print the dlbench version and exit.", callback=_version_callback, is_eager=True
        ),
    ) -> None:
        """Deep-learning GPU benchmark: measure training throughput, compare with published results, and choose a GPU."""

    for name in COMMAND_MODULES:
        importlib.import_module(f"dlbench.cli.{name}").register(app)
    return app


def _is_click(exc: BaseException, name: str) -> bool:
    """`exc` is click's exception class `name` (typer >= 0.29 vendors its own click, older typer uses click)."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def _usage_error_line(exc: Exception) -> str:
    """A usage error (bad option value, unknown option, missing argument) as one line, like BadInput's."""
    ctx = getattr(exc, "ctx", None)
    hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
    message = " ".join(exc.format_message().split())
    return f"error: {message}{hint}"


def _is_text(arg: str) -> bool:
    """An argument that encodes as UTF-8: a database driver, a JSON file and the terminal all take it."""
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point. Unexpected errors print one line (a traceback with DLBENCH_DEBUG=1).

    Click's own errors (an option value that does not parse, an unknown option) are printed as one `error:`
    line too, exit 2, instead of typer's usage box: every bad input reads the same. So is an argument that is
    not UTF-8 (`dlbench results list --gpu $'\\xff'`), which no database, JSON file or terminal would take.
    """
    undecodable = next((a for a in (sys.argv[1:] if argv is None else argv) if not _is_text(a)), None)
    if undecodable is not None:  # bytes that are not UTF-8 (Python keeps them as lone surrogates)
        print(f"error: an argument is not valid UTF-8 text: {undecodable.encode('utf-8', 'backslashreplace').decode()} "
              "(dlbench stores and compares text as UTF-8)", file=sys.stderr)
        sys.exit(2)
    try:
        code = get_app()(args=argv, prog_name="dlbench", standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)  # typer.Exit(n) comes back as n
    except SystemExit:
        raise
    except BadInput as exc:  # typer >= 0.29 vendors click, so its handler does not catch click exceptions
        exc.show()
        sys.exit(exc.exit_code)
    except Exception as exc:  # noqa: BLE001 - last line of defence: never a traceback for users
        if _is_click(exc, "NoArgsIsHelpError"):  # typer has printed the help already
            sys.exit(exc.exit_code)
        if _is_click(exc, "ClickException"):
            print(_usage_error_line(exc) if _is_click(exc, "UsageError") else f"error: {exc.format_message()}",
                  file=sys.stderr)
            sys.exit(exc.exit_code)
        if _is_click(exc, "Abort"):  # Ctrl-C or end of input at a prompt
            print("Aborted.", file=sys.stderr)
            sys.exit(1)
        if os.environ.get("DLBENCH_DEBUG"):
            raise
        if isinstance(exc, OSError) and exc.errno is not None:  # the system said no (disk full, permissions)
            where = f": {exc.filename}" if exc.filename else ""
            print(f"error: {exc.strerror or exc}{where}", file=sys.stderr)
            sys.exit(1)
        print(f"dlbench: internal error: {type(exc).__name__}: {exc} (set DLBENCH_DEBUG=1 for a traceback)",
              file=sys.stderr)
        sys.exit(1)
