"""The inference scenario: forward passes under `torch.inference_mode()`, offline throughput and batch-1 latency.

Exercise it with `PYTHONPATH=src python -m dlbench run --scenario infer -w resnet50 -w bert-base-squad --tiny
--device cpu` (docs/infer.md says what is measured and how to read it).

Two modes per configuration, on one model built once:
- **offline** (MLPerf Inference's Offline scenario): back-to-back forward passes at the configuration's batch size
  on one fixed batch; samples/s from the per-batch times, which are timed as training steps are
  (`measurement.clocks`: CUDA events at every batch boundary, one host synchronisation per repeat).
- **latency** (MLPerf's SingleStream): one request of batch 1 at a time, each issued after the previous one has
  finished; a request's time is the host wall clock from the call to the device having finished it (synchronised),
  i.e. what a client waiting on it sees, launch overhead included. Percentiles come from every request.

Order of events: seed; build the model on the device (random weights), eval mode, move it and one batch of each
size there (NHWC on CUDA for convolution networks); set the precision (`measurement.inference_precision`: weights
cast or quantized, no autocast) and cast floating-point inputs to its compute dtype; compile
(`torch.compile(mode=..., dynamic=False)`: one static graph per batch size). Then, all under
`torch.inference_mode()`:
1. offline: compile steps (timed together, `compile_times_s["offline"]`), `warmup_steps` batches (kept apart),
   peak-memory counters reset (before the compile steps under CUDA graphs), sampler started, `repeats` x `steps`
   batches (device synchronised and `sync()` around each repeat), sampler stopped, peaks read;
2. latency: compile steps at batch 1 (`compile_times_s["latency"]`), `warmup_steps` requests (kept apart), then
   `repeats` x `latency_requests` requests.
Each repeat's raw values sit together: `{"step_times_s": [...], "request_times_s": [...]}`. `metrics` derives every
figure from them alone.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dlbench.analysis.configuration import INFERENCE_PRECISIONS
from dlbench.measurement.clocks import clock_for, timed_steps
from dlbench.measurement.compile import (
    COMPILE_STEPS,
    CompileWatch,
    step_begin_marker,
    uses_cuda_graphs,
)
from dlbench.measurement.memory import peak_memory, peak_memory_reset, peak_memory_scope, peak_reserved
from dlbench.scenarios.base import Scenario, metric
from dlbench.scenarios.train import _attention_impl

if TYPE_CHECKING:  # pragma: no cover
    from dlbench.measurement.config import RunConfig
    from dlbench.measurement.device import DeviceFacts

# What `dlbench run --scenario infer` measures when -w / -p / -c are not given (docs/infer.md says why).
DEFAULT_WORKLOADS: tuple[str, ...] = ("resnet50", "bert-base-squad")
GPU_DEFAULT_COMPILE: tuple[str, ...] = ("off", "reduce-overhead")
# Single requests per repeat for every offline batch: --steps 50 (the GPU default) times 200 requests, --tiny's
# 5 steps 20, the CPU quick suite's 2 steps 8.
LATENCY_REQUESTS_PER_STEP = 4
LATENCY_BATCH = 1


@dataclass(frozen=True)
class InferConfig:
    """The inference scenario's settings: offline batches and latency requests per repeat, and the warm-up
    (`warmup_steps` batches before the offline repeats and as many requests before the latency repeats)."""

    warmup_steps: int = 10
    steps: int = 50
    repeats: int = 3
    latency_requests: int = 200


def default_precisions(entry: Mapping[str, Any] | None, hip: str | None) -> list[str]:
    """The precision served by default: bf16 on a GPU (fp16 below compute capability 8.0, which lacks bf16 in
    hardware; ROCm has both), fp32 on a CPU or MPS (`entry` None)."""
    if entry is None:
        return ["fp32"]
    major = entry["compute_capability"][0] if entry.get("compute_capability") else 0
    return ["bf16" if major >= 8 or hip else "fp16"]


def plan_defaults(options: Any, entry: Mapping[str, Any] | None, hip: str | None, quick: bool,
                  precisions: list[str], compile_modes: list[str],
                  suite: list[dict[str, Any]]) -> tuple[list, list, list]:
    """The planner's precisions, compile modes and workloads for `--scenario infer`: what the user gave, else
    `default_precisions`, eager and `reduce-overhead` on a GPU (eager elsewhere), `DEFAULT_WORKLOADS` at each
    workload's default batch size. The CPU quick suite (`quick`: no GPU, no -w, no --tiny) stays training's
    (`runner.plan.QUICK_SUITE`: ResNet-50 at batch 2, BERT-base at 128 tokens, batch 1), which keeps it short."""
    if not options.precisions:
        precisions = default_precisions(entry, hip)
    if not options.compile_modes:
        compile_modes = list(GPU_DEFAULT_COMPILE) if entry is not None else ["off"]
    if not options.workloads and not quick:
        suite = [{"workload": name, "batch_size": None, "seq_len": None} for name in DEFAULT_WORKLOADS]
    return precisions, compile_modes, suite


def _count_forward_flops(workload: Any, config: Any, batch_size: int) -> float:
    import torch

    from dlbench.measurement.flops import count_flops

    inputs = tuple(workload.make_inputs(config, batch_size, None, device="meta"))
    with torch.device("meta"):
        model = workload.build_model(config)
    model.eval()
    with torch.no_grad():
        return count_flops(lambda: model(*inputs))


@functools.lru_cache(maxsize=64)
def forward_flops_per_sample(workload_name: str, flavour: str = "full", seq_len: int | None = None) -> float:
    """Forward FLOPs per sample of a registered workload (counted on the meta device; cached per process)."""
    from dlbench.measurement.config import RunConfig
    from dlbench.measurement.flops import COUNT_BATCH
    from dlbench.workloads import registry

    config = RunConfig(workload=workload_name, flavour=flavour, seq_len=seq_len, device="meta")
    return _count_forward_flops(registry.get(workload_name), config, COUNT_BATCH) / COUNT_BATCH


def request_times(step: Callable[[], None], n: int, clock: Any) -> list[float]:
    """Run `n` requests one after another; each one's time is the host wall clock from its call to the device
    having finished it (`clock.synchronize()`), so the next starts on an idle device."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        step()
        clock.synchronize()
        times.append(time.perf_counter() - start)
    return times


