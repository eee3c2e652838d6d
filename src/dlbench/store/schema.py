"""The database tables, as SQLAlchemy Core metadata (`dlbench results list` reads them).

This is the schema at the newest migration; the migrations under `migrations/versions/` build it step by step
and `tests/test_migrations.py` checks that the two agree. Change a table here only together with a new
migration.

- `runs`: one row per run, with the full result document as JSON text (the source of truth for `get_run`) and
  the number of configurations it planned (fewer results: the run was cut short).
- `results`: one row per result (configuration) of a run, with the flat numeric columns for querying: its
  scenario and headline metric (`primary_metric`, `primary_value`, `primary_unit`) for every scenario, and the
  training columns (`samples_per_s`, step times) that version-1 results filled.
- `step_times`: every raw step time (warm-up and measured), one row each, so that SQL can reach them.

Types and SQL are portable (SQLite and PostgreSQL): JSON is stored as text, timestamps as naive UTC.
"""

from __future__ import annotations

import sqlalchemy as sa

# The newest migration, i.e. the revision these tables correspond to (a test checks it against Alembic's
# head). A database already at this revision opens without loading Alembic at all.
HEAD_REVISION = "0004"

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_name)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("run_id", sa.String(32), primary_key=True),
    sa.Column("created_at", sa.DateTime(), nullable=False, index=True),  # UTC
    sa.Column("hostname", sa.String(255)),
    sa.Column("dlbench_version", sa.String(64), nullable=False),
    sa.Column("schema_version", sa.Integer(), nullable=False),
    sa.Column("gpu_names", sa.Text()),  # distinct GPU names joined with "; " (None when there is no GPU)
    sa.Column("gpu_count", sa.Integer(), nullable=False),
    sa.Column("torch_version", sa.String(64)),
    sa.Column("cuda_version", sa.String(64)),
    sa.Column("driver_version", sa.String(64)),
    sa.Column("environment_json", sa.Text(), nullable=False),
    sa.Column("document_json", sa.Text(), nullable=False),
    sa.Column("imported_at", sa.DateTime(), nullable=False),  # UTC, when this row was written
    sa.Column("planned_results", sa.Integer()),  # migration 0004: configurations planned (null: not recorded)
)

results = sa.Table(
    "results",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False,
              index=True),
    sa.Column("result_index", sa.Integer(), nullable=False),
    sa.Column("workload", sa.String(64), nullable=False, index=True),
    sa.Column("precision", sa.String(32), nullable=False),
    sa.Column("compile", sa.String(32), nullable=False),
    sa.Column("batch_size", sa.Integer()),
    sa.Column("seq_len", sa.Integer()),
    sa.Column("device", sa.String(64)),
    sa.Column("world_size", sa.Integer(), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("error", sa.Text()),
    sa.Column("flavour", sa.String(16)),
    sa.Column("unit", sa.String(16)),
    # migration 0003 (schema 2): the scenario and the headline metric, whatever the scenario measures
    sa.Column("scenario", sa.String(32)),
    sa.Column("primary_metric", sa.String(64)),
    sa.Column("primary_value", sa.Double()),
    sa.Column("primary_unit", sa.String(32)),
    sa.Column("samples_per_s", sa.Double()),
    sa.Column("cv", sa.Double()),
    sa.Column("step_time_mean_s", sa.Double()),
    sa.Column("step_time_median_s", sa.Double()),
    sa.Column("step_time_p5_s", sa.Double()),
    sa.Column("step_time_p95_s", sa.Double()),
    sa.Column("compile_time_s", sa.Double()),
    sa.Column("peak_memory_bytes", sa.BigInteger()),
    sa.Column("peak_reserved_bytes", sa.BigInteger()),  # migration 0002
    sa.Column("flops_per_sample", sa.Double()),
    sa.Column("achieved_flops_per_s", sa.Double()),
    sa.Column("start_temperature_c", sa.Double()),
    sa.UniqueConstraint("run_id", "result_index", name="uq_results_run_id_result_index"),
)

step_times = sa.Table(
    "step_times",
    metadata,
    sa.Column("result_id", sa.Integer(), sa.ForeignKey("results.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("phase", sa.String(8), primary_key=True),  # "warmup" or "measure"
    sa.Column("repeat_index", sa.Integer(), primary_key=True),  # 0 for warm-up
    sa.Column("step_index", sa.Integer(), primary_key=True),
    sa.Column("step_time_s", sa.Double(), nullable=False),
)
