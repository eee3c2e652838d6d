"""Fault-injection workloads for the multi-process tests, loaded with DLBENCH_PLUGINS=mg_fault_workloads.

`mg-tiny`: a two-layer perceptron that trains in milliseconds on a CPU.
`mg-kill-rank`: the same, but the rank named by DLBENCH_FAULT_RANK (default 1) SIGKILLs itself at its third
training step. `mg-hang-rank`: that rank sleeps for an hour at its third step instead. `mg-hang-all`: every rank
does (a run to interrupt while each rank waits in Python, not in a collective).
"""

from __future__ import annotations

import os
import signal
import time

from dlbench.workloads.base import Workload
from dlbench.workloads.registry import register


class TinyMlp(Workload):
    sample_unit = "images"
    batch_80gb = cpu_batch = tiny_batch = 4
    description = "test workload"

    def __init__(self, name: str, fault: str | None = None) -> None:
        self.name = name
        self.fault = fault

    def build_model(self, config):
        import torch

        fault = self.fault

        class Mlp(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.a = torch.nn.Linear(16, 32)
                self.b = torch.nn.Linear(32, 4)
                self.calls = 0

            def forward(self, x):
                if fault and x.device.type != "meta":
                    self.calls += 1
                    if self.calls == 3 and fault == "hang-all":
                        time.sleep(3600)
                    if self.calls == 3 and os.environ.get("RANK") == os.environ.get("DLBENCH_FAULT_RANK", "1"):
                        if fault == "kill":
                            os.kill(os.getpid(), signal.SIGKILL)
                        time.sleep(3600)
                return self.b(torch.relu(self.a(x)))

        return Mlp()

    def make_inputs(self, config, batch_size, generator, device="cpu"):
        import torch

        if device == "meta":
            return (torch.empty(batch_size, 16, device="meta"),)
        return (torch.randn(batch_size, 16, generator=generator),)

    def make_targets(self, config, batch_size, generator, device="cpu"):
        import torch

        if device == "meta":
            return (torch.empty(batch_size, dtype=torch.long, device="meta"),)
        return (torch.randint(0, 4, (batch_size,), generator=generator),)


register(TinyMlp("mg-tiny"))
register(TinyMlp("mg-kill-rank", fault="kill"))
register(TinyMlp("mg-hang-rank", fault="hang"))
register(TinyMlp("mg-hang-all", fault="hang-all"))
