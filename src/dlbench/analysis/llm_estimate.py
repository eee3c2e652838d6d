"""LLM generation speed from specs: `dlbench estimate --scenario generate -w llama-3.1-8b -p bf16 --gpu "RTX 4090"`.

Two rooflines, each with a share of it fitted on published figures (docs/llm-estimates.md has the reasoning):

decode (one new token per sequence per step; Dettmers, seed 001: memory bandwidth sets LLM speed)
    bytes per step  = weights read (every parameter but the embedding lookup, at the precision's bits
                      including its quantization scales; a mixture of experts only the experts routed to)
                      + KV cache at the context x batch
    roofline time   = bytes per step / catalogue memory bandwidth
    step time       = roofline time / e + layers x tau              (e, tau fitted per software)
    tokens/s        = batch / step time;  efficiency = roofline time / step time
prefill (the prompt, all tokens at once: compute bound)
    FLOPs per token = forward_flops_per_token(model, context / 2)   (matrices + attention at the mean position)
    roofline time   = FLOPs per token / catalogue peak of the kernels the software runs
    time per token  = roofline time / e + layers x tau;  tokens/s = 1 / time per token

Several GPUs (tensor parallel): each reads 1/n of the bytes and does 1/n of the FLOPs, so the roofline time
divides by n while the per-layer cost stays (plus an all-reduce per layer, which it absorbs): on gpt-fast's A100
rows this gives 157 / 235 / 312 tokens/s for Llama 3.1 8B bf16 on 2 / 4 / 8 GPUs against 149 / 217 / 276
published (docs/llm-estimates.md).

`e` (the share of the roofline the software reaches) and `tau` (a fixed cost per layer: kernel launches,
dequantization, synchronisation, which a pure roofline misses and which dominates on fast GPUs) are fitted by
least squares on relative error over the published single-GPU rows of one software family (`CALIBRATIONS`) at
the precision, when three or more GPUs have rows at it; else over every precision of that software, scaled by the
median residual of the precision's own rows (when it has any). The band is
the range of leave-one-GPU-out errors (`benchmarks/llm_estimator_accuracy.py`). `spec_only` leaves the asked
GPU's rows out of every fit. Nothing here imports torch.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from dlbench.errors import BadInput

DEFAULT_CONTEXT = 4096
MAX_BATCH = 4096
METRICS = ("decode_tokens_per_s", "prefill_tokens_per_s")
MIN_GPUS_FOR_OWN_BAND = 4
MIN_GPUS_FOR_OWN_FIT = 3

# Bits per weight as the software stores it, scales included.
# bf16/fp16: 16. int8 (gpt-fast int8 weight-only): 8, one bf16 scale per output channel (< 0.1%, left out).
# int4 (gpt-fast int4, GPTQ/AWQ layout): 4 + 32/128 (bf16 scale and zero point per group of 128), as analysis.fit.
# llama.cpp (ggml-common.h blocks of 32 weights): q8_0 = 32 x 8 bits + an fp16 scale = 8.5; q4_0 = 32 x 4 bits +
# an fp16 scale = 4.5; q4_k_m mixes q4_K and q6_K tensors: 4.89 bits over the whole file (llama-bench lists
# Llama 3 8B Q4_K_M as 4.58 GiB for 8.03 B parameters).
WEIGHT_BITS: dict[str, float] = {
    "bf16": 16.0, "fp16": 16.0, "int8": 8.0, "int4": 4.0 + 32 / 128,
    "q8_0": 8.5, "q4_0": 4.5, "q4_k_m": 4.58 * 2**30 * 8 / 8.03e9,
}
PRECISIONS = tuple(WEIGHT_BITS)

# dlbench precision -> (software, the precision its published rows are in), most faithful first. gpt-fast is
# PyTorch (torch.compile), what dlbench's generate scenario runs; llama.cpp is the other published family.
CALIBRATIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "bf16": (("gpt-fast", "bf16"), ("llama.cpp", "fp16")),
    "fp16": (("llama.cpp", "fp16"), ("gpt-fast", "bf16")),
    "int8": (("gpt-fast", "int8-weight-only"), ("llama.cpp", "q8_0")),
    "int4": (("gpt-fast", "int4-weight-only"), ("llama.cpp", "q4_0")),
    "q8_0": (("llama.cpp", "q8_0"),),
    "q4_0": (("llama.cpp", "q4_0"),),
    "q4_k_m": (("llama.cpp", "q4_k_m"),),
}
# Bits of the rows' own precisions (for the bytes a published row's GPU read).
ROW_BITS: dict[str, float] = {
    "bf16": 16.0, "fp16": 16.0, "int8-weight-only": 8.0, "int4-weight-only": WEIGHT_BITS["int4"],
    "q8_0": 8.5, "q4_0": 4.5, "q4_k_m": WEIGHT_BITS["q4_k_m"],
}
# Prefill: PyTorch dequantizes int8/int4 weights and runs bf16 matrix products, so every PyTorch precision is
# calibrated on dense 16-bit prompt processing (gpt-fast publishes no prefill figures: llama.cpp's f16 rows).
PREFILL_CALIBRATIONS: dict[str, tuple[tuple[str, str], ...]] = {
    **CALIBRATIONS,
    "bf16": (("llama.cpp", "fp16"),), "fp16": (("llama.cpp", "fp16"),),
    "int8": (("llama.cpp", "fp16"),), "int4": (("llama.cpp", "fp16"),),
}
SOFTWARE_NAMES = {"gpt-fast": "gpt-fast (PyTorch, torch.compile)", "llama.cpp": "llama.cpp (llama-bench, CUDA)"}
SOFTWARE = tuple(SOFTWARE_NAMES)


def prefill_peak(spec, software: str, row_precision: str) -> tuple[float | None, str]:
    """(peak FLOP/s of the kernels `software` runs for a prompt at `row_precision`, what it is)."""
    fp16acc = getattr(spec, "fp16_fp16acc_tensor_flops_per_s", None) or spec.fp16_tensor_flops_per_s
    if software == "llama.cpp" and row_precision == "fp16":
        # cuBLAS GEMM with fp16 accumulation (llama.cpp's f16 path): GeForce cards run it at full rate.
        return fp16acc, "FP16 tensor, FP16 accumulate"
    if software == "llama.cpp":
        # Quantized prompts run as int8 tensor-core matrix products (MMQ); the int8 dense rate is twice the
        # FP16-accumulate rate on every NVIDIA tensor-core generation from Turing to Blackwell.
        return (2 * fp16acc if fp16acc else None), "INT8 tensor (2 x FP16-accumulate rate)"
    # PyTorch: bf16 matrix products with fp32 accumulation (weight-only quantized weights are dequantized).
    return spec.bf16_tensor_flops_per_s or spec.fp16_tensor_flops_per_s, "BF16 tensor, FP32 accumulate"


def weights_read_bytes(shape, bits: float, batch: int = 1) -> float:
    """Bytes of weights one decode step reads: every parameter but the embedding table (a lookup reads one row;
    a tied table is read whole as the lm_head), at `bits` per weight. A mixture of experts reads only the experts
    its tokens are routed to: with k of E experts per token and `batch` tokens routed independently, a layer reads
    E x (1 - (1 - k/E)^batch) experts on average (k at batch 1)."""
    from dlbench.catalog.models import param_breakdown, param_count

    parts = param_breakdown(shape)
    n = param_count(shape)
    if not shape.tied_embeddings:
        n -= parts["embedding"]
    if shape.is_moe:
        share = 1.0 - (1.0 - shape.active_experts / shape.experts) ** batch
        n -= parts["mlp"] * (1.0 - share)
    return n * bits / 8


# ---------------------------------------------------------------------------------------------------------------
# Calibration points


@dataclass(frozen=True)
class Point:
    """One published single-GPU figure as the model sees it."""

    software: str
    precision: str  # as the row has it
    metric: str
    gpu: str
    workload: str
    value: float  # tokens/s
    roofline_s: float  # roofline time per token (decode: per step at batch 1)
    layers: int
    source: str


def _decode_context(row) -> int:
    # Tokens in the cache on average while generating: the prompt plus half the new tokens.
    return int((row.prompt_len or 0) + (row.new_tokens or 0) / 2)


def _point(row) -> Point | None:
    from dlbench import catalog
    from dlbench.catalog.models import forward_flops_per_token, get_model, kv_cache_bytes

    spec = catalog.lookup(row.gpu)
    if spec is None or row.precision not in ROW_BITS:
        return None
    shape = get_model(row.workload)
    if row.metric == "decode_tokens_per_s":
        bw = spec.memory_bandwidth_bytes_per_s
        if not bw:
            return None
        nbytes = weights_read_bytes(shape, ROW_BITS[row.precision]) + kv_cache_bytes(shape, _decode_context(row))
        roof = nbytes / bw
    else:
        peak, _ = prefill_peak(spec, row.framework, row.precision)
        if not peak:
            return None
        roof = forward_flops_per_token(shape, (row.prompt_len or 512) // 2) / peak
    return Point(row.framework, row.precision, row.metric, row.gpu, row.workload, row.value, roof, shape.layers,
                 row.source)


@lru_cache(maxsize=1)
def published_points() -> tuple[Point, ...]:
    """Every published single-GPU, batch-1 decode or prefill row of a calibrated software, as a `Point`."""
    from dlbench.reference.inference import inference_for

    out = []
    for row in inference_for(scenario="generate", gpu_count=1):
        if row.metric in METRICS and row.framework in SOFTWARE and row.batch_size in (None, 1):
            p = _point(row)
            if p is not None:
                out.append(p)
    return tuple(out)


# ---------------------------------------------------------------------------------------------------------------
# The fit


@dataclass(frozen=True)
class Fit:
    """time per token = roofline / e x scale + layers x tau x scale, for one software, metric and precision."""

    software: str
    metric: str
    precision: str  # the rows' precision the scale comes from
    inv_e: float  # 1 / e
    tau_s: float
    scale: float  # median observed/predicted time of the precision's own rows (1 when it has none)
    gpus: tuple[str, ...]  # GPUs whose rows calibrate it (any precision of the software)
    own_gpus: tuple[str, ...]  # GPUs with rows at this precision
    rows: str = ""  # which rows were fitted

    def time_s(self, roofline_s: float, layers: int) -> float:
        return (roofline_s * self.inv_e + layers * self.tau_s) * self.scale

    def efficiency(self, roofline_s: float, layers: int) -> float:
        return roofline_s / self.time_s(roofline_s, layers)


def _least_squares(points: Sequence[Point]) -> tuple[float, float]:
    """(1/e, tau) minimising the squared relative error of time per token; tau = 0 when it cannot be told."""
    a = [[0.0, 0.0], [0.0, 0.0]]
    b = [0.0, 0.0]
    for p in points:
        t = 1.0 / p.value
        f = (p.roofline_s / t, p.layers / t)  # divided by t: relative error
        for i in range(2):
            b[i] += f[i]
            for j in range(2):
                a[i][j] += f[i] * f[j]
    det = a[0][0] * a[1][1] - a[0][1] * a[1][0]
    if len(points) >= 3 and abs(det) > 1e-12 * max(a[0][0] * a[1][1], 1e-300):
        inv_e = (b[0] * a[1][1] - b[1] * a[0][1]) / det
        tau = (a[0][0] * b[1] - a[1][0] * b[0]) / det
        if inv_e > 0 and tau >= 0:
            return inv_e, tau
    # One free parameter: the median share of the roofline.
    return statistics.median(1.0 / (p.value * p.roofline_s) for p in points), 0.0


def fit(software: str, metric: str, precision: str, exclude: Iterable[str] = (),
        points: Sequence[Point] | None = None, workload: str | None = None) -> Fit | None:
    """The calibration of `software` for `metric` at `precision` (and `workload`), None without rows.

    The most specific set of rows that three or more GPUs share is fitted: the same model and precision, else
    the precision (quantized kernels pay more per layer than 16-bit ones), else every precision of the software
    with the median residual of the precision's own rows (if any) as a scale."""
    pts = published_points() if points is None else points
    exclude = frozenset(exclude)
    pool = [p for p in pts if p.software == software and p.metric == metric and p.gpu not in exclude]
    if not pool:
        return None
    own = [p for p in pool if p.precision == precision]
    for rows, what in (([p for p in own if p.workload == workload], f"{workload} {precision} rows"),
                       (own, f"{precision} rows of every model")):
        gpus = tuple(sorted({p.gpu for p in rows}))
        if len(gpus) >= MIN_GPUS_FOR_OWN_FIT:
            inv_e, tau = _least_squares(rows)
            return Fit(software, metric, precision, inv_e, tau, 1.0, gpus, gpus, what)
    inv_e, tau = _least_squares(pool)
    scale = 1.0
    if own:
        scale = math.exp(statistics.median(math.log((1.0 / p.value) / (p.roofline_s * inv_e + p.layers * tau))
                                           for p in own))
    return Fit(software, metric, precision, inv_e, tau, scale, tuple(sorted({p.gpu for p in pool})),
               tuple(sorted({p.gpu for p in own})), "rows of every precision and model")


