"""A thin wrapper over nvidia-ml-py (`pynvml`): the handful of NVML calls dlbench uses, in SI-named units.

Exercised by `dlbench doctor` and by the sampler during `dlbench run` on an NVIDIA GPU.

`Nvml` is the interface the sampler and the doctor checks talk to; `fake_nvml.FakeNvml` answers the same
calls from scripted series so the tests need no GPU. Every method raises `NotSupported` when the GPU or the
driver does not provide that figure (GeForce cards have no ECC, passively cooled cards have no fan, older
GPUs have no energy counter) and `NvmlError` for any other NVML failure; `open_nvml()` raises
`NvmlUnavailable` with a one-line reason when there is no NVML at all (no NVIDIA driver, a CPU machine).

GPU identity: NVML numbers GPUs by PCI bus id, CUDA by default "fastest first", and `CUDA_VISIBLE_DEVICES`
renumbers them again, so a CUDA index is never used as an NVML index. `resolve_cuda_device()` maps a CUDA
device to its NVML handle by UUID. Under MIG a CUDA device is a MIG instance whose UUID (`MIG-...` in NVML,
bare hex from torch) is not a GPU's: it is found among the MIG devices of each GPU, and the match is the GPU
that holds it, since temperature, power and clocks belong to the whole GPU (NVML does not report them per
instance).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

# Clock-event ("throttle") reason bits, from nvml.h / pynvml (nvmlClocksEventReason*). Names are dlbench's
# snake_case spelling of NVML's.
CLOCK_EVENT_REASONS: dict[int, str] = {
    0x0000000000000001: "gpu_idle",
    0x0000000000000002: "applications_clocks_setting",
    0x0000000000000004: "sw_power_cap",
    0x0000000000000008: "hw_slowdown",
    0x0000000000000010: "sync_boost",
    0x0000000000000020: "sw_thermal_slowdown",
    0x0000000000000040: "hw_thermal_slowdown",
    0x0000000000000080: "hw_power_brake_slowdown",
    0x0000000000000100: "display_clock_setting",
}

# The reasons that mean the GPU ran slower than it could for a reason outside the workload: power or
# temperature. (gpu_idle, application clocks, sync boost and display clocks are not throttling.)
SLOWDOWN_REASONS: frozenset[str] = frozenset(
    {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)
THERMAL_REASONS: frozenset[str] = frozenset({"sw_thermal_slowdown", "hw_thermal_slowdown"})
POWER_REASONS: frozenset[str] = frozenset({"sw_power_cap", "hw_power_brake_slowdown"})


def decode_clock_event_reasons(mask: int) -> list[str]:
    """Names of the bits set in an NVML clock-event reason mask (unknown bits as `bit_0x...`)."""
    names = [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]
    unknown = mask & ~sum(CLOCK_EVENT_REASONS)
    bit = 1
    while unknown:
        if unknown & bit:
            names.append(f"bit_{bit:#x}")
            unknown &= ~bit
        bit <<= 1
    return names


class NvmlError(Exception):
    """An NVML call failed."""


class NotSupported(NvmlError):
    """This GPU or driver does not provide the requested figure."""


class NvmlUnavailable(Exception):
    """NVML cannot be used at all on this machine; `str(exc)` is the reason for the user."""


@dataclass(frozen=True)
class PcieLink:
    """PCIe link: current generation/width and the maximum the GPU and slot support."""

    gen: int | None
    width: int | None
    max_gen: int | None
    max_width: int | None


@dataclass(frozen=True)
class GpuProcess:
    """A compute process on a GPU."""

    pid: int
    used_memory_bytes: int | None


class Nvml:
    """The real NVML via pynvml. Create with `open_nvml()`; call `shutdown()` when done."""

    def __init__(self, pynvml_module: Any):
        self._nv = pynvml_module

    # -- plumbing --------------------------------------------------------------------------------------
    def _call(self, name: str, *args: Any) -> Any:
        nv = self._nv
        fn = getattr(nv, name, None)
        if fn is None:
            raise NotSupported(f"{name} is not in this nvidia-ml-py version")
        try:
            return fn(*args)
        except nv.NVMLError as exc:
            value = getattr(exc, "value", None)
            if value in (nv.NVML_ERROR_NOT_SUPPORTED, getattr(nv, "NVML_ERROR_FUNCTION_NOT_FOUND", -1)):
                raise NotSupported(f"{name}: {exc}") from None
            raise NvmlError(f"{name}: {exc}") from None

    def open(self) -> Nvml:
        """Already initialised (`open_nvml()` did it); here so that `Nvml` and `FakeNvml` open alike."""
        return self

    def shutdown(self) -> None:
        try:
            self._nv.nvmlShutdown()
        except Exception:  # noqa: BLE001 - nothing useful to do if shutdown fails
            pass

    @staticmethod
    def _text(value: Any) -> str:
        """NVML strings: nvidia-ml-py decodes them, but its releases before the str/bytes wrapper return bytes."""
        return value.decode(errors="replace") if isinstance(value, bytes) else str(value)

    # -- system ----------------------------------------------------------------------------------------
    def driver_version(self) -> str:
        return self._text(self._call("nvmlSystemGetDriverVersion"))

    def cuda_driver_version(self) -> int:
        """Highest CUDA version the driver supports, as NVML encodes it (1000*major + 10*minor: 12040)."""
        return int(self._call("nvmlSystemGetCudaDriverVersion"))

    def device_count(self) -> int:
        return int(self._call("nvmlDeviceGetCount"))

    def handle(self, nvml_index: int) -> Any:
        return self._call("nvmlDeviceGetHandleByIndex", nvml_index)

    # -- identity --------------------------------------------------------------------------------------
    def uuid(self, handle: Any) -> str:
        return self._text(self._call("nvmlDeviceGetUUID", handle))

    def name(self, handle: Any) -> str:
        return self._text(self._call("nvmlDeviceGetName", handle))

    def mig_uuids(self, handle: Any) -> list[str]:
        """UUIDs (`MIG-...`) of the MIG instances on this GPU; empty when MIG is off or not supported."""
        try:
            current, _pending = self._call("nvmlDeviceGetMigMode", handle)
        except NotSupported:  # not a MIG-capable GPU, or a nvidia-ml-py without MIG calls
            return []
        if current != getattr(self._nv, "NVML_DEVICE_MIG_ENABLE", 1):
            return []
        out = []
        for slot in range(int(self._call("nvmlDeviceGetMaxMigDeviceCount", handle))):
            try:
                mig = self._call("nvmlDeviceGetMigDeviceHandleByIndex", handle, slot)
            except NvmlError:  # NVML_ERROR_NOT_FOUND: an empty slot
                continue
            out.append(self.uuid(mig))
        return out

    # -- cheap per-sample readings -----------------------------------------------------------------------
    # nvmlDeviceGetPowerUsage returns a 1-second average on Ampere (except GA100) and newer GPUs, instantaneous
    # power on older ones (NVML API reference). Sampling every 0.1 s wants the instantaneous figure, which newer
    # drivers give as the field NVML_FI_DEV_POWER_INSTANT; where that field is missing, fall back.
    _FIELD_VALUE_ATTR = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    power_reading: str | None = None  # "instant" or "driver_average" once power has been read

    def power_w(self, handle: Any) -> float:
        if self.power_reading != "driver_average":
            field = getattr(self._nv, "NVML_FI_DEV_POWER_INSTANT", None)
            try:
                value = self._call("nvmlDeviceGetFieldValues", handle, [field])[0] if field is not None else None
            except NvmlError:
                value = None
            if value is not None and value.nvmlReturn == 0 and value.valueType in self._FIELD_VALUE_ATTR:
                self.power_reading = "instant"
                return getattr(value.value, self._FIELD_VALUE_ATTR[value.valueType]) / 1000.0  # milliwatts
            self.power_reading = "driver_average"
        return self._call("nvmlDeviceGetPowerUsage", handle) / 1000.0  # NVML: milliwatts

    def energy_j(self, handle: Any) -> float:
        """Energy used since the driver was loaded (Volta and later)."""
        return self._call("nvmlDeviceGetTotalEnergyConsumption", handle) / 1000.0  # NVML: millijoules

    def temperature_c(self, handle: Any) -> float:
        return float(self._call("nvmlDeviceGetTemperature", handle, self._nv.NVML_TEMPERATURE_GPU))

    def sm_clock_mhz(self, handle: Any) -> float:
        return float(self._call("nvmlDeviceGetClockInfo", handle, self._nv.NVML_CLOCK_SM))

    def mem_clock_mhz(self, handle: Any) -> float:
        return float(self._call("nvmlDeviceGetClockInfo", handle, self._nv.NVML_CLOCK_MEM))

    def utilization_pct(self, handle: Any) -> tuple[float, float]:
        """(GPU busy %, memory-controller busy %) over NVML's last sample period."""
        util = self._call("nvmlDeviceGetUtilizationRates", handle)
        return float(util.gpu), float(util.memory)

    def clock_event_reasons(self, handle: Any) -> int:
        """Bit mask of why clocks are below their maximum (`decode_clock_event_reasons`)."""
        try:
            return int(self._call("nvmlDeviceGetCurrentClocksEventReasons", handle))
        except NotSupported:
            # Drivers before r535 only have the older name for the same mask.
            return int(self._call("nvmlDeviceGetCurrentClocksThrottleReasons", handle))

    def pcie_link(self, handle: Any) -> PcieLink:
        def get(name: str) -> int | None:
            try:
                return int(self._call(name, handle))
            except NotSupported:
                return None

        return PcieLink(
            gen=get("nvmlDeviceGetCurrPcieLinkGeneration"),
            width=get("nvmlDeviceGetCurrPcieLinkWidth"),
            max_gen=get("nvmlDeviceGetMaxPcieLinkGeneration"),
            max_width=get("nvmlDeviceGetMaxPcieLinkWidth"),
        )

    def fan_speed_pct(self, handle: Any) -> float:
        return float(self._call("nvmlDeviceGetFanSpeed", handle))

    # -- configuration and health (doctor, and once per measured configuration) ---------------------------
    def power_limit_w(self, handle: Any) -> float:
        """The power limit the GPU actually enforces (the lower of the software and board limits)."""
        return self._call("nvmlDeviceGetEnforcedPowerLimit", handle) / 1000.0

    def default_power_limit_w(self, handle: Any) -> float:
        return self._call("nvmlDeviceGetPowerManagementDefaultLimit", handle) / 1000.0

    def persistence_mode(self, handle: Any) -> bool:
        return int(self._call("nvmlDeviceGetPersistenceMode", handle)) == self._nv.NVML_FEATURE_ENABLED

    def ecc_errors(self, handle: Any) -> dict[str, int]:
        """Uncorrected/corrected ECC error counts since boot (volatile) and over the GPU's life (aggregate)."""
        nv = self._nv
        out = {}
        for err_name, err_type in (("uncorrected", nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED),
                                   ("corrected", nv.NVML_MEMORY_ERROR_TYPE_CORRECTED)):
            for counter_name, counter in (("volatile", nv.NVML_VOLATILE_ECC), ("aggregate", nv.NVML_AGGREGATE_ECC)):
                out[f"{err_name}_{counter_name}"] = int(self._call("nvmlDeviceGetTotalEccErrors", handle, err_type,
                                                                   counter))
        return out

    def retired_pages(self, handle: Any) -> dict[str, int | bool]:
        """Pages retired for ECC errors (pre-Ampere) and whether a retirement waits for a reset."""
        nv = self._nv
        double = len(self._call("nvmlDeviceGetRetiredPages", handle,
                                nv.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR))
        single = len(self._call("nvmlDeviceGetRetiredPages", handle,
                                nv.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS))
        pending = bool(self._call("nvmlDeviceGetRetiredPagesPendingStatus", handle))
        return {"double_bit": double, "single_bit": single, "pending": pending}

    def remapped_rows(self, handle: Any) -> dict[str, int | bool]:
        """Row remapping (Ampere and later, replaces page retirement): counts, pending, failure."""
        corr, unc, pending, failure = self._call("nvmlDeviceGetRemappedRows", handle)
        return {"corrected": int(corr), "uncorrected": int(unc), "pending": bool(pending), "failure": bool(failure)}

    def compute_processes(self, handle: Any) -> list[GpuProcess]:
        procs = self._call("nvmlDeviceGetComputeRunningProcesses", handle)
        return [GpuProcess(pid=int(p.pid), used_memory_bytes=getattr(p, "usedGpuMemory", None)) for p in procs]


