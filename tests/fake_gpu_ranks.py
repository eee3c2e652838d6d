"""Give every rank of a CPU (gloo) group its own fake NVIDIA GPU, for the multi-process telemetry tests.

`install()` replaces `dlbench.telemetry.sampler.create_sampler` in this process: a rank (LOCAL_RANK set) gets
the real `NvmlSampler` over a `FakeNvml` that holds the node's two GPUs, matched to cuda:<LOCAL_RANK> by UUID
exactly as on a GPU machine. GPU 0 draws 200 W at 55 C; GPU 1 draws 300 W at 84 C with thermal slowdown in
every reading. Processes without LOCAL_RANK (the `dlbench run` parent) keep the real sampler.

The tests load it in every process of a run through a `sitecustomize.py` on PYTHONPATH (see
`test_multigpu_run.py`): the ranks are separate interpreters that the launcher starts.
"""

from __future__ import annotations

import os

UUIDS = ("GPU-fa4e0000-0000-0000-0000-000000000000", "GPU-fa4e0000-0000-0000-0000-000000000001")
POWER_W = (200.0, 300.0)
TEMPERATURE_C = (55.0, 84.0)


def install() -> None:
    from dlbench.telemetry import sampler
    from dlbench.telemetry.fake_nvml import FakeGpu, FakeNvml
    from dlbench.telemetry.nvml import CLOCK_EVENT_REASONS

    thermal = next(bit for bit, name in CLOCK_EVENT_REASONS.items() if name == "sw_thermal_slowdown")
    real = sampler.create_sampler

    def create_sampler(device, interval_s=sampler.DEFAULT_INTERVAL_S, nvml=None, uuid_of=None):
        local_rank = os.environ.get("LOCAL_RANK")
        if local_rank is None or nvml is not None:
            return real(device, interval_s, nvml, uuid_of)
        gpus = [FakeGpu(uuid=UUIDS[i], power_w=POWER_W[i], energy_j=None, temperature_c=TEMPERATURE_C[i],
                        clock_event_reasons=thermal if i == 1 else 0) for i in range(2)]
        return real(f"cuda:{local_rank}", 0.01, FakeNvml(gpus), lambda index: UUIDS[index])

    sampler.create_sampler = create_sampler
