"""The result document's version, statuses and keys: the one place they are defined (`docs/schema.md`).

`dlbench run --json out.json` writes a document with these keys; `dlbench results import out.json` checks them
(`dlbench.schema.validate`). Everything else that names a status or a key imports it from here.
"""

from __future__ import annotations

# Version 2 (issue 12): each result names its `scenario` and carries `metrics` and `primary_metric`.
SCHEMA_VERSION = 2

STATUSES: tuple[str, ...] = ("ok", "oom", "error", "timeout", "skipped")
# The statuses that make `dlbench run` exit 1: the configuration was tried and did not finish. "skipped" was
# never tried (a precision the device lacks), so it is not a failure.
FAILED_STATUSES: tuple[str, ...] = ("oom", "error", "timeout")

DOCUMENT_KEYS: tuple[str, ...] = ("schema_version", "run_id", "created_at", "dlbench_version", "environment",
                                  "results")
# Every result carries these (a fact that is missing is null, never left out). The version-1 keys stay in
# version 2, so that whatever reads them keeps working.
RESULT_KEYS_V1: tuple[str, ...] = (
    "workload", "precision", "compile", "batch_size", "seq_len", "device", "world_size", "status", "error",
    "samples_per_s", "samples_per_s_repeats", "cv", "step_time_s", "warmup_step_times_s", "repeats",
    "compile_time_s", "peak_memory_bytes", "flops_per_sample", "achieved_flops_per_s", "start_temperature_c",
)
RESULT_KEYS: tuple[str, ...] = (*RESULT_KEYS_V1, "scenario", "metrics", "primary_metric")
STEP_TIME_KEYS: tuple[str, ...] = ("mean", "median", "p5", "p95")

# A metric: {"value", "unit", "better"} and, where there are any, these statistics and the raw values.
METRIC_KEYS: tuple[str, ...] = ("value", "unit", "better")
METRIC_STAT_KEYS: tuple[str, ...] = ("mean", "p5", "p50", "p90", "p95", "p99")
METRIC_LIST_KEYS: tuple[str, ...] = ("repeats", "raw")
BETTER: tuple[str, ...] = ("higher", "lower")

# What a version-1 result measured: every version-1 document is training.
DEFAULT_SCENARIO = "train"
# The headline metric of each scenario, and its throughput (what rankings and scaling read).
PRIMARY_METRICS: dict[str, str] = {"train": "samples_per_s", "infer": "samples_per_s",
                                  "generate": "decode_tokens_per_s"}
THROUGHPUT_METRICS: dict[str, str] = {"train": "samples_per_s", "infer": "samples_per_s",  # infer: offline
                                     "generate": "decode_tokens_per_s"}
