"""FLOPs per trained sample, counted once per (workload, flavour, sequence length) on the meta device.

Exercise it with `PYTHONPATH=src python -c "from dlbench.runner.flops import flops_per_sample as f;
print(f('bert-large-mlm', 'full', 128) / 1e9)"` (prints about 240).

`torch.utils.flop_counter.FlopCounterMode` counts the matrix products, convolutions and attention of one
forward and backward pass; elementwise ops, normalisation and the optimizer step are not counted (they are
a few percent at most and are memory-bound). A multiply-add is two FLOPs. The model and a batch of 2 are
built on the `meta` device: shapes only, no memory and no arithmetic, so BERT-large takes about a second.
The count is the same for every precision and device; MFU = samples/s x FLOPs per sample / (GPUs x dense
peak FLOP/s of the precision).
"""

from __future__ import annotations

import functools
from typing import Any

COUNT_BATCH = 2


def count_training_flops(workload: Any, config: Any, batch_size: int = COUNT_BATCH) -> float:
    """Forward + backward FLOPs of one step of `batch_size` samples, counted on the meta device."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        model = workload.build_model(config)
    model.train()
    inputs = workload.make_inputs(config, batch_size, None, device="meta")
    with FlopCounterMode(display=False) as counter:
        loss = model(*inputs)
        loss.backward()
    return float(counter.get_total_flops())


@functools.lru_cache(maxsize=64)
def flops_per_sample(workload_name: str, flavour: str = "full", seq_len: int | None = None) -> float:
    """Training FLOPs per sample (forward + backward) of a registered workload; cached per process."""
    from dlbench.runner.config import RunConfig
    from dlbench.workloads import registry

    workload = registry.get(workload_name)
    config = RunConfig(workload=workload_name, flavour=flavour, seq_len=seq_len, device="meta")
    return count_training_flops(workload, config) / COUNT_BATCH
