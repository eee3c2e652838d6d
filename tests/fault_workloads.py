"""Fault-injection workloads for the runner's tests, loaded with `DLBENCH_PLUGINS=fault_workloads`.

Each fails in `make_inputs`, which `measure()` calls in the worker process before anything is timed:
- `fault-oom`: raises `torch.OutOfMemoryError` with CUDA's wording, as a GPU would at too large a batch;
- `fault-hang`: sleeps for an hour (the sweep's timeout must kill it); writes its pid to the file named by
  `DLBENCH_FAULT_PIDFILE`, if set, so a test can check that it was killed;
- `fault-crash`: `os.abort()` (SIGABRT), a crash without any Python exception;
- `fault-oom-above`: the tiny ResNet, but batches larger than `DLBENCH_FAULT_MAX_BATCH` (default 12) raise
  OOM, for `--batch-size auto`;
- `fault-error-above`: the same, but the larger batches fail with cuDNN's CUDNN_STATUS_NOT_SUPPORTED (not a
  memory error), as some convolutions do past a batch size;
- `fault-host-oom`: allocates `DLBENCH_FAULT_ALLOC_BYTES` (default 2**40, a terabyte) of host memory, which
  torch's CPU allocator refuses ("DefaultCPUAllocator: can't allocate memory"), as a too-large batch does on a
  CPU.
"""

from __future__ import annotations

import os
import time

from dlbench.workloads.registry import register
from dlbench.workloads.resnet import RESNET50, ResNetWorkload


class _Fault(ResNetWorkload):
    def __init__(self, name: str) -> None:
        super().__init__(name, RESNET50, tiny_batch=4, description="test fault injection")

    def fault(self, batch_size: int) -> None:
        raise NotImplementedError

    def make_inputs(self, config, batch_size, generator, device="cpu"):
        if str(device) != "meta":
            self.fault(batch_size)
        return super().make_inputs(config, batch_size, generator, device)


class Oom(_Fault):
    def fault(self, batch_size: int) -> None:
        import torch

        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total "
                                     "capacity of 79.19 GiB of which 1.02 GiB is free.")


class Hang(_Fault):
    def fault(self, batch_size: int) -> None:
        pidfile = os.environ.get("DLBENCH_FAULT_PIDFILE")
        if pidfile:
            with open(pidfile, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
        time.sleep(3600)


class Crash(_Fault):
    def fault(self, batch_size: int) -> None:
        os.abort()


class OomAbove(_Fault):
    def fault(self, batch_size: int) -> None:
        if batch_size > int(os.environ.get("DLBENCH_FAULT_MAX_BATCH", "12")):
            Oom.fault(self, batch_size)


class ErrorAbove(_Fault):
    def fault(self, batch_size: int) -> None:
        if batch_size > int(os.environ.get("DLBENCH_FAULT_MAX_BATCH", "12")):
            raise RuntimeError("cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in "
                               "a non-contiguous input.")


class HostOom(_Fault):
    def fault(self, batch_size: int) -> None:
        import torch

        torch.empty(int(os.environ.get("DLBENCH_FAULT_ALLOC_BYTES", str(2**40))), dtype=torch.uint8)


register(Oom("fault-oom"))
register(Hang("fault-hang"))
register(Crash("fault-crash"))
register(OomAbove("fault-oom-above"))
register(ErrorAbove("fault-error-above"))
register(HostOom("fault-host-oom"))


def processes_with_env(name: str, value: str) -> list[int]:
    """Pids of live (non-zombie) processes whose environment has `name=value`: what a test left running."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ and state != b"Z":
            found.append(int(entry))
    return found
