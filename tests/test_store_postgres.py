"""The store on a real PostgreSQL server: the same SQL and migrations as on SQLite.

The server is the one `DLBENCH_TEST_POSTGRES_URL` names (an empty scratch database), e.g.
`DLBENCH_TEST_POSTGRES_URL=postgresql+psycopg://dlbench@/dlbench_test?host=/tmp/pgsock&port=54329
PYTHONPATH=src python -m pytest -q tests/test_store_postgres.py`; without it, a throwaway PostgreSQL started by
`pgserver` (a test extra on x86_64 Linux and macOS: PostgreSQL binaries in a wheel) in a temporary folder; skipped
when neither is there or the psycopg driver is missing (the `pg_url` fixture, in conftest.py). The test drops
dlbench's tables again at the end.
"""

from __future__ import annotations

import copy
import json

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

import store_docs
from db_helpers import drop_dlbench_tables
from dlbench.errors import BadInput
from dlbench.schema import upgrade
from dlbench.store import db, open_store
from dlbench.store.schema import metadata


@pytest.fixture
def pg_store(pg_url):
    store = open_store(pg_url)
    try:
        yield store
    finally:
        drop_dlbench_tables(store.engine)
        store.close()


def test_postgres_schema_and_roundtrip(pg_store, tmp_path):
    with pg_store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
    a = store_docs.document(run_id="abc1" + "0" * 28, created_at="2026-01-01T00:00:00Z",
                            env=store_docs.environment("NVIDIA A100-SXM4-80GB"))
    b = store_docs.document(run_id="abc2" + "0" * 28, created_at="2026-02-01T00:00:00Z")
    expected = upgrade(copy.deepcopy(a))  # stored at the current schema version
    pg_store.save_run(a)
    pg_store.save_run(a)
    pg_store.save_run(b)
    assert pg_store.get_run("abc1") == expected
    assert pg_store.resolve("latest") == b["run_id"]
    with pytest.raises(BadInput, match="ambiguous"):
        pg_store.resolve("abc")
    assert [r["run_id"] for r in pg_store.list_runs(gpu="a100")] == [a["run_id"]]
    assert [r["run_id"] for r in pg_store.list_runs(workload="bert-base")] == [b["run_id"], a["run_id"]]
    rows = pg_store.export_rows()
    assert len(rows) == 6 and rows[0]["samples_per_s"] == a["results"][0]["samples_per_s"]
    assert [(r["scenario"], r["primary_metric"], r["primary_value"], r["primary_unit"]) for r in rows[:3]] == [
        ("train", "samples_per_s", x["samples_per_s"], "samples/s" if x["status"] == "ok" else None)
        for x in a["results"]]
    c = store_docs.document()
    (tmp_path / "c.json").write_text(json.dumps(c))
    assert pg_store.import_paths([tmp_path])["imported"] == 1
    assert pg_store.import_paths([tmp_path])["skipped"] == 1
    pg_store.delete_run(a["run_id"])
    with pg_store.engine.connect() as conn:
        left = conn.execute(sa.text("SELECT count(*) FROM step_times")).scalar_one()
    steps = sum(len(r["warmup_step_times_s"]) + sum(len(x["step_times_s"]) for x in r["repeats"])
                for doc in (b, c) for r in doc["results"])
    assert left == steps


def test_postgres_0003_fills_the_new_columns_from_revision_0002(pg_store):
    """Down to 0002 with a run stored, then up again: 0003 fills scenario and the headline metric on PostgreSQL
    as on SQLite, and the step times stay."""
    doc = store_docs.document(run_id="def1" + "0" * 28)
    pg_store.save_run(doc)
    with pg_store.engine.connect() as conn:
        steps = conn.execute(sa.text("SELECT count(*) FROM step_times")).scalar_one()
    for target in ("0002", "head"):
        with db.transaction(pg_store.engine, write=True) as conn:
            (command.downgrade if target == "0002" else command.upgrade)(db._alembic_config(conn), target)
    with pg_store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
        filled = conn.execute(sa.text(
            "SELECT scenario, primary_metric, primary_value, primary_unit FROM results WHERE run_id = :r "
            "ORDER BY result_index"), {"r": doc["run_id"]}).all()
        assert conn.execute(sa.text("SELECT count(*) FROM step_times")).scalar_one() == steps
    assert [tuple(row) for row in filled] == [
        ("train", "samples_per_s", x["samples_per_s"], "samples/s" if x["status"] == "ok" else None)
        for x in doc["results"]]
    pg_store.delete_run(doc["run_id"])