def _percentiles(raw: list[float]) -> dict[str, float]:
    import numpy as np

    values = np.percentile(np.asarray(raw, dtype=float), [5, 50, 90, 95, 99])
    return dict(zip(("p5", "p50", "p90", "p95", "p99"), (float(v) for v in values), strict=True))


class InferScenario(Scenario):
    """Inference: offline samples/s at the batch size and batch-1 latency percentiles, forward passes only."""

    name = "infer"
    description = ("forward passes under torch.inference_mode(): offline samples/s at the batch size and "
                   "batch-1 latency p50/p90/p99")
    config_class = InferConfig
    precisions = INFERENCE_PRECISIONS
    headline = "samples_per_s"

    def settings(self, config: RunConfig) -> InferConfig:
        """Warm-up, steps and repeats from the RunConfig; `latency_requests` from its field where it has one,
        else `LATENCY_REQUESTS_PER_STEP` x steps."""
        base = super().settings(config)
        requests = getattr(config, "latency_requests", None)
        return replace(base, latency_requests=int(requests or LATENCY_REQUESTS_PER_STEP * base.steps))

    def unsupported_reason(self, config: RunConfig, device_facts: DeviceFacts | None = None) -> str | None:
        """One device only; then the scenario's precisions, the device and compile mode
        (`measurement.capabilities`), then what the precision needs there (`inference_unsupported_reason`)."""
        from dlbench.measurement.inference_precision import inference_unsupported_reason

        if (config.world_size or 1) > 1:
            return "the infer scenario measures one device; --gpus applies to training only"
        return (super().unsupported_reason(config, device_facts)
                or inference_unsupported_reason(config.precision, device_facts, device=config.device))

    def run(self, config: RunConfig, workload: Any, *, progress: Callable[[str, int, int], None] | None = None,
            sampler: Any = None, wrap_model: Callable[[Any], Any] | None = None,
            sync: Callable[[], None] | None = None) -> dict[str, Any]:
        """The measurement (module docstring): raw values only."""
        import torch

        from dlbench.measurement.device import use_device
        from dlbench.measurement.inference_precision import apply_inference_precision, compute_dtype
        from dlbench.measurement.seeding import seed_everything

        settings = self.settings(config)
        device = use_device(config.device)
        warnings: list[str] = []

        seed_everything(config.seed)
        with torch.device(device):
            model = workload.build_model(config)
        model.eval()
        generator = torch.Generator().manual_seed(config.seed)
        batch = tuple(workload.make_inputs(config, config.batch_size, generator))
        single = tuple(workload.make_inputs(config, LATENCY_BATCH, generator))
        model, moved, channels_last = workload.to_device(model, batch + single, device)
        model, flags = apply_inference_precision(model, config.precision, device)
        if flags["quantization"] and not flags["quantized_modules"]:
            warnings.append(f"{config.precision}: no layer of {config.workload} fits {flags['quantization']} "
                            f"(linear layers: {flags['linear_modules']}); this measured {flags['compute_dtype']}")
        dtype = compute_dtype(config.precision)
        moved = tuple(t.to(dtype) if t.is_floating_point() else t for t in moved)
        batch, single = moved[:len(batch)], moved[len(batch):]
        if wrap_model is not None:
            model = wrap_model(model)
        forward = model
        if config.compile != "off":
            forward = torch.compile(model, mode=None if config.compile == "default" else config.compile,
                                    dynamic=False)
        cuda_graphs = uses_cuda_graphs(config.compile, device.type)
        begin = step_begin_marker() if cuda_graphs else None

        def step_on(inputs: tuple) -> Callable[[], None]:
            def step() -> None:
                if begin is not None:  # each forward pass is one iteration of the CUDA graph trees
                    begin()
                forward(*inputs)

            return step

        offline_step, latency_step = step_on(batch), step_on(single)
        clock = clock_for(device)
        watch = CompileWatch(config.compile != "off", cuda_graphs)

        def report(phase: str, done: int, total: int) -> None:
            if progress is not None:
                progress(phase, done, total)

        def compile_steps(step: Callable[[], None]) -> float | None:
            if config.compile == "off":
                return None
            clock.synchronize()
            report("compile", 0, COMPILE_STEPS)
            start = time.perf_counter()
            for _ in range(COMPILE_STEPS):
                step()
            clock.synchronize()
            elapsed = time.perf_counter() - start
            report("compile", COMPILE_STEPS, COMPILE_STEPS)
            return elapsed

        def check_recompiles(mode_name: str) -> None:
            watch.check(f"torch.compile recompiled after the {mode_name} compile steps: its warm-up or "
                        "measured steps include it")

        repeats: list[dict[str, list[float]]] = [{} for _ in range(settings.repeats)]
        telemetry = None
        with torch.inference_mode():
            # 1. offline: back-to-back batches
            if cuda_graphs:
                peak_memory_reset(device)
            compile_offline = compile_steps(offline_step)
            watch.compile_done()
            if settings.warmup_steps:
                report("warmup", 0, settings.warmup_steps)
            warmup = timed_steps(offline_step, settings.warmup_steps, clock)
            if settings.warmup_steps:
                report("warmup", settings.warmup_steps, settings.warmup_steps)
            clock.synchronize()
            if not cuda_graphs:
                peak_memory_reset(device)
            total = settings.steps * settings.repeats
            report("measure", 0, total)
            if sampler is not None:
                sampler.start()
            try:
                for r in range(settings.repeats):
                    clock.synchronize()
                    if sync is not None:
                        sync()
                    repeats[r]["step_times_s"] = timed_steps(offline_step, settings.steps, clock)
                    clock.synchronize()
                    if sync is not None:
                        sync()
                    report("measure", (r + 1) * settings.steps, total)
            finally:  # an OOM or crash mid-measurement still stops the sampler's thread
                if sampler is not None:
                    telemetry = sampler.stop()
            peak_bytes = peak_memory(device)
            reserved_bytes = peak_reserved(device)
            check_recompiles("offline")

            # 2. latency: one batch-1 request at a time
            compile_latency = compile_steps(latency_step)
            watch.compile_done()
            latency_warmup = request_times(latency_step, settings.warmup_steps, clock)
            total = settings.latency_requests * settings.repeats
            report("latency", 0, total)
            for r in range(settings.repeats):
                if sync is not None:
                    sync()
                repeats[r]["request_times_s"] = request_times(latency_step, settings.latency_requests, clock)
                report("latency", (r + 1) * settings.latency_requests, total)
            check_recompiles("latency")

        compile_warnings, graph_skips = watch.read()
        warnings.extend(compile_warnings)
        try:
            flops = forward_flops_per_sample(config.workload, config.flavour, workload.seq_len(config))
        except Exception as exc:  # a workload whose ops cannot run on the meta device: no count, say why
            flops = None
            warnings.append(f"FLOPs not counted: {type(exc).__name__}: {exc}")

        compile_times = {"offline": compile_offline, "latency": compile_latency}
        flags.update({"channels_last": channels_last, "compile_mode": config.compile, "compile_dynamic": False,
                      "cuda_graphs": cuda_graphs, "inference_mode": True, "latency_batch_size": LATENCY_BATCH,
                      "peak_memory_scope": f"offline mode: {peak_memory_scope(config.compile, device.type)}"})
        if graph_skips is not None:
            flags["cuda_graph_skips"] = graph_skips
        attention = _attention_impl(model)
        if attention is not None:
            flags["attention"] = attention
        return {
            "warmup_step_times_s": warmup,
            "latency_warmup_times_s": latency_warmup,
            "repeats": repeats,
            "compile_time_s": None if config.compile == "off" else compile_offline + compile_latency,
            "compile_times_s": None if config.compile == "off" else compile_times,
            "peak_memory_bytes": peak_bytes,
            "peak_reserved_bytes": reserved_bytes,
            "flops_per_sample": flops,
            "weight_bytes": flags["weight_bytes"],
            "batch_size": config.batch_size,
            "latency_batch_size": LATENCY_BATCH,
            "seq_len": workload.seq_len(config),
            "device": str(device),
            "precision_flags": flags,
            "telemetry": telemetry,
            "warnings": warnings,
        }

    def metrics(self, measurement: Mapping[str, Any], config: RunConfig) -> dict[str, dict[str, Any]]:
        """From the raw values alone, each where it was measured (docs/infer.md, "Metrics"):

        offline: `samples_per_s` (steps x batch / the repeat's summed batch times, mean of the repeats, each kept),
        `step_time_s` (per batch: median, mean, p5-p99, every batch as `raw`), `achieved_flops_per_s`;
        latency: `latency_s` (per request: median, mean, percentiles, every request as `raw`, each repeat's median),
        `latency_mean_s`, `latency_p50_s`, `latency_p90_s`, `latency_p99_s`, `latency_samples_per_s` (requests
        / their summed times, mean of the repeats); and `compile_time_s`, peak memory, `weight_bytes`.
        """
        from dlbench.analysis.stats import summarize

        out: dict[str, dict[str, Any]] = {}
        repeats = list(measurement.get("repeats") or [])
        offline = [[float(t) for t in r.get("step_times_s") or []] for r in repeats]
        samples_per_s = None
        if offline and all(offline):
            batch_size = int(measurement.get("batch_size") or config.batch_size)
            stats = summarize(offline, batch_size, 1)
            samples_per_s = stats["samples_per_s"]
            out["samples_per_s"] = metric(samples_per_s, "samples/s", "higher",
                                          repeats=stats["samples_per_s_repeats"])
            raw = [t for times in offline for t in times]
            steps = stats["step_time_s"]
            out["step_time_s"] = metric(steps["median"], "s", "lower", mean=steps["mean"],
                                        **_percentiles(raw), raw=raw)
        latency = [[float(t) for t in r.get("request_times_s") or []] for r in repeats]
        if latency and all(latency):
            raw = [t for times in latency for t in times]
            pct = _percentiles(raw)
            mean = sum(raw) / len(raw)
            per_repeat = [len(times) * LATENCY_BATCH / sum(times) for times in latency]
            out["latency_s"] = metric(pct["p50"], "s", "lower", mean=mean, **pct,
                                      repeats=[_percentiles(times)["p50"] for times in latency], raw=raw)
            out["latency_mean_s"] = metric(mean, "s", "lower")
            for key in ("p50", "p90", "p99"):
                out[f"latency_{key}_s"] = metric(pct[key], "s", "lower")
            out["latency_samples_per_s"] = metric(sum(per_repeat) / len(per_repeat), "samples/s", "higher",
                                                  repeats=per_repeat)
        for key, unit in (("compile_time_s", "s"), ("peak_memory_bytes", "bytes"),
                          ("peak_reserved_bytes", "bytes"), ("weight_bytes", "bytes")):
            if measurement.get(key) is not None:
                out[key] = metric(measurement[key], unit, "lower")
        flops = measurement.get("flops_per_sample")
        if flops is not None and samples_per_s is not None:
            out["achieved_flops_per_s"] = metric(samples_per_s * flops, "FLOP/s", "higher")
        return out
