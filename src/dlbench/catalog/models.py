"""The LLM shape catalogue: `models.csv` (one row per published model shape, a source per row) and its arithmetic.

Exercise it with `dlbench fit --list` or `dlbench fit llama-3.1-8b`. Importing this module reads nothing and
never imports torch; the data file is read on the first lookup and cached.

    from dlbench.catalog.models import get_model, param_count, kv_cache_bytes
    shape = get_model("Llama-3.1-8B")            # case and spaces are forgiven
    param_count(shape)                           # 8_030_261_248 (the model card says 8.03B)
    kv_cache_bytes(shape, tokens=8192)           # 1 GiB: 32 layers x 2 x 8 KV heads x 128 x 2 B x 8192

What the counts assume, per family (the `transformers` modelling code of each): every model is a pre-norm
decoder with RoPE (no position embedding table), RMSNorm with a weight only, a gated MLP of three matrices
(gate, up, down: SwiGLU, or GeGLU for Gemma 2, the same size), and no biases except where `FAMILIES` says so.
`tests/test_models.py` checks `param_count` against `transformers` models built on the meta device and against
the totals the model cards publish.

The generate scenario builds its random-weight models from `llama_config_kwargs(shape)` (and `tiny(shape)` for
a CPU-sized model with the same proportions), so the benchmark and the advisor read one table.
"""

from __future__ import annotations

import csv
import difflib
import re
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from dlbench.errors import BadInput

# Column order of models.csv (a test checks the file against it).
CSV_COLUMNS: tuple[str, ...] = (
    "name", "family", "hidden", "layers", "heads", "kv_heads", "head_dim", "intermediate", "vocab",
    "tied_embeddings", "max_position", "experts", "active_experts", "source", "notes",
)


@dataclass(frozen=True)
class FamilyTraits:
    """What a model family's code adds to the shape in config.json (read from its transformers modelling file)."""

    qkv_bias: bool          # q/k/v projections carry a bias (Qwen2: `bias=True` on q_proj, k_proj, v_proj)
    qk_norm: bool           # an RMSNorm of head_dim on queries and on keys in every layer (Qwen3)
    norms_per_layer: int    # RMSNorms of width hidden per decoder layer (Gemma 2 has pre- and post-norms: 4)
    transformers_config: str  # the transformers config class of the real model (used by the tests)


FAMILIES: dict[str, FamilyTraits] = {
    "llama": FamilyTraits(qkv_bias=False, qk_norm=False, norms_per_layer=2, transformers_config="LlamaConfig"),
    "mistral": FamilyTraits(qkv_bias=False, qk_norm=False, norms_per_layer=2, transformers_config="MistralConfig"),
    "mixtral": FamilyTraits(qkv_bias=False, qk_norm=False, norms_per_layer=2, transformers_config="MixtralConfig"),
    "qwen2": FamilyTraits(qkv_bias=True, qk_norm=False, norms_per_layer=2, transformers_config="Qwen2Config"),
    "qwen3": FamilyTraits(qkv_bias=False, qk_norm=True, norms_per_layer=2, transformers_config="Qwen3Config"),
    "qwen3-moe": FamilyTraits(qkv_bias=False, qk_norm=True, norms_per_layer=2,
                              transformers_config="Qwen3MoeConfig"),
    "gemma2": FamilyTraits(qkv_bias=False, qk_norm=False, norms_per_layer=4, transformers_config="Gemma2Config"),
}


@dataclass(frozen=True)
class ModelShape:
    """One model's shape as its config.json gives it. `intermediate` is per expert for a mixture of experts."""

    name: str
    family: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int            # resolved: the CSV leaves it empty when it is hidden / heads
    intermediate: int
    vocab: int
    tied_embeddings: bool
    max_position: int
    experts: int | None = None
    active_experts: int | None = None
    source: str = ""
    notes: str = ""

    @property
    def is_moe(self) -> bool:
        return bool(self.experts)

    @property
    def traits(self) -> FamilyTraits:
        return FAMILIES[self.family]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _int(row: dict[str, str], key: str, required: bool = True) -> int | None:
    text = (row.get(key) or "").strip()
    if not text:
        if required:
            raise RuntimeError(f"models.csv row {row.get('name')!r}: {key} is empty")
        return None
    return int(text)


