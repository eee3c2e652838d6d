"""The LLM generation scenario: prefill a synthetic prompt, then decode token by token with a static KV cache.

Exercise it with `PYTHONPATH=src python -m dlbench run --scenario generate -w llama-3.1-8b --tiny --device cpu
--prompt-len 32 --new-tokens 16` (docs/generate.md says what is measured and how to read it).

One generation, as llama-bench's pp512 / tg128 and gpt-fast measure it:
1. prefill: one forward pass over the (batch, prompt_len) synthetic prompt (token ids from a seeded generator)
   that fills the KV cache, keeps the logits of the last position only (`logits_to_keep=1`) and takes their
   argmax: the first new token. Its time is the time to first token (TTFT).
2. decode: `new_tokens - 1` steps, each one forward pass of the last token at the next cache position and the
   argmax of its logits (greedy; EOS is ignored, so every generation has the same length; no sampling cost).
   Every step is timed on its own (`measurement.clocks`: a CUDA event at every step boundary and one host
   synchronisation at the end of the generation; `perf_counter` on a CPU).
The cache is transformers' `StaticCache` (allocated once for prompt_len + new_tokens positions, reset between
generations, outside the timed region), attention is SDPA, the model is built from the catalogue shape with random
weights (`workloads.llama`). Compiled modes compile the one-token decode step (`torch.compile(step, mode=...,
fullgraph=True)`; `reduce-overhead`, CUDA graphs, is the mode transformers' LLM-optimisation guide recommends);
the prefill stays eager (one large forward: kernel launches are a small part of its time).

Order of events: build and cast/quantize the model (`measurement.inference_precision`), the cache and the prompt;
compiled modes: one whole generation timed as `compile_time_s`; `warmup_steps` generations, each timed and kept
apart; peak-memory counters reset; sampler started; `repeats` generations; sampler stopped.

Metrics (`GenerateScenario.metrics`, from the raw times and the recorded sizes alone) are listed in
docs/generate.md: prefill tokens/s, TTFT, decode tokens/s, TPOT percentiles over every decode step, end-to-end
time, bandwidth achieved during decode and its share of the catalogue GPU's, prefill FLOP/s and MFU, peak memory,
energy per token.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dlbench.scenarios.base import Scenario, metric

if TYPE_CHECKING:  # pragma: no cover
    from dlbench.measurement.config import RunConfig
    from dlbench.measurement.device import DeviceFacts

# The precisions generation measures: weights cast (fp32, fp16, bf16: how models are served, no autocast) or
# quantized by torchao (weight-only int8 / int4, fp8 on CUDA compute capability >= 8.9).
GENERATE_PRECISIONS: tuple[str, ...] = ("fp32", "fp16", "bf16", "int8-weight-only", "int4-weight-only", "fp8")

# The catalogue peak (`catalog.lookup.peak_flops_per_s`) that bounds the prefill's matrix multiplications at each
# precision: weight-only quantization dequantizes to 16 bits and multiplies there.
PEAK_FOR_PRECISION: dict[str, str] = {"fp32": "fp32", "tf32": "tf32", "fp16": "amp-fp16", "bf16": "amp-bf16",
                                      "int8-weight-only": "amp-bf16", "int4-weight-only": "amp-bf16",
                                      "fp8": "fp8"}


@dataclass(frozen=True)
class GenerateConfig:
    """The generate scenario's settings: prompt and output lengths, warm-up generations and measured ones."""

    prompt_len: int = 512
    new_tokens: int = 128
    warmup_steps: int = 1  # warm-up generations (each a whole prefill + decode), timed and kept apart
    repeats: int = 3  # measured generations


def decode_positions(prompt_len: int, steps: int) -> list[int]:
    """How many cache positions each decode step attends to: step i feeds the token at position prompt_len + i
    and reads the keys and values of positions 0 .. prompt_len + i."""
    return [prompt_len + i + 1 for i in range(steps)]


def decode_bytes(weight_bytes: float, kv_bytes_per_position: float, prompt_len: int, steps: int) -> float:
    """Bytes one generation's decode steps read: the weights once per step, plus the KV cache up to each step's
    context (`decode_positions`). Activations are left out (kilobytes at batch 1)."""
    return steps * weight_bytes + kv_bytes_per_position * sum(decode_positions(prompt_len, steps))


