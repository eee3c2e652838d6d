"""Timestamps as dlbench writes and reads them: `parse_created_at("2026-11-26T02:40:00Z")`.

A leaf (standard library only): the store validates a document's `created_at` with it, and analysis (`fleet`)
and the CLI order and filter runs by it, without either importing the other.
"""

from __future__ import annotations

from datetime import datetime, timezone


def parse_created_at(value: str) -> datetime:
    """ISO 8601 timestamp → aware UTC datetime (a timestamp without zone is taken as UTC)."""
    text = value.strip()
    if text.endswith(("Z", "z")):  # Python 3.10's fromisoformat does not accept "Z"
        text = text[:-1] + "+00:00"
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)