def open_nvml() -> Nvml:
    """Initialise NVML; `NvmlUnavailable` with the reason when it cannot be used."""
    try:
        import pynvml
    except ImportError:
        raise NvmlUnavailable("nvidia-ml-py (pynvml) is not installed") from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        value = getattr(exc, "value", None)
        if value == pynvml.NVML_ERROR_LIBRARY_NOT_FOUND:
            raise NvmlUnavailable("no NVIDIA driver: the NVML library (libnvidia-ml) was not found") from None
        if value == pynvml.NVML_ERROR_DRIVER_NOT_LOADED:
            raise NvmlUnavailable("the NVIDIA driver is not loaded") from None
        raise NvmlUnavailable(f"NVML could not start: {exc}") from None
    except OSError as exc:  # a broken library install
        raise NvmlUnavailable(f"NVML could not be loaded: {exc}") from None
    return Nvml(pynvml)


# --- matching CUDA devices with NVML devices -------------------------------------------------------------


def normalize_uuid(uuid: str) -> str:
    """`GPU-5A5C0E2B-...` or `MIG-5A5C0E2B-...` (NVML), `5a5c0e2b-...` (torch's `_CUuuid`, which prints no
    prefix for either kind) → `5a5c0e2b...`: lower case, no prefix, no dashes (so a grouping difference between
    the spellings can never break a match). GPU and MIG UUIDs are distinct UUIDs, so dropping the prefix cannot
    make one match the other."""
    text = str(uuid).strip().lower()
    text = text[4:] if text.startswith(("gpu-", "mig-")) else text
    return text.replace("-", "")


