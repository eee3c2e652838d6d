"""The training scenario: build, (compile,) warm up, then time repeats of training steps on one fixed batch.

Exercise it with `PYTHONPATH=src python -c "from dlbench.scenarios import measure;
from dlbench.measurement.config import RunConfig; print(measure(RunConfig('resnet50', flavour='tiny',
batch_size=4, warmup_steps=1, steps=3, repeats=2)))"`.

The workload gives a plain model, its inputs and its targets; this scenario adds the loss the workload names
(`Workload.loss`, one of `LOSSES`) and the optimizer (`TrainConfig.optimizer`, else the workload's
`Workload.optimizer`, one of `OPTIMIZERS`). Model and loss run as one module (`losses.WithLoss`), so that
`torch.compile` sees the loss too (it fuses into the last layers) and a DDP wrapper needs nothing special.

Order of events (docs/methodology.md says why):
1. seed Python, NumPy and torch; set the precision flags; build the model on the device (random weights),
   add the loss, `wrap_model` (DDP), the optimizer, and one synthetic batch (inputs and targets) drawn from a
   fixed-seed generator and moved to the device once. Every step trains on that batch: no data loading is timed.
2. compiled modes: `torch.compile(model, mode=...)`, then the first `COMPILE_STEPS` steps are timed together
   (wall clock, device synchronised at both ends) as `compile_time_s`. They are never part of throughput.
   Inductor and Triton compile into fresh cache directories (`measurement.compile.compile_cache`, set up by
   `scenarios.measure`): a cold compile every time.
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
Per-step timing is `measurement.clocks`: CUDA events at every step boundary with one host synchronisation at
the end of a repeat, `torch.mps.synchronize()` before every clock read on MPS, `perf_counter` on a CPU.

Metrics (`TrainScenario.metrics`, from the raw step times alone, as `analysis.stats.summarize`): samples/s
(samples = steps x batch size x world size, over the sum of a repeat's step times, mean of the repeats), the
step time's mean and percentiles, and FLOP/s achieved where the FLOPs per sample were counted.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dlbench.analysis.configuration import TRAIN_PRECISIONS
from dlbench.measurement.clocks import clock_for, timed_steps
from dlbench.measurement.compile import (
    COMPILE_STEPS,
    CompileWatch,
    step_begin_marker,
    uses_cuda_graphs,
)
from dlbench.measurement.memory import peak_memory, peak_memory_reset, peak_memory_scope, peak_reserved
from dlbench.scenarios.base import Scenario, metric

if TYPE_CHECKING:  # pragma: no cover
    from dlbench.measurement.config import RunConfig

# name -> (torch.optim class name, hyper-parameters). SGD with momentum is ResNet-50's recipe (NVIDIA's and
# MLPerf's reference); AdamW with weight decay 0.01 is BERT's fine-tuning and pre-training optimizer.
OPTIMIZERS: dict[str, tuple[str, dict[str, float]]] = {
    "sgd": ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4}),
    "adamw": ("AdamW", {"lr": 1e-4, "weight_decay": 0.01}),
}


@dataclass(frozen=True)
class TrainConfig:
    """The training scenario's settings: how many steps are timed, and the optimizer.

    `optimizer` None trains with the workload's own choice (`Workload.optimizer`).
    """

    warmup_steps: int = 10
    steps: int = 50
    repeats: int = 3
    optimizer: str | None = None


def make_optimizer(cls: Any, params: Any, device: Any, **kwargs: Any) -> tuple[Any, str]:
    """Build `cls(params, **kwargs)` with the fastest implementation the device supports.

    Fused kernels first (on CUDA one launch for the whole update, with GradScaler's unscale and inf check
    done inside, without a host sync; torch also has fused CPU and MPS kernels for SGD and AdamW), then
    the multi-tensor `foreach` path, then the per-parameter loop. torch refuses unsupported combinations
    when the optimizer is built, so trying in order is exact.
    """
    params = list(params)
    for impl in ("fused", "foreach"):
        try:
            return cls(params, **{impl: True}, **kwargs), impl
        except (RuntimeError, TypeError, ValueError):
            continue
    return cls(params, foreach=False, **kwargs), "for-loop"


def without_fused_kernel(optimizer: Any) -> tuple[Any, str]:
    """The same optimizer (class, hyper-parameters, parameter groups) rebuilt on the multi-tensor `foreach` path.

    For MPS with a GradScaler: before pytorch/pytorch#186360 (June 2026) the fused Metal kernels ignored the
    scaler's `grad_scale` and `found_inf`, so a fused step on MPS trained on still-scaled gradients and did not
    skip inf steps. `foreach` unscales through GradScaler's own check (MPS kernel since torch 2.8, #150255).
    Call it before the first step: optimizer state is not carried over.
    """
    import inspect

    cls = type(optimizer)
    accepted = inspect.signature(cls.__init__).parameters  # defaults may hold keys __init__ does not take
    unfused = {"fused": False, "foreach": True}
    defaults = {k: v for k, v in optimizer.defaults.items() if k in accepted}
    groups = [{**{k: v for k, v in group.items() if k == "params" or k in accepted}, **unfused}
              for group in optimizer.param_groups]  # each group keeps its own settings (a no-decay group)
    return cls(groups, **{**defaults, **unfused}), "foreach"


def optimizer_for_scaler(optimizer: Any, impl: str, device_type: str, scaler: Any) -> tuple[Any, str]:
    """(optimizer, implementation) to pair with `scaler` on `device_type`: a fused optimizer on MPS with a
    GradScaler is rebuilt on `foreach` (see `without_fused_kernel`); anything else is returned as it is."""
    if scaler is not None and device_type == "mps" and impl == "fused":
        return without_fused_kernel(optimizer)
    return optimizer, impl


def build_optimizer(name: str, params: Any, device: Any) -> tuple[Any, str]:
    """(optimizer, implementation) for one of `OPTIMIZERS`, fastest implementation first (`make_optimizer`)."""
    import torch

    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; choose from: {', '.join(OPTIMIZERS)}")
    cls_name, kwargs = OPTIMIZERS[name]
    return make_optimizer(getattr(torch.optim, cls_name), params, device, **kwargs)


def with_loss(workload: Any, model: Any, n_inputs: int) -> Any:
    """`model` and the workload's loss as one module: `forward(*inputs, *targets) -> loss`."""
    from dlbench.scenarios.losses import WithLoss, loss_function

    return WithLoss(model, loss_function(workload.loss), n_inputs)


