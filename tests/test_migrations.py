"""Database migrations: from an empty database and from every earlier revision to the newest, the schema the
migrations build is exactly `dlbench.store.schema` (Alembic's autogenerate comparison finds no difference).

Run: `PYTHONPATH=src python -m pytest -q tests/test_migrations.py`.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

import store_docs
from dlbench.errors import DataError
from dlbench.schema import SCHEMA_VERSION, upgrade
from dlbench.store import db, open_store
from dlbench.store.schema import HEAD_REVISION, metadata


def _revisions() -> list[str]:
    """Every revision, oldest first."""
    return [rev.revision for rev in reversed(list(db.script_directory().walk_revisions()))]


def _schema_differences(url: str) -> list:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return compare_metadata(MigrationContext.configure(conn), metadata)
    finally:
        engine.dispose()


def _current(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return set(MigrationContext.configure(conn).get_current_heads())
    finally:
        engine.dispose()


def _upgrade_to(url: str, revision: str) -> None:
    engine, label = db.connect(url)
    try:
        with db.transaction(engine, write=True) as conn:
            command.upgrade(db._alembic_config(conn), revision)
    finally:
        engine.dispose()


def test_revisions_form_one_line():
    script = db.script_directory()
    assert len(script.get_heads()) == 1, "migrations have branched: merge the heads"
    assert _revisions(), "no migrations found (is the migrations folder packaged?)"
    assert script.get_heads() == [HEAD_REVISION], "update schema.HEAD_REVISION with the new migration"


def test_empty_database_is_migrated_to_the_schema_on_open(tmp_path):
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    with open_store(url):
        pass
    assert _current(url) == set(db.script_directory().get_heads())
    assert _schema_differences(url) == []
    with sqlite3.connect(tmp_path / "empty.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize("revision", _revisions())
def test_upgrade_from_every_earlier_revision_keeps_data(tmp_path, revision):
    """Stop at `revision`, store a run if the runs table exists there, then open the store (migrating to
    head): the schema matches and the run reads back."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _upgrade_to(url, revision)
    assert _current(url) == {revision}
    heads = set(db.script_directory().get_heads())
    doc = store_docs.document()
    if revision in heads:
        with open_store(url) as store:
            store.save_run(doc)
    with open_store(url) as store:
        if revision in heads:
            assert store.get_run(doc["run_id"]) == upgrade(doc)
    assert _current(url) == heads
    assert _schema_differences(url) == []


def test_downgrade_to_base_and_back(tmp_path):
    url = f"sqlite:///{tmp_path / 'down.db'}"
    with open_store(url):
        pass
    _upgrade_to(url, "head")
    engine, _ = db.connect(url)
    try:
        with db.transaction(engine, write=True) as conn:
            command.downgrade(db._alembic_config(conn), "base")
        with engine.connect() as conn:
            assert set(sa.inspect(conn).get_table_names()) <= {"alembic_version"}
    finally:
        engine.dispose()
    with open_store(url):
        pass
    assert _schema_differences(url) == []


def test_reopening_is_a_no_op_that_keeps_data(tmp_path):
    url = f"sqlite:///{tmp_path / 'again.db'}"
    doc = store_docs.document()
    with open_store(url) as store:
        store.save_run(doc)
    with open_store(url) as store:
        assert store.get_run("latest") == upgrade(doc)


def test_database_from_a_newer_dlbench_is_refused(tmp_path):
    path = tmp_path / "newer.db"
    url = f"sqlite:///{path}"
    with open_store(url):
        pass
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    with pytest.raises(DataError) as err:
        open_store(url)
    message = err.value.format_message()
    assert str(path) in message and "9999_from_the_future" in message and "newer dlbench" in message


def test_0002_fills_peak_reserved_bytes_from_stored_documents_and_keeps_step_times(tmp_path):
    """A run stored at revision 0001 whose document already carried `peak_reserved_bytes` (imported by a
    dlbench without the column) gains it in the new column; its step times survive the migration."""
    from datetime import datetime, timezone

    from dlbench.store import rows

    url = f"sqlite:///{tmp_path / 'v1.db'}"
    _upgrade_to(url, "0001")
    doc = store_docs.document()
    doc["results"][0]["peak_reserved_bytes"] = 40_000_000_000
    engine, _ = db.connect(url)
    try:
        with db.transaction(engine, write=True) as conn:
            old = sa.MetaData()
            runs_t, results_t, steps_t = (sa.Table(name, old, autoload_with=conn)
                                          for name in ("runs", "results", "step_times"))
            assert "peak_reserved_bytes" not in results_t.c
            run_row = rows.run_row(doc, datetime.now(timezone.utc))
            conn.execute(runs_t.insert().values({k: v for k, v in run_row.items() if k in runs_t.c}))
            for index, result in enumerate(doc["results"]):
                row = rows.result_row(doc["run_id"], index, result)
                del row["peak_reserved_bytes"]
                row = {k: v for k, v in row.items() if k in results_t.c}  # columns of later revisions too
                result_id = conn.execute(results_t.insert().values(row)).inserted_primary_key[0]
                step_rows = rows.step_time_rows(result_id, result)
                if step_rows:
                    conn.execute(steps_t.insert(), step_rows)
            stored_steps = conn.execute(sa.select(sa.func.count()).select_from(steps_t)).scalar_one()
    finally:
        engine.dispose()
    assert stored_steps > 0
    with open_store(url) as store:
        assert store.get_run(doc["run_id"]) == upgrade(doc)
        exported = store.export_rows()
    assert [r["peak_reserved_bytes"] for r in exported] == [40_000_000_000, None, None]
    with sqlite3.connect(tmp_path / "v1.db") as conn:
        assert conn.execute("SELECT count(*) FROM step_times").fetchone()[0] == stored_steps
    assert _current(url) == {HEAD_REVISION} and _schema_differences(url) == []


