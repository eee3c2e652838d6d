"""Errors that end a command with a clear one-line message instead of a traceback.

`BadInput` is the user's mistake (unknown workload, malformed file, impossible option): exit code 2.
Any module may raise it; `dlbench.cli.app.main` prints it as one line and exits with its code. It is a plain
exception, not a click one: typer >= 0.29 vendors its own click, so click's exception classes would not be
caught by it, and older typer releases (as on the GPU machines) use the real click.
"""

from __future__ import annotations

import sys


class BadInput(Exception):
    """Invalid input from the user: printed as `error: <message>` on stderr, exit code 2."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def format_message(self) -> str:
        return self.message

    def show(self, file=None) -> None:
        print(f"error: {self.message}", file=file or sys.stderr)


class DataError(BadInput):
    """A stored or supplied file cannot be read (corrupt database, malformed JSON): exit code 2.

    Raised instead of silently recreating or skipping anything, so that no stored data is lost.
    """
