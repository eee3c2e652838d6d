"""Fail-fast check of every GPU code path in about a minute, before a long sweep (h100_plan.sh's `setup` step).

Run it with `PYTHONPATH=src python3 benchmarks/gpu_smoke.py --device cuda --compile default --expect-all` on a
GPU machine, or here: `PYTHONPATH=src python3 benchmarks/gpu_smoke.py --device cpu -w resnet50 -p fp32`.

All in this one process (no worker start-up per configuration), one line per check:
1. versions: Python, torch and the CUDA / cuDNN / NCCL it was built with, the NVIDIA driver, and every package
   dlbench imports on the plan's paths (a missing one fails); a fresh SQLite store (SQLAlchemy + Alembic);
2. CUDA: the device, then the torch calls dlbench relies on: TF32 really on in `tf32` and off in `fp32`
   (matmul and cuDNN convolution errors against float64), autocast matmuls, a channels_last bf16 convolution,
   the SDPA kernels (flash, memory-efficient, cuDNN) in bf16/fp16, CUDA event timing, the peak-memory
   counters, GradScaler with fused SGD and AdamW (a step with an inf gradient must be skipped), the CUDA-graph
   step marker, and that an impossible allocation is classified as out-of-memory;
3. NVML through dlbench's wrapper: every reading the sampler and `dlbench doctor` take (NotSupported is
   reported as n/a, not failed), a short sampler window under load, and the start-temperature thermometer;
4. `measure()` of the tiny flavour of every workload x precision (eager), checking the flags dlbench records
   (channels_last and fused optimizer on CUDA, SDPA attention for BERT, GradScaler for amp-fp16, TF32 flags);
5. with `--compile MODE`: the same for `COMPILE_PAIRS` compiled (cold caches, as `dlbench run` compiles).
A failure prints its traceback; `warn` marks what works but would make numbers worse or less explained.
The last line sums up; the exit code is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata as metadata
import platform
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any

# (distribution, module): what dlbench imports on the plan's paths, and pytest for its `gpu-tests` step.
REQUIRED = (
    ("torch", "torch"), ("torchvision", "torchvision"), ("transformers", "transformers"),
    ("nvidia-ml-py", "pynvml"), ("numpy", "numpy"), ("typer", "typer"), ("rich", "rich"),
    ("sqlalchemy", "sqlalchemy"), ("alembic", "alembic"), ("mako", "mako"), ("platformdirs", "platformdirs"),
    ("typing-extensions", "typing_extensions"), ("markupsafe", "markupsafe"), ("pytest", "pytest"),
    ("pluggy", "pluggy"), ("iniconfig", "iniconfig"), ("packaging", "packaging"), ("pygments", "pygments"),
)
# Reported when present: what torch.compile and transformers use, and what only `dlbench report` (matplotlib,
# jinja2) and `dlbench compare` (scipy) import.
OPTIONAL = ("triton", "huggingface-hub", "tokenizers", "safetensors", "click", "pytest-timeout", "matplotlib",
            "jinja2", "scipy")
WORKLOADS = ("resnet50", "bert-base-squad", "bert-base-mlm")
PRECISIONS = ("fp32", "tf32", "amp-fp16", "amp-bf16")
# Compiled smoke configurations: both model families, GradScaler (fp16) and bf16, a few seconds each once
# compiled; the cold compile itself takes tens of seconds per configuration on a GPU.
COMPILE_PAIRS = (("resnet50", "amp-fp16"), ("bert-base-mlm", "amp-bf16"))


class Skip(Exception):
    """The check does not apply here (printed as `n/a`)."""


class Warn(Exception):
    """The check ran, and found something that works but is worse than expected (printed as `warn`)."""


class Report:
    def __init__(self) -> None:
        self.failed: list[str] = []
        self.warned: list[str] = []

    def check(self, name: str, fn: Callable[[], str | None]) -> Any:
        """Run `fn`, print `ok`/`n/a`/`warn`/`FAIL` with its detail line; a failure prints its traceback."""
        start = time.perf_counter()
        try:
            detail = fn()
        except Skip as exc:
            self._line("n/a", name, str(exc))
        except Warn as exc:
            self.warned.append(name)
            self._line("warn", name, str(exc))
        except Exception as exc:  # noqa: BLE001 - every failure is reported, then the next check runs
            traceback.print_exc()
            self.failed.append(name)
            self._line("FAIL", name, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
        else:
            self._line("ok", name, f"{detail or ''} ({time.perf_counter() - start:.1f} s)".strip())

    @staticmethod
    def _line(status: str, name: str, detail: str) -> None:
        print(f"{status:<4} {name}: {detail}", flush=True)


# --- 1. versions ----------------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def check_packages() -> str:
    missing = []
    for dist, module in REQUIRED:
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - ImportError, or a package broken by a wrong dependency
            missing.append(f"{dist} ({type(exc).__name__}: {exc})")
    found = [f"{d} {_version(d)}" for d, _ in REQUIRED] + [f"{d} {_version(d)}" for d in OPTIONAL if _version(d)]
    print("     python " + platform.python_version() + "; " + ", ".join(found), flush=True)
    if missing:
        raise RuntimeError("cannot import: " + "; ".join(missing))
    return f"{len(REQUIRED)} packages import"


def check_torch_build() -> str:
    import torch

    from dlbench.telemetry.environment import format_cudnn_version, nvml_driver_version

    nccl = None
    if torch.cuda.is_available() and hasattr(torch.cuda, "nccl"):
        version = torch.cuda.nccl.version()  # a tuple (2, 27, 3); an int in old torch
        nccl = ".".join(map(str, version)) if isinstance(version, tuple) else version
    return (f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
            f"cuDNN {format_cudnn_version(torch.backends.cudnn.version())}, NCCL {nccl}, "
            f"driver {nvml_driver_version()}, transformers {_version('transformers')}")


def check_store() -> str:
    from dlbench.store import open_store

    with tempfile.TemporaryDirectory(prefix="dlbench-smoke-store-") as tmp:
        with open_store(f"sqlite:///{tmp}/smoke.db"):  # creates the schema through the Alembic migrations
            pass
    return "fresh SQLite store migrated"


# --- 2. CUDA ----------------------------------------------------------------------------------------------


def check_device(device: str) -> str:
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError(f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device")
    torch.cuda.set_device(device)
    props = torch.cuda.get_device_properties(device)
    bf16 = torch.cuda.is_bf16_supported(including_emulation=False)
    return (f"{props.name}, compute capability {props.major}.{props.minor}, "
            f"{props.total_memory / 1024**3:.1f} GiB, {props.multi_processor_count} SMs, bf16 {bf16}, "
            f"{torch.cuda.device_count()} visible")


def _rel_error(result: Any, reference: Any) -> float:
    import torch

    return float(torch.linalg.vector_norm(result.double() - reference) / torch.linalg.vector_norm(reference))


def check_tf32(device: str) -> str:
    """TF32 on in `tf32` mode and off in `fp32`, seen in the results (not the flags): TF32 rounds inputs to a
    10-bit mantissa, so its error against float64 is about 1e-4..1e-3 where fp32's is about 1e-6."""
    import torch
    import torch.nn.functional as F

    from dlbench.measurement.precision import apply_precision

    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(1024, 1024, device=device, generator=gen)
    b = torch.randn(1024, 1024, device=device, generator=gen)
    x = torch.randn(8, 64, 32, 32, device=device, generator=gen)
    w = torch.randn(64, 64, 3, 3, device=device, generator=gen)
    mm_ref, conv_ref = a.double() @ b.double(), F.conv2d(x.double(), w.double(), padding=1)
    errors = {}
    for mode in ("fp32", "tf32"):
        apply_precision(mode, torch.device(device))
        errors[mode] = (_rel_error(a @ b, mm_ref), _rel_error(F.conv2d(x, w, padding=1), conv_ref))
    apply_precision("fp32", torch.device(device))
    text = (f"matmul error fp32 {errors['fp32'][0]:.1e} / tf32 {errors['tf32'][0]:.1e}; "
            f"conv fp32 {errors['fp32'][1]:.1e} / tf32 {errors['tf32'][1]:.1e}")
    for i, op in enumerate(("matmul", "cuDNN conv")):
        if errors["fp32"][i] > 1e-4:
            raise RuntimeError(f"{op} in fp32 mode is not full fp32 (TF32 left on?): {text}")
        if errors["tf32"][i] < 10 * errors["fp32"][i]:
            raise Warn(f"{op} in tf32 mode looks like full fp32 (TF32 not engaged?): {text}")
    return text