def training_batch(workload: Any, config: Any, batch_size: int, generator: Any, device: Any = "cpu") -> tuple:
    """(inputs, targets) of one synthetic batch, drawn from `generator` in that order."""
    inputs = tuple(workload.make_inputs(config, batch_size, generator, device))
    targets = tuple(workload.make_targets(config, batch_size, generator, device))
    return inputs, targets


def make_train_step(
    model: Any, optimizer: Any, inputs: tuple, setup: Any, cuda_graphs: bool = False
) -> Callable[[], None]:
    """One training step on the fixed batch: forward and loss (under autocast), backward, optimizer step, zero
    grads. `model(*inputs)` returns the loss (`with_loss`; `inputs` holds the targets too).

    `cuda_graphs`: mark the start of each step for CUDA graph trees (`torch.compiler.cudagraph_mark_step_begin`),
    which then free the previous step's graph outputs and replay from the top of the tree.
    """
    scaler = setup.scaler
    autocast = setup.autocast
    begin = step_begin_marker() if cuda_graphs else None

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


def count_training_flops(workload: Any, config: Any, batch_size: int | None = None) -> float:
    """Forward + backward FLOPs (loss included) of one step of `batch_size` samples, counted on the meta device."""
    import torch

    from dlbench.measurement.flops import COUNT_BATCH, count_flops

    batch_size = batch_size or COUNT_BATCH
    inputs, targets = training_batch(workload, config, batch_size, None, device="meta")
    with torch.device("meta"):
        model = with_loss(workload, workload.build_model(config), len(inputs))
    model.train()
    return count_flops(lambda: model(*inputs, *targets).backward())


@functools.lru_cache(maxsize=64)
def flops_per_sample(workload_name: str, flavour: str = "full", seq_len: int | None = None) -> float:
    """Training FLOPs per sample (forward + backward) of a registered workload; cached per process."""
    from dlbench.measurement.config import RunConfig
    from dlbench.measurement.flops import COUNT_BATCH
    from dlbench.workloads import registry

    workload = registry.get(workload_name)
    config = RunConfig(workload=workload_name, flavour=flavour, seq_len=seq_len, device="meta")
    return count_training_flops(workload, config, COUNT_BATCH) / COUNT_BATCH


