"""Stored results: `dlbench results list` shows what is here.

`open_store(url)` opens (and migrates) the results database; `documents` validates and loads result JSON.
Importing this package imports nothing heavy: SQLAlchemy and Alembic load when a store is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dlbench.store.runs import Store

__all__ = ["Store", "open_store"]


def open_store(url: str | None = None) -> Store:
    """Open the results database at `url` (None: `DLBENCH_DB`, else SQLite in the data directory), migrating
    its schema to the newest revision. Corrupt, foreign or newer databases raise `DataError`; they are never
    re-created."""
    from dlbench.store.runs import Store

    return Store.open(url)


def __getattr__(name: str):
    if name == "Store":
        from dlbench.store.runs import Store

        return Store
    raise AttributeError(name)
