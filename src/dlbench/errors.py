"""Errors that end a command with a clear one-line message instead of a traceback.

`BadInput` is the user's mistake (unknown workload, malformed file, impossible option): exit code 2.
It subclasses click's exception so that typer prints it and exits with its code; modules outside the CLI
may raise it too, since click ships with typer and costs nothing to import.
"""

from __future__ import annotations

import click


class BadInput(click.ClickException):
    """Invalid input from the user: printed as `error: <message>` on stderr, exit code 2."""

    exit_code = 2

    def show(self, file=None) -> None:  # noqa: D102 - click API
        click.echo(f"error: {self.format_message()}", err=True, file=file)


class DataError(BadInput):
    """A stored or supplied file cannot be read (corrupt database, malformed JSON): exit code 2.

    Raised instead of silently recreating or skipping anything, so that no stored data is lost.
    """
