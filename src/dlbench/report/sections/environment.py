"""The environment table: each run's host, GPUs, driver and software versions; for many runs, each value once."""

from __future__ import annotations

from typing import Any

from dlbench.report import fmt
from dlbench.report.sections.header import FACT_RUNS_MAX, counted

_ENV_FIELDS = (
    ("Host", "hostname"), ("GPUs", None), ("NVIDIA driver", "driver_version"), ("CUDA", "cuda_version"),
    ("cuDNN", "cudnn_version"), ("NCCL", "nccl_version"), ("PyTorch", "torch_version"), ("Python", "python_version"),
    ("OS", "os"), ("CPU", "cpu_model"), ("CPU cores", "cpu_count"), ("Memory", "memory_bytes"),
    ("git commit", "git_commit"),
)
_ROCM_ENV_FIELDS = (("MIOpen", "miopen_version"), ("ROCm (HIP)", "hip_version"))


def environment_table(documents, runs) -> dict[str, Any]:
    """Rows of (label, one value per run) for the environment table."""
    rows = [("Run", [r["run_id"] or fmt.DASH for r in runs]), ("Created", [r["created_at"] or fmt.DASH for r in runs]),
            ("dlbench", [fmt.plain(d.get("dlbench_version")) for d in documents])]
    for label, key in _ENV_FIELDS:
        values = []
        for doc, run in zip(documents, runs, strict=True):
            env = doc.get("environment") or {}
            if key is None:
                values.append(run["gpus"])
            elif key == "memory_bytes":
                values.append(fmt.gigabytes(env.get(key)))
            else:
                values.append(fmt.plain(env.get(key)))
        rows.append((label, values))
    from dlbench.analysis.compare import power_limits_w

    limits = [", ".join(f"{w:g} W" for w in power_limits_w(doc)) or fmt.DASH for doc in documents]
    if any(v != fmt.DASH for v in limits):
        rows.insert(5, ("GPU power limit", limits))
    for label, key in _ROCM_ENV_FIELDS:  # only where some run was on a ROCm build of torch
        values = [fmt.plain((doc.get("environment") or {}).get(key)) for doc in documents]
        if any(v != fmt.DASH for v in values):
            rows.insert([r[0] for r in rows].index("cuDNN") + 1, (label, values))
    # A fact no run recorded (a CPU run's NVIDIA driver, a ROCm run's cuDNN, a run outside git) is a row of dashes:
    # left out.
    rows = [(label, values) for label, values in rows if any(v != fmt.DASH for v in values)]
    if len(runs) <= FACT_RUNS_MAX:
        return {"headers": [r["short"] for r in runs], "rows": rows}
    # Many runs (a fleet): one column, each value once with the runs that have it; a value few runs have names them.
    tags = [r["tag"] for r in runs]
    unique = {"Run", "Host"}
    return {"headers": [f"{len(runs)} runs"],
            "rows": [(label, [f"{len(set(values))} different" if label in unique else counted(values, tags)])
                     for label, values in rows]}
