"""What a scenario is: one kind of benchmark (training, and next inference and generation) over any workload.

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_scenarios.py`.

A workload (`dlbench.workloads`) gives a plain model and its inputs; a scenario decides what one measured step
does with them and what the result reports:

    class Scenario:
        name = "train"                       # the registry key, `RunConfig.scenario`
        config_class = TrainConfig           # its own settings, read from a RunConfig by `settings()`
        precisions = ("fp32", "tf32", ...)   # the precision modes it measures
        def unsupported_reason(self, config, device_facts=None) -> str | None
        def run(self, config, workload, *, progress, sampler, wrap_model, sync) -> dict   # raw measurement
        def metrics(self, measurement, config) -> dict[str, Metric]                        # from raw values only

`run` returns raw values only (every step time, warm-up apart, compile time, peak memory, flags); `metrics`
derives the reported figures from them and nothing else, so a reader (or a test) can recompute each one.
Everything shared between scenarios (clocks, seeding, precision, compile cache, peak memory, telemetry) lives
in `dlbench.measurement`. Nothing here imports torch at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # pragma: no cover
    from dlbench.measurement.config import RunConfig
    from dlbench.measurement.device import DeviceFacts

Progress = Callable[[str, int, int], None]


class UnsupportedConfig(RuntimeError):
    """The device cannot run this configuration (the reason comes from `Scenario.unsupported_reason`)."""


def metric(value: float, unit: str, better: str, **stats: Any) -> dict[str, Any]:
    """One reported figure as a result document's `metrics` holds it: the value in SI units, the unit's name,
    which way is better ("higher" or "lower") and, where there are any, its statistics ("mean", "p5", "p50",
    "p90", "p95", "p99") and the values it comes from ("repeats": one per repeat, "raw": every sample), e.g.
    `{"value": 812.4, "unit": "samples/s", "better": "higher", "repeats": [810.2, 814.6]}`. None stats are left
    out."""
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', got {better!r}")
    out: dict[str, Any] = {"value": value, "unit": unit, "better": better}
    out.update({key: list(v) if isinstance(v, (list, tuple)) else v for key, v in stats.items() if v is not None})
    return out


class Scenario:
    """One kind of benchmark. Subclasses set the class attributes and provide `run` and `metrics`.

    Attributes:
        name: registry key (`dlbench run --scenario NAME`, `RunConfig.scenario`, a result's `scenario`).
        description: one line for listings.
        config_class: the scenario's settings dataclass; `settings(config)` builds it from a `RunConfig`.
        precisions: the precision modes this scenario measures (others are refused with a reason).
        headline: the metric a table or a ranking shows first.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    config_class: ClassVar[type] = object
    precisions: ClassVar[tuple[str, ...]] = ()
    headline: ClassVar[str] = ""

    def settings(self, config: RunConfig) -> Any:
        """The scenario's own settings for `config` (by default: the RunConfig fields the dataclass names)."""
        from dataclasses import fields

        return self.config_class(**{f.name: getattr(config, f.name) for f in fields(self.config_class)
                                    if hasattr(config, f.name)})

    def unsupported_reason(self, config: RunConfig, device_facts: DeviceFacts | None = None) -> str | None:
        """Why this machine cannot run `config` in this scenario (one line), or None when it can.

        The scenario's own rule (its precisions) comes first, then what the device, precision and compile mode
        need (`measurement.capabilities`). Imports torch (the planner and the worker call it, never the CLI).
        """
        from dlbench.analysis.configuration import PRECISIONS
        from dlbench.measurement.capabilities import unsupported_reason

        refused = self.workload_reason(config.workload)
        if refused:
            return refused
        if config.precision in PRECISIONS and config.precision not in self.precisions:  # unknown: capabilities
            return (f"precision {config.precision} is not measured by the {self.name} scenario; "
                    f"choose from: {', '.join(self.precisions)}")

        return unsupported_reason(config, device_facts)

    def workload_reason(self, name: str) -> str | None:
        """Why this scenario does not run workload `name` (it names only other scenarios in `Workload.scenarios`:
        the Llama workloads are generate-only), or None. An unknown name is left to the registry's message."""
        from dlbench.errors import BadInput
        from dlbench.workloads import registry

        try:
            workload = registry.get(name)
        except BadInput:
            return None
        runs_in = getattr(workload, "scenarios", None)
        if runs_in is not None and self.name not in runs_in:
            return (f"workload {workload.name} runs in the {' and '.join(runs_in)} scenario"
                    f"{'s' if len(runs_in) > 1 else ''} only, not {self.name} "
                    f"(use --scenario {runs_in[0]})")
        return None

    def run(self, config: RunConfig, workload: Any, *, progress: Progress | None = None, sampler: Any = None,
            wrap_model: Callable[[Any], Any] | None = None,
            sync: Callable[[], None] | None = None) -> dict[str, Any]:
        """Measure `config` in this process and return the raw measurement (see the scenario's module)."""
        raise NotImplementedError

    def metrics(self, measurement: Mapping[str, Any], config: RunConfig) -> dict[str, dict[str, Any]]:
        """The reported figures (name -> `metric(...)`), computed from `measurement`'s raw values alone."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
