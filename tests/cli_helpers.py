"""Running `dlbench ARGS` in the test process through the real entry point (`dlbench.cli.app.main`), and the
helpers CLI tests share: a document stored or written for a command to read, a terminal of a given width."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from dlbench.cli.app import main


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """`dlbench ARGS` through the real entry point in this process: (exit code, stdout, stderr)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# rich's colour and cursor codes: what is left is the text a user reads in the terminal.
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def show_in_terminal(capsys, monkeypatch, width: int, *args: str) -> str:
    """`dlbench results show ARGS` as a terminal of `width` columns prints it, colour codes removed."""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich treats stdout as a terminal of COLUMNS columns
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = cli(capsys, "results", "show", *args)
    assert code == 0, err
    return ANSI.sub("", out)


def store_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """Save `doc` in this test's database (conftest gives each test its own) and return it."""
    from dlbench.store import open_store

    with open_store() as store:
        store.save_run(doc)
    return doc


def write_doc(tmp_path: Path, name: str, doc: dict[str, Any]) -> str:
    """Write `doc` as JSON to `tmp_path/name`; its path, as a command-line argument."""
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)
