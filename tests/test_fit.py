"""Will it fit: analysis/fit.py's terms and GPU counts, and `dlbench fit` (python -m pytest tests/test_fit.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tests.cli_helpers import cli

from dlbench.analysis import fit
from dlbench.analysis.fit import (
    FIXED_OVERHEAD_BYTES,
    MODES,
    NF4_DOUBLE_QUANT_BITS,
    fit_on,
    gpus_that_hold,
    memory_needed,
)
from dlbench.catalog import resolve
from dlbench.catalog.models import all_models, get_model, kv_cache_bytes, linear_params, param_count
from dlbench.errors import BadInput

GIB = 2**30
LLAMA_8B = get_model("llama-3.1-8b")


def _gpu(name: str) -> int:
    return resolve(name).memory_bytes


# --- the "done when" figures ----------------------------------------------------------------------------

def test_serve_llama_8b_at_8k_context():
    est = memory_needed(LLAMA_8B, "serve", "bf16", context=8192)
    assert est.term("weights").bytes == pytest.approx(16.06e9, rel=0.001)  # "about 16 GB of weights"
    assert est.term("kv_cache").bytes == GIB                               # "about 1 GiB of KV cache"
    assert fit_on(est, _gpu("RTX 4090"))[0] == 1                           # a 24 GB RTX 4090 holds it


def test_full_finetune_llama_8b_needs_more_than_one_80gb_gpu():
    est = memory_needed(LLAMA_8B, "full-finetune", "bf16", context=8192)
    assert est.total_bytes > 80 * GIB
    n, per_gpu, margin = fit_on(est, _gpu("H100 SXM5 80GB"))
    assert n is not None and n > 1 and margin >= 0 and per_gpu <= 80 * GIB
    # 16 bytes per parameter of model states (ZeRO's accounting)
    states = sum(est.term(t).bytes for t in ("weights", "gradients", "optimizer"))
    assert states == 16 * param_count(LLAMA_8B)


def test_qlora_llama_8b_fits_in_24_gb():
    est = memory_needed(LLAMA_8B, "qlora", "bf16", context=8192)
    assert fit_on(est, _gpu("RTX 4090"))[0] == 1
    assert est.total_bytes < 24 * GIB


# --- the terms --------------------------------------------------------------------------------------------------

def test_weights_at_each_precision():
    rest = param_count(LLAMA_8B) - linear_params(LLAMA_8B)
    for precision, bits in (("bf16", 16), ("fp16", 16), ("fp8", 8), ("int8", 8), ("int4", 4.25)):
        weights = memory_needed(LLAMA_8B, "serve", precision).term("weights").bytes
        assert weights == pytest.approx(linear_params(LLAMA_8B) * bits / 8 + rest * 2)
    qlora = memory_needed(LLAMA_8B, "qlora").term("weights").bytes
    assert NF4_DOUBLE_QUANT_BITS == pytest.approx(4.127, abs=0.001)  # QLoRA paper, section 3
    assert qlora == pytest.approx(linear_params(LLAMA_8B) * NF4_DOUBLE_QUANT_BITS / 8 + rest * 2)


def test_kv_cache_grows_with_context_and_batch():
    one = memory_needed(LLAMA_8B, "serve", context=4096, batch=1).term("kv_cache").bytes
    assert memory_needed(LLAMA_8B, "serve", context=8192, batch=4).term("kv_cache").bytes == 8 * one
    assert one == kv_cache_bytes(LLAMA_8B, 4096)


def test_eight_bit_adam_saves_six_bytes_per_parameter():
    full = memory_needed(LLAMA_8B, "full-finetune").term("optimizer").bytes
    small = memory_needed(LLAMA_8B, "full-finetune", optimizer="adamw-8bit").term("optimizer").bytes
    assert full - small == 6 * param_count(LLAMA_8B)


def test_checkpointing_cuts_activations():
    with_cp = memory_needed(LLAMA_8B, "lora", context=4096, checkpointing=True).term("activations").bytes
    without = memory_needed(LLAMA_8B, "lora", context=4096, checkpointing=False).term("activations").bytes
    assert without > 5 * with_cp - 5 * 4096 * LLAMA_8B.vocab * 6  # the logits are the same in both


def test_lora_adapters_are_small_and_scale_with_rank():
    r16 = memory_needed(LLAMA_8B, "lora", lora_rank=16).term("adapters").bytes
    r64 = memory_needed(LLAMA_8B, "lora", lora_rank=64).term("adapters").bytes
    assert r64 == 4 * r16
    assert r16 / 16 < 0.01 * param_count(LLAMA_8B)  # adapters are under 1% of the parameters


def test_overhead_is_fixed_plus_reserve():
    est = memory_needed(LLAMA_8B, "serve")
    dynamic = sum(t.bytes for t in est.terms if t.name != "overhead")
    assert est.term("overhead").bytes == pytest.approx(dynamic * fit.ALLOCATOR_RESERVE + FIXED_OVERHEAD_BYTES)
    assert est.total_bytes == pytest.approx(sum(t.bytes for t in est.terms))


def test_every_model_and_mode_gives_a_positive_total():
    for shape in all_models():
        for mode in MODES:
            assert memory_needed(shape, mode).total_bytes > 0


# --- several GPUs -----------------------------------------------------------------------------------------------

def test_split_over_gpus():
    est = memory_needed(get_model("llama-3.1-70b"), "serve", context=8192)
    one, two = est.per_gpu_bytes(1), est.per_gpu_bytes(2)
    assert two < one and two > one / 2  # the fixed overhead is per GPU
    # 8 KV heads: past 8 GPUs each still holds one whole KV head
    kv = est.term("kv_cache")
    assert est._share(kv, 8) == kv.bytes / 8 and est._share(kv, 16) == kv.bytes / 8


def test_serving_needs_heads_divisible_by_gpu_count():
    est = memory_needed(get_model("qwen2.5-7b"), "serve")  # 28 heads
    assert est.splits_over(4) and not est.splits_over(8)


def test_gpus_that_hold_sorted_and_complete():
    est = memory_needed(get_model("llama-3.1-70b"), "serve", context=8192)
    fits = gpus_that_hold(est)
    assert fits and all(f.gpus_needed is None or f.margin_bytes >= 0 for f in fits)
    needed = [f.gpus_needed for f in fits if f.gpus_needed is not None]
    assert needed == sorted(needed) and needed[0] == 1  # a 141 GB H200 or a 192 GB MI300X holds 70B in bf16
    by_name = {f.gpu: f for f in fits}
    assert by_name["RTX 4090"].gpus_needed == 8


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "train"}, "unknown mode"),
    ({"precision": "fp4"}, "unknown precision"),
    ({"mode": "full-finetune", "precision": "int4"}, "full-finetune does not run at int4"),
    ({"mode": "lora", "precision": "int4"}, "lora does not run at int4"),
    ({"context": 0}, "at least 1"),
    ({"optimizer": "sgd"}, "unknown optimizer"),
    ({"context": 200_000}, "longer than llama-3.1-8b's 131,072 positions"),
])
def test_bad_settings(kwargs, message):
    with pytest.raises(BadInput, match=message):
        memory_needed(LLAMA_8B, **kwargs)


# --- the command ------------------------------------------------------------------------------------------------

def test_fit_table(capsys):
    code, out, err = cli(capsys, "fit", "llama-3.1-8b", "--context", "8192")
    assert code == 0, err
    for word in ("weights", "kv_cache", "activations", "overhead", "Total", "RTX 4090"):
        assert word in out
    assert "32 layers x 2 x 8 KV heads x 128 x 2 B x 8,192 tokens" in out


def test_fit_json_has_every_term(capsys):
    code, out, _ = cli(capsys, "fit", "-w", "llama-3.1-8b", "--task", "qlora", "--context", "8192", "--json")
    assert code == 0
    data = json.loads(out)
    assert {t["name"] for t in data["estimate"]["terms"]} == {"weights", "adapters", "activations", "overhead"}
    fits = {g["gpu"]: g for g in data["gpus"]}
    assert fits["RTX 4090"]["gpus_needed"] == 1


def test_fit_one_gpu_yes_no(capsys):
    code, out, _ = cli(capsys, "fit", "llama-3.1-8b", "--mode", "serve", "--context", "8192", "--gpu", "RTX 4090")
    assert code == 0 and "yes" in out.lower() and "RTX 4090" in out
    code, out, _ = cli(capsys, "fit", "llama-3.1-8b", "--mode", "full-finetune", "--gpu", "H100 SXM5 80GB")
    assert code == 0 and "no" in out.lower() and "2 x H100 SXM5 80GB" in out
    code, out, _ = cli(capsys, "fit", "llama-3.1-8b", "--mode", "full-finetune", "--gpu", "RTX 4090", "--json")
    data = json.loads(out)
    assert data["gpu"]["fits_on_one"] is False and data["gpu"]["gpus_needed"] == 8  # FSDP over 8 cards


def test_fit_list(capsys):
    code, out, _ = cli(capsys, "fit", "--list")
    assert code == 0 and "llama-3.1-8b" in out and "mixtral-8x7b" in out
    code, out, _ = cli(capsys, "fit", "--list", "--json")
    assert {m["name"] for m in json.loads(out)} == {m.name for m in all_models()}


@pytest.mark.parametrize("args, message", [
    (["fit", "llama-9"], "unknown model"),
    (["fit", "llama-3.1-8b", "--gpu", "RTX 9999"], "unknown GPU"),
    (["fit", "llama-3.1-8b", "--gpu", ""], "unknown GPU"),
    (["fit", ""], "name a model"),
    (["fit", "llama-3.1-8b", "--precision", "fp4"], "unknown precision"),
    (["fit", "llama-3.1-8b", "--mode", "full-finetune", "--precision", "int4"], "does not run at int4"),
    (["fit"], "name a model"),
    (["fit", "llama-3.1-8b", "-w", "llama-2-7b"], "one model"),
])
def test_fit_bad_input(capsys, args, message):
    code, out, err = cli(capsys, *args)
    assert code == 2 and err.startswith("error:") and message in err and "Traceback" not in err


def test_fit_does_not_import_torch():
    code = ("import sys\nfrom dlbench.cli.app import main\n"
            "for args in (['fit', 'llama-3.1-8b', '--json'], ['fit', '--list'],\n"
            "             ['fit', 'mixtral-8x7b', '--mode', 'qlora', '--gpu', 'RTX 4090']):\n"
            "    try:\n        main(args)\n    except SystemExit as e:\n        assert not e.code, (args, e.code)\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


# --- estimate against what transformers holds on the CPU (tiny shapes, bf16) ------------------------------------

def _tiny_llama(name: str):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from dlbench.catalog.models import llama_config_kwargs, tiny

    shape = tiny(get_model(name))
    config = transformers.LlamaConfig(**llama_config_kwargs(shape), attn_implementation="sdpa")
    return torch, shape, transformers.LlamaForCausalLM(config).to(torch.bfloat16)


@pytest.mark.parametrize("name", ["llama-3.1-8b", "llama-2-7b"])
def test_weights_and_kv_cache_equal_what_transformers_holds(name):
    torch, shape, model = _tiny_llama(name)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    assert memory_needed(shape, "serve", "bf16", context=64).term("weights").bytes == weights
    with torch.inference_mode():
        cache = model(torch.randint(0, shape.vocab, (2, 64)), use_cache=True).past_key_values
    held = sum(layer.keys.numel() * layer.keys.element_size() + layer.values.numel() * layer.values.element_size()
               for layer in cache.layers)
    assert kv_cache_bytes(shape, 64, batch=2) == held


@pytest.mark.parametrize("name", ["llama-3.1-8b", "llama-2-7b"])
def test_training_activations_match_the_saved_tensors(name):
    """The no-checkpointing activation term against every tensor autograd saves (parameters left out), counted
    with saved-tensor hooks; the estimate's logits are 6 B per value where autograd keeps the fp32 copy (4 B)."""
    torch, shape, model = _tiny_llama(name)
    parameters = {p.data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor):
        if tensor.data_ptr() not in parameters:
            saved.setdefault(tensor.data_ptr(), tensor.numel() * tensor.element_size())
        return tensor

    tokens = 64
    ids = torch.randint(0, shape.vocab, (1, tokens))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        model(ids, labels=ids)
    est = memory_needed(shape, "full-finetune", context=tokens, checkpointing=False).term("activations").bytes
    est_fp32_logits = est - tokens * shape.vocab * (fit.LOGIT_BYTES_TRAIN - 4)
    assert est_fp32_logits == pytest.approx(sum(saved.values()), rel=0.02)
