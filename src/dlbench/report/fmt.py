"""Display formatting at the edge: SI values in, short human strings out (`dlbench report` and tables).

Values inside dlbench are SI (seconds, bytes, FLOP/s, samples/s); only these functions turn them into
milliseconds, GB or TFLOP/s for people to read. None always prints as an em dash.
"""

from __future__ import annotations

import re
from typing import Any

from dlbench.analysis.configuration import compile_name  # noqa: F401 - the one wording, shown here too

DASH = "\u2014"

# Display names for the dlbench precision and workload identifiers.
PRECISION_NAMES = {"fp32": "FP32", "tf32": "TF32", "amp-fp16": "AMP FP16", "amp-bf16": "AMP BF16"}
WORKLOAD_NAMES = {
    "resnet50": "ResNet-50 v1.5",
    "bert-base-squad": "BERT base (SQuAD)",
    "bert-large-squad": "BERT large (SQuAD)",
    "bert-base-mlm": "BERT base (MLM)",
    "bert-large-mlm": "BERT large (MLM)",
}


def natural_key(name: str) -> list[Any]:
    """Sort key that orders numbered names as people count them: node2 before node10, GPU-a before gpu-b."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", name)]


def unit_of(result: dict[str, Any]) -> str:
    """"images" or "sequences": the result's `unit`, else inferred from the workload family."""
    if result.get("unit"):
        return str(result["unit"])
    return "images" if str(result.get("workload", "")).startswith("resnet") else "sequences"


def workload_name(workload: str, seq_len: int | None = None) -> str:
    name = WORKLOAD_NAMES.get(workload, workload)
    return f"{name}, seq {seq_len}" if seq_len else name


def precision_name(precision: str) -> str:
    return PRECISION_NAMES.get(precision, precision)


def throughput(value: float | None, scale: float | None = None) -> str:
    """Samples/s with three significant figures; `scale` (the largest of the values shown together, as on one
    chart's bars) sets the decimals for all of them, so that 523 and 57 stand side by side, not 523 and 57.0."""
    if value is None:
        return DASH
    size = value if scale is None else max(scale, value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def ms(seconds: float | None) -> str:
    if seconds is None:
        return DASH
    value = seconds * 1e3
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def percent(fraction: float | None, signed: bool = False) -> str:
    if fraction is None:
        return DASH
    digits = 2 if abs(fraction) < 0.01 else 1  # a CV of 0.04% should not print as 0.0%
    return f"{fraction * 100:+.{digits}f}%" if signed else f"{fraction * 100:.{digits}f}%"


def gigabytes(n_bytes: float | None) -> str:
    return DASH if n_bytes is None else f"{n_bytes / 1e9:.1f} GB"


def tflops(flops_per_s: float | None) -> str:
    """TFLOP/s with enough digits that a CPU's 0.01 does not print as 0.0."""
    if flops_per_s is None:
        return DASH
    value = flops_per_s / 1e12
    if 0 < value < 0.001:
        return "<0.001"
    digits = 1 if value >= 10 else 2 if value >= 1 else 3
    return f"{value:.{digits}f}"


def ratio(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}\u00d7"


def p_value(p: float | None) -> str:
    if p is None:
        return DASH
    return f"{p:.1e}" if p < 1e-3 else f"{p:.3f}"


def plain(value: Any) -> str:
    """Any recorded fact as text; a version recorded as a list (NCCL's (2, 21, 5)) reads 2.21.5."""
    if value is None or value == "":
        return DASH
    if isinstance(value, (list, tuple)):
        return ".".join(str(v) for v in value)
    return str(value)


def vs_published_short(vs: dict[str, Any]) -> str:
    """The "vs published" cell from `analysis.ranking.vs_published`: `0.92×` (same-GPU median), `#4 of 10`
    (rank among published GPUs) or a dash when nothing comparable is published."""
    if vs.get("ratio") is not None:
        return ratio(vs["ratio"])
    if vs.get("rank") is not None:
        return f"#{vs['rank']} of {vs['rank_of']}"
    return DASH
