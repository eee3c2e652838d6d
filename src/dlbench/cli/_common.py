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
    """A rich console (imported lazily: rich is only needed when something is printed).

    Without rich's automatic highlighting, which coloured stray numbers in prose ("1." of "1.94x", the "GPU"
    of "GPU(s)"); styles come from dlbench's own markup only."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def plain(text: str) -> str:
    """Text from a result document, safe to print on a terminal: newlines and tabs become spaces, other control
    characters (an escape sequence in a hostname or an error message) become U+FFFD instead of reaching it."""
    return "".join(c if c.isprintable() else " " if c in "\n\r\t" else "\ufffd" for c in text)


def plain_tree(data: Any) -> Any:
    """`plain` applied to every string in nested lists and dicts (keys too)."""
    if isinstance(data, str):
        return plain(data)
    if isinstance(data, dict):
        return {plain_tree(k): plain_tree(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [plain_tree(v) for v in data]
    return data


def print_json(data: Any) -> None:
    """Write `data` as indented JSON to stdout (no colours, so it can be piped)."""
    json.dump(data, sys.stdout, indent=2, default=str, allow_nan=False)
    sys.stdout.write("\n")