@dataclass(frozen=True)
class DeviceMatch:
    """The NVML device behind one CUDA device, or why it could not be found."""

    handle: Any | None
    nvml_index: int | None
    uuid: str | None
    how: str  # "uuid" (torch's device UUID), "visible_devices" (CUDA_VISIBLE_DEVICES), or the failure reason
    mig_uuid: str | None = None  # the MIG instance the CUDA device is; `handle` and `uuid` are its GPU's


def _nvml_uuids(nvml: Nvml) -> list[str]:
    return [nvml.uuid(nvml.handle(i)) for i in range(nvml.device_count())]


def _match_prefix(candidate: str, uuids: list[str]) -> int | None:
    """Index of the one NVML UUID that starts with `candidate` (CUDA accepts unique prefixes)."""
    want = normalize_uuid(candidate)
    hits = [i for i, u in enumerate(uuids) if normalize_uuid(u).startswith(want)]
    return hits[0] if len(hits) == 1 else None


def _match_mig(nvml: Nvml, candidate: str, exact: bool) -> tuple[int, str] | None:
    """(index of the GPU, MIG UUID) for the one MIG instance whose UUID is `candidate` (or, unless `exact`,
    starts with it), or None. GPUs without MIG (or that cannot tell) have no instances."""
    want = normalize_uuid(candidate)
    hits = []
    for i in range(nvml.device_count()):
        try:
            found = nvml.mig_uuids(nvml.handle(i))
        except NvmlError:  # this GPU cannot list its instances: it holds none we can find
            continue
        for mig in found:
            text = normalize_uuid(mig)
            if text == want or (not exact and text.startswith(want)):
                hits.append((i, mig))
    return hits[0] if len(hits) == 1 else None


