"""results.peak_reserved_bytes: the caching allocator's peak reserve beside the allocated peak.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29

Filled in from each run's stored document, so that a document that already carried the key (written by a
dlbench that measured it, imported by one that did not have the column) keeps it in `results export`; every
other row stays null (not measured).
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _is_int64(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


def upgrade() -> None:
    # Plain ALTER TABLE (SQLite and PostgreSQL alike), never a batch copy of the table: rebuilding `results`
    # would cascade-delete its step times.
    op.add_column("results", sa.Column("peak_reserved_bytes", sa.BigInteger(), nullable=True))
    conn = op.get_bind()
    runs = sa.table("runs", sa.column("run_id", sa.String), sa.column("document_json", sa.Text))
    results = sa.table("results", sa.column("run_id", sa.String), sa.column("result_index", sa.Integer),
                       sa.column("peak_reserved_bytes", sa.BigInteger))
    for run_id, text in conn.execute(sa.select(runs.c.run_id, runs.c.document_json)):
        try:
            doc_results = json.loads(text).get("results") or []
        except (ValueError, AttributeError):  # never expected (documents are validated on import): leave null
            continue
        for index, result in enumerate(doc_results):
            value = result.get("peak_reserved_bytes") if isinstance(result, dict) else None
            if _is_int64(value):
                conn.execute(results.update()
                             .where(results.c.run_id == run_id, results.c.result_index == index)
                             .values(peak_reserved_bytes=value))


def downgrade() -> None:
    op.drop_column("results", "peak_reserved_bytes")  # SQLite 3.35 or newer
