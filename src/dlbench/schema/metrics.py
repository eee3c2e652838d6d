"""Reading a result's metrics by name: `throughput(result)`, `primary(result)`, `value(result, "step_time_s")`.

Exercised by `dlbench compare A B` and `dlbench report`, which pair results within one scenario and read the
metric they show through these helpers rather than a key by hand. A version-2 result carries
`metrics` = {name: {"value", "unit", "better", and where there are any "mean", "p5", "p50", "p90", "p95", "p99",
"repeats", "raw"}}. A result without `metrics` (a version-1 result, or a hand-made dict in a test) is read as
the upgrade would read it: `training_metrics` derives the metrics from the version-1 fields, so that both ways
give the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from dlbench.schema.keys import DEFAULT_SCENARIO, PRIMARY_METRICS, THROUGHPUT_METRICS

Metric = dict[str, Any]


def scenario(result: Mapping[str, Any]) -> str:
    """The scenario a result measured ("train" for a version-1 result, which names none)."""
    return result.get("scenario") or DEFAULT_SCENARIO


def metric(result: Mapping[str, Any], name: str) -> Metric | None:
    """The metric `name` of a result (value, unit, better, statistics), or None when it was not measured."""
    metrics = result.get("metrics")
    if isinstance(metrics, Mapping):
        found = metrics.get(name)
        return found if isinstance(found, Mapping) else None
    if scenario(result) != DEFAULT_SCENARIO:
        return None
    build = _TRAIN_BUILDERS.get(name)
    return build(result) if build is not None else None


def value(result: Mapping[str, Any], name: str) -> float | None:
    """The value of metric `name` (None when not measured)."""
    found = metric(result, name)
    return None if found is None or found.get("value") is None else float(found["value"])


def unit(result: Mapping[str, Any], name: str) -> str | None:
    """The unit of metric `name` ("samples/s", "s", "bytes", "FLOP/s"), None when not measured."""
    found = metric(result, name)
    return None if found is None else found.get("unit")


def primary_name(result: Mapping[str, Any]) -> str:
    """The name of a result's headline metric (`primary_metric`; "samples_per_s" for training)."""
    name = result.get("primary_metric")
    if name:
        return str(name)
    return PRIMARY_METRICS.get(scenario(result), PRIMARY_METRICS[DEFAULT_SCENARIO])


def primary(result: Mapping[str, Any]) -> Metric | None:
    """A result's headline metric, or None when it was not measured (a failed result)."""
    return metric(result, primary_name(result))


def primary_value(result: Mapping[str, Any]) -> float | None:
    """The value of a result's headline metric."""
    return value(result, primary_name(result))


def throughput_name(result: Mapping[str, Any]) -> str:
    """The name of a result's throughput metric (what rankings, scaling and the fleet view compare)."""
    return THROUGHPUT_METRICS.get(scenario(result), THROUGHPUT_METRICS[DEFAULT_SCENARIO])


def throughput(result: Mapping[str, Any]) -> float | None:
    """A result's throughput (training: samples/s, across all its devices), None when not measured."""
    return value(result, throughput_name(result))


def better(result: Mapping[str, Any], name: str) -> str | None:
    """"higher" or "lower": which way metric `name` improves."""
    found = metric(result, name)
    return None if found is None else found.get("better")


# -- building: the metrics of a training result, from its version-1 fields ---------------------------------

def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between the closest ranks, as numpy's default."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    fraction = position - lower
    return ordered[lower] + (ordered[upper] - ordered[lower]) * fraction


def measured_step_times(result: Mapping[str, Any]) -> list[float]:
    """All measured step times of a result, repeats concatenated (warm-up steps excluded)."""
    times: list[float] = []
    for repeat in result.get("repeats") or []:
        times.extend(float(t) for t in repeat.get("step_times_s") or [])
    return times


def _simple(key: str, unit_name: str, direction: str) -> Callable[[Mapping[str, Any]], Metric | None]:
    def build(result: Mapping[str, Any]) -> Metric | None:
        found = result.get(key)
        return None if found is None else {"value": found, "unit": unit_name, "better": direction}

    return build


def _samples_per_s(result: Mapping[str, Any]) -> Metric | None:
    found = result.get("samples_per_s")
    if found is None:
        return None
    out: Metric = {"value": found, "unit": "samples/s", "better": "higher"}
    if result.get("samples_per_s_repeats"):
        out["repeats"] = list(result["samples_per_s_repeats"])
    return out


def _step_time_s(result: Mapping[str, Any]) -> Metric | None:
    step = result.get("step_time_s")
    if not isinstance(step, Mapping) or step.get("median") is None:
        return None
    out: Metric = {"value": step["median"], "unit": "s", "better": "lower"}
    for key, source in (("mean", "mean"), ("p5", "p5"), ("p50", "median")):
        if step.get(source) is not None:
            out[key] = step[source]
    raw = measured_step_times(result)
    if raw:
        out["p90"] = percentile(raw, 90)
    if step.get("p95") is not None:
        out["p95"] = step["p95"]
    if raw:
        out["p99"] = percentile(raw, 99)
        out["raw"] = raw
    return out


# Name -> how it is read from a version-1 training result. Order is the order in `metrics`.
_TRAIN_BUILDERS: dict[str, Callable[[Mapping[str, Any]], Metric | None]] = {
    "samples_per_s": _samples_per_s,
    "step_time_s": _step_time_s,
    "compile_time_s": _simple("compile_time_s", "s", "lower"),
    "peak_memory_bytes": _simple("peak_memory_bytes", "bytes", "lower"),
    "peak_reserved_bytes": _simple("peak_reserved_bytes", "bytes", "lower"),
    "achieved_flops_per_s": _simple("achieved_flops_per_s", "FLOP/s", "higher"),
}


def training_metrics(result: Mapping[str, Any]) -> dict[str, Metric]:
    """The `metrics` of a training result, from its version-1 fields (the upgrade rule and what `dlbench run`
    writes): throughput, step time (median as the value; mean and percentiles of the pooled measured steps, and
    those steps raw), compile time, peak memory and achieved FLOP/s, each only when it was measured."""
    out: dict[str, Metric] = {}
    for name, build in _TRAIN_BUILDERS.items():
        found = build(result)
        if found is not None:
            out[name] = found
    return out
