"""GPU telemetry during a measured configuration: `dlbench run` on an NVIDIA GPU records it in each result.

The worker creates a sampler for the configuration's device and hands it to `measure`, which calls `start()`
right before the first measured step and `stop()` after the last one:

    sampler = create_sampler(config.device)      # never raises; a CPU gets a sampler that reports why not
    raw = measure(config, sampler=sampler)      # raw["telemetry"] is what stop() returned

Sampling runs in a background thread that waits on an `Event` between readings, so it costs the timed loop
nothing but a few cheap NVML reads (NVML calls release the GIL). `start()` and `stop()` each take one reading
themselves so that the window is bounded exactly.

`stop()` returns the result's `telemetry` block; see `summarize()` for its keys. Energy comes from NVML's
total-energy counter where the GPU has one (Volta and later), else from integrating the power samples over
time (trapezoid rule); `energy_method` says which. The raw `series` is kept for the report's chart, thinned to
at most `telemetry.series.SERIES_MAX_POINTS` readings (the summary figures come from every reading).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from dlbench.telemetry.nvml import (
    CLOCK_EVENT_REASONS,
    SLOWDOWN_REASONS,
    DeviceMatch,
    NotSupported,
    NvmlError,
    NvmlUnavailable,
    decode_clock_event_reasons,
    open_nvml,
    resolve_cuda_device,
    torch_device_uuid,
)
from dlbench.telemetry.series import SERIES_MAX_POINTS, thin_series

DEFAULT_INTERVAL_S = 0.1

ENERGY_COUNTER = "nvml_energy_counter"
ENERGY_INTEGRATED = "power_integration"

# Columns of the raw series, in order. Each is a list with one entry per reading (None: not available).
SERIES_KEYS: tuple[str, ...] = (
    "t_s", "power_w", "temperature_c", "sm_clock_mhz", "mem_clock_mhz", "gpu_utilization_pct",
    "memory_utilization_pct", "clock_event_reasons", "fan_speed_pct", "pcie_link_gen", "pcie_link_width",
)


class UnavailableSampler:
    """Sampler for a device without sensors dlbench can read: `stop()` says why."""

    available = False

    def __init__(self, reason: str):
        self.reason = reason

    def start(self) -> None:
        pass

    def stop(self) -> dict[str, Any]:
        return unavailable(self.reason)


def unavailable(reason: str) -> dict[str, Any]:
    """The `telemetry` block when nothing could be measured."""
    return {"available": False, "reason": reason}


class NvmlSampler:
    """Samples one NVIDIA GPU through NVML. Use `start()`/`stop()`; `begin`/`sample_now`/`finish` drive it by hand."""

    available = True
    source = "nvml"

    def __init__(self, nvml: Any, match: DeviceMatch, cuda_index: int, interval_s: float = DEFAULT_INTERVAL_S,
                 owns_nvml: bool = False, clock: Callable[[], float] = time.monotonic):
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self.nvml = nvml
        self.match = match
        self.handle = match.handle
        self.cuda_index = cuda_index
        self.interval_s = float(interval_s)
        self._owns_nvml = owns_nvml
        self._clock = clock
        self._stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._unsupported: set[str] = set()
        self._columns: dict[str, list[Any]] = {k: [] for k in SERIES_KEYS}
        self._t0: float | None = None
        self._energy_start_j: float | None = None
        self._energy_end_j: float | None = None
        self._static: dict[str, Any] = {}
        self._processes: set[int] = set()
        self._errors: list[str] = []
        self._failed: str | None = None

    # -- public API ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Take the first reading, then keep sampling in a background thread until `stop()`.

        Never raises: telemetry must not cost a measurement. A failure is reported by `stop()`."""
        try:
            self.begin()
            self._thread = threading.Thread(target=self._run, name="dlbench-telemetry", daemon=True)
            self._thread.start()
        except Exception as exc:  # noqa: BLE001
            self._failed = f"telemetry could not start: {type(exc).__name__}: {exc}"

    def stop(self) -> dict[str, Any]:
        """Stop the thread (wakes it at once), take the last reading and return the `telemetry` block."""
        self._stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, 10 * self.interval_s))
            self._thread = None
        if self._failed:
            return unavailable(self._failed)
        try:
            return self.finish()
        except Exception as exc:  # noqa: BLE001 - never fail the measurement for its telemetry
            return unavailable(f"telemetry failed: {type(exc).__name__}: {exc}")

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the pieces, also used directly by tests ---------------------------------------------------------
    def begin(self) -> None:
        """Read the static facts and the energy counter, and take reading number one."""
        self._stop_event.clear()
        self._t0 = self._clock()
        self._static = {
            "power_limit_w": self._get("power_limit_w"),
            "default_power_limit_w": self._get("default_power_limit_w"),
            "name": self._get("name"),
        }
        link = self._get("pcie_link")
        self._static["pcie_link_gen_max"] = getattr(link, "max_gen", None)
        self._static["pcie_link_width_max"] = getattr(link, "max_width", None)
        self._note_processes()
        self._energy_start_j = self._get("energy_j")
        self.sample_now()

    def sample_now(self) -> None:
        """One reading of every per-sample figure (cheap NVML calls only)."""
        t = self._clock() - (self._t0 or 0.0)
        util = self._get("utilization_pct")
        link = self._get("pcie_link")
        row = {
            "t_s": t,
            "power_w": self._get("power_w"),
            "temperature_c": self._get("temperature_c"),
            "sm_clock_mhz": self._get("sm_clock_mhz"),
            "mem_clock_mhz": self._get("mem_clock_mhz"),
            "gpu_utilization_pct": util[0] if util else None,
            "memory_utilization_pct": util[1] if util else None,
            "clock_event_reasons": self._get("clock_event_reasons"),
            "fan_speed_pct": self._get("fan_speed_pct"),
            "pcie_link_gen": getattr(link, "gen", None),
            "pcie_link_width": getattr(link, "width", None),
        }
        with self._lock:
            for key in SERIES_KEYS:
                self._columns[key].append(row[key])

    def finish(self) -> dict[str, Any]:
        """Last reading and energy counter; returns the `telemetry` block and releases NVML if we opened it."""
        self.sample_now()
        self._energy_end_j = self._get("energy_j")
        self._note_processes()
        if self._owns_nvml:
            self.nvml.shutdown()
        with self._lock:
            columns = {k: list(v) for k, v in self._columns.items()}
        block = summarize(columns, self._static, self._energy_start_j, self._energy_end_j, self.interval_s)
        block["source"] = self.source
        # How NVML read power: "instant", or "driver_average" (a 1-second average on Ampere and newer).
        block["power_reading"] = getattr(self.nvml, "power_reading", None)
        block["gpu"] = {"name": self._static.get("name"), "uuid": self.match.uuid,
                        "nvml_index": self.match.nvml_index, "cuda_index": self.cuda_index,
                        "matched_by": self.match.how}
        if self.match.mig_uuid:  # readings are the whole GPU's, which other MIG instances may share
            block["gpu"]["mig_uuid"] = self.match.mig_uuid
        block["other_processes"] = sorted(self._processes)
        if self._errors:
            block["sampling_errors"] = self._errors[:5]
        return block

    # -- internals -------------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop_event.wait(self.interval_s):
            try:
                self.sample_now()
            except Exception as exc:  # noqa: BLE001 - telemetry must never break a measurement
                self._errors.append(f"sampling stopped: {type(exc).__name__}: {exc}")
                return

    def _get(self, what: str) -> Any:
        """One NVML reading; None when unsupported (then never asked again) or when the call fails."""
        if what in self._unsupported:
            return None
        try:
            return getattr(self.nvml, what)(self.handle)
        except NotSupported:
            self._unsupported.add(what)
            return None
        except NvmlError as exc:
            if len(self._errors) < 20:
                self._errors.append(str(exc))
            return None

    def _note_processes(self) -> None:
        """Remember compute processes on this GPU other than this one (a shared GPU explains slow numbers)."""
        try:
            procs = self.nvml.compute_processes(self.handle)
        except NvmlError:
            return
        pids = {p.pid for p in procs}
        me = os.getpid()
        if me in pids or not pids:
            self._processes |= pids - {me}
        elif len(pids) > 1:
            # In a container NVML may report host PIDs, so our own process is not recognisable: count all
            # but one as others only when there are several.
            self._processes |= set(sorted(pids)[1:])


