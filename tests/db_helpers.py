"""Helpers for tests that use a database server shared between tests (conftest's `pg_url`) or count what a
database holds."""

from __future__ import annotations

import hashlib

import sqlalchemy as sa


def drop_dlbench_tables(engine) -> None:
    """Downgrade a dlbench database to nothing (every table, Alembic's own too): a shared server left empty."""
    from alembic import command

    from dlbench.store import db

    with db.transaction(engine, write=True) as conn:
        command.downgrade(db._alembic_config(conn), "base")
        conn.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")


def table_counts(engine) -> dict[str, int]:
    """Rows in each of dlbench's tables."""
    with engine.connect() as conn:
        return {name: conn.execute(sa.text(f"SELECT count(*) FROM {name}")).scalar_one()
                for name in ("runs", "results", "step_times")}


def fingerprint(url: str) -> str:
    """A hash of every stored row of dlbench's tables (sorted), to tell that a command changed nothing; "" for a
    database that has no dlbench tables yet."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            names = set(sa.inspect(conn).get_table_names())
            digest = hashlib.sha256()
            for name in ("alembic_version", "runs", "results", "step_times"):
                if name not in names:
                    continue
                rows = sorted(repr(tuple(row)) for row in conn.execute(sa.text(f"SELECT * FROM {name}")))
                digest.update(f"{name}:{len(rows)}\n".encode())
                for row in rows:
                    digest.update(row.encode())
            return digest.hexdigest() if names else ""
    finally:
        engine.dispose()