@lru_cache(maxsize=512)
def _cached_fit(software: str, metric: str, precision: str, exclude: frozenset[str],
                workload: str | None = None) -> Fit | None:
    return fit(software, metric, precision, exclude, workload=workload)


def loo_errors(software: str, metric: str, precision: str | None = None,
               points: Sequence[Point] | None = None) -> list[tuple[Point, float]]:
    """(row, log(observed / predicted)) for every row of `software` and `metric` (at `precision` when given),
    each predicted by a fit that never saw its GPU."""
    pts = published_points() if points is None else points
    rows = [p for p in pts if p.software == software and p.metric == metric
            and (precision is None or p.precision == precision)]
    out = []
    for gpu in sorted({p.gpu for p in rows}):
        for p in rows:
            if p.gpu != gpu:
                continue
            f = (fit(software, metric, p.precision, exclude={gpu}, points=pts, workload=p.workload)
                 if points is not None else _cached_fit(software, metric, p.precision, frozenset({gpu}), p.workload))
            if f is None:
                continue
            out.append((p, math.log(p.value * f.time_s(p.roofline_s, p.layers))))
    return out


@lru_cache(maxsize=64)
def band(software: str, metric: str, precision: str) -> tuple[float, float, str]:
    """(low factor, high factor, how): the 10th-90th percentile of leave-one-GPU-out errors at the precision when
    at least four GPUs have them, else over every precision of the software (then of every software). A
    percentile rather than the range, so that one odd published row (llama.cpp's A100 SXM4 fp16 prefill, 603
    tokens/s against 7,741 on the A100 PCIe) does not widen every band."""
    own = loo_errors(software, metric, precision)
    pooled, where = own, f"{software} {precision}"
    if len({p.gpu for p, _ in own}) < MIN_GPUS_FOR_OWN_BAND:
        pooled, where = loo_errors(software, metric), f"every {software} precision"
        if len({p.gpu for p, _ in pooled}) < MIN_GPUS_FOR_OWN_BAND:
            pooled, where = [x for s in SOFTWARE for x in loo_errors(s, metric)], "every software"
    errors = [e for _, e in pooled]
    if not errors:
        return 0.5, 2.0, "no held-out errors to size the band: factor 2 either way"
    lo, hi = _quantile(errors, 0.10), _quantile(errors, 0.90)
    return (math.exp(min(lo, 0.0)), math.exp(max(hi, 0.0)),
            f"10th-90th percentile of leave-one-GPU-out errors over {where} ({len(errors)} rows)")


