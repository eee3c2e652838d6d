"""FLOP counting on the meta device: shapes only, no memory and no arithmetic.

Exercise it with `PYTHONPATH=src python -c "from dlbench.scenarios.train import flops_per_sample as f;
print(f('bert-large-mlm', 'full', 128) / 1e9)"` (prints about 240: training FLOPs per sample).

`torch.utils.flop_counter.FlopCounterMode` counts the matrix products, convolutions and attention of what runs
under it; elementwise ops, normalisation and an optimizer step are not counted (they are a few percent at most
and are memory-bound). A multiply-add is two FLOPs. A scenario builds its model and a batch of `COUNT_BATCH` on
the `meta` device and counts what its step computes (training: forward and backward), so BERT-large takes
about a second. The count is the same for every precision and device; MFU = samples/s x FLOPs per sample /
(GPUs x dense peak FLOP/s of the precision).
"""

from __future__ import annotations

from collections.abc import Callable

COUNT_BATCH = 2


def count_flops(run: Callable[[], object]) -> float:
    """FLOPs of what `run()` computes (call it with meta tensors: nothing is allocated or computed)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        run()
    return float(counter.get_total_flops())
