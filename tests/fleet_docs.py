"""Fleets of result documents for `dlbench fleet` and the report's fleet section: one run per node, with step times
drawn from known distributions and telemetry that says what is wrong with a node (`report_docs` builds each run).
"""

from __future__ import annotations

import zlib

from report_docs import environment, make_document, make_result

STEP_S = 0.100  # a healthy node's step time


def tel(**over):
    """A one-GPU telemetry block of a healthy H100 at full load: power-capped now and then, like all its peers."""
    base = {"available": True, "source": "nvml", "sample_interval_s": 0.1, "num_samples": 300, "duration_s": 30.0,
            "power_mean_w": 690.0, "temperature_max_c": 71.0, "sm_clock_mean_mhz": 1980.0,
            "gpu_utilization_mean_pct": 99.0, "throttle_reasons": {"sw_power_cap": 0.3}, "throttle_share": 0.3,
            "power_limit_w": 700.0, "default_power_limit_w": 700.0, "pcie_link_gen_min": 5,
            "pcie_link_width_min": 16, "pcie_link_gen_max": 5, "pcie_link_width_max": 16, "other_processes": []}
    base.update(over)
    return base


THERMAL = {"throttle_reasons": {"sw_thermal_slowdown": 0.6, "sw_power_cap": 0.3}, "throttle_share": 0.6,
           "temperature_max_c": 91.0, "sm_clock_mean_mhz": 1690.0}


def node(host, step_s=STEP_S, telemetry=None, seed=None, created_at="2026-11-22T04:00:00Z", env=None, **result):
    """One node's run: resnet50 amp-fp16 bs 256 on one H100, step times normal(step_s, 1% of it)."""
    r = make_result(step_time_s=step_s, noise_s=step_s * 0.01, seed=seed if seed is not None else zlib.crc32(host.encode()),
                    telemetry=telemetry if telemetry is not None else tel(), **result)
    return make_document([r], env=environment(hostname=host, **(env or {})), created_at=created_at)


def six_nodes(created_at="2026-11-22T04:00:00Z"):
    """node04 is 10% slower and thermally throttled, node05 2% slower with nothing wrong; node06's link runs x8."""
    when = {"created_at": created_at}
    return [node("node01", seed=1, **when), node("node02", seed=2, **when), node("node03", seed=3, **when),
            node("node04", STEP_S / 0.90, tel(**THERMAL), seed=4, **when),
            node("node05", STEP_S / 0.98, seed=5, **when),
            node("node06", seed=6, telemetry=tel(pcie_link_width_min=8), **when)]


def readme_fleet():
    """The manual's `dlbench fleet` example (docs/multi-gpu.md): six_nodes plus node07 (6% slower, its PCIe link
    at x8) and node08 (another driver)."""
    return [*six_nodes(), node("node07", STEP_S / 0.94, seed=7, telemetry=tel(pcie_link_width_min=8)),
            node("node08", seed=8, env={"driver_version": "550.54.15"})]


def gpu_block(index, host, **over):
    """One GPU of a data-parallel group's `per_gpu`, as branch ddptel names it (device_index, hostname)."""
    return {**tel(**over), "rank": index, "node_rank": 0, "hostname": host, "device": f"cuda:{index}",
            "device_index": index, "name": "NVIDIA H100 80GB HBM3"}


def ddp_node(host, step_s, hot_gpu=None, per_gpu=True, seed=0):
    """One node's 4-GPU data-parallel run; `hot_gpu` throttles thermally, `per_gpu=False` is an older document."""
    blocks = [gpu_block(i, host, **(THERMAL if i == hot_gpu else {})) for i in range(4)]
    group_tel = {**tel(), "num_gpus": 4, "per_gpu": blocks} if per_gpu else tel()
    r = make_result(world_size=4, step_time_s=step_s, noise_s=step_s * 0.01, seed=seed, telemetry=group_tel)
    return make_document([r], env=environment(hostname=host, gpu_count=4))


def large_fleet(count=64):
    """`count` healthy nodes (gpu001, ...) of which gpu007 is thermally throttled (12% slower) and gpu042, if there,
    runs its PCIe link at x4 (7% slower)."""
    faults = {"gpu007": (0.88, tel(**THERMAL)), "gpu042": (0.93, tel(pcie_link_width_min=4))}
    docs = []
    for i in range(1, count + 1):
        host = f"gpu{i:03d}"
        factor, telemetry = faults.get(host, (1.0, tel()))
        docs.append(node(host, STEP_S / factor, telemetry, seed=i))
    return docs


def ddp_result_with_series(num_gpus=8, hot_gpu=None, seed=0, host="dgx01", seconds=5.0, **result):
    """A data-parallel result whose `per_gpu` blocks carry series (`report_docs.telemetry_block`): every GPU
    power-capped now and then (`tel()`); `hot_gpu` also throttles thermally at 91 C, its clock falling."""
    from report_docs import telemetry_block

    blocks = []
    for i in range(num_gpus):
        block = gpu_block(i, host, **(THERMAL if i == hot_gpu else {}))
        series = telemetry_block(seconds=seconds)["series"]
        series["temperature_c"] = [t + i + (20 if i == hot_gpu else 0) for t in series["temperature_c"]]
        block["series"] = series
        blocks.append(block)
    group = {**tel(), "num_gpus": num_gpus, "per_gpu": blocks,
             "throttle_share": max(b["throttle_share"] for b in blocks),
             "temperature_max_c": max(b["temperature_max_c"] for b in blocks)}
    return make_result(world_size=num_gpus, seed=seed, telemetry=group, **result)
