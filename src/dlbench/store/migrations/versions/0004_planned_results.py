"""runs.planned_results: how many configurations the run planned, so that a run cut short lists as such.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26

`dlbench run` saves its run after every configuration; a run whose process was killed (SIGKILL, the OOM
killer, a lost node), interrupted or stopped by a failed rank keeps fewer results than it planned, and
`dlbench results list` shows it as "1/2, cut short" rather than "1/1". Filled in from each stored document's
`planned_results` where it has one (a document imported before this revision); null otherwise (a run stored
by an older dlbench, whose plan was not recorded: it lists by its results, as before).
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("planned_results", sa.Integer(), nullable=True))  # plain ALTER TABLE
    conn = op.get_bind()
    runs = sa.table("runs", sa.column("run_id", sa.String), sa.column("document_json", sa.Text),
                    sa.column("planned_results", sa.Integer))
    for run_id, text in conn.execute(sa.select(runs.c.run_id, runs.c.document_json)):
        try:
            planned = json.loads(text).get("planned_results")
        except (ValueError, AttributeError):  # never expected (documents are validated on import): leave null
            continue
        if isinstance(planned, int) and not isinstance(planned, bool) and 0 <= planned < 2**31:
            conn.execute(runs.update().where(runs.c.run_id == run_id).values(planned_results=planned))


def downgrade() -> None:
    op.drop_column("runs", "planned_results")  # SQLite 3.35 or newer