def _trapezoid(t: list[float], y: list[float]) -> float:
    return sum((t[i + 1] - t[i]) * (y[i + 1] + y[i]) / 2.0 for i in range(len(t) - 1))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(columns: dict[str, list[Any]], static: dict[str, Any], energy_start_j: float | None,
              energy_end_j: float | None, interval_s: float) -> dict[str, Any]:
    """Turn raw readings into the `telemetry` block (pure: tests call it with made-up columns)."""
    t = columns["t_s"]
    n = len(t)
    duration_s = (t[-1] - t[0]) if n >= 2 else 0.0

    power_pts = [(ti, p) for ti, p in zip(t, columns["power_w"], strict=True) if p is not None]
    integrated_j = _trapezoid([a for a, _ in power_pts], [b for _, b in power_pts]) if len(power_pts) >= 2 else None
    if energy_start_j is not None and energy_end_j is not None and energy_end_j >= energy_start_j:
        energy_j, method = energy_end_j - energy_start_j, ENERGY_COUNTER
    elif integrated_j is not None:
        energy_j, method = integrated_j, ENERGY_INTEGRATED
    else:
        energy_j, method = None, None
    powers = [p for _, p in power_pts]
    span = (power_pts[-1][0] - power_pts[0][0]) if len(power_pts) >= 2 else 0.0
    # Time-weighted mean power: readings are not exactly evenly spaced (the first and last are taken by
    # start()/stop()), so weight each by the time around it.
    power_mean_w = integrated_j / span if integrated_j is not None and span > 0 else _mean(powers)

    def present(key: str) -> list[Any]:
        return [v for v in columns[key] if v is not None]

    temps = present("temperature_c")
    reasons_masks = present("clock_event_reasons")
    reason_counts: dict[str, int] = {}
    slowed = 0
    for mask in reasons_masks:
        names = decode_clock_event_reasons(int(mask))
        for name in names:
            reason_counts[name] = reason_counts.get(name, 0) + 1
        if SLOWDOWN_REASONS.intersection(names):
            slowed += 1
    shares = {name: count / len(reasons_masks) for name, count in
              sorted(reason_counts.items(), key=lambda kv: (-kv[1], kv[0]))}
    fans = present("fan_speed_pct")
    gens, widths = present("pcie_link_gen"), present("pcie_link_width")

    series = {k: v for k, v in columns.items() if any(x is not None for x in v)}
    # Every figure above comes from every reading; the series kept for the chart is thinned (telemetry.series).
    return thin_series({
        "available": True,
        "source": "nvml",
        "sample_interval_s": interval_s,
        "num_samples": n,
        "duration_s": duration_s,
        "power_mean_w": power_mean_w,
        "power_max_w": max(powers) if powers else None,
        "energy_j": energy_j,
        "energy_method": method,
        "energy_integrated_j": integrated_j,  # the power integral, also kept when the counter is used (cross-check)
        "temperature_start_c": temps[0] if temps else None,
        "temperature_max_c": max(temps) if temps else None,
        "temperature_mean_c": _mean(temps),
        "sm_clock_mean_mhz": _mean(present("sm_clock_mhz")),
        "sm_clock_min_mhz": min(present("sm_clock_mhz"), default=None),
        "mem_clock_mean_mhz": _mean(present("mem_clock_mhz")),
        "gpu_utilization_mean_pct": _mean(present("gpu_utilization_pct")),
        "throttle_reasons": shares if reasons_masks else None,  # None: the GPU reports no reasons (unknown)
        "throttle_share": slowed / len(reasons_masks) if reasons_masks else None,
        "power_limit_w": static.get("power_limit_w"),
        "default_power_limit_w": static.get("default_power_limit_w"),
        "pcie_link_gen_min": min(gens, default=None),
        "pcie_link_width_min": min(widths, default=None),
        "pcie_link_gen_max": static.get("pcie_link_gen_max"),
        "pcie_link_width_max": static.get("pcie_link_width_max"),
        "fan_speed_max_pct": max(fans, default=None),
        "series": series,
    }, SERIES_MAX_POINTS)


