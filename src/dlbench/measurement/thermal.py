"""Wait for a cool GPU before each configuration, as the seeds do (AIME starts every run at <= 50 C).

Exercised by `dlbench run --max-start-temp 50 --max-wait 300` on an NVIDIA GPU. A hot GPU boosts less, so a
configuration measured right after another would be slower than one measured first. Before each configuration the
sweep calls `wait_until_cool`: it reads the temperature through NVML (nvidia-ml-py, imported lazily), waits with a
visible countdown until it is at or below the limit, gives up after `max_wait_s` (and says so), and returns the
temperature at the start, which goes into the result as `start_temperature_c`. Without NVML (CPU, MPS, ROCm) it
returns None at once: the temperature is unknown, not zero.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

DEFAULT_MAX_START_TEMP_C = 50.0
DEFAULT_MAX_WAIT_S = 300.0
POLL_INTERVAL_S = 2.0


class GpuThermometer:
    """Reads one NVIDIA GPU's temperature through NVML (`dlbench.telemetry.nvml`, or a `FakeNvml` in tests).

    The GPU is found as the sampler finds it (`resolve_cuda_device`): by the UUID torch reported for the device,
    else through CUDA_VISIBLE_DEVICES. A MIG instance is read through the GPU that holds it, whose temperature
    is the one that matters (a MIG instance has none of its own in NVML).
    """

    def __init__(self, nvml: Any, match: Any) -> None:
        self.nvml = nvml
        self.match = match
        self.handle = match.handle

    @classmethod
    def open(cls, device: str, cuda_devices: list[dict[str, Any]] | None = None,
             nvml: Any = None) -> GpuThermometer | None:
        """The thermometer for a torch device string (`cuda:N`), or None when NVML cannot read it.

        `cuda_devices`: the planner's facts per visible CUDA device (`DeviceFacts.cuda`, with torch's `uuid`).
        `nvml`: an object whose `open()` returns an `Nvml`-like object (tests pass a `FakeNvml`); default: NVML.
        """
        if not device.startswith("cuda"):
            return None
        from dlbench.telemetry.nvml import open_nvml, resolve_cuda_device

        try:
            source = open_nvml() if nvml is None else nvml.open()
        except Exception:  # noqa: BLE001 - no NVIDIA driver (ROCm, a container without NVML)
            return None
        index = int(device.partition(":")[2] or 0)
        devices = cuda_devices or []
        uuid = devices[index].get("uuid") if index < len(devices) else None
        try:
            match = resolve_cuda_device(source, index, torch_uuid=uuid)
        except Exception:  # noqa: BLE001 - cannot map the torch device to an NVML device
            match = None
        if match is None or match.handle is None:
            source.shutdown()
            return None
        return cls(source, match)

    def close(self) -> None:
        try:
            self.nvml.shutdown()
        except Exception:  # noqa: BLE001 - nothing to release
            pass

    def temperature_c(self) -> float | None:
        try:
            return float(self.nvml.temperature_c(self.handle))
        except Exception:  # noqa: BLE001 - a sensor that cannot be read is unknown
            return None


def wait_until_cool(thermometer: GpuThermometer | None, max_temp_c: float = DEFAULT_MAX_START_TEMP_C,
                    max_wait_s: float = DEFAULT_MAX_WAIT_S,
                    on_wait: Callable[[float, float], None] | None = None,
                    sleep: Callable[[float], None] = time.sleep,
                    clock: Callable[[], float] = time.monotonic) -> tuple[float | None, str | None]:
    """Wait until the GPU is at or below `max_temp_c`; returns (temperature at start, warning or None).

    `on_wait(temperature_c, seconds_left)` is called at every poll while waiting (the countdown display).
    Giving up after `max_wait_s` returns the temperature then and a warning for the result.
    """
    if thermometer is None:
        return None, None
    temperature = thermometer.temperature_c()
    if temperature is None:
        return None, None
    deadline = clock() + max_wait_s
    while temperature > max_temp_c:
        left = deadline - clock()
        if left <= 0:
            return temperature, (f"started at {temperature:.0f} C: the GPU did not cool to "
                                 f"{max_temp_c:.0f} C within {max_wait_s:.0f} s (--max-wait)")
        if on_wait is not None:
            on_wait(temperature, left)
        sleep(min(POLL_INTERVAL_S, left))
        reading = thermometer.temperature_c()
        if reading is None:
            return temperature, None
        temperature = reading
    return temperature, None
