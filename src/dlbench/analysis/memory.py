"""GPU memory needed to train a model of N parameters: `dlbench advise --model-params 1.3e9`.

Formula (bytes), for every dlbench precision (fp32, tf32, amp-fp16, amp-bf16) with AdamW:

    model states = N x (4 weights + 4 gradients + 8 AdamW moments m and v) = 16 x N
    needed       = model states x (1 + activation allowance)

Why 16 bytes for mixed precision too: PyTorch autocast keeps fp32 weights and fp32 gradients and casts per
operation, so the states are those of fp32 training. (Frameworks that keep fp16 weights plus an fp32 master copy
land on the same 16 bytes: 2 + 2 + 12, ZeRO paper, Rajbhandari et al. 2020, section 3.1.)

Activations depend on batch size, sequence length and architecture, not on the parameter count, so they cannot
be derived from N: the allowance (default 25% of the model states) is dlbench's assumption, not a measurement;
pass another `activation_fraction` for your case, or measure with `dlbench run` (peak memory is recorded).

Without a model size, the seed's rule of thumb applies (Tim Dettmers, seed 001): "at least 12 GB for image
generation; at least 24 GB for work with transformers".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from dlbench.errors import BadInput

# GPU memory sizes are binary as vendors state them (a "24 GB" card has 24 GiB): "GB" of memory means GiB here.
GIB = 2**30
WEIGHT_BYTES = 4.0
GRADIENT_BYTES = 4.0
ADAMW_STATE_BYTES = 8.0  # two fp32 moments (m, v) per parameter
BYTES_PER_PARAM = WEIGHT_BYTES + GRADIENT_BYTES + ADAMW_STATE_BYTES
# dlbench's assumption (see module docstring): activations as a fraction of the model states.
DEFAULT_ACTIVATION_FRACTION = 0.25

# Seed 001 (Tim Dettmers), "GPU Deep Learning Performance per Dollar", step 1 of how to use the chart.
RULES_OF_THUMB: tuple[dict, ...] = (
    {"use": "image generation", "min_memory_bytes": 12 * GIB,
     "quote": "at least 12 GB for image generation", "source": "Tim Dettmers, Which GPU(s) to Get for Deep "
     "Learning (2023-01-30), seed 001"},
    {"use": "transformers", "min_memory_bytes": 24 * GIB,
     "quote": "at least 24 GB for work with transformers", "source": "Tim Dettmers, Which GPU(s) to Get for "
     "Deep Learning (2023-01-30), seed 001"},
)

FORMULA = ("memory = params x 16 B (4 weights + 4 gradients + 8 AdamW m,v) x (1 + activation allowance "
           "{fraction:.0%})")


@dataclass(frozen=True)
class MemoryNeed:
    """Memory to train `params` parameters with AdamW, split into its parts."""

    params: float
    precision: str
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activation_bytes: float
    activation_fraction: float
    total_bytes: float
    formula: str

    def to_dict(self) -> dict:
        return asdict(self)


def training_memory(params: float, precision: str = "amp-bf16",
                    activation_fraction: float = DEFAULT_ACTIVATION_FRACTION) -> MemoryNeed:
    """Bytes needed to train `params` parameters at `precision` (same formula for all dlbench precisions)."""
    if not math.isfinite(params) or params <= 0:
        raise BadInput(f"model parameters must be a positive number (e.g. 1.3e9), got {params:g}")
    if not math.isfinite(activation_fraction) or activation_fraction < 0:
        raise BadInput(f"activation allowance must be zero or positive, got {activation_fraction:g}")
    weights, grads, optim = params * WEIGHT_BYTES, params * GRADIENT_BYTES, params * ADAMW_STATE_BYTES
    states = weights + grads + optim
    acts = states * activation_fraction
    return MemoryNeed(params=params, precision=precision, weights_bytes=weights, gradients_bytes=grads,
                      optimizer_bytes=optim, activation_bytes=acts, activation_fraction=activation_fraction,
                      total_bytes=states + acts, formula=FORMULA.format(fraction=activation_fraction))


def rules_of_thumb() -> list[dict]:
    """The seed's memory rules of thumb (copies, safe to modify)."""
    return [dict(r) for r in RULES_OF_THUMB]
