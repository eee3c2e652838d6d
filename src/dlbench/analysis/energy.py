"""Energy efficiency from a result's telemetry: what the run table's perf/W and "throttled" columns show.

    from dlbench.analysis.energy import efficiency
    eff = efficiency(result["telemetry"], result["samples_per_s"], measured_time_s)
    eff["samples_per_s_per_w"], eff["energy_per_sample_j"], eff["throttled"]

No torch here. Inputs are the `telemetry` block of `dlbench.telemetry.sampler` (one GPU), or the block that
`combine_ranks()` makes from the blocks of every rank of a data-parallel run.
"""

from __future__ import annotations

from typing import Any

# A configuration counts as throttled when power or temperature held its clocks down (NVML clock-event
# reasons sw/hw power cap, hw slowdown, thermal slowdown, power brake) in at least this share of the
# telemetry samples. dlbench's choice: a single 100 ms blip is noise, one sample in ten is not.
THROTTLED_SHARE = 0.10

_SLOWDOWN = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
_THERMAL = ("sw_thermal_slowdown", "hw_thermal_slowdown")
_POWER = ("sw_power_cap", "hw_power_brake_slowdown")


def usable(telemetry: dict[str, Any] | None) -> bool:
    """True for a telemetry block with readings in it."""
    return bool(telemetry) and bool(telemetry.get("available"))


def average_power_w(telemetry: dict[str, Any]) -> float | None:
    """Mean power over the measured window: energy / duration where both exist, else the sampled mean."""
    energy, duration = telemetry.get("energy_j"), telemetry.get("duration_s")
    if energy is not None and duration:
        return energy / duration
    return telemetry.get("power_mean_w")


def throttle_shares(telemetry: dict[str, Any]) -> dict[str, float]:
    """Share of samples per slowdown reason (idle, sync boost and application clocks left out)."""
    reasons = telemetry.get("throttle_reasons") or {}
    return {name: share for name, share in reasons.items() if name in _SLOWDOWN and share > 0}


def is_throttled(telemetry: dict[str, Any] | None, threshold: float = THROTTLED_SHARE) -> bool | None:
    """Power or temperature slowed the GPU in at least `threshold` of the samples (None: no telemetry)."""
    if not usable(telemetry):
        return None
    share = telemetry.get("throttle_share")
    if share is None:
        shares = throttle_shares(telemetry)
        if not shares and telemetry.get("throttle_reasons") is None:
            return None
        share = max(shares.values(), default=0.0)
    return share >= threshold


def throttle_kind(telemetry: dict[str, Any] | None, threshold: float = THROTTLED_SHARE) -> list[str]:
    """"thermal" and/or "power" when those reasons reached `threshold` of the samples; "hardware" for hw_slowdown."""
    if not usable(telemetry):
        return []
    shares = throttle_shares(telemetry)
    kinds = []
    if max((shares.get(r, 0.0) for r in _THERMAL), default=0.0) >= threshold:
        kinds.append("thermal")
    if max((shares.get(r, 0.0) for r in _POWER), default=0.0) >= threshold:
        kinds.append("power")
    if shares.get("hw_slowdown", 0.0) >= threshold:
        kinds.append("hardware")
    return kinds


def efficiency(telemetry: dict[str, Any] | None, samples_per_s: float | None,
               measured_time_s: float | None = None) -> dict[str, Any]:
    """Derived energy figures for one result.

    `samples_per_s` is the result's throughput (all ranks together for a data-parallel run, in which case
    `telemetry` should be `combine_ranks()` of the ranks' blocks); `measured_time_s` the summed measured step
    time, used for the energy of the measured steps and to warn when telemetry covered too little of it.
    Returns `energy_per_sample_j`, `samples_per_s_per_w`, `average_power_w`, `energy_measured_j`,
    `throttled`, `throttle_kind`, `warnings`; figures are None when they cannot be known.
    """
    out: dict[str, Any] = {"energy_per_sample_j": None, "samples_per_s_per_w": None, "average_power_w": None,
                           "energy_measured_j": None, "throttled": None, "throttle_kind": [], "warnings": []}
    if not usable(telemetry):
        return out
    power = average_power_w(telemetry)
    out["average_power_w"] = power
    out["throttled"] = is_throttled(telemetry)
    out["throttle_kind"] = throttle_kind(telemetry)
    if power and samples_per_s and samples_per_s > 0:
        out["energy_per_sample_j"] = power / samples_per_s
        out["samples_per_s_per_w"] = samples_per_s / power
    if power and measured_time_s:
        out["energy_measured_j"] = power * measured_time_s
    n = telemetry.get("num_samples") or 0
    if n < 5:
        out["warnings"].append(f"only {n} telemetry samples: power and energy figures are rough")
    duration = telemetry.get("duration_s")
    if measured_time_s and duration is not None and duration < 0.5 * measured_time_s:
        out["warnings"].append("telemetry covered less than half of the measured time")
    return out


