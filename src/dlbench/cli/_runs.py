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


def load_run(ref: str, db: str | None = None) -> dict[str, Any]:
    """The result document a reference names (a JSON file, or a run in the store at `db`)."""
    return load_runs([ref], db)[0]


def load_runs(refs: list[str], db: str | None = None, *, folders: bool = False) -> list[dict[str, Any]]:
    """The documents the references name, in order: JSON files and runs in the store at `db`, which is opened at
    most once and always closed. With `folders`, a folder stands for the result files (*.json) in it."""
    from dlbench.schema.validate import load_document

    store = None
    docs: list[dict[str, Any]] = []
    try:
        for ref in refs:
            if not ref.strip():
                raise BadInput(f"an empty run reference was given{' (use . for the current folder)' if folders else ''}")
            path = Path(ref)
            if folders and path.is_dir():
                files = sorted(p for p in path.glob("*.json") if p.is_file())
                if not files:
                    raise BadInput(f"{ref}: no result files (*.json) in this folder")
                docs += [load_document(f) for f in files]
            elif is_path_ref(ref):
                if not path.is_file():
                    raise BadInput(f"{ref}: no such result file")
                docs.append(load_document(path))
            else:
                if store is None:
                    from dlbench.store import open_store

                    store = open_store(db)
                docs.append(store.get_run(ref))
        return docs
    finally:
        if store is not None:
            store.close()


def load_documents(refs: list[str], db: str | None, since: Any, gpu: str | None) -> tuple[list[dict], str]:
    """The documents the references name (run ids, JSON files, folders of JSON files), or every stored run
    (narrowed by `since` and `gpu` in the query); and where they came from, for messages."""
    if refs:
        return load_runs(refs, db, folders=True), "the runs given"
    from dlbench.store import open_store

    with open_store(db) as store:
        listed = store.list_runs(gpu=gpu, since=since)
        return store.get_runs([run["run_id"] for run in listed]), f"database {store.label}"


def select_runs(refs: list[str], db: str | None, since: str | None = None, hosts: list[str] | None = None,
                gpu: str | None = None) -> list[dict[str, Any]]:
    """The runs `dlbench fleet` and `dlbench report` work on: those the references name (every stored run when
    there are none), each once, narrowed by `--since`, `--host` globs and `--gpu`; BadInput when none is left."""
    from dlbench.analysis.fleet import select_documents
    from dlbench.cli._common import parse_since

    since_dt = parse_since(since)
    docs, where = load_documents(refs, db, since_dt, gpu)
    selected = select_documents(docs, since=since_dt, hosts=hosts or [], gpu=gpu)
    if not selected:
        filters = [f"--{name} {value}" for name, value in (("since", since), ("gpu", gpu)) if value]
        filters += [f"--host {h}" for h in hosts or []]
        raise BadInput(f"no runs match{' ' + ' '.join(filters) if filters else ''} (in {where})")
    return selected
