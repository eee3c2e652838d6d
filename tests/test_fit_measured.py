"""Measured beside estimated in `dlbench fit --task serve` (analysis/fit_measured.py): a stored generate run of the
model and precision is shown next to the estimate; without one the answer is unchanged
(python -m pytest tests/test_fit_measured.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from tests.cli_helpers import cli, store_doc

from dlbench.analysis.fit import FIXED_OVERHEAD_BYTES, memory_needed
from dlbench.analysis.fit_measured import closest_measured
from dlbench.catalog.models import get_model, param_count
from scenario_docs import document, make_generate_result

GIB = 2**30
LLAMA_1B = get_model("llama-3.2-1b")
# transformers' rotary buffers inv_freq and original_inv_freq, head_dim / 2 values each, made in fp32 and cast to
# bf16 with the weights (`apply_inference_precision`): a real CPU run of the generate scenario stored
# weight_bytes 2,471,628,928 for llama-3.2-1b at bf16, this figure.
ROPE_BUFFER = 2 * LLAMA_1B.head_dim // 2 * 2
WEIGHTS_1B = param_count(LLAMA_1B) * 2 + ROPE_BUFFER  # what the generate scenario stores as weight_bytes at bf16


def _generate(prompt_len: int = 512, new_tokens: int = 128, batch_size: int = 1, precision: str = "bf16",
              flavour: str = "full", peak: int | None = 3_100_000_000, device: str = "cuda:0",
              weight_bytes: int = WEIGHTS_1B) -> dict:
    result = make_generate_result("llama-3.2-1b", precision, prompt_len=prompt_len, new_tokens=new_tokens,
                                  batch_size=batch_size, flavour=flavour, device=device)
    result.update(weight_bytes=weight_bytes, decode_weight_bytes=weight_bytes, peak_memory_bytes=peak,
                  peak_reserved_bytes=None if peak is None else peak + 64 * 2**20,
                  device_name="NVIDIA H100 80GB HBM3" if device.startswith("cuda") else None)
    if peak is None:
        result["metrics"].pop("peak_memory_bytes")
    else:
        result["metrics"]["peak_memory_bytes"]["value"] = peak
    return result


def test_fit_without_stored_runs_is_unchanged(capsys):
    code, before, _ = cli(capsys, "fit", "llama-3.2-1b", "--context", "640")
    assert code == 0 and "Measured" not in before
    code, out, _ = cli(capsys, "fit", "llama-3.2-1b", "--context", "640", "--json")
    assert "measured" not in json.loads(out)
    store_doc(document([_generate(precision="fp16")]))  # another precision: not this question's
    code, after, _ = cli(capsys, "fit", "llama-3.2-1b", "--context", "640")
    assert code == 0 and after == before


def test_fit_shows_the_stored_run_beside_the_estimate(capsys):
    doc = store_doc(document([_generate()]))
    code, out, err = cli(capsys, "fit", "llama-3.2-1b", "--task", "serve", "--context", "640")
    assert code == 0, err
    estimate = memory_needed(LLAMA_1B, "serve", "bf16", context=640)
    assert f"run {doc['run_id'][:12]}" in out and "NVIDIA H100 80GB HBM3" in out
    assert f"weights: measured {WEIGHTS_1B / GIB:,.2f} GiB, estimated " \
           f"{estimate.term('weights').bytes / GIB:,.2f} GiB (+128 B, x1.00)" in out
    assert f"peak memory: measured {3.1e9 / GIB:,.2f} GiB allocated" in out
    assert f"estimated {estimate.total_bytes / GIB:,.2f} GiB total" in out
    assert "closest stored shape" not in out  # the same batch and context

    code, out, _ = cli(capsys, "fit", "llama-3.2-1b", "--context", "640", "--json")
    measured = json.loads(out)["measured"]
    assert measured["run_id"] == doc["run_id"] and measured["gpu"] == "NVIDIA H100 80GB HBM3"
    assert measured["weight_bytes"] == WEIGHTS_1B
    assert measured["estimated_weight_bytes"] == param_count(LLAMA_1B) * 2
    assert measured["peak_memory_bytes"] == 3.1e9 and measured["same_shape"] is True
    assert measured["estimated_total_bytes"] == estimate.total_bytes
    assert measured["peak_ratio"] == pytest.approx(3.1e9 / (estimate.total_bytes - FIXED_OVERHEAD_BYTES))
    code, out, _ = cli(capsys, "fit", "llama-3.2-1b", "--context", "640", "--gpu", "RTX 4090", "--json")
    assert json.loads(out)["measured"]["run_id"] == doc["run_id"]
    code, out, _ = cli(capsys, "fit", "llama-3.2-1b", "--context", "640", "--no-runs")
    assert "Measured" not in out


def test_closest_shape_is_said_and_estimated_at_the_run_shape(capsys):
    store_doc(document([_generate(prompt_len=512, new_tokens=128), _generate(prompt_len=2048, new_tokens=128),
                        _generate(prompt_len=512, new_tokens=128, batch_size=8)]))
    code, out, _ = cli(capsys, "fit", "llama-3.2-1b", "--context", "4096", "--json")
    measured = json.loads(out)["measured"]
    assert (measured["batch"], measured["context"], measured["same_shape"]) == (1, 2176, False)
    assert measured["estimated_total_bytes"] == memory_needed(LLAMA_1B, "serve", context=2176).total_bytes
    code, out, _ = cli(capsys, "fit", "llama-3.2-1b", "--context", "4096")
    assert "closest stored shape: the question is batch 1, context 4,096" in out
    assert "context 2,176 = 2,048 prompt + 128 new tokens" in out
    code, out, _ = cli(capsys, "fit", "llama-3.2-1b", "--context", "640", "--batch", "8", "--json")
    assert json.loads(out)["measured"]["batch"] == 8


def test_cpu_run_has_weights_but_no_peak(capsys):
    store_doc(document([_generate(peak=None, device="cpu")], gpu_name=None))
    code, out, _ = cli(capsys, "fit", "llama-3.2-1b", "--context", "640")
    assert code == 0 and "weights: measured" in out and "peak memory: not measured" in out


def test_tiny_runs_are_a_different_shape(capsys):
    store_doc(document([_generate(flavour="tiny", weight_bytes=1_000_000)]))
    code, out, _ = cli(capsys, "fit", "llama-3.2-1b", "--context", "640")
    assert code == 0 and "weights: measured" not in out and "only --tiny generate runs" in out
    code, out, _ = cli(capsys, "fit", "llama-3.2-1b", "--context", "640", "--json")
    data = json.loads(out)
    assert data["measured"] is None and "tiny" in data["measured_note"]
    assert closest_measured([document([_generate(flavour="tiny")])], LLAMA_1B, "bf16", 640, 1) is None


def test_quantized_precisions_match_the_generate_names():
    doc = document([_generate(precision="int8-weight-only", weight_bytes=1_600_000_000)])
    measured = closest_measured([doc], LLAMA_1B, "int8", 640, 1)
    assert measured is not None and measured.precision == "int8-weight-only"
    assert measured.estimated_weight_bytes == memory_needed(LLAMA_1B, "serve", "int8", 640).term("weights").bytes
    assert closest_measured([doc], LLAMA_1B, "bf16", 640, 1) is None


def test_fit_weights_term_equals_the_generate_scenario_count_on_the_meta_device():
    """The real llama-3.2-1b, built as the generate scenario builds it (the workload's LlamaForCausalLM, bf16 as
    the default dtype) on the meta device: its parameters hold exactly the estimate's weights term, and what the
    scenario stores as weight_bytes adds only the two rotary buffers (128 bytes in bf16)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from dlbench.scenarios.generate import default_dtype, weight_bytes_read
    from dlbench.workloads import registry

    workload = registry.get("llama-3.2-1b")
    with torch.device("meta"), default_dtype(torch.bfloat16):
        model = workload.build_model(SimpleNamespace(flavour="full"))
    model = model.to(dtype=torch.bfloat16)  # the cast of apply_inference_precision (its matmul flags left alone)
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    estimate = memory_needed(LLAMA_1B, "serve", "bf16", context=640)
    assert params == estimate.term("weights").bytes
    stored, _ = weight_bytes_read(model)
    assert stored == WEIGHTS_1B == 2_471_628_928
    assert stored - params == sum(b.numel() * b.element_size() for b in model.buffers()) == 128


def test_fit_with_a_stored_run_does_not_import_torch():
    import subprocess
    import sys

    store_doc(document([_generate()]))
    code = ("import sys\nfrom dlbench.cli.app import main\n"
            "try:\n    main(['fit', 'llama-3.2-1b', '--context', '640'])\nexcept SystemExit as exc:\n"
            "    assert not exc.code, exc.code\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "weights: measured" in proc.stdout