def prefill_flops(shape: Any, prompt_len: int, batch: int) -> float:
    """FLOPs of one prefill: every prompt position through the decoder (`catalog.models.forward_flops_per_token`,
    matrix multiplications 2 x parameters, attention 4 x layers x heads x head_dim x context), causal attention
    (position t attends to t+1 positions: on average (P + 1) / 2, which the per-token count is linear in), and the
    lm_head for the last position only (`logits_to_keep=1`)."""
    from dlbench.catalog.models import forward_flops_per_token

    lm_head = 2.0 * shape.vocab * shape.hidden
    per_prompt = prompt_len * forward_flops_per_token(shape, (prompt_len + 1) / 2) - (prompt_len - 1) * lm_head
    return batch * per_prompt


def cache_keyword(model: Any) -> str:
    """The forward's KV-cache keyword: `cache` in transformers >= 5.24 (`past_key_values` deprecated there),
    `past_key_values` before."""
    import inspect

    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


class Generation:
    """Greedy generation of `new_tokens` tokens after a fixed prompt, with every step timed.

    `once(clock)` runs one generation and returns (ttft_s, decode step times, generated token ids); the cache is
    reset before, outside the timed region. The benchmark (`benchmarks/generate_roofline.py`) drives the same
    object to compare with `model.generate`.
    """

    def __init__(self, model: Any, llama_config: Any, prompt: Any, new_tokens: int, device: Any,
                 compile_mode: str = "off") -> None:
        import torch
        from transformers import StaticCache

        from dlbench.measurement.compile import step_begin_marker, uses_cuda_graphs

        self.model = model
        self.prompt = prompt
        self.batch, self.prompt_len = prompt.shape
        self.new_tokens = new_tokens
        self.steps = new_tokens - 1  # the first new token comes from the prefill
        self.cache = StaticCache(config=llama_config, max_cache_len=self.prompt_len + new_tokens)
        self.key = cache_keyword(model)
        # Positions are given (`position_ids`, a forward argument in every transformers 5.x) rather than read back
        # from the cache; the static cache writes at its own running length (a device tensor, reset with it), and
        # the two agree. One tensor per step, made before timing: no host-to-device copy inside a step, and a
        # compiled step sees an input of the same size, stride and offset every time (no recompilation).
        self.prefill_positions = torch.arange(self.prompt_len, device=device).unsqueeze(0)
        self.positions = [torch.tensor([[self.prompt_len + i]], device=device) for i in range(self.steps)]
        self.cuda_graphs = uses_cuda_graphs(compile_mode, torch.device(device).type)
        self.begin = step_begin_marker() if self.cuda_graphs else None
        self.decode = self._decode
        if compile_mode != "off":
            self.decode = torch.compile(self._decode, mode=None if compile_mode == "default" else compile_mode,
                                        fullgraph=True)

    def prefill(self) -> Any:
        """The prompt through the model, the cache filled; the argmax of the last position's logits."""
        out = self.model(input_ids=self.prompt, position_ids=self.prefill_positions, use_cache=True,
                         logits_to_keep=1, **{self.key: self.cache})
        return out.logits[:, -1].argmax(-1, keepdim=True)

    def _decode(self, token: Any, position: Any) -> Any:
        """One step: the last token at `position`; the argmax of its logits (greedy)."""
        out = self.model(input_ids=token, position_ids=position, use_cache=True, **{self.key: self.cache})
        return out.logits[:, -1].argmax(-1, keepdim=True)

    def once(self, clock: Any) -> tuple[float, list[float], list[Any]]:
        """One timed generation: (TTFT, every decode step's time, the generated tokens: (batch, 1) tensors)."""
        self.cache.reset()
        clock.synchronize()
        marks = clock.marks(self.steps + 2)
        clock.mark(marks, 0)
        token = self.prefill()
        clock.mark(marks, 1)
        tokens = [token]
        for i in range(self.steps):
            if self.begin is not None:
                self.begin()
            token = self.decode(token, self.positions[i])
            if self.cuda_graphs:  # a graph's output is overwritten by its next replay (gpt-fast clones too)
                token = token.clone()
            tokens.append(token)
            clock.mark(marks, i + 2)
        times = clock.durations(marks)
        return times[0], times[1:], tokens


