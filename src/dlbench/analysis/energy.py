"""Energy efficiency from a result's telemetry: what the run table's perf/W and "throttled" columns show.

    from dlbench.analysis.energy import efficiency
    eff = efficiency(result["telemetry"], result["samples_per_s"], measured_time_s)
    eff["samples_per_s_per_w"], eff["energy_per_sample_j"], eff["throttled"]

No torch here. Inputs are the `telemetry` block of `dlbench.telemetry.sampler` (one GPU), or the block that
`combine_ranks()` makes from the blocks of every rank of a data-parallel run (totals over the GPUs, and each
GPU's own block under `per_gpu`).
"""

from __future__ import annotations

from typing import Any

from dlbench.schema.metrics import throughput

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
    """Mean power over the measured window: energy / duration where both exist, else the sampled mean.

    A group's is the sum of its GPUs' (each over its own window), or None unless every GPU has one."""
    gpus = gpus_of(telemetry)
    if gpus:
        powers = [average_power_w(g) if usable(g) else None for g in gpus]
        return sum(powers) if all(p is not None for p in powers) else None
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


def throttle_kind_shares(telemetry: dict[str, Any] | None) -> dict[str, float]:
    """{"thermal" / "power" / "hardware": the largest share of samples one of its reasons held the clocks down},
    in that order, for the kinds seen at all."""
    if not usable(telemetry):
        return {}
    shares = throttle_shares(telemetry)
    kinds = {kind: max((shares.get(r, 0.0) for r in reasons), default=0.0)
             for kind, reasons in (("thermal", _THERMAL), ("power", _POWER), ("hardware", ("hw_slowdown",)))}
    return {kind: share for kind, share in kinds.items() if share > 0}


def throttle_kind(telemetry: dict[str, Any] | None, threshold: float = THROTTLED_SHARE) -> list[str]:
    """"thermal" and/or "power" when those reasons reached `threshold` of the samples; "hardware" for hw_slowdown."""
    return [kind for kind, share in throttle_kind_shares(telemetry).items() if share >= threshold]


def efficiency(telemetry: dict[str, Any] | None, samples_per_s: float | None,
               measured_time_s: float | None = None, world_size: int | None = 1) -> dict[str, Any]:
    """Derived energy figures for one result.

    `samples_per_s` is the result's throughput (all ranks together for a data-parallel run, in which case
    `telemetry` should be `combine_ranks()` of the ranks' blocks); `measured_time_s` the summed measured step
    time, used for the energy of the measured steps and to warn when telemetry covered too little of it.
    Returns `energy_per_sample_j`, `samples_per_s_per_w`, `average_power_w`, `energy_measured_j`,
    `throttled`, `throttle_kind`, `throttled_gpus` (a group's throttled GPUs, named by `gpu_label`),
    `warnings`; figures are None when they cannot be known. `world_size` is the result's GPU count: a
    data-parallel result whose telemetry is one GPU's block (`rank0_only`) gets no power or energy figures.
    """
    out: dict[str, Any] = {"energy_per_sample_j": None, "samples_per_s_per_w": None, "average_power_w": None,
                           "energy_measured_j": None, "throttled": None, "throttle_kind": [],
                           "throttled_gpus": [], "warnings": []}
    if not usable(telemetry):
        return out
    power = average_power_w(telemetry)
    if rank0_only(telemetry, world_size):
        # One GPU's watts against the whole group's samples/s would overstate samples/s per W world_size times.
        power = None
        out["warnings"].append(f"telemetry of rank 0's GPU only (1 of {world_size} GPUs): no power or energy "
                               "figures for the group")
    out["average_power_w"] = power
    out["throttled"] = is_throttled(telemetry)
    out["throttle_kind"] = throttle_kind(telemetry)
    out["throttled_gpus"] = [gpu_label(g) for g in throttled_gpus(telemetry)]
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


