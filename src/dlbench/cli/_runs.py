"""Turning the run references a user types into result documents: `dlbench compare latest abc123`.

A reference is either a path to a JSON result document (validated and upgraded like an import) or a run id
in the store: full id, unique prefix, or `latest` (the store resolves it and lists candidates when ambiguous).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.errors import BadInput


def is_path_ref(ref: str) -> bool:
    """A reference names a file when it exists as one or looks like a JSON file name."""
    return Path(ref).is_file() or ref.endswith(".json")


def load_run(ref: str, db: str | None = None, store: Any = None) -> dict[str, Any]:
    """The result document a reference names (a JSON file, or a run in the store at `db`)."""
    if is_path_ref(ref):
        path = Path(ref)
        if not path.is_file():
            raise BadInput(f"{ref}: no such result file")
        from dlbench.store.documents import load_document

        return load_document(path)
    if store is None:
        from dlbench.store import open_store

        store = open_store(db)
    return store.get_run(ref)


def load_runs(refs: list[str], db: str | None = None) -> list[dict[str, Any]]:
    """Documents for several references, opening the store at most once."""
    store = None
    docs = []
    for ref in refs:
        if not is_path_ref(ref) and store is None:
            from dlbench.store import open_store

            store = open_store(db)
        docs.append(load_run(ref, db, store))
    return docs
