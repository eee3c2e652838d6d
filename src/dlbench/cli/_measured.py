"""Your stored runs as calibration points for `dlbench estimate` and `dlbench advise` (no torch).

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


def load_points(url: str | None, use_runs: bool) -> list:
    """Measured points from the store at `url` (None: the default database, if it exists)."""
    if not use_runs:
        return []
    from dlbench import paths

    if url is None and not os.environ.get("DLBENCH_DB"):
        db_file = paths.data_dir(create=False) / "dlbench.db"  # estimating creates no folder either
        if not db_file.exists():
            return []
        url = f"sqlite:///{db_file}"
    from dlbench.analysis.estimate import points_from_rows
    from dlbench.store import open_store

    store = open_store(url)
    try:
        return points_from_rows(store.export_rows())
    finally:
        store.close()
