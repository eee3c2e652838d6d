"""Will it fit: GPU memory to serve or fine-tune an LLM shape, term by term, and which GPUs hold it.

Exercise it with `dlbench fit llama-3.1-8b --mode serve --context 8192`. Nothing here imports torch; the model
shapes come from `dlbench.catalog.models` (exact parameter counts), the GPUs from the GPU catalogue.

Every term is bytes, with the arithmetic that gave it (`Term.formula`). The formulas, per mode:

serve (inference, weights cast or quantized, as a runtime serves them)
    weights      = decoder matrices x bits/8 + everything else (embeddings, lm_head, norms, biases, router) x 2 B
                   bits: bf16/fp16 16, fp8 8, int8 8 (per-channel scales, < 0.5% more, left out), int4 4.25
                   (4-bit groups of 128 with an fp16 scale and zero point: 4 + 32/128, GPTQ's and AWQ's default)
    KV cache     = layers x 2 x KV heads x head dim x 2 B x context x batch (16-bit cache)
    activations  = prefill of the whole context at once: batch x context x (2 x hidden + 3 x MLP width x active
                   experts) x 2 B (residual, normed input, gate, up and their product) + batch x vocab x 4 B
                   (fp32 logits of the last position). Chunked prefill (vLLM) needs less.
full-finetune (AdamW, mixed precision, ZeRO's accounting: Rajbhandari et al. 2020, section 3.1)
    weights 2 B + gradients 2 B + fp32 master weights 4 B + AdamW moments 2 x 4 B = 16 B per parameter
    (PyTorch autocast keeps fp32 weights and gradients instead: 4 + 4 + 8, the same 16 B); 8-bit AdamW
    (bitsandbytes, Dettmers et al. 2022) stores the moments in 1 B each: 10 B per parameter.
lora (frozen 16-bit or int8 base; adapters of rank r on every linear projection, as the QLoRA paper does)
    base         = as serve's weights at the precision
    adapters     = r x (in + out) per adapted matrix, kept in fp32 with fp32 gradients and AdamW moments: 16 B each
qlora (Dettmers et al. 2023, arXiv 2305.14314, section 3)
    base         = decoder matrices in NF4 with double quantization: 4 + 8/64 + 32/(64 x 256) = 4.127 bits per
                   weight; embeddings, lm_head and norms stay 16-bit
    adapters     = as lora
activations when training (per token and layer, 16-bit, FlashAttention/SDPA so no context^2 term; after
Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", for a Llama block):
    saved        = 16 B x hidden (two RMSNorms, each: its input upcast to fp32, the normalized and the weighted
                   output in 16 bits) + 2 B x (2 x q width + 2 x KV width) (Q, K, V, attention output) + 4 B x heads
                   (fp32 log-sum-exp) + 4 B x head dim (RoPE cos, sin) + 8 B x MLP width x active experts (gate,
                   up, activation, product): what transformers' Llama layer saves, counted with saved-tensor hooks
                   in tests/test_fit.py
    no checkpointing: layers x saved x batch x context
    checkpointing (one checkpoint per decoder layer, as transformers' gradient_checkpointing_enable()):
                   layers x hidden x 2 B x batch x context (layer inputs) + one layer's saved activations
    plus the head: batch x context x (hidden x 8 B (the final norm) + vocab x 6 B (16-bit logits and their fp32
                   copy for the loss))
runtime overhead (dlbench's assumption, not a measurement): 1 GiB per GPU for the CUDA context, kernels and
    cuBLAS workspace, plus 5% of everything else for the caching allocator's fragmentation and reserve.

Several GPUs: model states are split n ways (tensor parallel for serving; FSDP/ZeRO-3 for training), the KV cache
too as far as the KV heads go (a GPU holds at least one KV head), serving activations n ways, training activations
by the micro-batch each GPU gets; the 1 GiB is per GPU. Serving needs the attention heads to divide by n.

Sources for the reasoning about what a buyer needs: Tim Dettmers' GPU guide (seed 001: "at least 24 GB for work
with transformers"; 8-bit and 4-bit inference), the QLoRA paper (a 65B model fine-tuned on one 48 GB GPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dlbench.catalog.models import (
    ModelShape,
    kv_cache_bytes,
    linear_params,
    param_count,
)
from dlbench.errors import BadInput

GIB = 2**30
GB = 1e9

MODES: tuple[str, ...] = ("serve", "full-finetune", "lora", "qlora")
# Bits per decoder-matrix weight at each precision (see the module docstring for where each comes from).
WEIGHT_BITS: dict[str, float] = {"bf16": 16.0, "fp16": 16.0, "fp8": 8.0, "int8": 8.0, "int4": 4.0 + 32 / 128}
NF4_DOUBLE_QUANT_BITS = 4 + 8 / 64 + 32 / (64 * 256)  # QLoRA paper, section 3: 4.127 bits per parameter
# Precisions each mode accepts: training runs in 16-bit mixed precision; LoRA's frozen base may be 8-bit;
# QLoRA's base is always NF4 (the precision names the compute dtype, or int4 for the base itself).
MODE_PRECISIONS: dict[str, tuple[str, ...]] = {
    "serve": ("bf16", "fp16", "fp8", "int8", "int4"),
    "full-finetune": ("bf16", "fp16"),
    "lora": ("bf16", "fp16", "int8"),
    "qlora": ("bf16", "fp16", "int4"),
}
OPTIMIZERS: dict[str, float] = {"adamw": 8.0, "adamw-8bit": 2.0}  # bytes of moments (m, v) per parameter
MASTER_WEIGHT_BYTES = 4.0
ADAPTER_BYTES = 16.0  # fp32 adapter weight + fp32 gradient + two fp32 AdamW moments
FIXED_OVERHEAD_BYTES = 1 * GIB  # dlbench's assumption: CUDA context, kernels, cuBLAS workspace per GPU
ALLOCATOR_RESERVE = 0.05        # dlbench's assumption: caching-allocator fragmentation and reserve
LOGIT_BYTES_TRAIN = 6.0         # 16-bit logits + fp32 copy for the cross-entropy
GPU_COUNTS: tuple[int, ...] = (1, 2, 4, 8)
DEFAULT_CONTEXT = 4096
DEFAULT_LORA_RANK = 16


def _gb(value: float) -> str:
    return f"{value / GB:,.2f} GB"


def _num(value: float) -> str:
    return f"{value / 1e9:.2f}e9" if value >= 1e9 else f"{value:,.0f}"


@dataclass(frozen=True)
class Term:
    """One part of the memory need: bytes on one GPU, the arithmetic, and how it splits over several GPUs
    (`split`: "model" n ways, "kv" by KV heads, "batch" by micro-batch, "none" the same on every GPU)."""

    name: str
    bytes: float
    formula: str
    split: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "bytes": self.bytes, "formula": self.formula, "split": self.split}


@dataclass(frozen=True)
class MemoryEstimate:
    """The memory needed for one model, mode and setting, on one GPU, split into terms."""

    model: str
    mode: str
    precision: str
    context: int
    batch: int
    terms: tuple[Term, ...]
    kv_heads: int
    heads: int
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def total_bytes(self) -> float:
        return self.per_gpu_bytes(1)

    def term(self, name: str) -> Term:
        return next(t for t in self.terms if t.name == name)

    def _share(self, term: Term, n: int) -> float:
        if term.split == "model":
            return term.bytes / n
        if term.split == "kv":  # a GPU holds whole KV heads: beyond kv_heads GPUs the cache is replicated
            return term.bytes * math.ceil(self.kv_heads / n) / self.kv_heads
        if term.split == "batch":
            return term.bytes * math.ceil(self.batch / n) / self.batch
        return term.bytes

    def per_gpu_bytes(self, n: int) -> float:
        """Bytes each of `n` GPUs needs (the allocator reserve applied to its share, the fixed overhead whole)."""
        dynamic = sum(self._share(t, n) for t in self.terms if t.name not in ("overhead",))
        return dynamic * (1 + ALLOCATOR_RESERVE) + FIXED_OVERHEAD_BYTES

    def splits_over(self, n: int) -> bool:
        """Whether the setting runs on `n` GPUs: serving with tensor parallelism needs heads divisible by n."""
        return n == 1 or self.mode != "serve" or self.heads % n == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "mode": self.mode, "precision": self.precision, "context": self.context,
            "batch": self.batch, "settings": dict(self.settings), "terms": [t.to_dict() for t in self.terms],
            "total_bytes": self.total_bytes,
            "assumptions": {"fixed_overhead_bytes_per_gpu": FIXED_OVERHEAD_BYTES,
                            "allocator_reserve_fraction": ALLOCATOR_RESERVE},
        }


def _weights(shape: ModelShape, bits: float, label: str) -> tuple[float, str]:
    linear = linear_params(shape)
    rest = param_count(shape) - linear
    total = linear * bits / 8 + rest * 2
    return total, (f"{_num(linear)} decoder-matrix weights x {bits:.4g} bits ({label}) + {_num(rest)} other "
                   f"(embeddings, lm_head, norms) x 2 B = {_gb(total)}")


def _adapter_params(shape: ModelShape, rank: int) -> int:
    """LoRA A (in x r) and B (r x out) on q, k, v, o, gate, up, down of every layer (every expert's MLP)."""
    h, q_dim, kv_dim = shape.hidden, shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    attention = (h + q_dim) + 2 * (h + kv_dim) + (q_dim + h)
    mlp = 3 * (h + shape.intermediate) * (shape.experts or 1)
    return shape.layers * rank * (attention + mlp)


def _saved_bytes_per_token_layer(shape: ModelShape) -> int:
    """Bytes one decoder layer saves for backward per token in 16-bit training (module docstring)."""
    q_dim, kv_dim = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    norms = 2 * shape.hidden * (4 + 2 + 2)           # two RMSNorms: fp32 input, normalized, weighted output
    attention = 2 * (2 * q_dim + 2 * kv_dim) + 4 * shape.heads + 2 * 2 * shape.head_dim  # Q, K, V, output;
    # fp32 log-sum-exp per head; RoPE cos and sin
    mlp = 4 * 2 * shape.intermediate * (shape.active_experts or 1)  # gate, up, activation, product
    return norms + attention + mlp


def _training_activations(shape: ModelShape, context: int, batch: int, checkpointing: bool) -> tuple[float, str]:
    tokens = context * batch
    saved = _saved_bytes_per_token_layer(shape)
    logits = tokens * (shape.vocab * LOGIT_BYTES_TRAIN + 8 * shape.hidden)  # and the final norm's 8 B x hidden
    if checkpointing:
        inputs = shape.layers * shape.hidden * 2 * tokens
        one_layer = saved * tokens
        total = inputs + one_layer + logits
        return total, (f"checkpointed: {shape.layers} layer inputs x {shape.hidden} x 2 B x {tokens:,} tokens "
                       f"({_gb(inputs)}) + one layer recomputed: {saved:,} B x {tokens:,} ({_gb(one_layer)}) + "
                       f"final norm and logits {tokens:,} x ({shape.hidden:,} x 8 B + {shape.vocab:,} x "
                       f"{LOGIT_BYTES_TRAIN:g} B) ({_gb(logits)})")
    layers = shape.layers * saved * tokens
    total = layers + logits
    return total, (f"{shape.layers} layers x {saved:,} B saved x {tokens:,} tokens ({_gb(layers)}) + "
                   f"final norm and logits {tokens:,} x ({shape.hidden:,} x 8 B + {shape.vocab:,} x "
                       f"{LOGIT_BYTES_TRAIN:g} B) ({_gb(logits)})")


def _check(mode: str, precision: str, context: int, batch: int, rank: int, optimizer: str) -> None:
    if mode not in MODES:
        raise BadInput(f"unknown mode {mode!r}; expected one of: {', '.join(MODES)}")
    if precision not in WEIGHT_BITS:
        raise BadInput(f"unknown precision {precision!r}; expected one of: {', '.join(WEIGHT_BITS)}")
    if precision not in MODE_PRECISIONS[mode]:
        raise BadInput(f"{mode} does not run at {precision}; it takes: {', '.join(MODE_PRECISIONS[mode])}")
    if context < 1 or batch < 1 or rank < 1:
        raise BadInput(f"context, batch and LoRA rank must be at least 1, got {context}, {batch}, {rank}")
    if optimizer not in OPTIMIZERS:
        raise BadInput(f"unknown optimizer {optimizer!r}; expected one of: {', '.join(OPTIMIZERS)}")


def memory_needed(shape: ModelShape, mode: str = "serve", precision: str = "bf16", context: int = DEFAULT_CONTEXT,
                  batch: int = 1, lora_rank: int = DEFAULT_LORA_RANK, optimizer: str = "adamw",
                  checkpointing: bool = True) -> MemoryEstimate:
    """GPU memory to run `shape` in `mode` at `precision`, `context` tokens per sequence and `batch` sequences.

    The terms and their formulas are in the module docstring; `checkpointing` (gradient checkpointing per layer)
    and `optimizer` apply to the training modes, `lora_rank` to lora and qlora."""
    _check(mode, precision, context, batch, lora_rank, optimizer)
    if context > shape.max_position:
        raise BadInput(f"context {context:,} is longer than {shape.name}'s {shape.max_position:,} positions "
                       "(max_position_embeddings in its config.json)")
    terms: list[Term] = []
    n_params = param_count(shape)
    settings: dict[str, Any] = {}
    if mode == "serve":
        weights, formula = _weights(shape, WEIGHT_BITS[precision], precision)
        terms.append(Term("weights", weights, formula, "model"))
        kv = kv_cache_bytes(shape, context, batch)
        terms.append(Term("kv_cache", kv, f"{shape.layers} layers x 2 x {shape.kv_heads} KV heads x "
                          f"{shape.head_dim} x 2 B x {context:,} tokens x {batch} = {_gb(kv)}", "kv"))
        width = 2 * shape.hidden + 3 * shape.intermediate * (shape.active_experts or 1)
        acts = batch * context * width * 2 + batch * shape.vocab * 4
        terms.append(Term("activations", acts, f"prefill {batch} x {context:,} tokens x {width:,} x 2 B + "
                          f"logits {batch} x {shape.vocab:,} x 4 B = {_gb(acts)}", "model"))
    elif mode == "full-finetune":
        settings.update(optimizer=optimizer, checkpointing=checkpointing)
        terms.append(Term("weights", n_params * 2, f"{_num(n_params)} params x 2 B ({precision}) = "
                          f"{_gb(n_params * 2)}", "model"))
        terms.append(Term("gradients", n_params * 2, f"{_num(n_params)} params x 2 B = {_gb(n_params * 2)}", "model"))
        moments = OPTIMIZERS[optimizer]
        opt = n_params * (MASTER_WEIGHT_BYTES + moments)
        terms.append(Term("optimizer", opt, f"{_num(n_params)} params x ({MASTER_WEIGHT_BYTES:g} B fp32 master + "
                          f"{moments:g} B {optimizer} moments) = {_gb(opt)}", "model"))
    else:
        settings.update(optimizer=optimizer, checkpointing=checkpointing, lora_rank=lora_rank)
        if mode == "qlora":
            weights, formula = _weights(shape, NF4_DOUBLE_QUANT_BITS, "NF4 + double quantization")
        else:
            weights, formula = _weights(shape, WEIGHT_BITS[precision], precision)
        terms.append(Term("weights", weights, "frozen base: " + formula, "model"))
        adapters = _adapter_params(shape, lora_rank)
        state = adapters * (MASTER_WEIGHT_BYTES * 2 + OPTIMIZERS[optimizer])
        terms.append(Term("adapters", state, f"{_num(adapters)} LoRA params (rank {lora_rank}, every linear "
                          f"projection) x (4 B weight + 4 B gradient + {OPTIMIZERS[optimizer]:g} B {optimizer}) "
                          f"= {_gb(state)}", "model"))
    if mode != "serve":
        acts, formula = _training_activations(shape, context, batch, checkpointing)
        terms.append(Term("activations", acts, formula, "batch"))
    dynamic = sum(t.bytes for t in terms)
    overhead = dynamic * ALLOCATOR_RESERVE + FIXED_OVERHEAD_BYTES
    terms.append(Term("overhead", overhead, f"{ALLOCATOR_RESERVE:.0%} allocator reserve ({_gb(dynamic * ALLOCATOR_RESERVE)})"
                      f" + {FIXED_OVERHEAD_BYTES / GIB:g} GiB CUDA context per GPU (dlbench's assumption)", "none"))
    return MemoryEstimate(model=shape.name, mode=mode, precision=precision, context=context, batch=batch,
                          terms=tuple(terms), kv_heads=shape.kv_heads, heads=shape.heads, settings=settings)


@dataclass(frozen=True)
class GpuFit:
    """How one catalogue GPU holds an estimate: the fewest cards of GPU_COUNTS that do (None: more than 8)."""

    gpu: str
    memory_bytes: int
    gpus_needed: int | None
    per_gpu_bytes: float
    margin_bytes: float  # memory left on each card at gpus_needed (at one card when none suffices: negative)

    def to_dict(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "memory_bytes": self.memory_bytes, "gpus_needed": self.gpus_needed,
                "per_gpu_bytes": self.per_gpu_bytes, "margin_bytes": self.margin_bytes}


def fit_on(estimate: MemoryEstimate, memory_bytes: int, counts: tuple[int, ...] = GPU_COUNTS) -> tuple[int | None, float, float]:
    """(fewest cards of `counts` that hold the estimate or None, bytes per card then, margin per card then)."""
    for n in counts:
        if not estimate.splits_over(n):
            continue
        need = estimate.per_gpu_bytes(n)
        if need <= memory_bytes:
            return n, need, memory_bytes - need
    need = estimate.per_gpu_bytes(1)
    return None, need, memory_bytes - need


def gpus_that_hold(estimate: MemoryEstimate, gpus: list[Any] | None = None,
                   counts: tuple[int, ...] = GPU_COUNTS) -> list[GpuFit]:
    """Every catalogue GPU with a known memory size and how many of it hold `estimate`, fewest cards first, then
    the smallest memory (the cheapest sufficient card is usually near the top)."""
    if gpus is None:
        from dlbench.catalog import all_gpus

        gpus = all_gpus()
    fits = []
    for spec in gpus:
        if not spec.memory_bytes:
            continue
        n, need, margin = fit_on(estimate, spec.memory_bytes, counts)
        fits.append(GpuFit(spec.name, spec.memory_bytes, n, need, margin))
    return sorted(fits, key=lambda f: (f.gpus_needed is None, f.gpus_needed or 0, f.memory_bytes, f.gpu))
