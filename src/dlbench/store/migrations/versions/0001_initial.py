"""Initial schema: runs, results (flat columns per result) and step_times (every raw step time).

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("hostname", sa.String(255), nullable=True),
        sa.Column("dlbench_version", sa.String(64), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("gpu_names", sa.Text(), nullable=True),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column("torch_version", sa.String(64), nullable=True),
        sa.Column("cuda_version", sa.String(64), nullable=True),
        sa.Column("driver_version", sa.String(64), nullable=True),
        sa.Column("environment_json", sa.Text(), nullable=False),
        sa.Column("document_json", sa.Text(), nullable=False),
        sa.Column("imported_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", name="pk_runs"),
    )
    op.create_index("ix_runs_created_at", "runs", ["created_at"])
    op.create_table(
        "results",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("result_index", sa.Integer(), nullable=False),
        sa.Column("workload", sa.String(64), nullable=False),
        sa.Column("precision", sa.String(32), nullable=False),
        sa.Column("compile", sa.String(32), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=True),
        sa.Column("seq_len", sa.Integer(), nullable=True),
        sa.Column("device", sa.String(64), nullable=True),
        sa.Column("world_size", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("flavour", sa.String(16), nullable=True),
        sa.Column("unit", sa.String(16), nullable=True),
        sa.Column("samples_per_s", sa.Double(), nullable=True),
        sa.Column("cv", sa.Double(), nullable=True),
        sa.Column("step_time_mean_s", sa.Double(), nullable=True),
        sa.Column("step_time_median_s", sa.Double(), nullable=True),
        sa.Column("step_time_p5_s", sa.Double(), nullable=True),
        sa.Column("step_time_p95_s", sa.Double(), nullable=True),
        sa.Column("compile_time_s", sa.Double(), nullable=True),
        sa.Column("peak_memory_bytes", sa.BigInteger(), nullable=True),
        sa.Column("flops_per_sample", sa.Double(), nullable=True),
        sa.Column("achieved_flops_per_s", sa.Double(), nullable=True),
        sa.Column("start_temperature_c", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_results_run_id_runs", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_results"),
        sa.UniqueConstraint("run_id", "result_index", name="uq_results_run_id_result_index"),
    )
    op.create_index("ix_results_run_id", "results", ["run_id"])
    op.create_index("ix_results_workload", "results", ["workload"])
    op.create_table(
        "step_times",
        sa.Column("result_id", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(8), nullable=False),
        sa.Column("repeat_index", sa.Integer(), nullable=False),
        sa.Column("step_index", sa.Integer(), nullable=False),
        sa.Column("step_time_s", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(["result_id"], ["results.id"], name="fk_step_times_result_id_results",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("result_id", "phase", "repeat_index", "step_index", name="pk_step_times"),
    )


def downgrade() -> None:
    op.drop_table("step_times")
    op.drop_index("ix_results_workload", table_name="results")
    op.drop_index("ix_results_run_id", table_name="results")
    op.drop_table("results")
    op.drop_index("ix_runs_created_at", table_name="runs")
    op.drop_table("runs")
