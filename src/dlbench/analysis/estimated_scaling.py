"""Multi-GPU scaling for estimates: `dlbench estimate --gpu "RTX 4090" --workload resnet50 --precision tf32 --gpus 4`.

Data-parallel throughput of N identical GPUs = one GPU x (1 + f x (N - 1)), with `f` what each added GPU adds.
Nothing here imports torch.
"""

from __future__ import annotations

import re
import statistics

from dlbench.analysis.points import _match, gpu_name

# Per-added-GPU scaling factors (low, typical, high) reported by the seeds, for data-parallel training.
# Seed 000 (AIME, "Deep Learning GPU Benchmarks"): RTX 6000 Ada and other pro GPUs with peer-to-peer PCIe
# "around 0.94 to 0.95"; RTX 5090 (P2P disabled, PCIe 5.0) "between 0.91 and 0.97"; RTX 4090 "only 0.62 to 0.75".
# Seed 003 (AIME, "PyTorch 2 GPU Performance Benchmarks"): A100, RTX 6000 Ada, RTX 5000 "between 0.9 and 0.95".
SCALING_PRO_P2P = (0.90, 0.94, 0.95)
SCALING_RTX_4090 = (0.62, 0.685, 0.75)
SCALING_RTX_5090 = (0.91, 0.94, 0.97)
SCALING_UNKNOWN = (0.62, 0.80, 0.97)  # every figure the seeds report, for GPUs they do not cover
# One machine: the published multi-GPU results (Lambda's 2x/4x/8x servers) and the seeds' factors stop at 8
# GPUs; beyond that, inter-node networking decides, which nothing here models.
MAX_GPUS = 8
SCALING_SOURCES = {
    "pro": "seed 000 (RTX 6000 Ada, pro GPUs with P2P: 0.94-0.95) and seed 003 (A100, RTX 6000 Ada: 0.90-0.95)",
    "4090": "seed 000 (RTX 4090: 0.62-0.75 for the second GPU)",
    "5090": "seed 000 (RTX 5090, PCIe 5.0 without P2P: 0.91-0.97)",
}


def _is_geforce(spec) -> bool:
    """GeForce cards are the NVIDIA ones that run FP16 with FP32 accumulation at half rate (catalogue flag)."""
    return bool(getattr(spec, "half_rate_fp32_accumulate", None))


def _factors(triple: tuple[float, float, float], source: str) -> dict:
    lo, mid, hi = triple
    return {"low": lo, "typical": mid, "high": hi, "source": source}


def scaling_factor(spec) -> dict:
    """Per-added-GPU scaling factor for data-parallel training: {low, typical, high, source}.

    The seeds' own GPUs first (RTX 4090, RTX 5090), then by family: other GeForce Ada cards as the RTX 4090
    (P2P disabled too), other GeForce Blackwell as the RTX 5090, pro and data-centre NVIDIA cards with P2P as the
    seeds' pro cards; anything else gets the whole range the seeds report, and says so.
    """
    name = gpu_name(spec).lower()
    arch = (getattr(spec, "architecture", None) or "").lower()
    vendor = (getattr(spec, "vendor", None) or "").lower()
    if _is_geforce(spec):
        if re.search(r"\b4090\b", name):
            return _factors(SCALING_RTX_4090, SCALING_SOURCES["4090"])
        if re.search(r"\b5090\b", name):
            return _factors(SCALING_RTX_5090, SCALING_SOURCES["5090"])
        if "ada" in arch:
            return _factors(SCALING_RTX_4090, "assumed like the RTX 4090 (GeForce Ada, no P2P): "
                            + SCALING_SOURCES["4090"])
        if "blackwell" in arch:
            return _factors(SCALING_RTX_5090, "assumed like the RTX 5090 (GeForce Blackwell): "
                            + SCALING_SOURCES["5090"])
        return _factors(SCALING_UNKNOWN, "no seed figure for this GPU: the band spans every seed figure "
                                         "(0.62-0.97)")
    if vendor == "nvidia" and getattr(spec, "p2p", None):
        return _factors(SCALING_PRO_P2P, SCALING_SOURCES["pro"])
    return _factors(SCALING_UNKNOWN, "no seed figure for this GPU: the band spans every seed figure (0.62-0.97)")


def published_scaling(gpu: str, workload: str, precision: str) -> dict | None:
    """Per-added-GPU factors implied by published multi-GPU rows for this GPU, workload and precision.

    A factor above 1.05 (super-linear: a different batch size or a broken row) is not used.
    """
    ones = _match(None, gpu, workload, precision, 1)
    if not ones:
        return None
    base = statistics.median(p.samples_per_s for p in ones)
    effs = []
    for n in range(2, 65):
        rows = _match(None, gpu, workload, precision, n)
        if rows:
            eff = (statistics.median(p.samples_per_s for p in rows) / base - 1.0) / (n - 1)
            if 0 < eff <= 1.05:
                effs.append((n, eff))
    if not effs:
        return None
    vals = [e for _, e in effs]
    counts = ", ".join(str(n) for n, _ in effs)
    return {"low": min(vals), "typical": statistics.median(vals), "high": max(vals),
            "source": f"published {gpu} {workload} {precision} results on {counts} GPUs vs 1"}


def scaling_for(spec, workload: str, precision: str, spec_only: bool = False) -> dict:
    """The seeds' factor for this GPU, with published scaling for it taking the typical value when there is some.

    The band spans both, since a published factor comes from one system and the seeds' from another.
    """
    seed = scaling_factor(spec)
    found = None if spec_only else published_scaling(gpu_name(spec), workload, precision)
    if not found:
        return seed
    return {"low": min(found["low"], seed["low"]), "typical": found["typical"],
            "high": max(found["high"], seed["high"]),
            "source": f"{found['source']} ({found['typical']:.2f} per added GPU); band with {seed['source']}"}


def scale(samples_per_s: float, num_gpus: int, factor: float) -> float:
    """Throughput of `num_gpus` GPUs when each added GPU adds `factor` of one GPU."""
    return samples_per_s * (1.0 + factor * (num_gpus - 1))