_DEVICE_RE = re.compile(r"^(cuda|gpu)(?::(\d+))?$")


def create_sampler(device: str, interval_s: float = DEFAULT_INTERVAL_S, nvml: Any = None,
                   uuid_of: Callable[[int], str | None] | None = None) -> NvmlSampler | Any:
    """A sampler for `device` ("cpu", "mps", "cuda", "cuda:N"); never raises.

    `nvml`: an object with `open()` returning an `Nvml`-like object (tests pass a `FakeNvml`); default: the real
    NVML. `uuid_of(cuda_index)`: the device UUID (default: from torch). Where nothing can be sampled the
    result is an `UnavailableSampler` whose `stop()` gives `{"available": False, "reason": ...}`.

    A GPU device under a ROCm build of torch is sampled through AMD SMI instead of NVML (unless `nvml` is given):
    for a GPU device this imports torch to ask, so call it only where torch is about to be used anyway (the
    worker processes: one per configuration, every rank of a group).
    """
    try:
        return _create(device, interval_s, nvml, uuid_of)
    except Exception as exc:  # noqa: BLE001 - telemetry must never stop a measurement
        return UnavailableSampler(f"telemetry could not start: {type(exc).__name__}: {exc}")


def _create(device: str, interval_s: float, nvml: Any, uuid_of: Callable[[int], str | None] | None) -> Any:
    text = (device or "").strip().lower()
    if text == "cpu":
        return UnavailableSampler("the device is the CPU: dlbench reads power and temperature from GPUs only")
    if text.startswith("mps"):
        return UnavailableSampler("Apple GPUs (MPS) expose no power or clock sensors that dlbench reads")
    m = _DEVICE_RE.match(text)
    if not m:
        return UnavailableSampler(f"no GPU sensors for device {device!r}")
    index = int(m.group(2) or 0)
    if nvml is None and _is_rocm():
        return create_amd_sampler(index, interval_s)
    owns = nvml is None
    try:
        handle_source = open_nvml() if nvml is None else nvml.open()
    except NvmlUnavailable as exc:
        return UnavailableSampler(f"NVML unavailable: {exc}")
    try:
        uuid = (uuid_of or torch_device_uuid)(index)
        match = resolve_cuda_device(handle_source, index, torch_uuid=uuid)
    except NvmlError as exc:
        match = DeviceMatch(None, None, None, f"NVML error while looking for the GPU: {exc}")
    if match.handle is None:
        if owns:
            handle_source.shutdown()
        return UnavailableSampler(f"cannot find cuda:{index} in NVML: {match.how}")
    return NvmlSampler(handle_source, match, index, interval_s, owns_nvml=owns)


