"""Alembic environment for the dlbench database (`dlbench results list` runs it when the store is opened).

dlbench runs migrations in code (`dlbench.store.db.migrate`): the caller passes an open connection, already
inside a transaction, in `config.attributes["connection"]`, so no alembic.ini is needed. For a developer
writing a new revision: `alembic -x url=sqlite:///tmp/dev.db revision --autogenerate -m "..."` with a
config whose `script_location` is this folder also works, since the URL can come from `-x url=...`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from dlbench.store.schema import metadata

config = context.config


def _run(connection: sa.Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=True,  # SQLite cannot ALTER most things; batch mode rebuilds tables instead
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            _run(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("dlbench migrations run online only (dlbench opens the store and migrates it)")
run_migrations_online()
