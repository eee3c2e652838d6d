"""One measured configuration: what `dlbench run` expands its options into, one child process each.

`RunConfig` is the contract between the planner (which expands the CLI options), the worker (which runs one
config in a child process), the scenario it names (`scenario`: what one step does and what is reported; its
own settings are read from these fields, `Scenario.settings`) and the workloads (which build the model and
inputs). It is plain data: it round-trips through `to_dict`/`from_dict` so it can be handed to a child process
as JSON; a dict without `scenario` (written before scenarios existed) is a training configuration.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

# The precision and compile-mode names and their checks live with the rest of what identifies a configuration
# (analysis/ must not import runner/); they stay importable from here.
from dlbench.analysis.configuration import (  # noqa: F401 - re-exported
    COMPILE_MODES,
    PRECISIONS,
    check_compile_mode,
    check_precision,
    config_label,
)

# Workload size: "full" is the published model; "tiny" is a few layers and small inputs that train on a CPU
# in well under a second per step (tests and smoke checks).
FLAVOURS: tuple[str, ...] = ("full", "tiny")


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines one measurement."""

    workload: str
    precision: str = "fp32"
    compile: str = "off"
    batch_size: int = 32
    seq_len: int | None = None  # None: the workload's default (sequence workloads only)
    device: str = "cpu"  # "cpu", "cuda", "cuda:N" or "mps"
    warmup_steps: int = 10
    steps: int = 50
    repeats: int = 3
    seed: int = 0
    flavour: str = "full"
    world_size: int = 1
    scenario: str = "train"  # the kind of benchmark: a name in `dlbench.scenarios.SCENARIOS`
    prompt_len: int | None = None  # generate: prompt tokens (None: 512; the other scenarios: unused)
    new_tokens: int | None = None  # generate: tokens generated after the prompt (None: 128)

    def __post_init__(self) -> None:
        # Precision and compile names in any case, as on the command line (`AMP-FP16` is `amp-fp16`).
        for name in ("precision", "compile"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, value.strip().lower())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def label(self) -> str:
        """Short human-readable name, e.g. `resnet50 amp-fp16 compile=default bs=256` (`config_label`)."""
        return config_label(self.to_dict())