def check_autocast_ops(device: str) -> str:
    import torch
    import torch.nn.functional as F

    kind = torch.device(device).type
    out = []
    for dtype in (torch.float16, torch.bfloat16):
        with torch.autocast(kind, dtype=dtype):
            y = torch.randn(256, 256, device=device) @ torch.randn(256, 256, device=device)
        if y.dtype != dtype:
            raise RuntimeError(f"autocast {dtype} matmul returned {y.dtype}")
        out.append(str(dtype).replace("torch.", ""))
    x = torch.randn(8, 64, 56, 56, device=device).to(memory_format=torch.channels_last)
    w = torch.randn(64, 64, 3, 3, device=device).to(memory_format=torch.channels_last)
    with torch.autocast(kind, dtype=torch.bfloat16):
        y = F.conv2d(x, w, padding=1)
    layout = "channels_last" if y.is_contiguous(memory_format=torch.channels_last) else "NCHW"
    return f"matmul {', '.join(out)}; bf16 channels_last conv2d gives {layout} output"


def check_sdpa(device: str) -> str:
    """BERT's attention shape (seq 384, head dim 64): which SDPA kernels run forward and backward."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    found, missing = [], []
    for dtype in (torch.bfloat16, torch.float16):
        for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION):
            q, k, v = (torch.randn(4, 12, 384, 64, device=device, dtype=dtype, requires_grad=True)
                       for _ in range(3))
            name = f"{backend.name.lower()} {str(dtype).replace('torch.', '')}"
            try:
                with sdpa_kernel([backend]), warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # torch warns why a kernel does not apply; the error says it
                    F.scaled_dot_product_attention(q, k, v, dropout_p=0.1).sum().backward()
                torch.cuda.synchronize(device)
                found.append(name)
            except RuntimeError as exc:
                missing.append(f"{name} ({str(exc).strip().splitlines()[0][:80]})")
    if any(name.startswith("flash") for name in missing):
        raise Warn(f"runs: {', '.join(found)}; not available: {'; '.join(missing)}")
    return "runs: " + ", ".join(found) + (f"; not available: {'; '.join(missing)}" if missing else "")


def check_events_and_memory(device: str) -> str:
    import torch

    from dlbench.measurement.clocks import CudaClock
    from dlbench.measurement.memory import peak_memory, peak_memory_reset, peak_reserved

    dev = torch.device(device)
    clock = CudaClock(dev)
    marks = clock.marks(2)
    clock.mark(marks, 0)
    torch.cuda._sleep(10_000_000)  # about 5 ms of GPU time at ~2 GHz
    clock.mark(marks, 1)
    (elapsed,) = clock.durations(marks)
    if not 0.001 < elapsed < 1.0:
        raise RuntimeError(f"CUDA events timed a ~5 ms kernel as {elapsed * 1e3:.2f} ms")
    peak_memory_reset(dev)
    block = torch.empty(256 * 1024**2, dtype=torch.uint8, device=dev)
    peak, reserved = peak_memory(dev), peak_reserved(dev)
    del block
    if peak is None or peak < 256 * 1024**2:
        raise RuntimeError(f"peak memory {peak} after allocating 256 MiB")
    if reserved is None or reserved < peak:
        raise RuntimeError(f"peak reserved {reserved} below peak allocated {peak}")
    return f"event-timed sleep {elapsed * 1e3:.1f} ms; peak allocated {peak / 1024**2:.0f} MiB, reserved {reserved / 1024**2:.0f} MiB"


def check_grad_scaler(device: str) -> str:
    """GradScaler with the fused optimizers dlbench builds: a finite step moves the weights, an inf gradient
    skips the step (inside the fused kernel, no host sync) and halves the scale."""
    import torch

    from dlbench.scenarios.train import make_optimizer

    kind = torch.device(device).type
    impls = []
    for cls, kwargs in ((torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}), (torch.optim.AdamW, {"lr": 1e-3})):
        model = torch.nn.Linear(16, 16, device=device)
        optimizer, impl = make_optimizer(cls, model.parameters(), torch.device(device), **kwargs)
        scaler = torch.amp.GradScaler(kind)
        x = torch.randn(4, 16, device=device)
        for poison in (False, True):
            before = model.weight.detach().clone()
            scale = scaler.get_scale()
            with torch.autocast(kind, dtype=torch.float16):
                loss = model(x).float().pow(2).mean()
            scaler.scale(loss).backward()
            if poison:
                model.weight.grad[0, 0] = float("inf")
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            moved = not torch.equal(before, model.weight.detach())
            if moved == poison or (poison and not scaler.get_scale() < scale):
                raise RuntimeError(f"{cls.__name__} ({impl}) with GradScaler: step with "
                                   f"{'an inf' if poison else 'a finite'} gradient "
                                   f"{'moved' if moved else 'did not move'} the weights "
                                   f"(scale {scale:g} -> {scaler.get_scale():g})")
        impls.append(f"{cls.__name__} {impl}")
    if any(not text.endswith("fused") for text in impls):
        raise Warn("not fused: " + ", ".join(impls))
    return ", ".join(impls) + "; inf gradient skipped the step and halved the scale"


def check_graph_marker_and_oom(device: str) -> str:
    import torch

    from dlbench.measurement.compile import step_begin_marker
    from dlbench.runner.worker import is_oom

    step_begin_marker()()  # torch.compiler.cudagraph_mark_step_begin, as a reduce-overhead step calls it
    try:
        torch.empty(2**50, dtype=torch.uint8, device=device)  # 1 PiB
    except Exception as exc:  # noqa: BLE001 - checked just below
        if not is_oom(exc):
            raise RuntimeError(f"an impossible allocation raised {type(exc).__name__}, which dlbench does not "
                               "classify as out of memory (the batch-size search would stop)") from exc
        torch.cuda.empty_cache()
        return f"cudagraph_mark_step_begin ok; 1 PiB allocation -> {type(exc).__name__}, classified as OOM"
    raise RuntimeError("allocating 1 PiB did not fail")


# --- 3. NVML ----------------------------------------------------------------------------------------------

NVML_READINGS = ("name", "power_w", "energy_j", "temperature_c", "sm_clock_mhz", "mem_clock_mhz",
                 "utilization_pct", "clock_event_reasons", "pcie_link", "fan_speed_pct", "power_limit_w",
                 "default_power_limit_w", "persistence_mode", "ecc_errors", "retired_pages", "remapped_rows",
                 "compute_processes")


def check_nvml(device: str, nvml: Any = None) -> str:
    """`nvml`: an object with `open()` (tests pass a `FakeNvml`); default: the real NVML."""
    from dlbench.telemetry.nvml import (
        NotSupported,
        NvmlError,
        decode_clock_event_reasons,
        open_nvml,
        resolve_cuda_device,
        torch_device_uuid,
    )

    index = int(device.partition(":")[2] or 0)
    owned = nvml is None
    nvml = open_nvml() if owned else nvml.open()
    try:
        match = resolve_cuda_device(nvml, index, torch_uuid=torch_device_uuid(index))
        if match.handle is None:
            raise RuntimeError(f"cuda:{index} not found in NVML: {match.how}")
        parts, errors = [f"driver {nvml.driver_version()} (CUDA {nvml.cuda_driver_version()})",
                         f"matched by {match.how}"], []
        for name in NVML_READINGS:
            try:
                value = getattr(nvml, name)(match.handle)
            except NotSupported:
                value = "n/a"
            except NvmlError as exc:
                errors.append(f"{name}: {exc}")
                continue
            if name == "clock_event_reasons":
                value = decode_clock_event_reasons(value) or "none"
            elif name == "power_w":
                value = f"{value:.0f} W ({getattr(nvml, 'power_reading', None)})"
            parts.append(f"{name}={value}")
    finally:
        if owned:
            nvml.shutdown()
    print("     " + "; ".join(parts), flush=True)
    if errors:
        raise Warn("; ".join(errors))
    return f"{len(NVML_READINGS)} readings"


def check_sampler(device: str) -> str:
    import torch

    from dlbench.telemetry.sampler import create_sampler

    sampler = create_sampler(device, interval_s=0.05)
    a = torch.randn(4096, 4096, device=device)
    sampler.start()
    deadline = time.perf_counter() + 0.5
    while time.perf_counter() < deadline:
        a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize(device)
    block = sampler.stop()
    if not block.get("available"):
        raise Warn(f"no telemetry: {block.get('reason')}")

    def fmt(key: str, unit: str) -> str:
        value = block.get(key)
        return f"{value:.0f} {unit}" if isinstance(value, (int, float)) else f"{key} unknown"

    return (f"{block.get('num_samples')} samples, mean {fmt('power_mean_w', 'W')} ({block.get('power_reading')}), "
            f"{fmt('energy_j', 'J')} ({block.get('energy_method')}), SM {fmt('sm_clock_mean_mhz', 'MHz')}, "
            f"throttle share {block.get('throttle_share')}")


def check_thermometer(device: str) -> str:
    from dlbench.measurement.device import DeviceFacts
    from dlbench.measurement.thermal import GpuThermometer

    thermometer = GpuThermometer.open(device, DeviceFacts.detect().cuda)
    if thermometer is None:
        raise Warn("no thermometer: results would have no start temperature and no cooling wait")
    try:
        temperature = thermometer.temperature_c()
    finally:
        thermometer.close()
    if temperature is None:
        raise Warn("the thermometer reads nothing")
    match = thermometer.match
    return f"{temperature:.0f} C (NVML GPU {match.nvml_index}, matched by {match.how}" + (
        f", MIG instance {match.mig_uuid})" if match.mig_uuid else ")")


# --- 4./5. training -------------------------------------------------------------------------------------


def train(workload: str, precision: str, compile_mode: str, device: str, expect_all: bool) -> Callable[[], str]:
    def run() -> str:
        from dlbench.measurement.config import RunConfig
        from dlbench.scenarios import UnsupportedConfig, measure

        config = RunConfig(workload, precision=precision, compile=compile_mode, device=device, flavour="tiny",
                           batch_size=8, warmup_steps=1, steps=3, repeats=2)
        try:
            result = measure(config)
        except UnsupportedConfig as exc:
            if expect_all:
                raise RuntimeError(f"skipped on this device: {exc}") from None
            raise Skip(str(exc)) from None
        problems = expected_flag_problems(result, workload, precision, device)
        if problems or result["warnings"]:
            raise RuntimeError("; ".join(problems + result["warnings"]))
        flags = result["precision_flags"]
        parts = [f"fastest step {min(t for r in result['repeats'] for t in r['step_times_s']) * 1e3:.1f} ms"]
        if result["compile_time_s"] is not None:
            parts.append(f"compile {result['compile_time_s']:.1f} s")
        if result["peak_memory_bytes"]:
            parts.append(f"peak {result['peak_memory_bytes'] / 1024**2:.0f} MiB")
        if result["peak_reserved_bytes"]:
            parts.append(f"reserved {result['peak_reserved_bytes'] / 1024**2:.0f} MiB")
        parts.append(f"{flags['optimizer']} {flags['optimizer_impl']}")
        parts += [name for name in ("channels_last", "grad_scaler") if flags[name]]
        if flags.get("attention"):
            parts.append(flags["attention"])
        return ", ".join(parts)

    return run


def expected_flag_problems(result: dict[str, Any], workload: str, precision: str, device: str) -> list[str]:
    """What `measure()` recorded that differs from what this device should do."""
    flags, problems = result["precision_flags"], []
    tf32 = precision != "fp32"
    if device.startswith("cuda"):
        if flags["optimizer_impl"] != "fused":
            problems.append(f"optimizer {flags['optimizer_impl']}, not fused")
        if workload.startswith("resnet") and not flags["channels_last"]:
            problems.append("ResNet not channels_last")
        if not flags["cudnn_benchmark"]:
            problems.append("cudnn.benchmark off")
        if not result["peak_memory_bytes"]:
            problems.append("no peak memory")
        if not result["peak_reserved_bytes"]:
            problems.append("no peak reserved memory")
        if flags["cuda_matmul_allow_tf32"] is not tf32 or flags["cudnn_allow_tf32"] is not tf32:
            problems.append(f"TF32 flags matmul {flags['cuda_matmul_allow_tf32']}, cuDNN {flags['cudnn_allow_tf32']}")
    if workload.startswith("bert") and flags.get("attention") != "sdpa_no_mask":
        problems.append(f"attention {flags.get('attention')!r}, not sdpa_no_mask")
    if flags["grad_scaler"] is not (precision == "amp-fp16"):
        problems.append(f"grad_scaler {flags['grad_scaler']}")
    if flags["float32_matmul_precision"] != ("high" if tf32 else "highest"):
        problems.append(f"float32_matmul_precision {flags['float32_matmul_precision']}")
    return problems


# --------------------------------------------------------------------------------------------------------

CUDA_CHECKS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("TF32 on/off", check_tf32), ("autocast and channels_last", check_autocast_ops), ("SDPA kernels", check_sdpa),
    ("events and peak memory", check_events_and_memory), ("GradScaler and fused optimizers", check_grad_scaler),
    ("graph marker and OOM", check_graph_marker_and_oom), ("NVML", check_nvml),
    ("telemetry sampler", check_sampler), ("thermometer", check_thermometer),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    parser.add_argument("-w", "--workload", action="append", help=f"workloads (default: {', '.join(WORKLOADS)})")
    parser.add_argument("-p", "--precision", action="append", help="precisions (default: all four)")
    parser.add_argument("--compile", default="off", help="also train COMPILE_PAIRS compiled in this mode "
                                                         "(default off: eager only)")
    parser.add_argument("--expect-all", action="store_true",
                        help="a configuration the device refuses is a failure (every one runs on an H100)")
    args = parser.parse_args(argv)
    report = Report()
    device = args.device

    report.check("packages", check_packages)
    report.check("torch build", check_torch_build)
    report.check("store", check_store)
    if device.startswith("cuda"):
        from dlbench.measurement.device import resolve_device

        device = resolve_device(device)  # "cuda" -> "cuda:N" (the current device)
        report.check("device", lambda: check_device(device))
        if "device" not in report.failed:
            for name, fn in CUDA_CHECKS:
                report.check(name, lambda fn=fn: fn(device))
    for workload in args.workload or WORKLOADS:
        for precision in args.precision or PRECISIONS:
            report.check(f"train {workload} {precision} eager",
                         train(workload, precision, "off", device, args.expect_all))
    if args.compile != "off":
        for workload, precision in COMPILE_PAIRS:
            report.check(f"train {workload} {precision} compile={args.compile}",
                         train(workload, precision, args.compile, device, args.expect_all))
    summary = f"{len(report.failed)} failed, {len(report.warned)} warned"
    if report.failed:
        summary += ": " + ", ".join(report.failed)
    print(f"gpu_smoke: {summary}", flush=True)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
