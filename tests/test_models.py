"""The LLM shape catalogue (catalog/models.csv + catalog/models.py): data, lookup, parameter counts, KV cache,
FLOPs, the Llama build and the tiny flavour (python -m pytest tests/test_models.py)."""

from __future__ import annotations

import csv
import subprocess
import sys
from dataclasses import replace
from importlib import resources

import pytest

from dlbench.catalog.models import (
    CSV_COLUMNS,
    FAMILIES,
    active_param_count,
    all_models,
    forward_flops_per_token,
    get_model,
    kv_cache_bytes,
    linear_params,
    llama_config_kwargs,
    param_breakdown,
    param_count,
    tiny,
)
from dlbench.errors import BadInput

GIB = 2**30

# The shapes issues 13 and 14 name, with the figures issue 13 quotes: (hidden, layers, heads, KV heads,
# intermediate, vocab, tied).
ISSUE_SHAPES = {
    "llama-3.2-1b": (2048, 16, 32, 8, 8192, 128256, True),
    "llama-3.1-8b": (4096, 32, 32, 8, 14336, 128256, False),
    "llama-2-7b": (4096, 32, 32, 32, 11008, 32000, False),
}
REQUIRED = [
    "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "llama-3.1-70b",
    "mistral-7b-v0.1", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b", "gemma-2-9b", "mixtral-8x7b",
]

# Totals the model cards and papers publish (billions), to the digits they give.
PUBLISHED_PARAMS_B = {
    "llama-3.1-8b": 8.03,     # Llama 3.1 model card ("8.03B" on the Hugging Face page)
    "llama-3.1-70b": 70.6,    # Llama 3.1 model card
    "llama-3.2-1b": 1.23,     # Llama 3.2 model card (1.23B)
    "llama-3.2-3b": 3.21,     # Llama 3.2 model card (3.21B)
    "llama-2-7b": 6.74,       # Llama 2 paper, Touvron et al. 2023 (6.74B in the Hugging Face card)
    "llama-2-13b": 13.0,      # Llama 2 model card
    "llama-2-70b": 69.0,      # Llama 2 model card (68.98B)
    "mistral-7b-v0.1": 7.24,  # Mistral 7B announcement: 7.3B; the safetensors total is 7.24B
    "mixtral-8x7b": 46.7,     # Mixtral paper, arXiv 2401.04088
    "qwen2.5-7b": 7.61,       # Qwen2.5-7B model card
    "qwen2.5-14b": 14.7,      # Qwen2.5-14B model card
    "qwen2.5-32b": 32.5,      # Qwen2.5-32B model card
    "qwen2.5-72b": 72.7,      # Qwen2.5-72B model card
    "qwen2.5-3b": 3.09,       # Qwen2.5-3B model card
    "gemma-2-9b": 9.24,       # Gemma 2 model page (9.24B)
    "qwen3-30b-a3b": 30.5,    # Qwen3-30B-A3B model card
}
PUBLISHED_ACTIVE_B = {"mixtral-8x7b": 12.9, "qwen3-30b-a3b": 3.3}  # Mixtral paper; Qwen3-30B-A3B card