def _quantile(values: Sequence[float], q: float) -> float:
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    i = int(pos)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (xs[i + 1] - xs[i]) * (pos - i)


# ---------------------------------------------------------------------------------------------------------------
# The estimate


@dataclass(frozen=True)
class PhaseEstimate:
    """Decode or prefill on one GPU: tokens/s with a band, the roofline it is a share of, and its basis."""

    tokens_per_s: float
    low: float
    high: float
    roofline_tokens_per_s: float
    efficiency: float
    software: str
    calibrated_on: str  # software, its precision, GPUs
    basis: str
    published: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class LlmEstimate:
    """What `estimate --scenario generate` answers for one GPU."""

    gpu: str
    model: str
    precision: str
    batch: int
    context: int
    num_gpus: int
    spec_only: bool
    weights_bytes: float
    kv_cache_bytes: float
    bytes_per_step: float
    memory_bandwidth_bytes_per_s: float
    flops_per_token: float
    peak_flops_per_s: float | None
    peak_kind: str
    decode: PhaseEstimate | None
    prefill: PhaseEstimate | None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def decode_tokens_per_s_per_user(self) -> float | None:
        return None if self.decode is None else self.decode.tokens_per_s / self.batch

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["scenario"] = "generate"
        out["decode_tokens_per_s_per_user"] = self.decode_tokens_per_s_per_user
        out["notes"] = list(self.notes)
        for phase in ("decode", "prefill"):
            if out[phase] is not None:
                out[phase]["published"] = list(out[phase]["published"])
        return out