@contextlib.contextmanager
def default_dtype(dtype: Any) -> Iterator[None]:
    """torch's default floating dtype set to `dtype` for the block (the model's parameters are made in it)."""
    import torch

    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def weight_bytes_read(model: Any) -> tuple[float, float]:
    """(bytes of every weight, bytes a decode step reads of them): an untied input embedding is read one row per
    token, not whole, so it is left out of the second figure (the lm_head, tied or not, is read whole)."""
    from dlbench.measurement.inference_precision import weight_bytes

    total = float(weight_bytes(model))
    embedding = model.get_input_embeddings().weight
    output = model.get_output_embeddings()
    tied = output is not None and output.weight is embedding
    read = total if tied else total - embedding.numel() * embedding.element_size()
    return total, read


class GenerateScenario(Scenario):
    """LLM generation: prefill then token-by-token greedy decode with a static KV cache."""

    name = "generate"
    description = ("LLM generation with a static KV cache: prefill and decode tokens/s, TTFT, TPOT percentiles, "
                   "decode bandwidth, prefill MFU")
    config_class = GenerateConfig
    precisions = GENERATE_PRECISIONS
    headline = "decode_tokens_per_s"

    def settings(self, config: RunConfig) -> GenerateConfig:
        """Prompt and output lengths from `RunConfig.prompt_len` / `new_tokens` (defaults 512 / 128)."""
        defaults = GenerateConfig()
        return GenerateConfig(prompt_len=int(getattr(config, "prompt_len", None) or defaults.prompt_len),
                              new_tokens=int(getattr(config, "new_tokens", None) or defaults.new_tokens),
                              warmup_steps=int(config.warmup_steps), repeats=int(config.repeats))

    def workload_reason(self, name: str) -> str | None:
        """Only the decoder LLM workloads (`Workload.scenarios` naming generate: `workloads.llama`) generate."""
        from dlbench.errors import BadInput
        from dlbench.workloads import registry

        try:
            workload = registry.get(name)
        except BadInput:
            return None
        if "generate" in (getattr(workload, "scenarios", None) or ()):
            return None
        llms = [n for n, w in registry.load().items() if "generate" in (getattr(w, "scenarios", None) or ())]
        return (f"workload {workload.name} does not generate text; the generate scenario runs decoder LLMs "
                f"(choose from: {', '.join(sorted(llms))})")

    def unsupported_reason(self, config: RunConfig, device_facts: DeviceFacts | None = None) -> str | None:
        """The workload must be a generate one, the lengths must fit its positions, then the precision (torchao
        present, fp8 on CUDA compute capability >= 8.9, int4 on CUDA >= 8.0) and the device and compile mode."""
        from dlbench.analysis.configuration import PRECISIONS
        from dlbench.measurement.capabilities import unsupported_reason as device_reason
        from dlbench.measurement.device import resolve_device
        from dlbench.measurement.inference_precision import inference_unsupported_reason

        if (config.world_size or 1) > 1:
            return "the generate scenario measures one device; --gpus applies to training only"
        refused = self.workload_reason(config.workload)
        if refused:
            return refused
        if config.precision in PRECISIONS and config.precision not in self.precisions:
            return (f"precision {config.precision} is not measured by the {self.name} scenario; "
                    f"choose from: {', '.join(self.precisions)}")
        length = length_reason(config.workload, config.flavour, self.settings(config))
        if length:
            return length
        device = resolve_device(config.device, device_facts)
        return (device_reason(replace(config, precision="fp32"), device_facts)  # device and compile mode
                or inference_unsupported_reason(config.precision, device_facts, device=device))

    def run(self, config: RunConfig, workload: Any, *, progress: Callable[[str, int, int], None] | None = None,
            sampler: Any = None, wrap_model: Callable[[Any], Any] | None = None,
            sync: Callable[[], None] | None = None) -> dict[str, Any]:
        """The measurement (module docstring): raw times and the sizes the metrics need, nothing derived."""
        import torch

        from dlbench.catalog.models import kv_cache_bytes
        from dlbench.measurement.clocks import clock_for
        from dlbench.measurement.compile import CompileWatch
        from dlbench.measurement.device import use_device
        from dlbench.measurement.inference_precision import apply_inference_precision, compute_dtype
        from dlbench.measurement.memory import (
            peak_memory,
            peak_memory_reset,
            peak_memory_scope,
            peak_reserved,
        )
        from dlbench.measurement.seeding import seed_everything

        settings = self.settings(config)
        device = use_device(config.device)
        warnings: list[str] = []

        def report(phase: str, done: int, total: int) -> None:
            if progress is not None:
                progress(phase, done, total)

        seed_everything(config.seed)
        shape = workload.shape(config)
        with torch.inference_mode():
            # Random weights made where they will live, in the dtype they are served in (no fp32 copy of 8B).
            with torch.device(device), default_dtype(compute_dtype(config.precision)):
                model = workload.build_model(config)
            model, flags = apply_inference_precision(model, config.precision, device)
            generator = torch.Generator().manual_seed(config.seed)
            (prompt,) = workload.make_inputs(config, config.batch_size, generator)
            prompt = prompt.to(device)
            gen = Generation(model, model.config, prompt, settings.new_tokens, device, config.compile)
            clock = clock_for(device)
            total_bytes, read_bytes = weight_bytes_read(model)
            element = model.get_input_embeddings().weight.element_size()  # the cache holds activations' dtype
            watch = CompileWatch(config.compile != "off", gen.cuda_graphs)

            compile_time_s = None
            if config.compile != "off":
                if gen.cuda_graphs:
                    peak_memory_reset(device)
                report("compile", 0, 1)
                clock.synchronize()
                start = time.perf_counter()
                gen.once(clock)
                clock.synchronize()
                compile_time_s = time.perf_counter() - start
                report("compile", 1, 1)
            watch.compile_done()

            warmup = []
            for i in range(settings.warmup_steps):
                report("warmup", i, settings.warmup_steps)
                ttft, steps, _ = gen.once(clock)
                warmup.append({"ttft_s": ttft, "step_times_s": steps})
            if settings.warmup_steps:
                report("warmup", settings.warmup_steps, settings.warmup_steps)

            clock.synchronize()
            if not gen.cuda_graphs:
                peak_memory_reset(device)
            repeats = []
            report("measure", 0, settings.repeats)
            telemetry = None
            if sampler is not None:
                sampler.start()
            try:
                for r in range(settings.repeats):
                    if sync is not None:
                        sync()
                    ttft, steps, _ = gen.once(clock)
                    repeats.append({"ttft_s": ttft, "step_times_s": steps})
                    report("measure", r + 1, settings.repeats)
            finally:  # an OOM mid-measurement still stops the sampler's thread
                if sampler is not None:
                    telemetry = sampler.stop()
            peak_bytes, reserved_bytes = peak_memory(device), peak_reserved(device)

        watch.check("torch.compile recompiled after the compile generation: warm-up/measured steps include it")
        warnings.extend(watch.read()[0])  # the skip count is in the warning only, not in precision_flags
        device_name, device_memory = _device_identity(device)
        flags.update({"compile_mode": config.compile, "compiled": "decode step" if config.compile != "off" else None,
                      "prefill": "eager", "cuda_graphs": gen.cuda_graphs, "kv_cache": "static",
                      "cache_dtype_bytes": element, "attention": _attention_impl(model),
                      "peak_memory_scope": peak_memory_scope(config.compile, device.type)})
        measurement = {
            "warmup_step_times_s": [t for w in warmup for t in w["step_times_s"]],
            "warmup": warmup,
            "repeats": repeats,
            "compile_time_s": compile_time_s,
            "peak_memory_bytes": peak_bytes,
            "peak_reserved_bytes": reserved_bytes,
            "flops_per_sample": None,
            "batch_size": config.batch_size,
            "seq_len": settings.prompt_len,
            "prompt_len": settings.prompt_len,
            "new_tokens": settings.new_tokens,
            "weight_bytes": total_bytes,
            "decode_weight_bytes": read_bytes,
            "kv_bytes_per_position": kv_cache_bytes(shape, tokens=1, batch=config.batch_size,
                                                    bytes_per_elem=element),
            "prefill_flops": prefill_flops(shape, settings.prompt_len, config.batch_size),
            "device": str(device),
            "device_name": device_name,
            "device_memory_bytes": device_memory,
            "precision_flags": flags,
            "telemetry": telemetry,
            "warnings": warnings,
        }
        measurement["warnings"].extend(f"{name} not reported: {why}"
                                       for name, why in not_reported(measurement, config).items())
        return measurement

    def metrics(self, measurement: Mapping[str, Any], config: RunConfig) -> dict[str, dict[str, Any]]:
        """From the raw times and the recorded sizes alone (docs/generate.md has the formulas)."""
        return generate_metrics(measurement, config)


