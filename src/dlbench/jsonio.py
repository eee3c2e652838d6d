"""Reading and writing JSON files safely: atomic writes (temp file + rename), so an interrupted write never
leaves a half-written file where a good one was, and reads that fail with a clear `DataError`.

Files are indented for reading, except that a list of plain numbers (step times, telemetry readings) stays on
one line: indented one number a line, such lists made up most of a result document (an 8-GPU sweep's: 15 MB indented, 4 MB so).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
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
    fd, tmp = _create_temp(path)
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


def _create_temp(path: Path) -> tuple[int, str]:
    """A new temp file beside `path`, with the permissions `path` will have: those of the file it replaces, or
    the umask's for a new one (as `open(path, "w")` gives). `tempfile.mkstemp` would make it 0600, and the
    result documents, which are meant to be gathered from a shared folder, unreadable to anyone else."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mode = None
    while True:
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the kernel applies the umask
        except FileExistsError:
            continue
        if mode is not None:
            with contextlib.suppress(OSError):  # best effort: some mounts (CIFS, FUSE) refuse chmod
                os.fchmod(fd, mode)
        return fd, tmp


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