class TrainScenario(Scenario):
    """Training throughput: forward, loss, backward and optimizer step on one fixed synthetic batch."""

    name = "train"
    description = "training steps (forward, loss, backward, optimizer) on a fixed synthetic batch: samples/s"
    config_class = TrainConfig
    precisions = TRAIN_PRECISIONS
    headline = "samples_per_s"

    def run(self, config: RunConfig, workload: Any, *, progress: Callable[[str, int, int], None] | None = None,
            sampler: Any = None, wrap_model: Callable[[Any], Any] | None = None,
            sync: Callable[[], None] | None = None) -> dict[str, Any]:
        """The measurement itself (steps 1-4 of the module docstring): raw values only."""
        import torch

        from dlbench.measurement.device import use_device
        from dlbench.measurement.precision import apply_precision, precision_flags
        from dlbench.measurement.seeding import seed_everything

        train = self.settings(config)
        device = use_device(config.device)
        warnings: list[str] = []

        seed_everything(config.seed)
        setup = apply_precision(config.precision, device)
        with torch.device(device):  # initialise weights where they will live (fast for BERT-large on a GPU)
            model = workload.build_model(config)
        generator = torch.Generator().manual_seed(config.seed)
        inputs, targets = training_batch(workload, config, config.batch_size, generator)
        model, batch, channels_last = workload.to_device(model, inputs + targets, device)
        model = with_loss(workload, model, len(inputs))
        model.train()
        if wrap_model is not None:
            model = wrap_model(model)
        optimizer, optimizer_impl = build_optimizer(train.optimizer or workload.optimizer, model.parameters(),
                                                    device)
        optimizer, optimizer_impl = optimizer_for_scaler(optimizer, optimizer_impl, device.type, setup.scaler)
        if config.compile != "off":
            model = torch.compile(model, mode=None if config.compile == "default" else config.compile)
        cuda_graphs = uses_cuda_graphs(config.compile, device.type)
        step = make_train_step(model, optimizer, batch, setup, cuda_graphs=cuda_graphs)
        clock = clock_for(device)
        watch = CompileWatch(config.compile != "off", cuda_graphs)

        def report(phase: str, done: int, total: int) -> None:
            if progress is not None:
                progress(phase, done, total)

        compile_time_s = None
        if config.compile != "off":
            clock.synchronize()
            if cuda_graphs:
                peak_memory_reset(device)
            report("compile", 0, COMPILE_STEPS)
            start = time.perf_counter()
            for _ in range(COMPILE_STEPS):
                step()
            clock.synchronize()
            compile_time_s = time.perf_counter() - start
            report("compile", COMPILE_STEPS, COMPILE_STEPS)
        watch.compile_done()

        if train.warmup_steps:
            report("warmup", 0, train.warmup_steps)
        warmup = timed_steps(step, train.warmup_steps, clock)
        if train.warmup_steps:
            report("warmup", train.warmup_steps, train.warmup_steps)

        clock.synchronize()
        if not cuda_graphs:
            peak_memory_reset(device)
        repeats = []
        total = train.steps * train.repeats
        report("measure", 0, total)
        telemetry = None
        if sampler is not None:
            sampler.start()
        try:
            for r in range(train.repeats):
                clock.synchronize()
                if sync is not None:
                    sync()
                times = timed_steps(step, train.steps, clock)
                clock.synchronize()
                if sync is not None:
                    sync()
                repeats.append({"step_times_s": times})
                report("measure", (r + 1) * train.steps, total)  # after the repeat's last sync: not timed
        finally:  # an OOM or crash mid-measurement still stops the sampler's thread
            if sampler is not None:
                telemetry = sampler.stop()
        peak_bytes = peak_memory(device)
        reserved_bytes = peak_reserved(device)

        watch.check("torch.compile recompiled after the compile steps: warm-up/measured steps include it")
        compile_warnings, graph_skips = watch.read()
        warnings.extend(compile_warnings)

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
            "peak_memory_bytes": peak_bytes,
            "peak_reserved_bytes": reserved_bytes,
            "flops_per_sample": flops,
            "batch_size": config.batch_size,
            "seq_len": workload.seq_len(config),
            "device": str(device),
            "precision_flags": flags,
            "telemetry": telemetry,
            "warnings": warnings,
        }

    def metrics(self, measurement: Mapping[str, Any], config: RunConfig) -> dict[str, dict[str, Any]]:
        """From the raw values alone, each where it was measured: samples/s (the mean of the repeats' values,
        kept as `repeats`; `analysis.stats.summarize`), step time (the median; mean, p5-p99 and every measured
        step as `raw`), compile time, peak memory allocated and reserved, achieved FLOP/s."""
        import numpy as np

        from dlbench.analysis.stats import summarize

        out: dict[str, dict[str, Any]] = {}
        repeats = [[float(t) for t in r["step_times_s"]] for r in measurement.get("repeats") or []]
        samples_per_s = None
        if repeats and all(repeats):
            batch_size = int(measurement.get("batch_size") or config.batch_size)
            world_size = int(measurement.get("world_size") or config.world_size or 1)
            stats = summarize(repeats, batch_size, world_size)
            samples_per_s = stats["samples_per_s"]
            out["samples_per_s"] = metric(samples_per_s, "samples/s", "higher",
                                          repeats=stats["samples_per_s_repeats"])
            raw = [t for times in repeats for t in times]
            p5, p90, p95, p99 = (float(v) for v in np.percentile(np.asarray(raw), [5, 90, 95, 99]))
            steps = stats["step_time_s"]
            out["step_time_s"] = metric(steps["median"], "s", "lower", mean=steps["mean"], p5=p5,
                                        p50=steps["median"], p90=p90, p95=p95, p99=p99, raw=raw)
        for key, unit in (("compile_time_s", "s"), ("peak_memory_bytes", "bytes"), ("peak_reserved_bytes", "bytes")):
            if measurement.get(key) is not None:
                out[key] = metric(measurement[key], unit, "lower")
        flops = measurement.get("flops_per_sample")
        if flops is not None and samples_per_s is not None:
            out["achieved_flops_per_s"] = metric(samples_per_s * flops, "FLOP/s", "higher")
        return out


def _attention_impl(model: Any) -> str | None:
    """The attention implementation transformers actually chose (e.g. "sdpa_no_mask"), if the model has one."""
    for module in model.modules():
        config = getattr(module, "config", None)
        impl = getattr(config, "_attn_implementation", None)
        if impl:
            return str(impl)
    return None