def length_reason(workload_name: str, flavour: str, settings: GenerateConfig) -> str | None:
    """Why the prompt and output lengths cannot run on this workload (a length below 1, or more positions than
    the model has), or None."""
    from dlbench.errors import BadInput
    from dlbench.workloads import registry

    if settings.prompt_len < 1:
        return f"--prompt-len must be at least 1, got {settings.prompt_len}"
    if settings.new_tokens < 1:
        return f"--new-tokens must be at least 1, got {settings.new_tokens}"
    try:
        workload = registry.get(workload_name)
    except BadInput:
        return None
    shape_of = getattr(workload, "full", None)
    if shape_of is None or not hasattr(workload, "tiny"):
        return None
    shape = workload.tiny if flavour == "tiny" else workload.full
    total = settings.prompt_len + settings.new_tokens
    if total > shape.max_position:
        return (f"--prompt-len {settings.prompt_len} + --new-tokens {settings.new_tokens} = {total} positions; "
                f"{shape.name} has {shape.max_position}")
    return None


def _device_identity(device: Any) -> tuple[str | None, int | None]:
    """(name, total memory) of a CUDA device as torch reports them; (None, None) elsewhere."""
    import torch

    if device.type != "cuda":
        return None, None
    props = torch.cuda.get_device_properties(device)
    return str(props.name), int(props.total_memory)


