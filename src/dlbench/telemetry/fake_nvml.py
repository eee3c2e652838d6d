"""A scripted stand-in for NVML, for tests: `pytest tests/test_telemetry.py`.

`FakeNvml([FakeGpu(...), ...])` answers the calls of `dlbench.telemetry.nvml.Nvml`. Each per-sample figure of a
`FakeGpu` is either a constant, a list (the n-th reading returns the n-th item, then the last one repeats) or a
function of `time.monotonic()` (for checking time integrals). A figure set to `None` raises `NotSupported`, as
NVML does for a GPU without that sensor (no energy counter, no fan, no ECC).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from dlbench.telemetry.nvml import GpuProcess, NotSupported, NvmlUnavailable, PcieLink

Series = Any  # float | list[float] | Callable[[float], float] | None


class StepClock:
    """A clock for the sampler that advances by `step` seconds per reading (the first reading is 0)."""

    def __init__(self, step: float):
        self.step, self.now = step, -step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@dataclass
class FakeGpu:
    """One GPU's scripted readings (units as in the `Nvml` method names)."""

    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    name: str = "NVIDIA H100 80GB HBM3"
    power_w: Series = 300.0
    energy_j: Series = None  # total-energy counter; None: NotSupported (pre-Volta, some vGPUs)
    temperature_c: Series = 45.0
    sm_clock_mhz: Series = 1980.0
    mem_clock_mhz: Series = 2619.0
    gpu_util_pct: Series = 100.0
    mem_util_pct: Series = 60.0
    clock_event_reasons: Series = 0
    pcie_gen: Series = 5
    pcie_width: Series = 16
    pcie_max_gen: int | None = 5
    pcie_max_width: int | None = 16
    fan_speed_pct: Series = None
    power_limit_w: float | None = 700.0
    default_power_limit_w: float | None = 700.0
    persistence_mode: bool | None = True
    ecc_errors: dict[str, int] | None = field(default_factory=lambda: {
        "uncorrected_volatile": 0, "uncorrected_aggregate": 0, "corrected_volatile": 0, "corrected_aggregate": 0})
    retired_pages: dict[str, Any] | None = None
    remapped_rows: dict[str, Any] | None = field(default_factory=lambda: {
        "corrected": 0, "uncorrected": 0, "pending": False, "failure": False})
    processes: list[GpuProcess] = field(default_factory=list)
    mig_uuids: list[str] = field(default_factory=list)  # `MIG-...` of its MIG instances (empty: MIG off)
    reads: dict[str, int] = field(default_factory=dict)

    def read(self, key: str) -> Any:
        value = getattr(self, key)
        n = self.reads.get(key, 0)
        self.reads[key] = n + 1
        if value is None:
            raise NotSupported(f"{key} is not supported on this fake GPU")
        if callable(value):
            return value(time.monotonic())
        if isinstance(value, (list, tuple)):
            return value[min(n, len(value) - 1)]
        return value


class FakeNvml:
    """Answers `Nvml`'s calls from `FakeGpu`s. Handles are the `FakeGpu` objects themselves.

    `unavailable="reason"` makes `open()` raise `NvmlUnavailable`, as on a machine without an NVIDIA driver.
    Every call is recorded in `calls` as (method name, thread id), so tests can see where sampling happened.
    """

    def __init__(self, gpus: list[FakeGpu] | None = None, *, driver_version: str = "570.86.15",
                 cuda_driver_version: int = 12080, unavailable: str | None = None,
                 latency_s: float = 0.0):
        self.gpus = list(gpus or [])
        self._driver_version = driver_version
        self._cuda_driver_version = cuda_driver_version
        self.unavailable = unavailable
        self.latency_s = latency_s
        self.calls: list[tuple[str, int]] = []
        self.shut_down = False
        self._lock = threading.Lock()

    # The factory the sampler and the checks call instead of `open_nvml()`.
    def open(self) -> FakeNvml:
        if self.unavailable:
            raise NvmlUnavailable(self.unavailable)
        return self

    def _record(self, name: str) -> None:
        with self._lock:
            self.calls.append((name, threading.get_ident()))
        if self.latency_s:
            time.sleep(self.latency_s)

    def shutdown(self) -> None:
        self.shut_down = True

    def driver_version(self) -> str:
        self._record("driver_version")
        return self._driver_version

    def cuda_driver_version(self) -> int:
        self._record("cuda_driver_version")
        return self._cuda_driver_version

    def device_count(self) -> int:
        self._record("device_count")
        return len(self.gpus)

    def handle(self, nvml_index: int) -> FakeGpu:
        self._record("handle")
        return self.gpus[nvml_index]

    def uuid(self, handle: FakeGpu) -> str:
        return handle.uuid

    def name(self, handle: FakeGpu) -> str:
        return handle.name

    def mig_uuids(self, handle: FakeGpu) -> list[str]:
        self._record("mig_uuids")
        return list(handle.mig_uuids)

    def power_w(self, handle: FakeGpu) -> float:
        self._record("power_w")
        return float(handle.read("power_w"))

    def energy_j(self, handle: FakeGpu) -> float:
        self._record("energy_j")
        return float(handle.read("energy_j"))

    def temperature_c(self, handle: FakeGpu) -> float:
        self._record("temperature_c")
        return float(handle.read("temperature_c"))

    def sm_clock_mhz(self, handle: FakeGpu) -> float:
        self._record("sm_clock_mhz")
        return float(handle.read("sm_clock_mhz"))

    def mem_clock_mhz(self, handle: FakeGpu) -> float:
        self._record("mem_clock_mhz")
        return float(handle.read("mem_clock_mhz"))

    def utilization_pct(self, handle: FakeGpu) -> tuple[float, float]:
        self._record("utilization_pct")
        return float(handle.read("gpu_util_pct")), float(handle.read("mem_util_pct"))

    def clock_event_reasons(self, handle: FakeGpu) -> int:
        self._record("clock_event_reasons")
        return int(handle.read("clock_event_reasons"))

    def pcie_link(self, handle: FakeGpu) -> PcieLink:
        self._record("pcie_link")
        return PcieLink(gen=handle.read("pcie_gen"), width=handle.read("pcie_width"),
                        max_gen=handle.pcie_max_gen, max_width=handle.pcie_max_width)

    def fan_speed_pct(self, handle: FakeGpu) -> float:
        self._record("fan_speed_pct")
        return float(handle.read("fan_speed_pct"))

    def power_limit_w(self, handle: FakeGpu) -> float:
        return float(handle.read("power_limit_w"))

    def default_power_limit_w(self, handle: FakeGpu) -> float:
        return float(handle.read("default_power_limit_w"))

    def persistence_mode(self, handle: FakeGpu) -> bool:
        return bool(handle.read("persistence_mode"))

    def ecc_errors(self, handle: FakeGpu) -> dict[str, int]:
        return dict(handle.read("ecc_errors"))

    def retired_pages(self, handle: FakeGpu) -> dict[str, Any]:
        return dict(handle.read("retired_pages"))

    def remapped_rows(self, handle: FakeGpu) -> dict[str, Any]:
        return dict(handle.read("remapped_rows"))

    def compute_processes(self, handle: FakeGpu) -> list[GpuProcess]:
        self._record("compute_processes")
        return list(handle.processes)
