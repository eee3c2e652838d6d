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
        _make(path)
    return path


def _make(path: Path) -> None:
    """mkdir -p, or a one-line DataError naming the folder (a read-only home, a typo in DLBENCH_HOME)."""
    from dlbench.errors import DataError

    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"{path}: cannot create the dlbench data folder ({exc.strerror}); set DLBENCH_HOME "
                        "to a writable folder") from None


def results_dir(create: bool = True) -> Path:
    """Folder of JSON result documents, one file per run."""
    path = data_dir(create) / "results"
    if create:
        _make(path)
    return path


def default_db_url() -> str:
    """`DLBENCH_DB` if set, else a SQLite file `dlbench.db` in the data directory."""
    env = os.environ.get("DLBENCH_DB")
    if env:
        return env
    return f"sqlite:///{data_dir() / 'dlbench.db'}"
