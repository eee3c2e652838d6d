"""Helpers shared by the command modules: consoles, JSON output, common options."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

JSON_HELP = "Print machine-readable JSON on stdout instead of a table."
DB_HELP = "Database URL (any SQLAlchemy URL). Default: $DLBENCH_DB, else SQLite in the dlbench data directory."


def json_option() -> Any:
    """`--json` flag, same help everywhere."""
    return typer.Option(False, "--json", help=JSON_HELP)


def db_option() -> Any:
    """`--db URL` option, same help everywhere."""
    return typer.Option(None, "--db", help=DB_HELP, envvar="DLBENCH_DB", show_envvar=False)


def console(stderr: bool = False):
    """A rich console (imported lazily: rich is only needed when something is printed)."""
    from rich.console import Console

    return Console(stderr=stderr)


def print_json(data: Any) -> None:
    """Write `data` as indented JSON to stdout (no colours, so it can be piped)."""
    json.dump(data, sys.stdout, indent=2, default=str, allow_nan=False)
    sys.stdout.write("\n")
