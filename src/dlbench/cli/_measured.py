"""Your stored runs as calibration points for `dlbench estimate` and `dlbench advise`, and as measured figures
beside `dlbench fit`'s estimate (no torch).

The database is opened only when it exists (or `--db`/`DLBENCH_DB` names one): estimating never creates one.
"""

from __future__ import annotations

import os

import typer

RUNS_HELP = ("Use your stored runs (the results database) as measured figures and to calibrate the model "
             "(default); --no-runs uses published results only.")


def runs_option():
    """`--runs/--no-runs`, same help in both commands."""
    return typer.Option(True, "--runs/--no-runs", help=RUNS_HELP)


def existing_db_url(url: str | None) -> str | None:
    """`url`, else `DLBENCH_DB`, else the default SQLite file if it exists; None when there is none to read."""
    from dlbench import paths

    if url is not None or os.environ.get("DLBENCH_DB"):
        return url or os.environ["DLBENCH_DB"]
    db_file = paths.data_dir(create=False) / "dlbench.db"  # estimating creates no folder either
    return f"sqlite:///{db_file}" if db_file.exists() else None


def stored_documents(url: str | None, workload: str) -> list[dict]:
    """The stored documents with a result of `workload` (exact name), from the store at `url` (None: the default
    database, if it exists; nothing is created)."""
    url = existing_db_url(url)
    if url is None:
        return []
    from dlbench.store import open_store

    store = open_store(url)
    try:
        ids = [run["run_id"] for run in store.list_runs(workload=workload) if workload in run["workloads"]]
        return store.get_runs(ids)
    finally:
        store.close()


def load_points(url: str | None, use_runs: bool) -> list:
    """Measured points from the store at `url` (None: the default database, if it exists)."""
    if not use_runs:
        return []
    url = existing_db_url(url)
    if url is None:
        return []
    from dlbench.analysis.estimate import points_from_rows
    from dlbench.store import open_store

    store = open_store(url)
    try:
        return points_from_rows(store.export_rows())
    finally:
        store.close()