def _attention_impl(model: Any) -> str | None:
    return getattr(getattr(model, "config", None), "_attn_implementation", None)


# ----------------------------------------------------------------------------------------------------- metrics


def catalogue_gpu(measurement: Mapping[str, Any]) -> tuple[Any, str | None]:
    """(the catalogue entry of the measured GPU, None) or (None, why there is none)."""
    from dlbench.catalog.lookup import lookup

    name = measurement.get("device_name")
    if not name:
        return None, f"{measurement.get('device') or 'this device'} is not a GPU of the catalogue"
    spec = lookup(name, measurement.get("device_memory_bytes"))
    if spec is None:
        return None, f"{name} is not in the GPU catalogue (`dlbench gpus list`)"
    return spec, None


def not_reported(measurement: Mapping[str, Any], config: RunConfig) -> dict[str, str]:
    """The roofline metrics that cannot be computed for this measurement, each with the reason."""
    from dlbench.catalog.lookup import peak_flops_per_s

    spec, why = catalogue_gpu(measurement)
    if spec is None:
        return {"bandwidth_fraction": why, "mfu": why}
    out = {}
    if spec.memory_bandwidth_bytes_per_s is None:
        out["bandwidth_fraction"] = f"the catalogue gives no memory bandwidth for {spec.name}"
    peak_key = PEAK_FOR_PRECISION.get(config.precision)
    if peak_key is None or peak_flops_per_s(spec, peak_key) is None:
        out["mfu"] = f"the catalogue gives no {config.precision} peak for {spec.name}"
    return out


def _percentiles(values: list[float]) -> dict[str, float]:
    import numpy as np

    p50, p90, p99 = (float(v) for v in np.percentile(np.asarray(values, dtype=float), [50, 90, 99]))
    return {"p50": p50, "p90": p90, "p99": p99}