V1_DIR = Path(__file__).parent / "data" / "v1"


def _downgrade_to(url: str, revision: str) -> None:
    engine, _ = db.connect(url)
    try:
        with db.transaction(engine, write=True) as conn:
            command.downgrade(db._alembic_config(conn), revision)
    finally:
        engine.dispose()


def _result_rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT run_id, result_index, status, samples_per_s FROM results "
                            "ORDER BY run_id, result_index").fetchall()


def test_0003_on_a_real_version_1_database_up_and_down(tmp_path):
    """The database today's dlbench wrote before schema 2 (tests/data/v1): opening it migrates it to the head;
    every result is a training result whose headline metric is its throughput; nothing is lost; down to 0002
    drops the new columns and keeps the rest; up again fills them the same way."""
    path = tmp_path / "results.sqlite"
    shutil.copyfile(V1_DIR / "results.sqlite", path)
    url = f"sqlite:///{path}"
    assert _current(url) == {"0002"}
    before = _result_rows(path)
    with sqlite3.connect(path) as conn:
        steps = conn.execute("SELECT count(*) FROM step_times").fetchone()[0]
    assert len(before) == 8 and steps > 0

    with open_store(url) as store:
        assert _current(url) == {HEAD_REVISION} and _schema_differences(url) == []
        run_ids = [run["run_id"] for run in store.list_runs()]
        assert len(run_ids) == 3
        for run_id in run_ids:
            doc = store.get_run(run_id)  # stored as version 1, read as the current version
            assert doc["schema_version"] == SCHEMA_VERSION
            assert all(r["scenario"] == "train" and r["primary_metric"] == "samples_per_s" for r in doc["results"])
    with sqlite3.connect(path) as conn:
        migrated = conn.execute("SELECT scenario, primary_metric, primary_value, primary_unit, samples_per_s, status "
                                "FROM results ORDER BY run_id, result_index").fetchall()
        assert conn.execute("SELECT count(*) FROM step_times").fetchone()[0] == steps
    assert {row[:2] for row in migrated} == {("train", "samples_per_s")}
    for _, _, value, unit, samples_per_s, status in migrated:
        assert value == samples_per_s
        assert (unit == "samples/s") if status == "ok" else (value is None and unit is None)
    assert {row[5] for row in migrated} == {"ok", "oom", "error", "timeout"}
    assert _result_rows(path) == before

    _downgrade_to(url, "0002")
    assert _current(url) == {"0002"}
    with sqlite3.connect(path) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(results)")}
        assert conn.execute("SELECT count(*) FROM step_times").fetchone()[0] == steps
    assert not columns & {"scenario", "primary_metric", "primary_value", "primary_unit"}
    assert _result_rows(path) == before

    _upgrade_to(url, "head")
    with sqlite3.connect(path) as conn:
        again = conn.execute("SELECT scenario, primary_metric, primary_value, primary_unit, samples_per_s, status "
                             "FROM results ORDER BY run_id, result_index").fetchall()
    assert again == migrated and _schema_differences(url) == []


def test_rows_written_by_this_dlbench_match_what_0003_fills_in(tmp_path):
    """A version-1 run saved now and the same run migrated from revision 0002 have the same new columns."""
    doc = store_docs.document()
    fresh_url = f"sqlite:///{tmp_path / 'fresh.db'}"
    with open_store(fresh_url) as store:
        store.save_run(doc)
    fresh = _columns_0003(tmp_path / "fresh.db")

    path = tmp_path / "old.db"
    shutil.copyfile(tmp_path / "fresh.db", path)
    old_url = f"sqlite:///{path}"
    _downgrade_to(old_url, "0002")
    _upgrade_to(old_url, "head")
    assert _columns_0003(path) == fresh
    assert [row[0] for row in fresh] == ["train"] * 3 and fresh[2][2] is None  # the third result is an oom


def _columns_0003(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT scenario, primary_metric, primary_value, primary_unit FROM results "
                            "ORDER BY result_index").fetchall()
