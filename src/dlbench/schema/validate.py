"""The JSON result document: validation and loading (`dlbench results import run.json`).

A document is what `dlbench run --json PATH` writes (`docs/schema.md`): `schema_version`, `run_id`,
`created_at`, `dlbench_version`, `environment` and `results`. `validate_document` checks every required key and
its type and raises `DataError` naming the key (and the result index) that is wrong. Documents written by an
older dlbench are upgraded step by step (`dlbench.schema.upgrade`); a document from a newer dlbench is refused
with a message saying so, rather than half-understood.

Keys not listed here are kept as they are (other parts of dlbench add optional extras such as `telemetry`,
`ranks` or `vs_published`); the extras that are known have their types checked too.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlbench.errors import DataError
from dlbench.jsonio import read_json
from dlbench.schema import keys
from dlbench.schema.keys import BETTER, METRIC_LIST_KEYS, METRIC_STAT_KEYS, STATUSES, STEP_TIME_KEYS
from dlbench.schema.upgrade import upgrade
from dlbench.timestamps import parse_created_at

RUN_ID_RE = re.compile(r"^[0-9a-f]{32}$")

# Type checkers: each returns True when the value is acceptable.
_Check = Callable[[Any], bool]


# Integers are stored as SQL BIGINT (signed 64-bit, in SQLite and PostgreSQL alike).
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and _INT64_MIN <= v <= _INT64_MAX


# No measured figure comes near this (an exaFLOP/s is 1e18, a year 3e7 s); beyond it the sums, squares and products
# that statistics and charts take of a figure overflow to inf, and a hand-edited 1e308 broke `report` and `advise`.
_MAX_MAGNITUDE = 1e100


def _is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and math.isfinite(v) and (
        abs(v) <= _MAX_MAGNITUDE)


def _nullable(check: _Check) -> _Check:
    return lambda v: v is None or check(v)


def _list_of(check: _Check) -> _Check:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


_STR = (lambda v: isinstance(v, str), "a string")
_OPT_STR = (_nullable(lambda v: isinstance(v, str)), "a string or null")
_INT = (_is_int, "an integer")
_OPT_INT = (_nullable(_is_int), "an integer or null")
_OPT_NUM = (_nullable(_is_number), "a finite number or null")
_OPT_DICT = (_nullable(lambda v: isinstance(v, dict)), "an object or null")
_OPT_LIST = (_nullable(lambda v: isinstance(v, list)), "a list or null")
_OPT_NUM_LIST = (_nullable(_list_of(_is_number)), "a list of finite numbers or null")
# What was measured (a throughput, a step time, a count of bytes or FLOPs) is never negative: such a value
# would make `advise` take the logarithm of a negative throughput, and every table show a nonsense figure.
_OPT_NONNEG = (_nullable(lambda v: _is_number(v) and v >= 0), "a finite number >= 0 or null")
_OPT_NONNEG_INT = (_nullable(lambda v: _is_int(v) and v >= 0), "an integer >= 0 or null")
_OPT_POS_INT = (_nullable(lambda v: _is_int(v) and v >= 1), "an integer >= 1 or null")
_OPT_NONNEG_LIST = (_nullable(_list_of(lambda v: _is_number(v) and v >= 0)), "a list of finite numbers >= 0 or null")
_OPT_STR_LIST = (_nullable(_list_of(lambda v: isinstance(v, str))), "a list of strings or null")
# Library versions arrive as strings, integers (cuDNN's 90100) or lists (NCCL's (2, 21, 5)).
_VERSION = (_nullable(lambda v: isinstance(v, (str, list)) or _is_int(v)),
            "a string, integer, list or null")

_TOP_REQUIRED = {
    "schema_version": _INT,
    "run_id": _STR,
    "created_at": _STR,
    "dlbench_version": _STR,
    "environment": (lambda v: isinstance(v, dict), "an object"),
    "results": (lambda v: isinstance(v, list), "a list"),
}
_TOP_OPTIONAL = {
    "command": _OPT_STR_LIST,
    "planned_results": (_nullable(lambda v: _is_int(v) and 0 <= v < 2**31), "an integer from 0 to 2**31 - 1 or null"),
    "notes": (_nullable(lambda v: isinstance(v, str) or _list_of(lambda x: isinstance(x, str))(v)),
              "a string, a list of strings or null"),
}

_ENV_REQUIRED = {
    "hostname": _OPT_STR,
    "os": _OPT_STR,
    "python_version": _OPT_STR,
    "torch_version": _OPT_STR,
    "cuda_version": _VERSION,
    "cudnn_version": _VERSION,
    "nccl_version": _VERSION,
    "driver_version": _VERSION,
    "cpu_model": _OPT_STR,
    "cpu_count": _OPT_INT,
    "memory_bytes": _OPT_INT,
    "gpus": (lambda v: isinstance(v, list), "a list"),
    "git_commit": _OPT_STR,
}
# Keys added to the environment after schema version 1 was fixed: older documents lack them.
_ENV_OPTIONAL = {
    "hip_version": _VERSION,
    "miopen_version": _VERSION,
}
_GPU_REQUIRED = {
    "name": _STR,
    "memory_bytes": _OPT_INT,
    "compute_capability": (_nullable(lambda v: isinstance(v, (str, list, float))),
                           "a string, list, number or null"),
    "multiprocessor_count": _OPT_INT,
}

_RESULT_REQUIRED = {
    "workload": _STR,
    "precision": _STR,
    "compile": _STR,
    "batch_size": _OPT_POS_INT,
    "seq_len": _OPT_POS_INT,
    "device": _OPT_STR,
    "world_size": _INT,
    "status": (lambda v: v in STATUSES, "one of " + ", ".join(STATUSES)),
    "error": _OPT_STR,
    "samples_per_s": _OPT_NONNEG,
    "samples_per_s_repeats": _OPT_NONNEG_LIST,
    "cv": _OPT_NONNEG,
    "step_time_s": _OPT_DICT,
    "warmup_step_times_s": _OPT_NONNEG_LIST,
    "repeats": _OPT_LIST,
    "compile_time_s": _OPT_NONNEG,
    "peak_memory_bytes": _OPT_NONNEG_INT,
    "flops_per_sample": _OPT_NONNEG,
    "achieved_flops_per_s": _OPT_NONNEG,
    "start_temperature_c": _OPT_NUM,
}
# Optional extras other parts add (CONTRACTS.md); their shapes are checked where they are settled.
_RESULT_OPTIONAL = {
    "peak_reserved_bytes": _OPT_NONNEG_INT,
    "telemetry": _OPT_DICT,
    "telemetry_reason": _OPT_STR,
    "nodes": (_nullable(lambda v: _is_int(v) or isinstance(v, list)), "an integer, list or null"),
    "ranks": _OPT_LIST,
    "scaling_efficiency": _OPT_NUM,
    "vs_published": (_nullable(lambda v: isinstance(v, dict)), "an object or null"),
    "mfu": _OPT_NUM,
    "precision_flags": _OPT_DICT,
    "warnings": _OPT_STR_LIST,
    "flavour": _OPT_STR,
    "unit": (_nullable(lambda v: v in ("images", "sequences", "tokens")), "'images', 'sequences', 'tokens' or null"),
}
# Added by version 2 (each result's scenario and its metrics, `docs/schema.md`).
_RESULT_REQUIRED_V2 = {
    "scenario": (lambda v: isinstance(v, str) and bool(v.strip()), "a non-empty string"),
    "primary_metric": (lambda v: isinstance(v, str) and bool(v.strip()), "a non-empty string"),
    "metrics": (lambda v: isinstance(v, dict), "an object"),
}
_METRIC_REQUIRED = {
    "value": (_is_number, "a finite number"),
    "unit": (lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
    "better": (lambda v: v in BETTER, "one of " + ", ".join(BETTER)),
}
_METRIC_OPTIONAL = {
    **{key: (_is_number, "a finite number") for key in METRIC_STAT_KEYS},
    **{key: (_list_of(_is_number), "a list of finite numbers") for key in METRIC_LIST_KEYS},
}

# The `telemetry` block (dlbench.telemetry.sampler, analysis.energy.combine_ranks): the keys that `doctor`, the
# run table and the report read are type-checked (a data-parallel group's `per_gpu` entries too), so that a
# hand-edited document is refused on import instead of breaking `dlbench doctor` later. Other keys (series,
# gpu) are kept as they are.
_TELEMETRY_NUMBERS = (
    "sample_interval_s", "num_samples", "duration_s", "power_mean_w", "power_max_w", "energy_j",
    "energy_integrated_j", "temperature_start_c", "temperature_max_c", "temperature_mean_c", "sm_clock_mean_mhz",
    "sm_clock_min_mhz", "mem_clock_mean_mhz", "gpu_utilization_mean_pct", "throttle_share", "power_limit_w",
    "default_power_limit_w", "pcie_link_gen_min", "pcie_link_width_min", "pcie_link_gen_max",
    "pcie_link_width_max", "fan_speed_max_pct", "num_gpus", "missing_gpus", "energy_per_sample_j",
    "samples_per_s_per_w",
)
_TELEMETRY_OPTIONAL = {
    **{key: _OPT_NUM for key in _TELEMETRY_NUMBERS},
    "available": (lambda v: isinstance(v, bool), "true or false"),
    "reason": _OPT_STR,
    "source": _OPT_STR,
    "energy_method": _OPT_STR,
    "throttle_reasons": (_nullable(lambda v: isinstance(v, dict) and all(
        isinstance(k, str) and _is_number(x) for k, x in v.items())), "an object of finite numbers or null"),
    "gpu_names": _OPT_STR_LIST,
    "other_processes": _OPT_LIST,
    "throttle_reason_ranks": (_nullable(lambda v: isinstance(v, dict) and all(
        isinstance(k, str) and _list_of(_is_int)(x) for k, x in v.items())), "an object of integer lists or null"),
    "per_gpu": (_nullable(_list_of(lambda v: isinstance(v, dict))), "a list of objects or null"),
    "series_thinning": _OPT_DICT,
    "gpu": _OPT_DICT,
    # The raw readings the report draws: one list of numbers (null: not read) per column.
    "series": (_nullable(lambda v: isinstance(v, dict) and all(
        _list_of(_nullable(_is_number))(x) for x in v.values())), "an object of lists of numbers or null"),
    "samples": (_nullable(_list_of(lambda v: isinstance(v, dict) and all(
        _nullable(_is_number)(x) for x in v.values()))), "a list of objects of numbers or null"),
}
# `vs_published` as `dlbench run` stores it (analysis.ranking.vs_published); `dlbench results show` prints it.
_VS_PUBLISHED_OPTIONAL = {
    "gpu": _OPT_STR, "ratio": _OPT_NONNEG, "published_median_samples_per_s": _OPT_NONNEG,
    "published_count": _OPT_NONNEG_INT, "rank": _OPT_POS_INT, "rank_of": _OPT_POS_INT, "sources": _OPT_STR_LIST,
    "text": _OPT_STR, "reason": _OPT_STR,
}
# Who each GPU of a group's `per_gpu` is (besides the telemetry keys above).
_PER_GPU_OPTIONAL = {
    **_TELEMETRY_OPTIONAL,
    "rank": _OPT_INT, "node_rank": _OPT_INT, "hostname": _OPT_STR, "device": _OPT_STR, "device_index": _OPT_INT,
    "uuid": _OPT_STR, "name": _OPT_STR,
}


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, int) and not _INT64_MIN <= v <= _INT64_MAX:
        return f"{v} (too large for 64 bits)"
    if isinstance(v, (int, float)):  # a number of the right type but out of range: say which
        return f"{v!r}" if abs(v) <= _MAX_MAGNITUDE else f"{v!r} (beyond {_MAX_MAGNITUDE:g})"
    return {dict: "object", list: "list", str: "string", int: "integer", float: "number"}.get(type(v), type(v).__name__)


def _check_keys(obj: dict, required: dict, optional: dict, where: str) -> None:
    for key, (check, expected) in required.items():
        if key not in obj:
            raise DataError(f"{where}{key}: missing (required key)")
        if not check(obj[key]):
            raise DataError(f"{where}{key}: expected {expected}, got {_type_name(obj[key])}")
    for key, (check, expected) in optional.items():
        if key in obj and not check(obj[key]):
            raise DataError(f"{where}{key}: expected {expected}, got {_type_name(obj[key])}")


def _validate_result(result: Any, i: int) -> None:
    where = f"results[{i}]."
    if not isinstance(result, dict):
        raise DataError(f"results[{i}]: expected an object, got {_type_name(result)}")
    _check_keys(result, _RESULT_REQUIRED, _RESULT_OPTIONAL, where)
    if isinstance(result.get("telemetry"), dict):
        _check_keys(result["telemetry"], {}, _TELEMETRY_OPTIONAL, f"{where}telemetry.")
        for g, gpu in enumerate(result["telemetry"].get("per_gpu") or []):
            _check_keys(gpu, {}, _PER_GPU_OPTIONAL, f"{where}telemetry.per_gpu[{g}].")
    if isinstance(result.get("vs_published"), dict):
        _check_keys(result["vs_published"], {}, _VS_PUBLISHED_OPTIONAL, f"{where}vs_published.")
    if result["world_size"] < 1:
        raise DataError(f"{where}world_size: must be >= 1, got {result['world_size']}")
    step = result["step_time_s"]
    if step is not None:
        for key in STEP_TIME_KEYS:
            if key not in step:
                raise DataError(f"{where}step_time_s.{key}: missing (required key)")
            if not _OPT_NONNEG[0](step[key]):
                raise DataError(f"{where}step_time_s.{key}: expected {_OPT_NONNEG[1]}, got "
                                f"{_type_name(step[key])}")
    for r, rep in enumerate(result["repeats"] or []):
        if not isinstance(rep, dict):
            raise DataError(f"{where}repeats[{r}]: expected an object, got {_type_name(rep)}")
        if "step_times_s" not in rep:
            raise DataError(f"{where}repeats[{r}].step_times_s: missing (required key)")
        if not _list_of(lambda v: _is_number(v) and v >= 0)(rep["step_times_s"]):
            raise DataError(f"{where}repeats[{r}].step_times_s: expected a list of finite numbers >= 0")
    # A training result that finished has its throughput (other scenarios name their headline metric instead,
    # checked with the version-2 keys).
    if result["status"] == "ok" and result["samples_per_s"] is None and result.get("scenario") in (
            None, keys.DEFAULT_SCENARIO):
        raise DataError(f"{where}samples_per_s: null although status is 'ok'")


def _validate_metrics(result: dict, i: int) -> None:
    """The version-2 keys of a result: its scenario, metrics and headline metric."""
    where = f"results[{i}]."
    _check_keys(result, _RESULT_REQUIRED_V2, {}, where)
    for name, found in result["metrics"].items():
        if not isinstance(found, dict):
            raise DataError(f"{where}metrics.{name}: expected an object, got {_type_name(found)}")
        _check_keys(found, _METRIC_REQUIRED, _METRIC_OPTIONAL, f"{where}metrics.{name}.")
    primary = result["primary_metric"]
    if result["status"] == "ok" and primary not in result["metrics"]:
        raise DataError(f"{where}primary_metric: {primary!r} is not among the result's metrics although status "
                        "is 'ok'")
    # A version-2 result keeps the version-1 fields: where both say the same thing they must agree, so that a
    # reader of either sees one number.
    tput = result["metrics"].get("samples_per_s")
    if tput is not None and result["samples_per_s"] is not None and tput["value"] != result["samples_per_s"]:
        raise DataError(f"{where}metrics.samples_per_s.value: {result['metrics']['samples_per_s']['value']!r} "
                        f"differs from samples_per_s {result['samples_per_s']!r}")


def _validate_common(doc: dict) -> None:
    """What every version requires (version 1's rules, which version 2 keeps)."""
    _check_keys(doc, _TOP_REQUIRED, _TOP_OPTIONAL, "")
    if not RUN_ID_RE.match(doc["run_id"]):
        raise DataError(f"run_id: expected 32 lowercase hex characters (a uuid4 hex), got {doc['run_id']!r}")
    try:
        parse_created_at(doc["created_at"])
    except ValueError:
        raise DataError(f"created_at: not an ISO 8601 timestamp: {doc['created_at']!r}") from None
    env = doc["environment"]
    _check_keys(env, _ENV_REQUIRED, _ENV_OPTIONAL, "environment.")
    for g, gpu in enumerate(env["gpus"]):
        if not isinstance(gpu, dict):
            raise DataError(f"environment.gpus[{g}]: expected an object, got {_type_name(gpu)}")
        _check_keys(gpu, _GPU_REQUIRED, {}, f"environment.gpus[{g}].")
    for i, result in enumerate(doc["results"]):
        _validate_result(result, i)


def _has_non_finite(doc: dict) -> bool:
    """Whether strict JSON refuses the document: C-fast, where walking it in Python cost half a millisecond a
    document (`dlbench fleet` over a folder of 10,000)."""
    try:
        json.dumps(doc, allow_nan=False)
    except ValueError:
        return True
    except TypeError:  # not JSON at all (a document built in memory): the key checks name what is wrong
        return False
    return False


def _non_finite_key(value: Any, path: str = "") -> str | None:
    """The key path of the first NaN or infinite number in a document, None when there is none: dlbench writes
    strict JSON (`jsonio`), and the database and `--json` output take nothing else."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path or "(the document)"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _non_finite_key(item, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else key)
        if found is not None:
            return found
    return None


def validate_document(doc: Any) -> dict:
    """Check `doc` against the result schema and return it at the current `SCHEMA_VERSION`.

    Older versions are upgraded (on a copy); a newer version or any missing key or wrong type raises
    `DataError` with the key path, e.g. `results[2].samples_per_s: expected a finite number or null, got string`.
    """
    if not isinstance(doc, dict):
        raise DataError(f"expected a JSON object (a dlbench result document), got {_type_name(doc)}")
    if "schema_version" not in doc:
        raise DataError("schema_version: missing (is this a dlbench result document?)")
    version = doc["schema_version"]
    if not _is_int(version) or version < 1:
        raise DataError(f"schema_version: expected a positive integer, got {version!r}")
    current = keys.SCHEMA_VERSION
    if version > current:
        raise DataError(f"schema_version {version} is newer than this dlbench reads (up to {current}); "
                        "upgrade dlbench to read it")
    _validate_common(doc)  # before the upgrade, which reads the version-1 fields
    where = _non_finite_key(doc) if _has_non_finite(doc) else None
    if where is not None:  # in a block the rules above leave free-form (precision_flags, telemetry, notes, ...)
        raise DataError(f"{where}: a NaN or infinite number, which a result document never holds (JSON has none)")
    doc = upgrade(doc)
    for i, result in enumerate(doc["results"]):
        _validate_metrics(result, i)
    return doc


def load_document(path: str | os.PathLike[str]) -> dict:
    """Read and validate a result document; every error names the file."""
    path = Path(path)
    doc = read_json(path)  # DataError naming the file when missing or not JSON
    try:
        return validate_document(doc)
    except DataError as exc:
        raise DataError(f"{path}: {exc.format_message()}") from None
