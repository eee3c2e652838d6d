"""AMD GPU telemetry through amdsmi (ROCm), used by `dlbench run` on a ROCm build of torch.

`telemetry.sampler.create_amd_sampler(index, interval_s)` returns the same `NvmlSampler` the NVIDIA path uses,
reading through `AmdSmi`, an adapter that answers the `Nvml` calls dlbench needs from amdsmi. Where amdsmi is not importable
or cannot start, the sampler reports `available: False` with the reason.

What amdsmi gives here: power (W), energy counter, temperature (edge, else hotspot), GFX and memory clocks,
GFX/memory activity. Not read (reported as missing, never guessed): clock-event reasons (amdsmi has no
equivalent bit mask), PCIe link, fan, power limits (their units differ between amdsmi releases), processes.
This path has not been validated on AMD hardware.
"""

from __future__ import annotations

import os
from typing import Any

from dlbench.telemetry.nvml import NotSupported, NvmlError, PcieLink

_NOT_AVAILABLE_U32 = 0xFFFFFFFF  # amdsmi marks an unsupported struct member with UINT32_MAX


def _number(value: Any) -> float | None:
    """amdsmi reports a missing figure as "N/A" or UINT32_MAX depending on the release."""
    if isinstance(value, (int, float)) and 0 <= value < _NOT_AVAILABLE_U32:
        return float(value)
    return None


class AmdSmi:
    """`Nvml`-shaped adapter over the amdsmi module; handles are amdsmi processor handles."""

    def __init__(self, amdsmi_module: Any):
        self._a = amdsmi_module

    def open(self) -> AmdSmi:
        return self

    def _call(self, name: str, *args: Any) -> Any:
        fn = getattr(self._a, name, None)
        if fn is None:
            raise NotSupported(f"{name} is not in this amdsmi version")
        try:
            return fn(*args)
        except self._a.AmdSmiException as exc:
            raise NvmlError(f"{name}: {exc}") from None

    def shutdown(self) -> None:
        try:
            self._a.amdsmi_shut_down()
        except Exception:  # noqa: BLE001 - nothing useful to do if shutdown fails
            pass

    def handles(self) -> list[Any]:
        return list(self._call("amdsmi_get_processor_handles"))

    def uuid(self, handle: Any) -> str:
        return str(self._call("amdsmi_get_gpu_device_uuid", handle))

    def name(self, handle: Any) -> str:
        return str(self._call("amdsmi_get_gpu_asic_info", handle).get("market_name"))

    def power_w(self, handle: Any) -> float:
        info = self._call("amdsmi_get_power_info", handle)
        # MI300 and later fill current_socket_power; older cards only average_socket_power (both W on Linux).
        for key in ("current_socket_power", "average_socket_power"):
            value = _number(info.get(key))
            if value is not None:
                return value
        raise NotSupported("amdsmi reports no socket power for this GPU")

    def energy_j(self, handle: Any) -> float:
        info = self._call("amdsmi_get_energy_count", handle)
        # The accumulator key was renamed between amdsmi releases ("power" → "energy_accumulator").
        acc = info.get("energy_accumulator", info.get("power"))
        resolution_uj = info.get("counter_resolution")
        if _number(acc) is None or _number(resolution_uj) is None:
            raise NotSupported("amdsmi reports no energy counter for this GPU")
        return float(acc) * float(resolution_uj) / 1e6

    def temperature_c(self, handle: Any) -> float:
        a = self._a
        for sensor in ("EDGE", "HOTSPOT"):
            try:
                value = _number(self._call("amdsmi_get_temp_metric", handle, getattr(a.AmdSmiTemperatureType, sensor),
                                           a.AmdSmiTemperatureMetric.CURRENT))
            except NvmlError:
                continue
            if value is not None:
                return value
        raise NotSupported("amdsmi reports no temperature for this GPU")

    def _clock(self, handle: Any, kind: str) -> float:
        info = self._call("amdsmi_get_clock_info", handle, getattr(self._a.AmdSmiClkType, kind))
        value = _number(info.get("clk"))
        if value is None:
            raise NotSupported(f"amdsmi reports no {kind} clock")
        return value

    def sm_clock_mhz(self, handle: Any) -> float:
        return self._clock(handle, "GFX")

    def mem_clock_mhz(self, handle: Any) -> float:
        return self._clock(handle, "MEM")

    def utilization_pct(self, handle: Any) -> tuple[float, float | None]:
        info = self._call("amdsmi_get_gpu_activity", handle)
        gfx, umc = _number(info.get("gfx_activity")), _number(info.get("umc_activity"))
        if gfx is None:
            raise NotSupported("amdsmi reports no GFX activity")
        return gfx, umc

    def clock_event_reasons(self, handle: Any) -> int:
        raise NotSupported("amdsmi has no clock-event reason mask")

    def pcie_link(self, handle: Any) -> PcieLink:
        return PcieLink(None, None, None, None)

    def fan_speed_pct(self, handle: Any) -> float:
        raise NotSupported("fan speed is not read on AMD GPUs")

    def power_limit_w(self, handle: Any) -> float:
        raise NotSupported("power limit is not read on AMD GPUs")

    def default_power_limit_w(self, handle: Any) -> float:
        raise NotSupported("default power limit is not read on AMD GPUs")

    def compute_processes(self, handle: Any) -> list[Any]:
        raise NotSupported("processes are not read on AMD GPUs")


def visible_index(index: int) -> int | None:
    """amdsmi numbers every GPU in the machine; map the HIP device index through the *_VISIBLE_DEVICES lists."""
    for var in ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        value = os.environ.get(var)
        if value:
            entries = [e.strip() for e in value.split(",") if e.strip()]
            if index >= len(entries) or not entries[index].isdigit():
                return None  # UUID entries or nested lists: not matched here, rather than guessed
            return int(entries[index])
    return index
