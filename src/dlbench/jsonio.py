"""Reading and writing JSON files safely: atomic writes (temp file + rename), so an interrupted write never
leaves a half-written file where a good one was, and reads that fail with a clear `DataError`.

Files are indented for reading, except that a list of plain numbers (step times, telemetry readings) stays on
one line: indented one number a line, such lists made up most of a result document (an 8-GPU sweep's: 15 MB indented, 4 MB so).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from dlbench.errors import DataError

# A list whose items are all numbers, null or booleans, as `json.dumps(indent=...)` writes it: one item a line.
# A JSON string cannot hold a raw newline, so "[" followed by a newline is always the start of a list.
_SCALAR_LIST = re.compile(r"\[\n(?:[ ]*(?:-?[0-9][0-9.eE+-]*|null|true|false),?\n)+[ ]*\]")


def dumps(data: Any) -> str:
    """`data` as indented JSON, with lists of numbers on one line (`[0.101, 0.099, 0.1]`)."""
    return _SCALAR_LIST.sub(_one_line, json.dumps(data, indent=2, allow_nan=False, default=str))


def _one_line(match: re.Match) -> str:
    return "[" + ", ".join(item.rstrip(",") for item in match.group(0)[1:-1].split()) + "]"


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> Path:
    """Write `data` as indented JSON (`dumps`) to `path` atomically; returns the path."""
    text = dumps(data)  # before touching the disk: data that cannot be written leaves the old file as it was
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
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
