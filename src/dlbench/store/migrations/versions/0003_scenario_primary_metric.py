"""results.scenario, primary_metric, primary_value, primary_unit: result document schema 2 (issue 12).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26

Each result names the scenario it measured and its headline metric, so that queries and `results export` read
one column whatever the scenario measures. Every row stored before this revision is a version-1 (training)
result: its scenario is "train" and its headline metric is its throughput, `samples_per_s` in samples/s (null
where nothing was measured). The values are written here, frozen, rather than taken from `dlbench.schema`: a
migration must do the same thing whatever a later dlbench's code says.

The stored documents are left as they were written (version 1); dlbench upgrades them as it reads them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_COLUMNS = (
    ("scenario", sa.String(32)),
    ("primary_metric", sa.String(64)),
    ("primary_value", sa.Double()),
    ("primary_unit", sa.String(32)),
)


def upgrade() -> None:
    # Plain ALTER TABLE (SQLite and PostgreSQL alike), never a batch copy of the table: rebuilding `results`
    # would cascade-delete its step times.
    for name, type_ in _COLUMNS:
        op.add_column("results", sa.Column(name, type_, nullable=True))
    results = sa.table("results", sa.column("scenario", sa.String), sa.column("primary_metric", sa.String),
                       sa.column("primary_value", sa.Double), sa.column("primary_unit", sa.String),
                       sa.column("samples_per_s", sa.Double))
    conn = op.get_bind()
    conn.execute(results.update().values(scenario="train", primary_metric="samples_per_s"))
    conn.execute(results.update().where(results.c.samples_per_s.is_not(None))
                 .values(primary_value=results.c.samples_per_s, primary_unit="samples/s"))


def downgrade() -> None:
    # Drops what the newer dlbench added; rows written since keep their version-1 columns. Documents stored as
    # version 2 stay so: an older dlbench refuses them with "newer than this dlbench reads".
    for name, _type in reversed(_COLUMNS):
        op.drop_column("results", name)  # SQLite 3.35 or newer
