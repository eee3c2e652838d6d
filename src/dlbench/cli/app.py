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
    "comm",
    "doctor",
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


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point. Unexpected errors print one line (a traceback with DLBENCH_DEBUG=1)."""
    try:
        get_app()(args=argv, prog_name="dlbench")
    except SystemExit:
        raise
    except BadInput as exc:  # typer >= 0.29 vendors click, so its handler does not catch click exceptions
        exc.show()
        sys.exit(exc.exit_code)
    except Exception as exc:  # noqa: BLE001 - last line of defence: never a traceback for users
        if os.environ.get("DLBENCH_DEBUG"):
            raise
        print(f"dlbench: internal error: {type(exc).__name__}: {exc} (set DLBENCH_DEBUG=1 for a traceback)",
              file=sys.stderr)
        sys.exit(1)