def check_precision(precision: str) -> str:
    name = precision.strip().lower()
    if name not in WEIGHT_BITS:
        raise BadInput(f"unknown generate precision {precision!r}; expected one of: {', '.join(PRECISIONS)}")
    return name


def _choose(precision: str, metric: str, exclude: frozenset[str], software: str | None,
            workload: str) -> Fit | None:
    """The first calibration of `precision` (or the one of `software`) that has rows after `exclude`."""
    choices = (CALIBRATIONS if metric == "decode_tokens_per_s" else PREFILL_CALIBRATIONS)[precision]
    if software is not None:
        choices = tuple(c for c in choices if c[0] == software)
    for sw, row_precision in choices:
        f = _cached_fit(sw, metric, row_precision, exclude, workload)
        if f is not None:
            return f
    return None


def _published(gpu: str, model: str, metric: str, row_precisions: set[str]) -> tuple[dict[str, Any], ...]:
    from dlbench.reference.inference import inference_for

    return tuple({"value": r.value, "software": r.framework, "precision": r.precision, "mode": r.mode,
                  "source": r.source}
                 for r in inference_for(scenario="generate", workload=None, gpu=gpu, metric=metric, gpu_count=1)
                 if r.workload == model and r.precision in row_precisions)


def _phase(f: Fit, metric: str, roofline_s: float, layers: int, per_step_tokens: int,
           published: tuple[dict[str, Any], ...]) -> PhaseEstimate:
    t = f.time_s(roofline_s, layers)
    mid = per_step_tokens / t
    lo_f, hi_f, how = band(f.software, metric, f.precision)
    gpus = f.own_gpus or f.gpus
    names = f": {', '.join(gpus)}" if len(gpus) <= 3 else ""
    calibrated = f"{SOFTWARE_NAMES[f.software]}, {f.rows}, {len(gpus)} GPU(s){names}" + (
        "" if f.own_gpus else f" (no {f.precision} rows left)")
    basis = (f"roofline {per_step_tokens / roofline_s:,.0f} tokens/s x efficiency {f.efficiency(roofline_s, layers):.2f}"
             f" (fit: time = roofline / {1 / f.inv_e:.2f} + {layers} layers x {f.tau_s * 1e6:.1f} us"
             f"{'' if f.scale == 1.0 else f', x {f.scale:.2f} for {f.precision}'}); band: {how}")
    return PhaseEstimate(mid, mid * lo_f, mid * hi_f, per_step_tokens / roofline_s, roofline_s / t, f.software,
                         calibrated, basis, published)


