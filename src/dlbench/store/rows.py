"""Flattening a result document into table rows (`dlbench results export --format csv` shows the columns).

Column names carry their unit (`samples_per_s`, `step_time_median_s`, `peak_memory_bytes`); values stay in SI
units. `EXPORT_COLUMNS` is the order of `dlbench results export`.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from dlbench.schema import metrics
from dlbench.timestamps import parse_created_at

RUN_EXPORT_COLUMNS = (
    "run_id",
    "created_at",
    "hostname",
    "gpu_names",
    "gpu_count",
    "dlbench_version",
    "torch_version",
    "cuda_version",
    "driver_version",
)
RESULT_COLUMNS = (
    "result_index",
    "scenario",
    "workload",
    "precision",
    "compile",
    "batch_size",
    "seq_len",
    "device",
    "world_size",
    "status",
    "error",
    "flavour",
    "unit",
    "primary_metric",
    "primary_value",
    "primary_unit",
    "samples_per_s",
    "cv",
    "step_time_mean_s",
    "step_time_median_s",
    "step_time_p5_s",
    "step_time_p95_s",
    "compile_time_s",
    "peak_memory_bytes",
    "peak_reserved_bytes",
    "flops_per_sample",
    "achieved_flops_per_s",
    "start_temperature_c",
)
# The infer and generate metrics an export carries beside the primary one (SI units, read from the document's
# `metrics`; empty for a scenario that does not measure them): column -> (metric, statistic or "value").
SCENARIO_METRIC_COLUMNS: dict[str, tuple[str, str]] = {
    "latency_p50_s": ("latency_s", "p50"),
    "latency_p90_s": ("latency_s", "p90"),
    "latency_p99_s": ("latency_s", "p99"),
    "prefill_tokens_per_s": ("prefill_tokens_per_s", "value"),
    "ttft_s": ("ttft_s", "value"),
    "ttft_p99_s": ("ttft_s", "p99"),
    "decode_tokens_per_s": ("decode_tokens_per_s", "value"),
    "tpot_p50_s": ("tpot_s", "p50"),
    "tpot_p90_s": ("tpot_s", "p90"),
    "tpot_p99_s": ("tpot_s", "p99"),
    "e2e_s": ("e2e_s", "value"),
    "bandwidth_bytes_per_s": ("bandwidth_bytes_per_s", "value"),
    "bandwidth_fraction": ("bandwidth_fraction", "value"),
    "prefill_flops_per_s": ("prefill_flops_per_s", "value"),
    "mfu": ("mfu", "value"),
    "energy_per_token_j": ("energy_per_token_j", "value"),
}
EXPORT_COLUMNS = RUN_EXPORT_COLUMNS + RESULT_COLUMNS + tuple(SCENARIO_METRIC_COLUMNS)


def scenario_metric_cells(result: dict) -> dict:
    """The `SCENARIO_METRIC_COLUMNS` of one result (None where it was not measured)."""
    out = {}
    for column, (name, stat) in SCENARIO_METRIC_COLUMNS.items():
        found = metrics.metric(result, name)
        out[column] = None if found is None else found.get(stat)
    return out


def dumps(doc: Any) -> str:
    """The JSON text stored in the database (floats round-trip exactly)."""
    return json.dumps(doc, allow_nan=False, ensure_ascii=False)


def to_db_time(dt: datetime) -> datetime:
    """Aware datetime → naive UTC, the form stored in the database."""
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc).replace(tzinfo=None)
    return dt


def from_db_time(dt: datetime) -> str:
    """Stored naive UTC datetime → ISO 8601 string with its zone."""
    return dt.replace(tzinfo=timezone.utc).isoformat()


def _version_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return ".".join(str(v) for v in value)
    return str(value)


def gpu_names(environment: dict) -> list[str]:
    """Distinct GPU names of a run, in order of appearance."""
    names: list[str] = []
    for gpu in environment.get("gpus") or []:
        if gpu.get("name") and gpu["name"] not in names:
            names.append(gpu["name"])
    return names


def run_row(doc: dict, imported_at: datetime) -> dict:
    env = doc["environment"]
    names = gpu_names(env)
    return {
        "run_id": doc["run_id"],
        "created_at": to_db_time(parse_created_at(doc["created_at"])),
        "hostname": env.get("hostname"),
        "dlbench_version": doc["dlbench_version"],
        "schema_version": doc["schema_version"],
        "gpu_names": "; ".join(names) or None,
        "gpu_count": len(env.get("gpus") or []),
        "torch_version": _version_text(env.get("torch_version")),
        "cuda_version": _version_text(env.get("cuda_version")),
        "driver_version": _version_text(env.get("driver_version")),
        "environment_json": dumps(env),
        "document_json": dumps(doc),
        "imported_at": to_db_time(imported_at),
        "planned_results": doc.get("planned_results"),
    }


def result_row(run_id: str, index: int, result: dict) -> dict:
    step = result.get("step_time_s") or {}
    primary = metrics.primary(result)
    return {
        "run_id": run_id,
        "result_index": index,
        "scenario": metrics.scenario(result),
        "workload": result["workload"],
        "precision": result["precision"],
        "compile": result["compile"],
        "batch_size": result.get("batch_size"),
        "seq_len": result.get("seq_len"),
        "device": result.get("device"),
        "world_size": result["world_size"],
        "status": result["status"],
        "error": result.get("error"),
        "flavour": result.get("flavour"),
        "unit": result.get("unit"),
        "primary_metric": metrics.primary_name(result),
        "primary_value": None if primary is None else primary["value"],
        "primary_unit": None if primary is None else primary["unit"],
        "samples_per_s": result.get("samples_per_s"),
        "cv": result.get("cv"),
        "step_time_mean_s": step.get("mean"),
        "step_time_median_s": step.get("median"),
        "step_time_p5_s": step.get("p5"),
        "step_time_p95_s": step.get("p95"),
        "compile_time_s": result.get("compile_time_s"),
        "peak_memory_bytes": result.get("peak_memory_bytes"),
        "peak_reserved_bytes": result.get("peak_reserved_bytes"),
        "flops_per_sample": result.get("flops_per_sample"),
        "achieved_flops_per_s": result.get("achieved_flops_per_s"),
        "start_temperature_c": result.get("start_temperature_c"),
    }


def step_time_rows(result_id: int, result: dict) -> list[dict]:
    """Every raw step time of a result: warm-up steps (repeat 0) and each measured repeat."""
    rows = [
        {"result_id": result_id, "phase": "warmup", "repeat_index": 0, "step_index": i, "step_time_s": t}
        for i, t in enumerate(result.get("warmup_step_times_s") or [])
    ]
    for r, rep in enumerate(result.get("repeats") or []):
        rows.extend(
            {"result_id": result_id, "phase": "measure", "repeat_index": r, "step_index": i, "step_time_s": t}
            for i, t in enumerate(rep["step_times_s"])
        )
    return rows