def shape_from_row(row: dict[str, str]) -> ModelShape:
    """A `ModelShape` from one CSV row, checked (a bad packaged row is a bug: RuntimeError)."""
    name = row["name"].strip()
    family = row["family"].strip()
    if family not in FAMILIES:
        raise RuntimeError(f"models.csv row {name!r}: unknown family {family!r}; known: {', '.join(FAMILIES)}")
    hidden, heads, kv_heads = _int(row, "hidden"), _int(row, "heads"), _int(row, "kv_heads")
    head_dim = _int(row, "head_dim", required=False) or hidden // heads
    tied = row["tied_embeddings"].strip().lower()
    if tied not in ("true", "false"):
        raise RuntimeError(f"models.csv row {name!r}: tied_embeddings must be true or false, got {tied!r}")
    experts, active = _int(row, "experts", required=False), _int(row, "active_experts", required=False)
    if (experts is None) != (active is None) or (experts is not None and not 0 < active <= experts):
        raise RuntimeError(f"models.csv row {name!r}: experts and active_experts go together, active <= experts")
    if heads % kv_heads:
        raise RuntimeError(f"models.csv row {name!r}: {heads} heads do not split into {kv_heads} KV groups")
    if not row.get("source", "").strip():
        raise RuntimeError(f"models.csv row {name!r}: no source")
    return ModelShape(
        name=name, family=family, hidden=hidden, layers=_int(row, "layers"), heads=heads, kv_heads=kv_heads,
        head_dim=head_dim, intermediate=_int(row, "intermediate"), vocab=_int(row, "vocab"),
        tied_embeddings=tied == "true", max_position=_int(row, "max_position"), experts=experts,
        active_experts=active, source=row["source"].strip(), notes=(row.get("notes") or "").strip(),
    )


