"""The result document of `dlbench run` (schema version 2, `docs/schema.md`): one file per run, a contract
other tools parse.

Exercised by `dlbench run --json out.json`. `make_result` turns one configuration's outcome (the config, the raw
measurement from `measure()`, its status) into a result entry with statistics from `analysis.stats.summarize`
and its `metrics` (`dlbench.schema.metrics.training_metrics`); `build_document` wraps results and the
environment block. Every key of the schema is always present; facts that are missing (a failed run, a CPU
without NVML) are null, never guessed. The version, statuses and keys are `dlbench.schema`'s.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from dlbench import __version__
from dlbench.measurement.config import RunConfig
from dlbench.schema.keys import DEFAULT_SCENARIO, PRIMARY_METRICS, SCHEMA_VERSION, STATUSES, STEP_TIME_KEYS
from dlbench.schema.metrics import training_metrics


def new_run_id() -> str:
    """A run id: uuid4 as 32 lowercase hex characters."""
    return uuid.uuid4().hex


def make_result(config: RunConfig, status: str, error: str | None = None,
                measurement: dict[str, Any] | None = None, start_temperature_c: float | None = None,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """One entry of `results`. With status "ok", `measurement` is the dict `measure()` returned."""
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}")
    scenario = getattr(config, "scenario", None) or DEFAULT_SCENARIO
    result: dict[str, Any] = {
        "scenario": scenario,
        "workload": config.workload,
        "precision": config.precision,
        "compile": config.compile,
        "batch_size": config.batch_size,
        "seq_len": config.seq_len,
        "device": config.device,
        "world_size": config.world_size,
        "status": status,
        "error": error,
        "samples_per_s": None,
        "samples_per_s_repeats": [],
        "cv": None,
        "step_time_s": {key: None for key in STEP_TIME_KEYS},
        "warmup_step_times_s": [],
        "repeats": [],
        "compile_time_s": None,
        "peak_memory_bytes": None,
        "peak_reserved_bytes": None,
        "flops_per_sample": None,
        "achieved_flops_per_s": None,
        "start_temperature_c": start_temperature_c,
        "flavour": config.flavour,
        "precision_flags": None,
        "telemetry": None,
        "telemetry_reason": None,
        "warnings": [],
    }
    if measurement is not None:
        result.update(_from_measurement(config, measurement))
    if extra:
        result.update(extra)
    # Schema 2: the metrics, read from the fields above (the same rule that upgrades a version-1 result).
    result["primary_metric"] = PRIMARY_METRICS[scenario]
    result["metrics"] = training_metrics(result)
    if scenario != DEFAULT_SCENARIO:  # its own metrics, from the raw values (`Scenario.metrics`)
        _add_scenario_metrics(result, config, measurement)
    return result


def _add_scenario_metrics(result: dict[str, Any], config: RunConfig, measurement: dict[str, Any] | None) -> None:
    """A result of another scenario than training: its name, its headline and the metrics it derives from the
    raw values (`Scenario.metrics`); the training fields above hold what applies (infer: the offline batches;
    generate: the decode steps), and the values its metrics read besides the times (generate: the lengths, the
    bytes read per decode step, the prefill's FLOPs, the GPU's name)."""
    from dlbench import scenarios

    scenario = scenarios.get(config.scenario)
    result["scenario"] = scenario.name
    result["primary_metric"] = scenario.headline
    m = measurement or {}
    for key in ("weight_bytes", "latency_batch_size", "latency_warmup_times_s", "compile_times_s",
                "prompt_len", "new_tokens", "decode_weight_bytes", "kv_bytes_per_position", "prefill_flops",
                "device_name", "device_memory_bytes", "warmup"):
        if key in m:
            result[key] = m[key]
    result["metrics"] = scenario.metrics(m, config) if measurement is not None else {}


def _from_measurement(config: RunConfig, m: dict[str, Any]) -> dict[str, Any]:
    from dlbench.analysis.stats import summarize

    repeats = [[float(t) for t in r["step_times_s"]] for r in m.get("repeats", [])]
    batch_size = int(m.get("batch_size") or config.batch_size)
    out: dict[str, Any] = {
        "batch_size": batch_size,
        "seq_len": m.get("seq_len", config.seq_len),
        "device": m.get("device") or config.device,
        "warmup_step_times_s": [float(t) for t in m.get("warmup_step_times_s", [])],
        # a scenario's own per-repeat values (infer: the latency requests; generate: the TTFT) stay beside the
        # step times
        "repeats": [{**r, "step_times_s": times} for r, times in zip(m.get("repeats", []), repeats, strict=True)],
        "compile_time_s": m.get("compile_time_s"),
        "peak_memory_bytes": m.get("peak_memory_bytes"),
        "peak_reserved_bytes": m.get("peak_reserved_bytes"),
        "flops_per_sample": m.get("flops_per_sample"),
        "precision_flags": m.get("precision_flags"),
        "telemetry": m.get("telemetry"),
        "warnings": list(m.get("warnings") or []),
    }
    if repeats and all(repeats):
        stats = summarize(repeats, batch_size, config.world_size)
        out["samples_per_s"] = stats["samples_per_s"]
        out["samples_per_s_repeats"] = list(stats["samples_per_s_repeats"])
        out["cv"] = stats["cv"]
        out["step_time_s"] = {key: stats["step_time_s"][key] for key in STEP_TIME_KEYS}
        out["warnings"] = [*stats.get("warnings", []), *out["warnings"]]
        if out["flops_per_sample"] is not None and out["samples_per_s"] is not None:
            out["achieved_flops_per_s"] = out["samples_per_s"] * out["flops_per_sample"]
    out["telemetry"] = _group_efficiency(out["telemetry"], out.get("samples_per_s"))
    return out


def _group_efficiency(telemetry: Any, samples_per_s: float | None) -> Any:
    """A data-parallel group's telemetry gains energy per sample and samples/s per W for the group's (global)
    throughput, as `analysis.energy.efficiency` derives them (a one-GPU block is left as it is)."""
    from dlbench.analysis.energy import efficiency, is_group, usable

    if not is_group(telemetry) or not usable(telemetry):
        return telemetry
    eff = efficiency(telemetry, samples_per_s)
    return {**telemetry, "energy_per_sample_j": eff["energy_per_sample_j"],
            "samples_per_s_per_w": eff["samples_per_s_per_w"]}


def build_document(results: list[dict[str, Any]], environment: dict[str, Any], run_id: str | None = None,
                   command: list[str] | None = None, notes: list[str] | None = None,
                   created_at: str | None = None) -> dict[str, Any]:
    """The schema-v2 document. `command` is the argv that produced it; `notes` free text (quick suite,
    interrupted run)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id or new_run_id(),
        "created_at": created_at or utc_now_iso(),
        "dlbench_version": __version__,
        "environment": environment,
        "results": list(results),
        "command": list(command) if command is not None else None,
        "notes": list(notes or []),
    }


def utc_now_iso() -> str:
    """Now as ISO 8601 in UTC, e.g. 2026-11-22T04:40:00+00:00."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
