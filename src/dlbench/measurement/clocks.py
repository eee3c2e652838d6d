"""Per-step clocks: how a step boundary is marked on each kind of device, and `timed_steps`.

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_measure.py -k clock`.

- CUDA (and ROCm): one `torch.cuda.Event` recorded in the stream at every step boundary and a single host
  synchronisation at the end of the run of steps, so timing adds no synchronisation the loop would not have.
- MPS: `torch.mps.synchronize()` before every `time.perf_counter()` read (MPS runs asynchronously and has no
  events dlbench can read per step).
- CPU: `perf_counter` alone (work is synchronous).
Every clock has the same four methods: `marks(n)`, `mark(marks, i)`, `synchronize()`, `durations(marks)`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class HostClock:
    """perf_counter at each step boundary (CPU: work is synchronous)."""

    def __init__(self, device: Any) -> None:
        self.device = device

    def marks(self, n: int) -> list:
        return [0.0] * n

    def mark(self, marks: list, i: int) -> None:
        marks[i] = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def durations(self, marks: list) -> list[float]:
        return [b - a for a, b in zip(marks[:-1], marks[1:], strict=True)]


class MpsClock(HostClock):
    """MPS runs asynchronously: drain its queue before every clock read."""

    def mark(self, marks: list, i: int) -> None:
        import torch

        torch.mps.synchronize()
        marks[i] = time.perf_counter()

    def synchronize(self) -> None:
        import torch

        torch.mps.synchronize()


class CudaClock:
    """CUDA events recorded in the stream at each step boundary; one host sync at the end."""

    def __init__(self, device: Any) -> None:
        self.device = device

    def marks(self, n: int) -> list:
        import torch

        return [torch.cuda.Event(enable_timing=True) for _ in range(n)]

    def mark(self, marks: list, i: int) -> None:
        marks[i].record()

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize(self.device)

    def durations(self, marks: list) -> list[float]:
        marks[-1].synchronize()
        return [a.elapsed_time(b) / 1000.0 for a, b in zip(marks[:-1], marks[1:], strict=True)]  # ms → s


def clock_for(device: Any) -> Any:
    """The clock for a `torch.device`."""
    if device.type == "cuda":
        return CudaClock(device)
    if device.type == "mps":
        return MpsClock(device)
    return HostClock(device)


def timed_steps(step: Callable[[], None], n: int, clock: Any) -> list[float]:
    """Run `n` steps and return each one's duration in seconds. Nothing but the steps runs between the first
    and the last clock mark (no progress event: a write to a pipe or a status file would land in a step time)."""
    marks = clock.marks(n + 1)
    clock.mark(marks, 0)
    for i in range(n):
        step()
        clock.mark(marks, i + 1)
    return clock.durations(marks)
