"""Where dlbench keeps its files.

The data directory holds the SQLite database and the JSON result documents. It is the platform's user
data directory (platformdirs) unless `DLBENCH_HOME` points elsewhere; tests set `DLBENCH_HOME` to a temp dir.
The database URL is `DLBENCH_DB` when set, else SQLite in the data directory.
Nothing is created on import: callers ask for a directory and it is made then.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "dlbench"


def data_dir(create: bool = True) -> Path:
    """The data directory (created when `create`)."""
    env = os.environ.get("DLBENCH_HOME")
    if env:
        path = Path(env).expanduser()
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def results_dir(create: bool = True) -> Path:
    """Folder of JSON result documents, one file per run."""
    path = data_dir(create) / "results"
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def default_db_url() -> str:
    """`DLBENCH_DB` if set, else a SQLite file `dlbench.db` in the data directory."""
    env = os.environ.get("DLBENCH_DB")
    if env:
        return env
    return f"sqlite:///{data_dir() / 'dlbench.db'}"