def gpu_label(gpu: dict[str, Any], home_host: str | None = None, position: int | None = None) -> str:
    """How a GPU of a group is named to the user: `GPU 3 on nodeA`, plus `(rank 11)` where the rank differs
    from the device index (every node after the first).

    The index is the block's `device_index`, else its sampler's `gpu.cuda_index` (a group block written before
    blocks carried their identity), else the GPU is named by its rank (`position` in the group when even that
    is missing). `home_host`: the host of the run being shown ("a+b" for several), whose GPUs need no
    "on <host>".
    """
    index, host, rank = gpu.get("device_index"), gpu.get("hostname"), gpu.get("rank")
    if index is None:
        index = (gpu.get("gpu") or {}).get("cuda_index")
    where = f" on {host}" if host and not (home_host and host in home_host.split("+")) else ""
    if index is None:
        return f"rank {rank if rank is not None else position}{where}"
    return f"GPU {index}{where}" + (f" (rank {rank})" if rank is not None and rank != index else "")


def _device_index(block: dict[str, Any], rank: dict[str, Any]) -> int | None:
    cuda = (block.get("gpu") or {}).get("cuda_index")
    if cuda is not None:
        return cuda
    device = str(rank.get("device") or "")
    if ":" in device and device.split(":", 1)[1].isdigit():
        return int(device.split(":", 1)[1])
    return rank.get("local_rank") if device.startswith(("cuda", "gpu")) else None


def _identity(i: int, block: dict[str, Any], rank: dict[str, Any]) -> dict[str, Any]:
    """Which GPU a per-rank block describes: rank, node, host, device index, UUID and model."""
    gpu = block.get("gpu") or {}
    return {"rank": rank.get("rank", i), "node_rank": rank.get("node_rank"), "hostname": rank.get("hostname"),
            "device": rank.get("device"), "device_index": _device_index(block, rank),
            "uuid": gpu.get("uuid") or rank.get("gpu_uuid"), "name": gpu.get("name") or rank.get("gpu_name")}


