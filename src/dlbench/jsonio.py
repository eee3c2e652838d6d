"""Reading and writing JSON files safely: atomic writes (temp file + rename), so an interrupted write never
leaves a half-written file where a good one was, and reads that fail with a clear `DataError`."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from dlbench.errors import DataError


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> Path:
    """Write `data` as indented JSON to `path` atomically; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, allow_nan=False, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file; a missing or malformed file raises `DataError` naming the file."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from None