def generate_metrics(measurement: Mapping[str, Any], config: RunConfig) -> dict[str, dict[str, Any]]:
    """The generate metrics (see `GenerateScenario.metrics`), each only where it was measured:

    - prefill_tokens_per_s: mean over repeats of batch x prompt_len / TTFT (each repeat's kept).
    - ttft_s: the median TTFT over repeats; p50/p90/p99; every TTFT raw.
    - decode_tokens_per_s: mean over repeats of batch x decode steps / the repeat's decode time.
    - tpot_s: the median decode step; mean, p50/p90/p99 and every step raw (all repeats pooled).
    - e2e_s: the median of TTFT + decode time over repeats; p50/p90/p99; each repeat's.
    - bandwidth_bytes_per_s: mean over repeats of the bytes decode read (`decode_bytes`) / the decode time;
      bandwidth_fraction: that over the catalogue GPU's memory bandwidth.
    - prefill_flops_per_s: mean over repeats of the prefill's FLOPs / TTFT; mfu: that over the catalogue peak
      for the precision.
    - compile_time_s, peak_memory_bytes, peak_reserved_bytes as measured; energy_per_token_j: the measured
      window's energy / every output token of the measured repeats (prefill included, where NVML gives energy).
    """
    from dlbench.catalog.lookup import peak_flops_per_s

    out: dict[str, dict[str, Any]] = {}
    repeats = list(measurement.get("repeats") or [])
    if not repeats:
        return out
    batch = int(measurement.get("batch_size") or config.batch_size)
    prompt_len = int(measurement["prompt_len"])
    new_tokens = int(measurement["new_tokens"])
    ttfts = [float(r["ttft_s"]) for r in repeats]
    decodes = [[float(t) for t in r["step_times_s"]] for r in repeats]
    steps = len(decodes[0])

    prefill_rates = [batch * prompt_len / t for t in ttfts]
    out["prefill_tokens_per_s"] = metric(sum(prefill_rates) / len(prefill_rates), "tokens/s", "higher",
                                         repeats=prefill_rates)
    out["ttft_s"] = metric(_percentiles(ttfts)["p50"], "s", "lower", **_percentiles(ttfts), raw=ttfts)
    decode_times = [sum(d) for d in decodes]
    if steps and all(t > 0 for t in decode_times):
        rates = [batch * len(d) / t for d, t in zip(decodes, decode_times, strict=True)]
        out["decode_tokens_per_s"] = metric(sum(rates) / len(rates), "tokens/s", "higher", repeats=rates)
        raw = [t for d in decodes for t in d]
        stats = _percentiles(raw)
        out["tpot_s"] = metric(stats["p50"], "s", "lower", mean=sum(raw) / len(raw), **stats, raw=raw)
    e2e = [t + d for t, d in zip(ttfts, decode_times, strict=True)]
    out["e2e_s"] = metric(_percentiles(e2e)["p50"], "s", "lower", **_percentiles(e2e), repeats=e2e)

    spec = None
    if measurement.get("device_name"):
        spec, _ = catalogue_gpu(measurement)
    weight = measurement.get("decode_weight_bytes")
    kv = measurement.get("kv_bytes_per_position")
    if steps and weight is not None and kv is not None and "decode_tokens_per_s" in out:
        moved = decode_bytes(float(weight), float(kv), prompt_len, steps)
        bandwidths = [moved / t for t in decode_times]
        bandwidth = sum(bandwidths) / len(bandwidths)
        out["bandwidth_bytes_per_s"] = metric(bandwidth, "bytes/s", "higher", repeats=bandwidths)
        if spec is not None and spec.memory_bandwidth_bytes_per_s:
            out["bandwidth_fraction"] = metric(bandwidth / spec.memory_bandwidth_bytes_per_s, "fraction", "higher")
    flops = measurement.get("prefill_flops")
    if flops is not None:
        rates = [float(flops) / t for t in ttfts]
        achieved = sum(rates) / len(rates)
        out["prefill_flops_per_s"] = metric(achieved, "FLOP/s", "higher", repeats=rates)
        peak_key = PEAK_FOR_PRECISION.get(config.precision)
        peak = peak_flops_per_s(spec, peak_key) if spec is not None and peak_key else None
        if peak:
            out["mfu"] = metric(achieved / peak, "fraction", "higher")
    for key, unit in (("compile_time_s", "s"), ("peak_memory_bytes", "bytes"), ("peak_reserved_bytes", "bytes")):
        if measurement.get(key) is not None:
            out[key] = metric(measurement[key], unit, "lower")
    telemetry = measurement.get("telemetry") or {}
    energy = telemetry.get("energy_j") if isinstance(telemetry, Mapping) and telemetry.get("available") else None
    if energy is not None:
        tokens = len(repeats) * batch * new_tokens
        out["energy_per_token_j"] = metric(float(energy) / tokens, "J/token", "lower")
    return out
