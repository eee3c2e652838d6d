"""Scenarios: the kinds of benchmark dlbench runs over its workloads, in one explicit registry.

Exercise it with `PYTHONPATH=src python -c "from dlbench import scenarios; print(scenarios.names())"`.

The worker measures a configuration with `measure(config, ...)`, which looks `config.scenario` up here and
runs that scenario (`base.Scenario`). Adding a scenario is a module in this folder, one line in `SCENARIOS`
and a page in docs/ (docs/scenarios.md says how). Importing this package imports no torch.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dlbench.errors import BadInput
from dlbench.scenarios.base import Scenario, UnsupportedConfig
from dlbench.scenarios.generate import GenerateScenario
from dlbench.scenarios.infer import InferScenario
from dlbench.scenarios.train import TrainScenario

if TYPE_CHECKING:  # pragma: no cover
    from dlbench.measurement.config import RunConfig
    from dlbench.measurement.device import DeviceFacts

__all__ = ["SCENARIOS", "Scenario", "UnsupportedConfig", "get", "measure", "names", "unsupported_reason"]

SCENARIOS: dict[str, Scenario] = {
    "train": TrainScenario(),
    "infer": InferScenario(),
    "generate": GenerateScenario(),
}


def names() -> list[str]:
    """The scenario names, in registry order."""
    return list(SCENARIOS)


def get(name: str) -> Scenario:
    """The scenario called `name`; an unknown name is a `BadInput` that lists the valid ones."""
    try:
        return SCENARIOS[name]
    except (KeyError, TypeError):
        raise BadInput(f"unknown scenario {name!r}; choose from: {', '.join(SCENARIOS)}") from None


def unsupported_reason(config: RunConfig, device_facts: DeviceFacts | None = None) -> str | None:
    """Why this machine cannot run `config` (one line: the scenario's rules, then the device's), or None."""
    try:
        scenario = get(config.scenario)
    except BadInput as exc:
        return str(exc)
    return scenario.unsupported_reason(config, device_facts)


def measure(
    config: RunConfig,
    progress: Callable[[str, int, int], None] | None = None,
    sampler: Any = None,
    wrap_model: Callable[[Any], Any] | None = None,
    sync: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Measure `config` here with its scenario and return the raw measurement.

    Raises `UnsupportedConfig` (before any work) when the device cannot run it, `BadInput` for an unknown
    workload or scenario. The measurement names its scenario (`"scenario"`); `compile_cache` in its
    `precision_flags` says whether compilation started from empty caches.
    """
    from dlbench.measurement.compile import compile_cache
    from dlbench.workloads import registry

    user_cache_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")  # before TorchDynamo's import sets it
    scenario = get(config.scenario)
    workload = registry.get(config.workload)
    reason = scenario.unsupported_reason(config)
    if reason:
        raise UnsupportedConfig(reason)
    with compile_cache(config.compile != "off", user_cache_dir) as cache_state:
        result = scenario.run(config, workload, progress=progress, sampler=sampler, wrap_model=wrap_model,
                              sync=sync)
    if cache_state is not None:
        result["precision_flags"]["compile_cache"] = cache_state
    result["scenario"] = scenario.name
    return result
