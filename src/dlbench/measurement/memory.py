"""Peak device memory: reset the counters, read the allocated and reserved peaks, say which steps they cover.

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_measure.py -k peak`.

Only CUDA's (and ROCm's) caching allocator keeps peak counters; elsewhere the peaks are None (unknown, not 0).
"""

from __future__ import annotations

from typing import Any

from dlbench.measurement.compile import uses_cuda_graphs


def peak_memory_reset(device: Any) -> None:
    """Reset the allocated and reserved peaks of `device` (CUDA); nothing elsewhere."""
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory(device: Any) -> int | None:
    """Peak bytes allocated by tensors since the reset (CUDA); None where torch has no such counter."""
    import torch

    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return None


def peak_reserved(device: Any) -> int | None:
    """Peak bytes the caching allocator held from the driver since the same reset (CUDA): the allocated peak
    plus the allocator's cached and fragmented blocks, i.e. what another process could not use. None elsewhere."""
    import torch

    if device.type == "cuda":
        return int(torch.cuda.max_memory_reserved(device))
    return None


def peak_memory_scope(compile_mode: str, device_type: str) -> str:
    """Which steps `peak_memory_bytes` and `peak_reserved_bytes` cover: with CUDA graphs the counters are reset
    before the compile steps (graph replays allocate nothing, so only the recording shows what the graphs hold),
    otherwise before the measured steps."""
    if uses_cuda_graphs(compile_mode, device_type):
        return "compile, warm-up and measured steps (CUDA graph replays allocate nothing)"
    if device_type == "mps":  # torch.mps reads current allocations only: no peak counter, nothing to reset
        return "not measured: torch has no peak-memory counter on MPS"
    if device_type != "cuda":  # peak_memory reads CUDA's (and ROCm's) allocator only
        return f"not measured: torch has no peak-memory counter on {device_type}"
    return "measured steps"