def _mig_match(nvml: Nvml, uuids: list[str], candidate: str, how: str, exact: bool) -> DeviceMatch | None:
    hit = _match_mig(nvml, candidate, exact)
    if hit is None:
        return None
    index, mig = hit
    return DeviceMatch(nvml.handle(index), index, uuids[index], how, mig_uuid=mig)


def resolve_cuda_device(
    nvml: Nvml,
    cuda_index: int,
    torch_uuid: str | None = None,
    environ: dict[str, str] | None = None,
) -> DeviceMatch:
    """Find the NVML device for CUDA device `cuda_index` (the index a process sees, after CUDA_VISIBLE_DEVICES).

    1. With the device's UUID from torch (`torch.cuda.get_device_properties(i).uuid`), match it exactly: a
       GPU's UUID, or a MIG instance's (the match is then the GPU holding it, with `mig_uuid` set).
    2. Else read `CUDA_VISIBLE_DEVICES`: a UUID entry (or unique prefix) is matched by UUID; `MIG-<uuid>` among
       the MIG instances, the older `MIG-GPU-<gpu uuid>/<gi>/<ci>` by its GPU's UUID; an integer entry is an
       NVML index only when `CUDA_DEVICE_ORDER=PCI_BUS_ID` (CUDA's default order is fastest first).
    3. Else, when NVML sees exactly one GPU, that is it. Otherwise no match, with the reason.
    """
    env = os.environ if environ is None else environ
    uuids = _nvml_uuids(nvml)
    if torch_uuid:
        want = normalize_uuid(torch_uuid)
        for i, u in enumerate(uuids):
            if normalize_uuid(u) == want:
                return DeviceMatch(nvml.handle(i), i, u, "uuid")
        match = _mig_match(nvml, uuids, torch_uuid, "mig_uuid", exact=True)
        if match is not None:
            return match
        return DeviceMatch(None, None, None, f"no NVML device has the UUID of cuda:{cuda_index} ({torch_uuid})")

    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip():
        entries = [e.strip() for e in visible.split(",") if e.strip()]
        if cuda_index >= len(entries):
            return DeviceMatch(None, None, None,
                               f"cuda:{cuda_index} is not among CUDA_VISIBLE_DEVICES={visible!r}")
        entry = entries[cuda_index]
        if entry.lower().startswith("mig-gpu-"):  # MIG-GPU-<gpu uuid>/<gi>/<ci> (drivers before R470)
            idx = _match_prefix(entry[4:].partition("/")[0], uuids)
            if idx is None:
                return DeviceMatch(None, None, None, f"CUDA_VISIBLE_DEVICES entry {entry!r} matches no single GPU")
            return DeviceMatch(nvml.handle(idx), idx, uuids[idx], "visible_devices", mig_uuid=entry)
        if entry.lower().startswith("mig-"):
            match = _mig_match(nvml, uuids, entry, "visible_devices", exact=False)
            if match is None:
                return DeviceMatch(None, None, None,
                                   f"CUDA_VISIBLE_DEVICES entry {entry!r} matches no single MIG instance")
            return match
        if entry.lower().startswith("gpu-"):
            idx = _match_prefix(entry, uuids)
            if idx is None:
                return DeviceMatch(None, None, None, f"CUDA_VISIBLE_DEVICES entry {entry!r} matches no single GPU")
            return DeviceMatch(nvml.handle(idx), idx, uuids[idx], "visible_devices")
        if entry.isdigit() and env.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID":
            idx = int(entry)
            if idx < len(uuids):
                return DeviceMatch(nvml.handle(idx), idx, uuids[idx], "visible_devices")
            return DeviceMatch(None, None, None, f"CUDA_VISIBLE_DEVICES entry {entry} exceeds the NVML GPU count")
    if len(uuids) == 1 and cuda_index == 0:
        return DeviceMatch(nvml.handle(0), 0, uuids[0], "only_gpu")
    return DeviceMatch(None, None, None,
                       f"cannot tell which of {len(uuids)} NVML GPUs is cuda:{cuda_index} without its UUID")


def torch_device_uuid(cuda_index: int) -> str | None:
    """The UUID torch reports for a CUDA device, or None (no torch, no CUDA, or a build without `.uuid`)."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        uuid = getattr(torch.cuda.get_device_properties(cuda_index), "uuid", None)
    except Exception:  # noqa: BLE001 - a UUID is a nicety; the caller falls back to CUDA_VISIBLE_DEVICES
        return None
    return str(uuid) if uuid else None

