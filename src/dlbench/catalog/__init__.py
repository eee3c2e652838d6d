"""The GPU catalogue: a packaged data file (`gpus.csv`, one row per GPU, a source per row) and name lookup.

Exercise it with `dlbench gpus` and `dlbench gpus show NAME`. Importing the package reads nothing; the data
file is loaded on the first lookup and cached.

    from dlbench.catalog import lookup, peak_flops_per_s
    spec = lookup("NVIDIA H100 80GB HBM3")          # GpuSpec "H100 SXM5 80GB", SI units
    peak_flops_per_s(spec, "amp-bf16")              # 9.894e14 (dense, FP32 accumulate)
"""

from dlbench.catalog.lookup import (
    all_gpus,
    candidates,
    canonical_name,
    close_matches,
    lookup,
    normalize,
    peak_flops_per_s,
    resolve,
)
from dlbench.catalog.spec import FORM_FACTORS, GpuSpec

__all__ = [
    "FORM_FACTORS",
    "GpuSpec",
    "all_gpus",
    "candidates",
    "canonical_name",
    "close_matches",
    "lookup",
    "normalize",
    "peak_flops_per_s",
    "resolve",
]
