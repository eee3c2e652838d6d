"""Measure one configuration in this process: build, (compile,) warm up, then time repeats of training steps.

Exercise it with `PYTHONPATH=src python -c "from dlbench.runner.measure import measure;
from dlbench.runner.config import RunConfig; print(measure(RunConfig('resnet50', flavour='tiny',
batch_size=4, warmup_steps=1, steps=3, repeats=2)))"`.

Order of events (docs/methodology.md says why):
1. seed Python, NumPy and torch; set the precision flags; build the model on the device (random weights),
   `wrap_model` (DDP), the optimizer, and one synthetic batch drawn from a fixed-seed generator and moved to
   the device once. Every step trains on that batch: no data loading is timed.
2. compiled modes: `torch.compile(model, mode=...)`, then the first `COMPILE_STEPS` steps are timed together
   (wall clock, device synchronised at both ends) as `compile_time_s`. They are never part of throughput.
   Inductor and Triton compile into fresh cache directories (`compile_cache`): a cold compile every time.
3. `warmup_steps` steps, each timed, kept apart (`warmup_step_times_s`).
4. peak-memory counters reset (allocated and reserved alike); sampler started; `repeats` times: synchronise,
   `sync()`, time `steps` steps, synchronise, `sync()`. Sampler stopped. With CUDA graphs (`reduce-overhead`,
   `max-autotune` on CUDA) the counters are reset before the compile steps instead: graph replays allocate
   nothing, so only the recording (a compile step) shows the memory the graphs hold
   (`precision_flags["peak_memory_scope"]` says which; it covers `peak_reserved_bytes` too).
CUDA graphs: each step begins with `torch.compiler.cudagraph_mark_step_begin()`, so the graph trees know where
one training iteration ends whatever the optimizer and GradScaler do between graphs; graphs Inductor skipped
(and why, in its log) are counted into a warning and `precision_flags["cuda_graph_skips"]`.
Progress (`progress(phase, done, total)`: a pipe write in a worker, a status file on a rank) is reported only
outside the timed regions, so that its cost lands in no step time and no compile time: at the start and the end
of the compile steps and of warm-up, and in the measure phase at its start and after each repeat's closing
synchronisation (`done` counts steps, so a display advances a repeat of `steps` steps at a time).
Per-step timing: on CUDA one `torch.cuda.Event` is recorded at every step boundary and the host synchronises
only once at the end of the repeat, so timing adds no synchronisation the training loop would not have; on MPS
`torch.mps.synchronize()` precedes every `time.perf_counter()` read; on a CPU `perf_counter` alone.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

# Compiled modes: the first steps include tracing and Inductor code generation/autotuning (step 1) and,
# with CUDA graphs (reduce-overhead, max-autotune), warm-up and graph recording (steps 1-2); step 3 is the
# first replay. All three are charged to compile time.
COMPILE_STEPS = 3


class UnsupportedConfig(RuntimeError):
    """The device cannot run this configuration (the reason comes from `capabilities.unsupported_reason`)."""


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    torch.manual_seed(seed)  # also seeds every CUDA device


class _HostClock:
    """perf_counter at each step boundary (CPU: work is synchronous)."""

    def __init__(self, device: Any) -> None:
        self.device = device

    def marks(self, n: int) -> list:
        return [0.0] * n

    def mark(self, marks: list, i: int) -> None:
        marks[i] = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def durations(self, marks: list) -> list[float]:
        return [b - a for a, b in zip(marks[:-1], marks[1:], strict=True)]


class _MpsClock(_HostClock):
    """MPS runs asynchronously: drain its queue before every clock read."""

    def mark(self, marks: list, i: int) -> None:
        import torch

        torch.mps.synchronize()
        marks[i] = time.perf_counter()

    def synchronize(self) -> None:
        import torch

        torch.mps.synchronize()


class _CudaClock:
    """CUDA events recorded in the stream at each step boundary; one host sync at the end."""

    def __init__(self, device: Any) -> None:
        self.device = device

    def marks(self, n: int) -> list:
        import torch

        return [torch.cuda.Event(enable_timing=True) for _ in range(n)]

    def mark(self, marks: list, i: int) -> None:
        marks[i].record()

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize(self.device)

    def durations(self, marks: list) -> list[float]:
        marks[-1].synchronize()
        return [a.elapsed_time(b) / 1000.0 for a, b in zip(marks[:-1], marks[1:], strict=True)]  # ms → s


def _clock(device: Any) -> Any:
    if device.type == "cuda":
        return _CudaClock(device)
    if device.type == "mps":
        return _MpsClock(device)
    return _HostClock(device)


def _timed_steps(step: Callable[[], None], n: int, clock: Any) -> list[float]:
    """Run `n` steps and return each one's duration in seconds. Nothing but the steps runs between the first
    and the last clock mark (no progress event: a write to a pipe or a status file would land in a step time)."""
    marks = clock.marks(n + 1)
    clock.mark(marks, 0)
    for i in range(n):
        step()
        clock.mark(marks, i + 1)
    return clock.durations(marks)


# torch.compile modes that record CUDA graphs on a CUDA device ("max-autotune" sets triton.cudagraphs too).
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")


def uses_cuda_graphs(compile_mode: str, device_type: str) -> bool:
    """Whether `torch.compile(mode=compile_mode)` records CUDA graphs on this device type."""
    return device_type == "cuda" and compile_mode in CUDA_GRAPH_MODES


def make_train_step(
    model: Any, optimizer: Any, inputs: tuple, setup: Any, cuda_graphs: bool = False
) -> Callable[[], None]:
    """One training step on the fixed batch: forward (under autocast), backward, optimizer step, zero grads.

    `cuda_graphs`: mark the start of each step for CUDA graph trees (`torch.compiler.cudagraph_mark_step_begin`),
    which then free the previous step's graph outputs and replay from the top of the tree.
    """
    scaler = setup.scaler
    autocast = setup.autocast
    begin = _step_begin_marker() if cuda_graphs else None

    if scaler is None:

        def step() -> None:
            if begin is not None:
                begin()
            with autocast():
                loss = model(*inputs)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    else:

        def step() -> None:
            if begin is not None:
                begin()
            with autocast():
                loss = model(*inputs)
            scaler.scale(loss).backward()
            scaler.step(optimizer)  # fused optimizers unscale and skip on inf without a host sync
            scaler.update()
            optimizer.zero_grad(set_to_none=True)

    return step


def _step_begin_marker() -> Callable[[], None]:
    import torch

    return torch.compiler.cudagraph_mark_step_begin  # torch >= 2.1


def _default_inductor_cache() -> str:
    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir

        return os.path.abspath(default_cache_dir())
    except ImportError:  # older torch: the same default, computed by hand
        import getpass

        return os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")


@contextlib.contextmanager
def compile_cache(enabled: bool, user_cache_dir: str | None = None) -> Iterator[str | None]:
    """Compile with empty Inductor and Triton caches, so `compile_time_s` is what a first run pays.

    Inductor keeps compiled graphs and kernels on disk between processes (`/tmp/torchinductor_<user>`); a
    second run of the same configuration would otherwise report a fraction of the real compile time, and
    compile times would depend on what ran before. A user who chose a `TORCHINDUCTOR_CACHE_DIR` (other than
    the default, which importing TorchDynamo writes into the environment by itself) keeps that cache, and the
    result says so. Yields the flag recorded in `precision_flags["compile_cache"]`.
    """
    if not enabled:
        yield None
        return
    if user_cache_dir and os.path.abspath(user_cache_dir) != _default_inductor_cache():
        yield "user TORCHINDUCTOR_CACHE_DIR (may be warm)"
        return
    directory = tempfile.mkdtemp(prefix="dlbench-inductor-")
    keys = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
    saved = {key: os.environ.get(key) for key in keys}
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = directory
    os.environ["TRITON_CACHE_DIR"] = os.path.join(directory, "triton")
    try:
        yield "cold (fresh Inductor and Triton cache directories)"
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(directory, ignore_errors=True)


def _peak_memory_reset(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def _peak_memory(device: Any) -> int | None:
    """Peak bytes allocated by tensors since the reset (CUDA); None where torch has no such counter."""
    import torch

    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return None


def _peak_reserved(device: Any) -> int | None:
    """Peak bytes the caching allocator held from the driver since the same reset (CUDA): the allocated peak
    plus the allocator's cached and fragmented blocks, i.e. what another process could not use. None elsewhere."""
    import torch

    if device.type == "cuda":
        return int(torch.cuda.max_memory_reserved(device))
    return None