def test_csv_columns_and_rows_are_complete():
    path = resources.files("dlbench.catalog").joinpath("models.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames) == CSV_COLUMNS
        rows = list(reader)
    names = [row["name"] for row in rows]
    assert len(names) == len(set(names)), "duplicate model names"
    for row in rows:
        assert row["source"].startswith(("https://huggingface.co/", "https://arxiv.org/")), row["name"]
        assert row["family"] in FAMILIES
    assert set(REQUIRED) <= set(names)


@pytest.mark.parametrize("name, figures", ISSUE_SHAPES.items())
def test_issue_shapes_have_the_quoted_figures(name, figures):
    s = get_model(name)
    assert (s.hidden, s.layers, s.heads, s.kv_heads, s.intermediate, s.vocab, s.tied_embeddings) == figures


def test_moe_rows():
    mixtral = get_model("mixtral-8x7b")
    assert (mixtral.experts, mixtral.active_experts) == (8, 2) and mixtral.is_moe
    assert not get_model("llama-3.1-8b").is_moe


def test_head_dim_is_resolved():
    assert get_model("llama-3.1-8b").head_dim == 128  # empty in the CSV: hidden / heads
    assert get_model("gemma-2-9b").head_dim == 256    # given: 3584 / 16 would be 224
    assert get_model("qwen3-32b").head_dim == 128     # given: 5120 / 64 would be 80


def test_lookup_forgives_case_spaces_and_owner():
    assert get_model("Llama-3.1-8B").name == "llama-3.1-8b"
    assert get_model("llama 3.1 8b").name == "llama-3.1-8b"
    assert get_model("meta-llama/Llama-3.1-8B").name == "llama-3.1-8b"
    assert get_model("Qwen/Qwen2.5-7B").name == "qwen2.5-7b"
    assert get_model("mistralai/Mixtral-8x7B").name == "mixtral-8x7b"


def test_unknown_model_names_close_matches():
    with pytest.raises(BadInput) as err:
        get_model("llama-3.1-9b")
    assert "unknown model 'llama-3.1-9b'" in err.value.message and "llama-3.1-8b" in err.value.message
    with pytest.raises(BadInput, match="dlbench fit --list"):
        get_model("zzzz")


@pytest.mark.parametrize("name", PUBLISHED_PARAMS_B)
def test_param_count_matches_published_totals(name):
    published = PUBLISHED_PARAMS_B[name] * 1e9
    assert param_count(get_model(name)) == pytest.approx(published, rel=0.01)


def test_exact_counts_of_two_well_known_models():
    assert param_count(get_model("llama-3.1-8b")) == 8_030_261_248
    assert param_count(get_model("llama-2-7b")) == 6_738_415_616
    parts = param_breakdown(get_model("llama-3.2-1b"))
    assert parts["lm_head"] == 0 and parts["embedding"] == 128256 * 2048  # tied


@pytest.mark.parametrize("name", PUBLISHED_ACTIVE_B)
def test_active_params_of_mixtures_of_experts(name):
    shape = get_model(name)
    assert active_param_count(shape) == pytest.approx(PUBLISHED_ACTIVE_B[name] * 1e9, rel=0.02)
    assert active_param_count(shape) < param_count(shape)
    dense = get_model("llama-3.1-8b")
    assert active_param_count(dense) == param_count(dense)


def test_param_count_equals_transformers_on_the_meta_device():
    """Every row built by its own transformers class (weights on the meta device: nothing allocated)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    for shape in all_models():
        config_class = getattr(transformers, shape.traits.transformers_config, None)
        if config_class is None:
            continue  # an older transformers without this family
        dense = replace(shape, experts=None, active_experts=None)
        kwargs = {k: v for k, v in llama_config_kwargs(dense).items() if k not in ("attention_bias", "mlp_bias")}
        if shape.family == "mixtral":
            kwargs.update(num_local_experts=shape.experts, num_experts_per_tok=shape.active_experts)
        if shape.family == "qwen3-moe":
            kwargs.update(num_experts=shape.experts, num_experts_per_tok=shape.active_experts,
                          moe_intermediate_size=shape.intermediate)
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config_class(**kwargs))
        assert sum(p.numel() for p in model.parameters()) == param_count(shape), shape.name


def test_llama_build_of_every_dense_shape_has_the_counted_parameters():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    for name in ("llama-3.1-8b", "llama-3.2-1b", "qwen2.5-7b", "gemma-2-9b", "qwen3-32b"):
        shape = get_model(name)
        with torch.device("meta"):
            model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**llama_config_kwargs(shape)))
        assert sum(p.numel() for p in model.parameters()) == sum(param_breakdown(shape, family="llama").values())


def test_no_llama_build_for_a_mixture_of_experts():
    with pytest.raises(BadInput, match="mixture of experts"):
        llama_config_kwargs(get_model("mixtral-8x7b"))


def test_kv_cache_bytes():
    # 32 layers x 2 x 8 KV heads x 128 x 2 bytes x 8192 tokens = 1 GiB exactly
    assert kv_cache_bytes(get_model("llama-3.1-8b"), tokens=8192) == GIB
    # Llama 2 7B has no GQA: 4x the KV heads, 4x the cache
    assert kv_cache_bytes(get_model("llama-2-7b"), tokens=8192) == 4 * GIB
    assert kv_cache_bytes(get_model("llama-3.1-8b"), tokens=1024, batch=4, bytes_per_elem=1) == GIB / 4


def test_forward_flops_per_token():
    shape = get_model("llama-3.1-8b")
    embedding = shape.vocab * shape.hidden
    # no context: 2 x every matrix parameter (the tied/untied lm_head is a matmul, the embedding is a lookup)
    assert forward_flops_per_token(shape) == 2 * (param_count(shape) - embedding - param_breakdown(shape)["norms"])
    assert forward_flops_per_token(shape, context=1000) - forward_flops_per_token(shape) == 4 * 32 * 32 * 128 * 1000
    mixtral = get_model("mixtral-8x7b")
    lookups = mixtral.vocab * mixtral.hidden + param_breakdown(mixtral)["norms"]
    assert forward_flops_per_token(mixtral) == 2 * (active_param_count(mixtral) - lookups)  # 2 of 8 experts


def test_linear_params_are_the_decoder_matrices():
    shape = get_model("llama-3.1-8b")
    parts = param_breakdown(shape)
    assert linear_params(shape) == parts["attention"] + parts["mlp"]  # Llama: no biases, no qk norms
    qwen = get_model("qwen2.5-7b")
    assert linear_params(qwen) < param_breakdown(qwen)["attention"] + param_breakdown(qwen)["mlp"]  # biases


@pytest.mark.parametrize("name", ["llama-3.1-8b", "llama-2-7b", "gemma-2-9b", "qwen2.5-7b", "mixtral-8x7b"])
def test_tiny_keeps_the_proportions(name):
    shape = get_model(name)
    small = tiny(shape)
    assert small.name == f"{name}-tiny" and small.layers == 2 and small.vocab == 512
    assert small.heads // small.kv_heads == shape.heads // shape.kv_heads  # GQA group kept
    assert small.intermediate / small.hidden == pytest.approx(shape.intermediate / shape.hidden, rel=0.15)
    assert small.tied_embeddings == shape.tied_embeddings
    assert param_count(small) < 3e6


def test_tiny_llama_runs_a_forward_pass_on_cpu():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    shape = tiny(get_model("llama-3.1-8b"))
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**llama_config_kwargs(shape))).eval()
    assert sum(p.numel() for p in model.parameters()) == param_count(shape)
    with torch.inference_mode():
        logits = model(torch.randint(0, shape.vocab, (1, 8))).logits
    assert logits.shape == (1, 8, shape.vocab)


def test_module_does_not_import_torch():
    code = ("import sys\nfrom dlbench.catalog.models import get_model, param_count\n"
            "param_count(get_model('llama-3.1-8b'))\nassert 'torch' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
