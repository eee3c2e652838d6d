"""Machine checks behind `dlbench doctor` (no arguments): is this machine fit to benchmark?

Each check returns a `Check` with a verdict: `ok`, `warn` (costs performance or makes numbers less
trustworthy), `fail` (broken: results would be wrong or impossible) or `n/a` (does not apply here, e.g. GPU
checks on a machine without a GPU). `run_checks()` takes its NVML and torch facts as arguments so tests can
feed a fake NVML and made-up torch facts; the CLI passes the real ones.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from dlbench.telemetry.nvml import (
    SLOWDOWN_REASONS,
    NotSupported,
    NvmlError,
    NvmlUnavailable,
    decode_clock_event_reasons,
    open_nvml,
)

VERDICTS = ("ok", "warn", "fail", "n/a")

# AIME starts every benchmark with the GPU below 50 C (seed 000); `dlbench run --max-start-temp` uses the same.
IDLE_TEMPERATURE_LIMIT_C = 50.0
SWAP_WARN_BYTES = 256 * 1024**2


@dataclass
class Check:
    name: str
    title: str
    verdict: str
    message: str
    advice: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TorchInfo:
    """What torch knows about the GPUs (gathered by `probe_torch`, or made up in tests)."""

    version: str | None = None
    cuda: str | None = None  # torch.version.cuda: the CUDA it was built for
    hip: str | None = None
    cuda_available: bool = False
    device_count: int = 0
    names: list[str] = field(default_factory=list)
    peer_access: dict[str, bool] = field(default_factory=dict)  # "0-1": can 0 access 1's memory
    error: str | None = None


def probe_torch(peer: bool = True) -> TorchInfo:
    """Ask torch about CUDA devices and peer access (imports torch)."""
    try:
        import torch
    except ImportError as exc:
        return TorchInfo(error=f"torch cannot be imported: {exc}")
    info = TorchInfo(version=torch.__version__, cuda=torch.version.cuda, hip=getattr(torch.version, "hip", None))
    try:
        info.cuda_available = bool(torch.cuda.is_available())
        if info.cuda_available:
            info.device_count = torch.cuda.device_count()
            info.names = [torch.cuda.get_device_name(i) for i in range(info.device_count)]
            if peer:
                for i in range(info.device_count):
                    for j in range(info.device_count):
                        if i != j:
                            info.peer_access[f"{i}-{j}"] = bool(torch.cuda.can_device_access_peer(i, j))
    except Exception as exc:  # noqa: BLE001 - a broken CUDA set-up is itself a finding
        info.error = f"{type(exc).__name__}: {exc}"
    return info


def gpu_load(cuda_index: int, seconds: float = 0.5) -> Callable[[], None]:
    """Queue about `seconds` of matrix multiplies on a GPU; returns a function that waits for them."""
    import time

    import torch

    device = torch.device("cuda", cuda_index)
    a = torch.randn(4096, 4096, device=device)
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(4):
        a @ a
    torch.cuda.synchronize(device)
    per = max((time.perf_counter() - start) / 4, 1e-4)
    for _ in range(min(int(seconds / per), 5000)):
        a @ a
    return lambda: torch.cuda.synchronize(device)


def _cuda_version_text(encoded: int) -> str:
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"


def _parse_version(text: str | None) -> tuple[int, int] | None:
    try:
        major, minor = str(text).split(".")[:2]
        return int(major), int(minor)
    except (ValueError, TypeError):
        return None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


# --- host checks -----------------------------------------------------------------------------------------


def check_cpu_governor(root: str = "/") -> Check:
    title = "CPU governor"
    files = sorted(glob.glob(os.path.join(root, "sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")))
    governors = [g.strip() for g in (_read(f) for f in files) if g]
    if not governors:
        return Check("cpu_governor", title, "n/a", "no CPU frequency scaling exposed (a VM or a container)")
    counts: dict[str, int] = {}
    for g in governors:
        counts[g] = counts.get(g, 0) + 1
    others = {g: n for g, n in counts.items() if g != "performance"}
    text = ", ".join(f"{g} on {n} CPUs" for g, n in sorted(counts.items()))
    if not others:
        return Check("cpu_governor", title, "ok", f"performance on all {len(governors)} CPUs", details=counts)
    return Check("cpu_governor", title, "warn", text,
                 advice="The CPU launches every GPU kernel: a power-saving governor slows small batches and "
                        "input pipelines. For benchmarks: `sudo cpupower frequency-set -g performance`.",
                 details=counts)


def check_swap(root: str = "/") -> Check:
    title = "swap"
    text = _read(os.path.join(root, "proc/meminfo"))
    if text is None:
        return Check("swap", title, "n/a", "no /proc/meminfo on this system")
    fields_kb = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            fields_kb[key] = int(parts[0])
    total = fields_kb.get("SwapTotal", 0) * 1024
    used = total - fields_kb.get("SwapFree", 0) * 1024
    details = {"swap_total_bytes": total, "swap_used_bytes": used}
    if total == 0:
        return Check("swap", title, "ok", "no swap configured", details=details)
    if used >= SWAP_WARN_BYTES:
        return Check("swap", title, "warn", f"{used / 1024**3:.1f} GB of swap in use",
                     advice="Memory has been short: a benchmark whose data or workers page out is slow. Close "
                            "other programs or add memory.", details=details)
    return Check("swap", title, "ok", f"{used / 1024**2:.0f} MB of {total / 1024**3:.1f} GB swap in use",
                 details=details)


# --- GPU checks --------------------------------------------------------------------------------------------


def _gpu_rows(nvml: Any) -> list[dict[str, Any]]:
    rows = []
    for i in range(nvml.device_count()):
        h = nvml.handle(i)
        rows.append({"index": i, "handle": h, "name": nvml.name(h), "uuid": nvml.uuid(h)})
    return rows


def _each(nvml: Any, rows: list[dict[str, Any]], what: str) -> dict[int, Any]:
    """`what` for every GPU: value, or the exception (NotSupported/NvmlError) it raised."""
    out = {}
    for r in rows:
        try:
            out[r["index"]] = getattr(nvml, what)(r["handle"])
        except NvmlError as exc:
            out[r["index"]] = exc
    return out


def check_driver_and_cuda(nvml: Any, torch: TorchInfo) -> list[Check]:
    driver = nvml.driver_version()
    cuda_max = nvml.cuda_driver_version()
    driver_check = Check("driver", "NVIDIA driver", "ok",
                         f"driver {driver}, supports CUDA up to {_cuda_version_text(cuda_max)}",
                         details={"driver_version": driver, "cuda_driver_version": _cuda_version_text(cuda_max)})
    title = "CUDA vs torch"
    if torch.error and torch.version is None:
        return [driver_check, Check("cuda_compat", title, "fail", torch.error)]
    if torch.hip:
        return [driver_check, Check("cuda_compat", title, "warn",
                                    f"torch {torch.version} is a ROCm build (HIP {torch.hip}): it cannot use "
                                    "these NVIDIA GPUs")]
    if not torch.cuda:
        return [driver_check, Check("cuda_compat", title, "fail",
                                    f"torch {torch.version} is a CPU-only build: it cannot use the GPUs",
                                    advice="Install a CUDA build of torch (https://pytorch.org/get-started).")]
    built, supported = _parse_version(torch.cuda), _parse_version(_cuda_version_text(cuda_max))
    msg = f"torch {torch.version} built for CUDA {torch.cuda}; driver supports up to {_cuda_version_text(cuda_max)}"
    details = {"torch_cuda": torch.cuda, "driver_cuda": _cuda_version_text(cuda_max)}
    if built and supported and built[0] > supported[0]:
        return [driver_check, Check("cuda_compat", title, "fail", msg + ": the driver is too old for this torch",
                                    advice="Update the NVIDIA driver, or install a torch built for an older CUDA.",
                                    details=details)]
    if built and supported and built > supported:
        return [driver_check, Check("cuda_compat", title, "warn",
                                    msg + ": runs under CUDA minor-version compatibility (no PTX JIT; some "
                                    "features may be missing)",
                                    advice="Update the driver to one that supports CUDA " + torch.cuda + ".",
                                    details=details)]
    return [driver_check, Check("cuda_compat", title, "ok", msg, details=details)]


def check_visible(nvml_count: int, torch: TorchInfo, environ: dict[str, str]) -> Check:
    title = "GPUs visible"
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    details = {"nvml": nvml_count, "torch": torch.device_count, "CUDA_VISIBLE_DEVICES": visible}
    if not torch.cuda_available:
        why = f" ({torch.error})" if torch.error else ""
        if visible is not None and not visible.strip():
            return Check("visible", title, "warn", f"NVML sees {nvml_count} GPUs but CUDA_VISIBLE_DEVICES is empty",
                         details=details)
        return Check("visible", title, "fail", f"NVML sees {nvml_count} GPUs but torch cannot use CUDA{why}",
                     details=details)
    expected = nvml_count
    if visible is not None:
        expected = min(nvml_count, len([e for e in visible.split(",") if e.strip()]))
    msg = f"torch sees {torch.device_count} of the {nvml_count} GPUs NVML sees"
    if visible is not None:
        msg += f" (CUDA_VISIBLE_DEVICES={visible})"
    verdict = "ok" if torch.device_count == expected else "warn"
    return Check("visible", title, verdict, msg, details=details)


def check_gpu_models(rows: list[dict[str, Any]]) -> Check:
    names = sorted({r["name"] for r in rows})
    if len(names) <= 1:
        return Check("models", "GPU models", "ok", f"{len(rows)} x {names[0]}" if names else "no GPUs")
    return Check("models", "GPU models", "warn", "different GPU models: " + ", ".join(names),
                 advice="In data-parallel training the slowest GPU sets the pace; benchmark each model on its own "
                        "(CUDA_VISIBLE_DEVICES) or group equal GPUs.", details={"names": names})


def check_persistence(nvml: Any, rows: list[dict[str, Any]]) -> Check:
    title = "persistence mode"
    values = _each(nvml, rows, "persistence_mode")
    if all(isinstance(v, NotSupported) for v in values.values()):
        return Check("persistence", title, "n/a", "not supported here (persistence mode exists on Linux only)")
    off = [i for i, v in values.items() if v is False]
    if not off:
        return Check("persistence", title, "ok", "on for every GPU")
    return Check("persistence", title, "warn", f"off on GPU {_list(off)}",
                 advice="Without it the driver tears down and re-initialises the GPU between programs (slow starts, "
                        "settings lost). `sudo nvidia-smi -pm 1`, or run nvidia-persistenced.")


def check_pcie(nvml: Any, rows: list[dict[str, Any]], load: Callable[[int], Callable[[], None]] | None,
               cuda_index_of: dict[int, int]) -> Check:
    title = "PCIe link"
    links = _each(nvml, rows, "pcie_link")
    low, notes, details = [], [], {}
    for i, link in links.items():
        if isinstance(link, Exception) or link.gen is None or link.max_gen is None:
            continue
        loaded = False
        if (link.gen < link.max_gen or (link.width or 0) < (link.max_width or 0)) and load and i in cuda_index_of:
            try:
                wait = load(cuda_index_of[i])  # links drop to a low generation at idle; look again while busy
                link = nvml.pcie_link(rows[i]["handle"])
                wait()
                loaded = True
            except Exception:  # noqa: BLE001 - no load possible: report the idle reading
                pass
        details[i] = {"gen": link.gen, "width": link.width, "max_gen": link.max_gen, "max_width": link.max_width,
                      "under_load": loaded}
        if link.gen < link.max_gen or (link.width or 0) < (link.max_width or 0):
            low.append(f"GPU {i} gen{link.gen} x{link.width} (max gen{link.max_gen} x{link.max_width})"
                       + ("" if loaded else " at idle"))
        if link.max_width and link.max_width < 16:
            notes.append(f"GPU {i} sits in an x{link.max_width} slot")
    if not details:
        return Check("pcie", title, "n/a", "no PCIe link information (e.g. SXM GPUs on some drivers)")
    if low:
        return Check("pcie", title, "warn", "; ".join(low),
                     advice="Links slow down at idle to save power, so an idle reading can mislead; one that stays "
                            "low under load points at a slot, riser or BIOS setting. Seed 001: x8 or x4 links cost "
                            "about 5-10% with 4 GPUs and little with 1-2.", details=details)
    msg = "every link at its maximum" + (f"; {', '.join(notes)}" if notes else "")
    return Check("pcie", title, "ok", msg, details=details)


def check_power_limit(nvml: Any, rows: list[dict[str, Any]]) -> Check:
    title = "power limit"
    enforced, default = _each(nvml, rows, "power_limit_w"), _each(nvml, rows, "default_power_limit_w")
    low, details = [], {}
    for i in enforced:
        e, d = enforced[i], default[i]
        if isinstance(e, Exception) or isinstance(d, Exception):
            continue
        details[i] = {"enforced_w": e, "default_w": d}
        if e < d - 1.0:
            low.append(f"GPU {i} {e:.0f} W of {d:.0f} W")
    if not details:
        return Check("power_limit", title, "n/a", "power limits not readable")
    if low:
        return Check("power_limit", title, "warn", "below default: " + "; ".join(low),
                     advice="A lower limit cools and saves power at a modest cost (seed 001: 50 W less cost about "
                            "7% on an RTX 2080 Ti) but results will not match published ones. Restore with "
                            "`sudo nvidia-smi -pl <watts>` if that was not intended.", details=details)
    return Check("power_limit", title, "ok", "at default on every GPU", details=details)


def check_memory_errors(nvml: Any, rows: list[dict[str, Any]]) -> Check:
    title = "ECC / retired memory"
    ecc, pages, remap = (_each(nvml, rows, w) for w in ("ecc_errors", "retired_pages", "remapped_rows"))
    fails, warns, seen = [], [], False
    for r in rows:
        i = r["index"]
        if isinstance(ecc[i], dict):
            seen = True
            if ecc[i].get("uncorrected_volatile", 0) > 0:
                fails.append(f"GPU {i}: {ecc[i]['uncorrected_volatile']} uncorrected ECC errors since boot")
            elif ecc[i].get("uncorrected_aggregate", 0) > 0:
                warns.append(f"GPU {i}: {ecc[i]['uncorrected_aggregate']} uncorrected ECC errors in its lifetime")
        if isinstance(pages[i], dict):
            seen = True
            if pages[i].get("pending"):
                warns.append(f"GPU {i}: a page retirement waits for a GPU reset")
            elif pages[i].get("double_bit", 0) > 0:
                warns.append(f"GPU {i}: {pages[i]['double_bit']} pages retired for double-bit errors")
        if isinstance(remap[i], dict):
            seen = True
            if remap[i].get("failure"):
                fails.append(f"GPU {i}: row remapping failed")
            elif remap[i].get("pending"):
                warns.append(f"GPU {i}: a row remap waits for a GPU reset")
    if not seen:
        return Check("memory_errors", title, "n/a", "this GPU has no ECC reporting (usual for GeForce cards)")
    if fails:
        return Check("memory_errors", title, "fail", "; ".join(fails + warns),
                     advice="Reset the GPU (or reboot); if errors come back, the GPU needs service.")
    if warns:
        return Check("memory_errors", title, "warn", "; ".join(warns),
                     advice="Reset the GPU when it is idle (`nvidia-smi -r`) or reboot to apply pending repairs.")
    return Check("memory_errors", title, "ok", "no uncorrected errors, nothing pending")


def check_processes(nvml: Any, rows: list[dict[str, Any]], own_pid: int) -> Check:
    title = "other processes"
    procs = _each(nvml, rows, "compute_processes")
    busy, details = [], {}
    for i, plist in procs.items():
        if isinstance(plist, Exception):
            continue
        others = [p for p in plist if p.pid != own_pid]
        details[i] = [{"pid": p.pid, "used_memory_bytes": p.used_memory_bytes} for p in others]
        if others:
            busy.append(f"GPU {i}: " + ", ".join(
                f"pid {p.pid}" + (f" ({p.used_memory_bytes / 1024**3:.1f} GB)" if p.used_memory_bytes else "")
                for p in others))
    if not details:
        return Check("processes", title, "n/a", "process list not readable")
    if busy:
        return Check("processes", title, "warn", "; ".join(busy),
                     advice="A shared GPU gives slower, noisier numbers: benchmark on an idle GPU.", details=details)
    return Check("processes", title, "ok", "no other compute processes on the GPUs")


def check_thermal(nvml: Any, rows: list[dict[str, Any]]) -> Check:
    title = "idle temperature / clocks"
    temps, reasons = _each(nvml, rows, "temperature_c"), _each(nvml, rows, "clock_event_reasons")
    hot, slowed = [], []
    for i in temps:
        t = temps[i]
        if not isinstance(t, Exception) and t > IDLE_TEMPERATURE_LIMIT_C:
            hot.append(f"GPU {i} at {t:.0f} C")
        mask = reasons[i]
        if not isinstance(mask, Exception):
            names = sorted(SLOWDOWN_REASONS.intersection(decode_clock_event_reasons(mask)) - {"sw_power_cap"})
            if names:
                slowed.append(f"GPU {i}: {', '.join(names)}")
    if slowed:
        return Check("thermal", title, "fail", "clocks held down while idle: " + "; ".join(slowed + hot),
                     advice="Thermal or hardware slowdown without load means cooling or power delivery is failing: "
                            "check fans, airflow, power cables.")
    if hot:
        return Check("thermal", title, "warn", "; ".join(hot) + f" before any work (benchmarks start below "
                     f"{IDLE_TEMPERATURE_LIMIT_C:.0f} C)",
                     advice="Seed 001: GPUs packed next to each other run hot and throttle above about 80 C; space "
                            "them (PCIe extenders) or use blower-style coolers.")
    return Check("thermal", title, "ok", "idle temperatures and clocks normal")


def check_peer_access(torch: TorchInfo) -> Check:
    title = "peer-to-peer"
    if torch.device_count < 2:
        return Check("p2p", title, "n/a", "fewer than two GPUs")
    missing = sorted(k for k, v in torch.peer_access.items() if not v)
    if not torch.peer_access:
        return Check("p2p", title, "n/a", "not checked")
    if missing:
        return Check("p2p", title, "warn", "no peer access between " + ", ".join(missing),
                     advice="Without P2P, multi-GPU gradients travel through host memory; GeForce cards often have "
                            "it disabled (seed 001), and IOMMU/ACS settings can block it.",
                     details=torch.peer_access)
    return Check("p2p", title, "ok", f"every pair of the {torch.device_count} GPUs has peer access")


def _list(items: list[int]) -> str:
    return ", ".join(str(i) for i in items)


def run_checks(nvml: Any = None, torch: TorchInfo | None = None, *, root: str = "/",
               load: Callable[[int], Callable[[], None]] | None = None,
               environ: dict[str, str] | None = None) -> list[Check]:
    """Every check for this machine. `nvml`: object with `open()` (default: real NVML); `torch`: facts
    (default: `probe_torch()`); `load(cuda_index)`: starts GPU work for the PCIe check (None: idle reading)."""
    env = dict(os.environ if environ is None else environ)
    torch = torch if torch is not None else probe_torch()
    checks: list[Check] = []
    try:
        handle_source = open_nvml() if nvml is None else nvml.open()
    except NvmlUnavailable as exc:
        handle_source = None
        torch_text = (f"torch {torch.version} ({'CUDA ' + torch.cuda + ' build' if torch.cuda else 'CPU-only build'})"
                      if torch.version else "torch not importable")
        if torch.cuda_available and torch.hip:
            checks.append(Check("gpu", "GPU", "n/a", f"torch sees {torch.device_count} ROCm GPU(s); these checks "
                                "read NVML and cover NVIDIA GPUs only (run telemetry uses amdsmi)"))
        elif torch.cuda_available:
            checks.append(Check("gpu", "GPU", "warn", f"torch sees {torch.device_count} CUDA device(s) but NVML is "
                                f"unavailable ({exc}): no power, clock or health checks"))
        else:
            checks.append(Check("gpu", "GPU", "n/a", f"No NVIDIA GPU on this machine ({exc}); {torch_text} sees "
                                "no CUDA device. The GPU checks do not apply: dlbench measures the CPU here."))
    if handle_source is not None:
        try:
            rows = _gpu_rows(handle_source)
            checks.append(Check("gpu", "GPU", "ok" if rows else "warn",
                                f"{len(rows)} NVIDIA GPU(s): " + ", ".join(sorted({r['name'] for r in rows}))
                                if rows else "the NVIDIA driver is loaded but sees no GPU"))
            checks += check_driver_and_cuda(handle_source, torch)
            if rows:
                checks.append(check_visible(len(rows), torch, env))
                checks.append(check_gpu_models(rows))
                checks.append(check_persistence(handle_source, rows))
                cuda_of = _cuda_indices(rows, env) if torch.cuda_available and load else {}
                checks.append(check_pcie(handle_source, rows, load, cuda_of))
                checks.append(check_power_limit(handle_source, rows))
                checks.append(check_memory_errors(handle_source, rows))
                checks.append(check_processes(handle_source, rows, os.getpid()))
                checks.append(check_thermal(handle_source, rows))
                checks.append(check_peer_access(torch))
        except NvmlError as exc:
            checks.append(Check("nvml", "NVML", "fail", f"NVML query failed: {exc}"))
        finally:
            if nvml is None:
                handle_source.shutdown()
    checks.append(check_cpu_governor(root))
    checks.append(check_swap(root))
    return checks


def _cuda_indices(rows: list[dict[str, Any]], environ: dict[str, str]) -> dict[int, int]:
    """NVML index → CUDA index for the GPUs this process can load, by UUID through CUDA_VISIBLE_DEVICES."""
    from dlbench.telemetry.nvml import normalize_uuid, torch_device_uuid

    by_uuid = {normalize_uuid(r["uuid"]): r["index"] for r in rows}
    out = {}
    for cuda_index in range(len(rows)):
        uuid = torch_device_uuid(cuda_index)
        if uuid and normalize_uuid(uuid) in by_uuid:
            out[by_uuid[normalize_uuid(uuid)]] = cuda_index
    return out


def exit_code(checks: list[Check]) -> int:
    """0 when every check is ok or n/a, 1 when any warns or fails."""
    return 1 if any(c.verdict in ("warn", "fail") for c in checks) else 0
