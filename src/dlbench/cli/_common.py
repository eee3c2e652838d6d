"""Helpers shared by the command modules: consoles, JSON output, common options."""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime, timedelta, timezone
from typing import Any

import typer

from dlbench.errors import BadInput

JSON_HELP = "Print machine-readable JSON on stdout instead of a table."
SINCE_HELP = ("Only runs created at or after this date or time (ISO 8601, UTC unless a zone is given), or this "
              "long ago: 30m, 12h, 7d, 2w.")
HOST_HELP = ("Only runs on a host whose name matches this glob (case-insensitive), e.g. 'node0*'; repeat the option "
             "for several.")
GPU_FILTER_HELP = "Only runs on a GPU whose name contains this text (case-insensitive), e.g. H100."
DB_HELP = "Database URL (any SQLAlchemy URL). Default: $DLBENCH_DB, else SQLite in the dlbench data directory."


def json_option() -> Any:
    """`--json` flag, same help everywhere."""
    return typer.Option(False, "--json", help=JSON_HELP)


def db_option() -> Any:
    """`--db URL` option, same help everywhere."""
    return typer.Option(None, "--db", help=DB_HELP, envvar="DLBENCH_DB", show_envvar=False)


def since_option() -> Any:
    """`--since WHEN` run filter (a date, a time or a duration; see `parse_since`), same help everywhere."""
    return typer.Option(None, "--since", metavar="WHEN", help=SINCE_HELP)


def host_option() -> Any:
    """`--host GLOB` run filter, repeatable, same help everywhere."""
    return typer.Option(None, "--host", metavar="GLOB", show_default=False, help=HOST_HELP)


def gpu_filter_option() -> Any:
    """`--gpu TEXT` run filter (part of the GPU name), same help everywhere."""
    return typer.Option(None, "--gpu", help=GPU_FILTER_HELP)


def console(stderr: bool = False):
    """A rich console (imported lazily: rich is only needed when something is printed).

    Without rich's automatic highlighting, which coloured stray numbers in prose ("1." of "1.94x", the "GPU"
    of "GPU(s)"); styles come from dlbench's own markup only."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def table_console(min_width: int = 200):
    """A console for wide tables: in a terminal its width; piped or redirected, at least `min_width` columns so
    tables are not squeezed into 80."""
    out = console()
    if not out.is_terminal:
        out.width = max(out.width, min_width)
    return out


def plain(text: str) -> str:
    """Text from a result document, safe to print on a terminal: newlines and tabs become spaces, other control
    characters (an escape sequence in a hostname or an error message) become U+FFFD instead of reaching it."""
    if text.isprintable():  # nearly always: a fleet's table has thousands of names and numbers to check
        return text
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


_DURATION_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*([mhdw])$", re.IGNORECASE)
_DURATION_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """`--since` value → aware datetime: a date or ISO 8601 time (without a zone it means UTC), or a duration
    back from `now` (default: the current time) such as `7d`, `12h`, `30m` or `2w`."""
    if text is None:
        return None
    raw = text.strip()
    duration = _DURATION_RE.match(raw)
    if duration and duration.group(2) == "M":  # 3M read as 3 minutes would quietly drop three months of runs
        raise BadInput(f"--since {text!r}: M could mean minutes or months; write {duration.group(1)}m for minutes, "
                       "or give a date such as 2026-01-31")
    if duration:
        amount, unit = float(duration.group(1)), _DURATION_UNITS[duration.group(2).lower()]
        try:
            return (now or datetime.now(timezone.utc)) - timedelta(**{unit: amount})
        except OverflowError:
            raise BadInput(f"--since {text!r}: that is before the year 1") from None
    value = raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise BadInput(f"--since {text!r}: expected a date such as 2026-01-31, a time such as 2026-01-31T14:00, "
                       "or a duration such as 7d, 12h or 30m") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