def combine_ranks(blocks: list[dict[str, Any] | None]) -> dict[str, Any]:
    """One telemetry block for a data-parallel run from the blocks of its ranks (one GPU each).

    Power and energy add up; temperatures take the maximum; clocks and utilisation average; throttle
    shares take each reason's maximum over GPUs (the slowest GPU sets the pace). `per_gpu` keeps the blocks
    without their series; `gpu_names` lists the models (more than one name means mixed GPUs).
    """
    good = [b for b in blocks if usable(b)]
    if not good:
        reasons = sorted({b.get("reason", "no telemetry") for b in blocks if b})
        return {"available": False, "reason": "; ".join(reasons) or "no telemetry from any rank"}

    def values(key: str) -> list[float]:
        return [b[key] for b in good if b.get(key) is not None]

    def total(key: str) -> float | None:
        vals = values(key)
        return sum(vals) if len(vals) == len(good) else None

    def mean(key: str) -> float | None:
        vals = values(key)
        return sum(vals) / len(vals) if vals else None

    reasons: dict[str, float] = {}
    for b in good:
        for name, share in (b.get("throttle_reasons") or {}).items():
            reasons[name] = max(share, reasons.get(name, 0.0))
    methods = {b.get("energy_method") for b in good}
    names = sorted({(b.get("gpu") or {}).get("name") for b in good if (b.get("gpu") or {}).get("name")})
    return {
        "available": True,
        "source": good[0].get("source"),
        "num_gpus": len(good),
        "missing_gpus": len(blocks) - len(good),
        "sample_interval_s": good[0].get("sample_interval_s"),
        "num_samples": min(values("num_samples"), default=0),
        "duration_s": max(values("duration_s"), default=None),
        "power_mean_w": total("power_mean_w"),
        "power_max_w": total("power_max_w"),
        "energy_j": total("energy_j"),
        "energy_method": methods.pop() if len(methods) == 1 else "mixed",
        "temperature_max_c": max(values("temperature_max_c"), default=None),
        "temperature_start_c": max(values("temperature_start_c"), default=None),
        "sm_clock_mean_mhz": mean("sm_clock_mean_mhz"),
        "gpu_utilization_mean_pct": mean("gpu_utilization_mean_pct"),
        "throttle_reasons": reasons,
        "throttle_share": max(values("throttle_share"), default=None),
        "power_limit_w": min(values("power_limit_w"), default=None),
        "default_power_limit_w": min(values("default_power_limit_w"), default=None),
        "pcie_link_width_min": min(values("pcie_link_width_min"), default=None),
        "pcie_link_width_max": min(values("pcie_link_width_max"), default=None),
        "pcie_link_gen_min": min(values("pcie_link_gen_min"), default=None),
        "pcie_link_gen_max": min(values("pcie_link_gen_max"), default=None),
        "other_processes": sorted({p for b in good for p in (b.get("other_processes") or [])}),
        "gpu_names": names,
        "per_gpu": [{k: v for k, v in b.items() if k != "series"} for b in good],
    }


def result_efficiency(result: dict[str, Any]) -> dict[str, Any]:
    """`efficiency()` for a result of the result document: the run table's perf/W and throttled columns.

    The measured time is the sum of the measured step times over all repeats (the window the sampler saw).
    """
    measured = sum(sum(r.get("step_times_s") or []) for r in result.get("repeats") or []) or None
    return efficiency(result.get("telemetry"), result.get("samples_per_s"), measured)
