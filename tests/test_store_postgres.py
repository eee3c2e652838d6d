"""The store on a real PostgreSQL server: the same SQL and migrations as on SQLite.

Skipped unless `DLBENCH_TEST_POSTGRES_URL` names an empty scratch database, e.g.
`DLBENCH_TEST_POSTGRES_URL=postgresql+psycopg://dlbench@/dlbench_test?host=/tmp/pgsock&port=54329
PYTHONPATH=src python -m pytest -q tests/test_store_postgres.py` (needs the psycopg driver). The test drops
dlbench's tables again at the end.
"""

from __future__ import annotations

import copy
import json
import os

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

import store_docs
from dlbench.errors import BadInput
from dlbench.store import db, open_store
from dlbench.store.schema import metadata

URL = os.environ.get("DLBENCH_TEST_POSTGRES_URL")
pytestmark = pytest.mark.skipif(not URL, reason="DLBENCH_TEST_POSTGRES_URL not set")


@pytest.fixture
def pg_store():
    store = open_store(URL)
    try:
        yield store
    finally:
        with db.transaction(store.engine, write=True) as conn:
            command.downgrade(db._alembic_config(conn), "base")
            conn.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
        store.close()


def test_postgres_schema_and_roundtrip(pg_store, tmp_path):
    with pg_store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
    a = store_docs.document(run_id="abc1" + "0" * 28, created_at="2026-01-01T00:00:00Z",
                            env=store_docs.environment("NVIDIA A100-SXM4-80GB"))
    b = store_docs.document(run_id="abc2" + "0" * 28, created_at="2026-02-01T00:00:00Z")
    expected = copy.deepcopy(a)
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
