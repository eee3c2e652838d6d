"""Schema-valid result documents (issue 2, "Output") for the store tests, without the runner.

Step times are random (seeded), so that a round trip through the database is checked on values with all
their digits, not on round numbers.
"""

from __future__ import annotations

import random
import statistics
import uuid
from typing import Any


def environment(gpu_name: str | None = "NVIDIA H100 80GB HBM3", gpu_count: int = 1,
                hostname: str = "node1") -> dict[str, Any]:
    gpus = [] if gpu_name is None else [
        {"name": gpu_name, "memory_bytes": 85_520_809_984, "compute_capability": "9.0",
         "multiprocessor_count": 132} for _ in range(gpu_count)]
    return {"hostname": hostname, "os": "Linux-6.1-x86_64", "python_version": "3.11.7",
            "torch_version": "2.14.1", "cuda_version": "12.8", "cudnn_version": 91002,
            "nccl_version": [2, 27, 3], "driver_version": "570.133.20", "cpu_model": "Test CPU", "cpu_count": 2,
            "memory_bytes": 8_000_000_000, "gpus": gpus, "git_commit": None}


def result(workload: str = "resnet50", precision: str = "tf32", compile: str = "off", batch_size: int = 64,
           seq_len: int | None = None, steps: int = 20, repeats: int = 3, status: str = "ok",
           seed: int = 0) -> dict[str, Any]:
    """One result; `status` other than "ok" gives a failed result with null measurements."""
    base = {"workload": workload, "precision": precision, "compile": compile, "batch_size": batch_size,
            "seq_len": seq_len, "device": "cuda:0", "world_size": 1, "status": status, "error": None,
            "flavour": "full", "unit": "images" if workload == "resnet50" else "sequences"}
    if status != "ok":
        return {**base, "error": f"simulated {status}", "samples_per_s": None, "samples_per_s_repeats": [],
                "cv": None, "step_time_s": None, "warmup_step_times_s": [], "repeats": [],
                "compile_time_s": None, "peak_memory_bytes": None, "flops_per_sample": None,
                "achieved_flops_per_s": None, "start_temperature_c": None}
    rng = random.Random(seed)
    reps = [[rng.uniform(0.09, 0.11) for _ in range(steps)] for _ in range(repeats)]
    tputs = [batch_size * len(r) / sum(r) for r in reps]
    flat = sorted(t for r in reps for t in r)
    mean = statistics.fmean(tputs)
    return {**base,
            "samples_per_s": mean, "samples_per_s_repeats": tputs,
            "cv": statistics.pstdev(tputs) / mean if repeats > 1 else None,
            "step_time_s": {"mean": statistics.fmean(flat), "median": statistics.median(flat),
                            "p5": flat[int(0.05 * (len(flat) - 1))], "p95": flat[int(0.95 * (len(flat) - 1))]},
            "warmup_step_times_s": [rng.uniform(0.1, 0.5) for _ in range(3)],
            "repeats": [{"step_times_s": r} for r in reps],
            "compile_time_s": None if compile == "off" else rng.uniform(20, 60),
            "peak_memory_bytes": 30_123_456_789, "flops_per_sample": 24.3e9,
            "achieved_flops_per_s": mean * 24.3e9, "start_temperature_c": 41.0}


def document(results: list[dict[str, Any]] | None = None, env: dict[str, Any] | None = None,
             run_id: str | None = None, created_at: str = "2026-11-22T04:00:00Z") -> dict[str, Any]:
    if results is None:
        results = [result(seed=1), result(workload="bert-base-squad", seq_len=384, batch_size=32, seed=2),
                   result(workload="bert-large-squad", seq_len=384, status="oom")]
    return {"schema_version": 1, "run_id": run_id or uuid.uuid4().hex, "created_at": created_at,
            "dlbench_version": "0.1.0", "environment": env if env is not None else environment(),
            "results": results}