def _is_rocm() -> bool:
    """True in a ROCm build of torch (`torch.version.hip`). Imports torch if no one has yet, so that the answer
    never depends on whether the caller happened to import torch first; without torch, False."""
    try:
        import torch
    except ImportError:
        return False
    return bool(getattr(getattr(torch, "version", None), "hip", None))


__all__ = ["create_sampler", "NvmlSampler", "UnavailableSampler", "summarize", "unavailable", "SERIES_KEYS",
           "CLOCK_EVENT_REASONS", "ENERGY_COUNTER", "ENERGY_INTEGRATED"]


def create_amd_sampler(index: int, interval_s: float) -> Any:
    """An `NvmlSampler` over amdsmi for HIP device `index`, or an `UnavailableSampler` with the reason."""
    from dlbench.telemetry.amd import AmdSmi, visible_index

    try:
        import amdsmi
    except ImportError:
        return UnavailableSampler("AMD GPU: the amdsmi Python package is not importable")
    try:
        amdsmi.amdsmi_init()
    except Exception as exc:  # noqa: BLE001 - any failure to start means no telemetry, with the reason
        return UnavailableSampler(f"AMD GPU: amdsmi could not start: {exc}")
    adapter = AmdSmi(amdsmi)
    physical = visible_index(index)
    handles = adapter.handles()
    if physical is None or physical >= len(handles):
        adapter.shutdown()
        return UnavailableSampler(f"AMD GPU: cannot tell which amdsmi device is HIP device {index}")
    handle = handles[physical]
    try:
        uuid = adapter.uuid(handle)
    except NvmlError:
        uuid = None
    match = DeviceMatch(handle, physical, uuid, "visible_devices")
    sampler = NvmlSampler(adapter, match, index, interval_s, owns_nvml=True)
    sampler.source = "amdsmi"
    return sampler