def _compile_counters() -> int | None:
    try:
        from torch._dynamo.utils import counters

        return int(sum(counters["stats"].values()))
    except Exception:  # private API: its absence only loses a diagnostic
        return None


def _cuda_graph_skips() -> int | None:
    """Graphs Inductor compiled but ran without CUDA graphs (mutated inputs, CPU ops, dynamic shapes...)."""
    try:
        from torch._dynamo.utils import counters

        return int(counters["inductor"]["cudagraph_skips"])
    except Exception:  # private API: its absence only loses a diagnostic
        return None


def peak_memory_scope(compile_mode: str, device_type: str) -> str:
    """Which steps `peak_memory_bytes` and `peak_reserved_bytes` cover (see the module docstring, step 4)."""
    if uses_cuda_graphs(compile_mode, device_type):
        return "compile, warm-up and measured steps (CUDA graph replays allocate nothing)"
    if device_type == "mps":  # torch.mps reads current allocations only: no peak counter, nothing to reset
        return "not measured: torch has no peak-memory counter on MPS"
    if device_type != "cuda":  # _peak_memory reads CUDA's (and ROCm's) allocator only
        return f"not measured: torch has no peak-memory counter on {device_type}"
    return "measured steps"


def measure(
    config: Any,
    progress: Callable[[str, int, int], None] | None = None,
    sampler: Any = None,
    wrap_model: Callable[[Any], Any] | None = None,
    sync: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run `config` here and return the raw measurement (see CONTRACTS and docs/methodology.md)."""
    user_cache_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")  # before TorchDynamo's import sets it
    from dlbench.runner.capabilities import unsupported_reason
    from dlbench.workloads import registry

    workload = registry.get(config.workload)
    reason = unsupported_reason(config)
    if reason:
        raise UnsupportedConfig(reason)
    with compile_cache(config.compile != "off", user_cache_dir) as cache_state:
        result = _measure(config, workload, progress, sampler, wrap_model, sync)
    if cache_state is not None:
        result["precision_flags"]["compile_cache"] = cache_state
    return result


def _measure(
    config: Any,
    workload: Any,
    progress: Callable[[str, int, int], None] | None,
    sampler: Any,
    wrap_model: Callable[[Any], Any] | None,
    sync: Callable[[], None] | None,
) -> dict[str, Any]:
    """The measurement itself (steps 1-4 of the module docstring)."""
    import torch

    from dlbench.runner.flops import flops_per_sample
    from dlbench.runner.plan import resolve_device
    from dlbench.runner.precision import apply_precision, precision_flags
    from dlbench.workloads.base import optimizer_for_scaler

    device = torch.device(resolve_device(config.device))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    warnings: list[str] = []

    seed_everything(config.seed)
    setup = apply_precision(config.precision, device)
    with torch.device(device):  # initialise weights where they will live (fast for BERT-large on a GPU)
        model = workload.build_model(config)
    generator = torch.Generator().manual_seed(config.seed)
    inputs = workload.make_inputs(config, config.batch_size, generator)
    model, inputs, channels_last = workload.to_device(model, inputs, device)
    model.train()
    if wrap_model is not None:
        model = wrap_model(model)
    optimizer, optimizer_impl = workload.make_optimizer(model.parameters(), device)
    optimizer, optimizer_impl = optimizer_for_scaler(optimizer, optimizer_impl, device.type, setup.scaler)
    if config.compile != "off":
        model = torch.compile(model, mode=None if config.compile == "default" else config.compile)
    cuda_graphs = uses_cuda_graphs(config.compile, device.type)
    step = make_train_step(model, optimizer, inputs, setup, cuda_graphs=cuda_graphs)
    clock = _clock(device)
    skips_before = _cuda_graph_skips()

    def report(phase: str, done: int, total: int) -> None:
        if progress is not None:
            progress(phase, done, total)

    compile_time_s = None
    if config.compile != "off":
        clock.synchronize()
        if cuda_graphs:
            _peak_memory_reset(device)
        report("compile", 0, COMPILE_STEPS)
        start = time.perf_counter()
        for _ in range(COMPILE_STEPS):
            step()
        clock.synchronize()
        compile_time_s = time.perf_counter() - start
        report("compile", COMPILE_STEPS, COMPILE_STEPS)
    compiles_before = _compile_counters()

    if config.warmup_steps:
        report("warmup", 0, config.warmup_steps)
    warmup = _timed_steps(step, config.warmup_steps, clock)
    if config.warmup_steps:
        report("warmup", config.warmup_steps, config.warmup_steps)

    clock.synchronize()
    if not cuda_graphs:
        _peak_memory_reset(device)
    repeats = []
    total = config.steps * config.repeats
    report("measure", 0, total)
    telemetry = None
    if sampler is not None:
        sampler.start()
    try:
        for r in range(config.repeats):
            clock.synchronize()
            if sync is not None:
                sync()
            times = _timed_steps(step, config.steps, clock)
            clock.synchronize()
            if sync is not None:
                sync()
            repeats.append({"step_times_s": times})
            report("measure", (r + 1) * config.steps, total)  # after the repeat's last sync: not timed
    finally:  # an OOM or crash mid-measurement still stops the sampler's thread
        if sampler is not None:
            telemetry = sampler.stop()
    peak_memory = _peak_memory(device)
    peak_reserved = _peak_reserved(device)

    compiles_after = _compile_counters()
    if config.compile != "off" and compiles_before is not None and compiles_after != compiles_before:
        warnings.append("torch.compile recompiled after the compile steps: warm-up/measured steps include it")
    skips_after = _cuda_graph_skips()
    graph_skips = None
    if cuda_graphs and skips_before is not None and skips_after is not None:
        graph_skips = skips_after - skips_before
        if graph_skips:
            warnings.append(f"CUDA graphs skipped for {graph_skips} compiled graph(s): those ran without graphs "
                            "(TORCH_LOGS=cudagraphs says why)")

    try:
        flops = flops_per_sample(config.workload, config.flavour, workload.seq_len(config))
    except Exception as exc:  # a workload whose ops cannot run on the meta device: no count, say why
        flops = None
        warnings.append(f"FLOPs not counted: {type(exc).__name__}: {exc}")

    flags = precision_flags(setup)
    flags.update(
        {
            "channels_last": channels_last,
            "optimizer": type(optimizer).__name__,
            "optimizer_impl": optimizer_impl,
            "compile_mode": config.compile,
            "cuda_graphs": cuda_graphs,
            "peak_memory_scope": peak_memory_scope(config.compile, device.type),
        }
    )
    if graph_skips is not None:
        flags["cuda_graph_skips"] = graph_skips
    attention = _attention_impl(model)
    if attention is not None:
        flags["attention"] = attention
    return {
        "warmup_step_times_s": warmup,
        "repeats": repeats,
        "compile_time_s": compile_time_s,
        "peak_memory_bytes": peak_memory,
        "peak_reserved_bytes": peak_reserved,
        "flops_per_sample": flops,
        "batch_size": config.batch_size,
        "seq_len": workload.seq_len(config),
        "device": str(device),
        "precision_flags": flags,
        "telemetry": telemetry,
        "warnings": warnings,
    }


def _attention_impl(model: Any) -> str | None:
    """The attention implementation transformers actually chose (e.g. "sdpa_no_mask"), if the model has one."""
    for module in model.modules():
        config = getattr(module, "config", None)
        impl = getattr(config, "_attn_implementation", None)
        if impl:
            return str(impl)
    return None
