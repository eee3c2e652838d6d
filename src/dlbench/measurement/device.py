"""The machine's accelerators as the planner sees them, and which device `auto` or a bare `cuda` means.

Exercise it with `PYTHONPATH=src python -c "from dlbench.measurement.device import DeviceFacts, resolve_device;
print(DeviceFacts.detect(), resolve_device('auto'))"`.

Imports torch only inside `DeviceFacts.detect` (the planner calls it in a child process).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import torch


@dataclass
class DeviceFacts:
    """What the planner needs to know about the machine's accelerators."""

    cuda: list[dict[str, Any]] = field(default_factory=list)  # per visible device: name, memory_bytes, cc
    mps_available: bool = False
    current_cuda: int = 0  # torch.cuda.current_device(): 0 in a fresh process, else what set_device chose
    hip: str | None = None  # torch.version.hip: the CUDA devices are AMD GPUs under ROCm

    @classmethod
    def detect(cls) -> DeviceFacts:
        """Ask torch (the planner calls it in a child process: it initialises the CUDA driver, not a context)."""
        import torch

        cuda = []
        current = 0
        if torch.cuda.is_available():
            for index in range(torch.cuda.device_count()):
                props = torch.cuda.get_device_properties(index)
                cuda.append({"name": props.name, "memory_bytes": int(props.total_memory),
                             "compute_capability": [props.major, props.minor],
                             "uuid": _uuid(props)})
            current = torch.cuda.current_device()
        mps = getattr(torch.backends, "mps", None)
        return cls(cuda=cuda, mps_available=bool(mps is not None and mps.is_available()), current_cuda=current,
                   hip=getattr(torch.version, "hip", None))


def _uuid(props) -> str | None:
    """The device's UUID as torch prints it (8-4-4-4-12 hex, no prefix). It is a GPU's UUID or, under MIG, the
    MIG instance's, and torch does not say which, so no `GPU-`/`MIG-` prefix is guessed: matching with NVML
    (`telemetry.nvml.resolve_cuda_device`) ignores the prefix and looks among both kinds."""
    uuid = getattr(props, "uuid", None)
    return None if uuid is None else str(uuid)


def resolve_device(requested: str, facts: DeviceFacts | None = None) -> str:
    """The device that `requested` names in this process: `auto` → a CUDA (or ROCm) GPU, else mps, else cpu; a
    bare `cuda` → `cuda:<current CUDA device>`; anything else unchanged (`check_device` says whether it exists).

    dlbench's only resolver of `auto` for measuring (`dlbench comm` picks just its group backend, cuda or cpu),
    for the planner (with the facts its child process detected) and for code that measures here (`facts` None: detected in this process when needed). "Current" is torch's own meaning of
    a bare "cuda": device 0 in a fresh process, which is every planner and worker process, i.e. the first GPU
    that CUDA_VISIBLE_DEVICES leaves visible; and in a program that calls `measure()` itself, the device its
    `torch.cuda.set_device` chose. Ranks under torchrun do not depend on it: `distributed.rank_device` maps any
    CUDA device, `auto` included, to the device of the rank's LOCAL_RANK.
    """
    if requested not in ("auto", "cuda"):
        return requested
    facts = facts if facts is not None else DeviceFacts.detect()
    if facts.cuda:
        return f"cuda:{facts.current_cuda}"
    if requested == "cuda":
        return requested  # no GPU: `check_device` / `capabilities.unsupported_reason` say so
    return "mps" if facts.mps_available else "cpu"


def use_device(requested: str) -> torch.device:
    """The `torch.device` that `requested` names here (`resolve_device`), made torch's current CUDA device when it
    is one (so a bare "cuda" inside the measurement means it too)."""
    import torch

    device = torch.device(resolve_device(requested))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device