@lru_cache(maxsize=1)
def all_models() -> tuple[ModelShape, ...]:
    """Every model shape in the catalogue, in file order."""
    path = resources.files("dlbench.catalog").joinpath("models.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != CSV_COLUMNS:
            raise RuntimeError(f"models.csv columns are {reader.fieldnames}, expected {list(CSV_COLUMNS)}")
        return tuple(shape_from_row(row) for row in reader)


def _key(name: str) -> str:
    """Lower case, spaces and underscores as dashes, an "meta-" or vendor prefix dropped: "Meta-Llama-3.1-8B"
    and "llama 3.1 8b" both give "llama-3.1-8b"."""
    text = re.sub(r"[\s_]+", "-", name.strip().lower())
    text = text.split("/")[-1]  # "meta-llama/Llama-3.1-8B" (a Hugging Face id)
    return re.sub(r"^(meta-|mistralai-|google-|qwen-)(?=[a-z])", "", text)


def get_model(name: str) -> ModelShape:
    """The catalogue shape called `name` (case, spaces and a Hugging Face owner forgiven), else `BadInput`
    naming the close matches."""
    by_key = {_key(shape.name): shape for shape in all_models()}
    found = by_key.get(_key(name))
    if found is not None:
        return found
    close = difflib.get_close_matches(_key(name), list(by_key), n=4, cutoff=0.6)
    hint = f"close matches: {', '.join(by_key[k].name for k in close)}" if close else "`dlbench fit --list` lists them"
    raise BadInput(f"unknown model {name!r}; {hint}")


# ---------------------------------------------------------------------------------------------------------------
# Parameter counts


def param_breakdown(shape: ModelShape, family: str | None = None) -> dict[str, int]:
    """Parameters by part: embedding, attention, mlp (every expert), router, norms, lm_head (0 when tied).

    `family` counts the same shape as another family's code would build it: `family="llama"` gives what
    `LlamaForCausalLM(LlamaConfig(**llama_config_kwargs(shape)))` holds.
    """
    traits = FAMILIES[family or shape.family]
    h, L, hd = shape.hidden, shape.layers, shape.head_dim
    q_dim, kv_dim = shape.heads * hd, shape.kv_heads * hd
    attention = h * q_dim + 2 * h * kv_dim + q_dim * h  # q, k, v, o projections (GQA: k and v are narrower)
    if traits.qkv_bias:
        attention += q_dim + 2 * kv_dim
    if traits.qk_norm:
        attention += 2 * hd
    n_experts = shape.experts or 1
    mlp = 3 * h * shape.intermediate * n_experts  # gate, up and down of every expert
    router = h * shape.experts if shape.is_moe else 0
    return {
        "embedding": shape.vocab * h,
        "attention": L * attention,
        "mlp": L * mlp,
        "router": L * router,
        "norms": L * traits.norms_per_layer * h + h,  # per-layer norms and the final norm
        "lm_head": 0 if shape.tied_embeddings else shape.vocab * h,
    }


def param_count(shape: ModelShape) -> int:
    """Every parameter of the model (a mixture of experts counts every expert)."""
    return sum(param_breakdown(shape).values())


def active_param_count(shape: ModelShape) -> int:
    """Parameters one token passes through: for a mixture of experts, `active_experts` of the MLP experts (the
    figure Mixtral's paper gives as 12.9B of 46.7B); for a dense model, `param_count`."""
    parts = param_breakdown(shape)
    if shape.is_moe:
        parts["mlp"] = parts["mlp"] * shape.active_experts // shape.experts
    return sum(parts.values())


def linear_params(shape: ModelShape) -> int:
    """Weights of the decoder layers' linear projections (attention and MLP matrices, no biases): the
    parameters that int8/int4/fp8 weight quantization converts. Embeddings, lm_head, norms, biases and the
    router stay in 16 bits (see `dlbench.analysis.fit`)."""
    h, hd = shape.hidden, shape.head_dim
    q_dim, kv_dim = shape.heads * hd, shape.kv_heads * hd
    per_layer = 2 * h * q_dim + 2 * h * kv_dim + 3 * h * shape.intermediate * (shape.experts or 1)
    return shape.layers * per_layer


# ---------------------------------------------------------------------------------------------------------------
# KV cache and FLOPs


def kv_cache_bytes(shape: ModelShape, tokens: int, batch: int = 1, bytes_per_elem: float = 2.0) -> float:
    """Bytes of the key/value cache holding `tokens` positions for `batch` sequences:
    layers x 2 (K and V) x KV heads x head dim x bytes per element x tokens x batch.

    An upper bound for sliding-window models (Mistral 7B v0.1, Gemma 2's local layers), which a runtime may cap
    at the window; dlbench counts every position, as transformers' default dynamic cache does."""
    return shape.layers * 2 * shape.kv_heads * shape.head_dim * bytes_per_elem * tokens * batch


def forward_flops_per_token(shape: ModelShape, context: int = 0) -> float:
    """FLOPs of one token's forward pass attending to `context` earlier positions:
    2 x (active matrix parameters, lm_head included even when tied) + 4 x layers x heads x head dim x context
    (QK^T and the weighted sum of V). Embedding lookups, norms and softmax are left out, as in Kaplan et al.
    (2020, Table 1) and the PaLM paper's MFU (Chowdhery et al. 2022, appendix B). Training is 3x this."""
    parts = param_breakdown(shape)
    mlp = parts["mlp"] * (shape.active_experts or 1) // (shape.experts or 1)
    matrix_params = parts["attention"] + mlp + parts["router"] + shape.vocab * shape.hidden
    attention = 4 * shape.layers * shape.heads * shape.head_dim * context
    return 2.0 * matrix_params + attention


# ---------------------------------------------------------------------------------------------------------------
# Building models for the generate scenario


def llama_config_kwargs(shape: ModelShape) -> dict[str, Any]:
    """Keyword arguments of `transformers.LlamaConfig` that build this shape with random weights.

    A Llama build of another dense family keeps every matrix but drops what Llama lacks (Qwen2's q/k/v biases,
    Qwen3's q/k norms, Gemma 2's extra norms and GeGLU): `param_breakdown(shape, family="llama")` counts it.
    A mixture of experts has no Llama build (BadInput)."""
    if shape.is_moe:
        raise BadInput(f"{shape.name} is a mixture of experts ({shape.experts} experts); LlamaConfig builds dense "
                       "models only")
    return {
        "vocab_size": shape.vocab,
        "hidden_size": shape.hidden,
        "intermediate_size": shape.intermediate,
        "num_hidden_layers": shape.layers,
        "num_attention_heads": shape.heads,
        "num_key_value_heads": shape.kv_heads,
        "head_dim": shape.head_dim,
        "max_position_embeddings": shape.max_position,
        "tie_word_embeddings": shape.tied_embeddings,
        "attention_bias": False,
        "mlp_bias": False,
    }


def _round_up(value: float, multiple: int) -> int:
    return max(multiple, int(-(-round(value) // multiple) * multiple))


def tiny(shape: ModelShape, layers: int = 2, head_dim: int = 16, vocab: int = 512) -> ModelShape:
    """A CPU-sized model with the proportions of `shape`: the same query heads per KV head (GQA group), the same
    MLP width / hidden ratio and head-width / hidden ratio, tied embeddings as the original; at most 2 KV heads,
    `layers` layers, `head_dim`-wide heads and a `vocab`-token vocabulary. Runs a forward pass in milliseconds."""
    group = shape.heads // shape.kv_heads
    kv_heads = min(shape.kv_heads, 2)
    heads = kv_heads * group
    attention_width = heads * head_dim
    hidden = _round_up(attention_width * shape.hidden / (shape.heads * shape.head_dim), 8)
    intermediate = _round_up(hidden * shape.intermediate / shape.hidden, 8)
    experts = min(shape.experts, 4) if shape.experts else None
    active = min(shape.active_experts, experts, 2) if experts else None
    return replace(
        shape, name=f"{shape.name}-tiny", hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads,
        head_dim=head_dim, intermediate=intermediate, vocab=vocab, max_position=min(shape.max_position, 2048),
        experts=experts, active_experts=active,
        notes=f"tiny flavour of {shape.name}: {group} query heads per KV head and MLP/hidden "
              f"{shape.intermediate / shape.hidden:.2f} kept",
    )