def combine_ranks(blocks: list[dict[str, Any] | None], ranks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One telemetry block for a data-parallel group from the blocks of its ranks (one GPU each).

    `ranks[i]` says where block i was sampled, in the form of a result's `ranks` entries (`rank`, `local_rank`,
    `node_rank`, `hostname`, `device`, `gpu_name`, `gpu_uuid`); default: rank i. A missing block (None) counts
    as a GPU without telemetry.

    Power and energy add up over the GPUs (null unless every GPU of the group reported them: a partial sum is
    not the group's); temperatures take the maximum; clocks and utilisation average; each throttle reason takes
    its largest share over the GPUs and `throttle_reason_ranks` lists the ranks that saw it (the slowest GPU
    sets the pace). `per_gpu` holds every GPU's own block (with its `series`, as thinned by the runner:
    `telemetry.series`) under its identity (`rank`, `node_rank`, `hostname`, `device`, `device_index`, `uuid`,
    `name`); a GPU without sensors is there with `available: false` and its `reason`. Only when no GPU has telemetry is the result unavailable, with the
    reasons.
    """
    ranks = list(ranks) if ranks is not None else [{} for _ in blocks]
    per_gpu = []
    for i, (block, rank) in enumerate(zip(blocks, ranks, strict=True)):
        block = block if isinstance(block, dict) else {"available": False, "reason": "no telemetry sampler"}
        per_gpu.append({**_identity(i, block, rank or {}), **block})
    good = [g for g in per_gpu if usable(g)]
    if not good:
        reasons = list(dict.fromkeys(g.get("reason") or "no telemetry" for g in per_gpu))
        return {"available": False, "reason": "; ".join(reasons) or "no telemetry from any rank"}

    def values(key: str) -> list[float]:
        return [g[key] for g in good if g.get(key) is not None]

    def total(key: str) -> float | None:
        vals = values(key)
        return sum(vals) if len(vals) == len(per_gpu) else None

    def mean(key: str) -> float | None:
        vals = values(key)
        return sum(vals) / len(vals) if vals else None

    reasons: dict[str, float] = {}
    reason_ranks: dict[str, list[int]] = {}
    for g in good:
        for name, share in (g.get("throttle_reasons") or {}).items():
            reasons[name] = max(share, reasons.get(name, 0.0))
            if share > 0:
                reason_ranks.setdefault(name, []).append(g["rank"])
    reported = [g for g in good if g.get("throttle_reasons") is not None]
    methods = {g.get("energy_method") for g in good}
    readings = {g.get("power_reading") for g in good}
    names = sorted({g["name"] for g in good if g.get("name")})
    return {
        "available": True,
        "source": good[0].get("source"),
        "num_gpus": len(per_gpu),
        "missing_gpus": len(per_gpu) - len(good),
        "sample_interval_s": good[0].get("sample_interval_s"),
        "num_samples": min(values("num_samples"), default=0),
        "duration_s": max(values("duration_s"), default=None),
        "power_mean_w": total("power_mean_w"),
        "power_max_w": total("power_max_w"),  # the sum of each GPU's peak: an upper bound of the group's peak
        "energy_j": total("energy_j"),
        "energy_method": methods.pop() if len(methods) == 1 else "mixed",
        "energy_integrated_j": total("energy_integrated_j"),
        "power_reading": readings.pop() if len(readings) == 1 else "mixed",
        "temperature_start_c": max(values("temperature_start_c"), default=None),
        "temperature_max_c": max(values("temperature_max_c"), default=None),
        "temperature_mean_c": mean("temperature_mean_c"),
        "sm_clock_mean_mhz": mean("sm_clock_mean_mhz"),
        "sm_clock_min_mhz": min(values("sm_clock_min_mhz"), default=None),
        "mem_clock_mean_mhz": mean("mem_clock_mean_mhz"),
        "gpu_utilization_mean_pct": mean("gpu_utilization_mean_pct"),
        "throttle_reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))) if reported else None,
        "throttle_reason_ranks": reason_ranks,
        "throttle_share": max(values("throttle_share"), default=None),
        "power_limit_w": min(values("power_limit_w"), default=None),
        "default_power_limit_w": min(values("default_power_limit_w"), default=None),
        "pcie_link_gen_min": min(values("pcie_link_gen_min"), default=None),
        "pcie_link_width_min": min(values("pcie_link_width_min"), default=None),
        "pcie_link_gen_max": min(values("pcie_link_gen_max"), default=None),
        "pcie_link_width_max": min(values("pcie_link_width_max"), default=None),
        "fan_speed_max_pct": max(values("fan_speed_max_pct"), default=None),
        "other_processes": sorted({p for g in good for p in (g.get("other_processes") or [])}),
        "gpu_names": names,
        "per_gpu": per_gpu,
    }


def is_group(telemetry: dict[str, Any] | None) -> bool:
    """True for the block of a data-parallel group (`combine_ranks`), which lists its GPUs under `per_gpu`."""
    return isinstance(telemetry, dict) and isinstance(telemetry.get("per_gpu"), list)


def rank0_only(telemetry: dict[str, Any] | None, world_size: int | None) -> bool:
    """A data-parallel result whose telemetry is a single GPU's block, not its group's: documents written before
    every rank sampled its own GPU (commit 7d93fa1) hold rank 0's block only. Its power and energy are one
    GPU's, not the group's."""
    return (world_size or 1) > 1 and usable(telemetry) and not is_group(telemetry)


def gpus_of(telemetry: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The per-GPU blocks of a group's telemetry (empty for a one-GPU block)."""
    return [g for g in telemetry.get("per_gpu") or [] if isinstance(g, dict)] if is_group(telemetry) else []


def throttled_gpus(telemetry: dict[str, Any] | None, threshold: float = THROTTLED_SHARE) -> list[dict[str, Any]]:
    """The GPUs of a group that power or temperature slowed in at least `threshold` of their samples."""
    return [g for g in gpus_of(telemetry) if is_throttled(g, threshold)]


def result_efficiency(result: dict[str, Any]) -> dict[str, Any]:
    """`efficiency()` for a result of the result document: the run table's perf/W and throttled columns.

    The measured time is the sum of the measured step times over all repeats (the window the sampler saw).
    """
    measured = sum(sum(r.get("step_times_s") or []) for r in result.get("repeats") or []) or None
    return efficiency(result.get("telemetry"), throughput(result), measured, result.get("world_size"))