def estimate_generate(model: str, precision: str, gpu: str, batch: int = 1, context: int = DEFAULT_CONTEXT,
                      spec_only: bool = False, software: str | None = None,
                      exclude: Iterable[str] = (), num_gpus: int = 1) -> LlmEstimate:
    """Decode and prefill tokens/s of `model` at `precision` on `num_gpus` x `gpu` (tensor parallel), `batch`
    sequences at `context` tokens.

    `spec_only` leaves the GPU's own published rows out of every fit; `exclude` leaves more GPUs out (tests)."""
    from dlbench.catalog import resolve
    from dlbench.catalog.models import forward_flops_per_token, get_model, kv_cache_bytes

    shape = get_model(model)
    spec = resolve(gpu)
    precision = check_precision(precision)
    if software is not None and software not in SOFTWARE:
        raise BadInput(f"unknown software {software!r}; calibrated on: {', '.join(SOFTWARE)}")
    if software is not None and not any(sw == software for sw, _ in CALIBRATIONS[precision]):
        raise BadInput(f"{software} has no {precision} calibration; it covers: "
                       f"{', '.join(p for p, c in CALIBRATIONS.items() if any(sw == software for sw, _ in c))}")
    if num_gpus not in (1, 2, 4, 8):
        raise BadInput(f"tensor-parallel estimates cover 1, 2, 4 or 8 GPUs, got {num_gpus}")
    if shape.heads % num_gpus:
        raise BadInput(f"{shape.name}'s {shape.heads} attention heads do not split over {num_gpus} GPUs")
    if not 1 <= batch <= MAX_BATCH:
        raise BadInput(f"batch size must be 1 to {MAX_BATCH}, got {batch}")
    if not 1 <= context <= shape.max_position:
        raise BadInput(f"context must be 1 to {shape.max_position:,} ({shape.name}'s max_position), got {context}")
    exclude = frozenset(exclude) | ({spec.name} if spec_only else frozenset())
    notes: list[str] = []

    weights = weights_read_bytes(shape, WEIGHT_BITS[precision], batch)
    kv = kv_cache_bytes(shape, context, batch)
    step_bytes = weights + kv
    bw = (spec.memory_bandwidth_bytes_per_s or 0.0) * num_gpus
    flops = forward_flops_per_token(shape, context // 2)

    decode = prefill = None
    peak = None
    peak_kind = ""
    fd = _choose(precision, "decode_tokens_per_s", exclude, software, shape.name)
    if bw and fd is not None:
        pub = () if spec_only else _published(spec.name, shape.name, "decode_tokens_per_s", {fd.precision})
        decode = _phase(fd, "decode_tokens_per_s", step_bytes / bw, shape.layers, batch, pub)
        if spec_only:
            own = _published(spec.name, shape.name, "decode_tokens_per_s", {fd.precision})
            decode = PhaseEstimate(**{**asdict(decode), "published": own})
    elif not bw:
        notes.append(f"decode: the catalogue has no memory bandwidth for {spec.name}")
    else:
        notes.append(f"decode: no published rows calibrate {precision}")
    fp = _choose(precision, "prefill_tokens_per_s", exclude, None, shape.name)
    if fp is not None:
        peak, peak_kind = prefill_peak(spec, fp.software, fp.precision)
        peak = peak * num_gpus if peak else peak
    if fp is not None and peak:
        own = _published(spec.name, shape.name, "prefill_tokens_per_s", {fp.precision})
        prefill = _phase(fp, "prefill_tokens_per_s", flops / peak, shape.layers, 1, own)
    elif fp is None:
        notes.append(f"prefill: no published rows calibrate {precision}")
    else:
        notes.append(f"prefill: the catalogue has no {peak_kind} peak for {spec.name}")

    if decode is not None and prefill is not None and batch > 1:
        # Decode of a large batch turns compute bound: it cannot beat the prefill rate (same FLOPs per token).
        if decode.tokens_per_s > prefill.tokens_per_s:
            notes.append(f"decode at batch {batch} is capped by the compute rate (prefill's {prefill.tokens_per_s:,.0f}"
                         " tokens/s): the bandwidth roofline no longer limits it")
            r = prefill.tokens_per_s / decode.tokens_per_s
            decode = PhaseEstimate(**{**asdict(decode), "tokens_per_s": prefill.tokens_per_s,
                                      "low": decode.low * r, "high": decode.high * r,
                                      "efficiency": decode.efficiency * r})
    if batch > 1:
        notes.append("batch > 1 extrapolates: the published decode rows are at batch 1 (weights are read once "
                     "per step for the whole batch, the KV cache once per sequence)")
    if decode is not None and fd is not None and (fd.software, fd.precision) != CALIBRATIONS[precision][0]:
        notes.append(f"decode calibrated on {fd.software} {fd.precision} (the first choice, "
                     f"{' '.join(CALIBRATIONS[precision][0])}, has no rows left)")
    if prefill is not None and fp is not None and (fp.software, fp.precision) != CALIBRATIONS[precision][0]:
        notes.append(f"prefill calibrated on {fp.software} {fp.precision} prompt processing ({peak_kind} peak): "
                     f"no {CALIBRATIONS[precision][0][0]} {CALIBRATIONS[precision][0][1]} prefill rows are published")
    vendor = (getattr(spec, "vendor", "") or "").lower()
    if vendor and vendor != "nvidia":
        notes.append(f"calibrated on NVIDIA GPUs only: {spec.vendor}'s software may reach a different share of "
                     "its roofline")
    if num_gpus > 1:
        notes.append(f"{num_gpus} GPUs, tensor parallel: bandwidth and peak x {num_gpus}, the per-layer cost once "
                     "(it holds the all-reduce); published multi-GPU rows exist for gpt-fast on the A100 only")
    return LlmEstimate(gpu=spec.name, model=shape.name, precision=precision, batch=batch, context=context,
                       num_gpus=num_gpus,
                       spec_only=spec_only, weights_bytes=weights, kv_cache_bytes=kv, bytes_per_step=step_bytes,
                       memory_bandwidth_bytes_per_s=bw or 0.0, flops_per_token=flops, peak_flops_per_s=peak,
                       peak_kind=peak_kind, decode=decode, prefill=prefill, notes=tuple(notes))
