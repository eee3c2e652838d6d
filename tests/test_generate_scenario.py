"""The generate scenario: Llama workloads from the model catalogue, `dlbench run --scenario generate` on the CPU,
metrics recomputed from the raw times, precisions refused with a reason, bad lengths refused with exit code 2."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dlbench import scenarios
from dlbench.catalog.models import (
    all_models,
    forward_flops_per_token,
    get_model,
    kv_cache_bytes,
    param_count,
    tiny,
)
from dlbench.measurement.config import RunConfig
from dlbench.scenarios.generate import GenerateConfig, decode_bytes, generate_metrics, prefill_flops

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

LLAMAS = [s.name for s in all_models() if s.family == "llama" and not s.is_moe]
TINY = ("--tiny", "--device", "cpu", "--prompt-len", "32", "--new-tokens", "16")


def run_cli(capsys, tmp_path, *args):
    from cli_helpers import cli

    path = tmp_path / "run.json"
    code, out, err = cli(capsys, "run", "--scenario", "generate", *args, "--quiet", "--json", str(path))
    return code, out, err, (json.loads(path.read_text()) if path.exists() else None)


# --------------------------------------------------------------------------------------------- workloads


def test_every_llama_row_of_the_catalogue_is_a_generate_only_workload_with_a_tiny_flavour():
    from dlbench.workloads import registry

    assert {"llama-3.2-1b", "llama-3.1-8b", "llama-2-7b"} <= set(LLAMAS)
    for name in LLAMAS:
        workload = registry.get(name)
        assert workload.scenarios == ("generate",) and workload.sample_unit == "tokens"
        assert workload.full == get_model(name) and workload.tiny == tiny(get_model(name))
        assert workload.default_batch_size(80 * 2**30, "full") == 1
    for other in ("qwen2.5-7b", "mixtral-8x7b", "gemma-2-9b"):
        assert other not in registry.names()


@pytest.mark.parametrize("name", ["llama-3.2-1b", "llama-3.1-8b", "llama-2-7b"])
def test_the_model_built_has_the_catalogue_shape_and_parameter_count(name):
    import torch

    from dlbench.workloads import registry

    workload = registry.get(name)
    with torch.device("meta"):
        model = workload.build_model(RunConfig(name, scenario="generate"))
    assert sum(p.numel() for p in model.parameters()) == param_count(get_model(name))
    assert model.config._attn_implementation == "sdpa"
    small = workload.build_model(RunConfig(name, flavour="tiny", scenario="generate"))
    assert sum(p.numel() for p in small.parameters()) == param_count(workload.tiny) < 3_000_000


def test_the_generation_is_what_model_generate_gives_greedy_with_a_static_cache():
    import torch

    from dlbench.measurement.clocks import HostClock
    from dlbench.scenarios.generate import Generation
    from dlbench.workloads import registry

    workload = registry.get("llama-3.2-1b")
    config = RunConfig("llama-3.2-1b", flavour="tiny", scenario="generate", prompt_len=12, new_tokens=9)
    torch.manual_seed(0)
    model = workload.build_model(config)
    (prompt,) = workload.make_inputs(config, 2, torch.Generator().manual_seed(0))
    with torch.inference_mode():
        gen = Generation(model, model.config, prompt, 9, "cpu")
        ttft, steps, tokens = gen.once(HostClock("cpu"))
        again = gen.once(HostClock("cpu"))[2]  # the cache is reset between generations
        expected = model.generate(prompt, max_new_tokens=9, min_new_tokens=9, do_sample=False,
                                  cache_implementation="static", pad_token_id=0)[:, 12:]
    assert ttft > 0 and len(steps) == 8 and all(t > 0 for t in steps)
    assert torch.equal(torch.cat(tokens, 1), expected) and torch.equal(torch.cat(again, 1), expected)


# ----------------------------------------------------------------------------------- metrics from raw times


def recompute(result):
    """The generate metrics from a stored result's raw times and sizes, written out independently."""
    batch, prompt = result["batch_size"], result["prompt_len"]
    ttfts = [r["ttft_s"] for r in result["repeats"]]
    decodes = [r["step_times_s"] for r in result["repeats"]]
    steps = len(decodes[0])
    moved = steps * result["decode_weight_bytes"] + result["kv_bytes_per_position"] * sum(
        prompt + i + 1 for i in range(steps))
    pooled = [t for d in decodes for t in d]
    return {
        "prefill_tokens_per_s": np.mean([batch * prompt / t for t in ttfts]),
        "ttft_s": np.median(ttfts),
        "decode_tokens_per_s": np.mean([batch * steps / sum(d) for d in decodes]),
        "tpot_s": np.median(pooled),
        "e2e_s": np.median([t + sum(d) for t, d in zip(ttfts, decodes, strict=True)]),
        "bandwidth_bytes_per_s": np.mean([moved / sum(d) for d in decodes]),
        "prefill_flops_per_s": np.mean([result["prefill_flops"] / t for t in ttfts]),
    }


def test_run_generate_tiny_on_the_cpu_stores_metrics_that_follow_from_the_raw_times(capsys, tmp_path):
    code, out, err, doc = run_cli(capsys, tmp_path, "-w", "llama-3.1-8b", *TINY)
    assert code == 0, err
    assert "Traceback" not in err
    (result,) = doc["results"]
    assert result["status"] == "ok" and result["scenario"] == "generate"
    assert result["primary_metric"] == "decode_tokens_per_s"
    assert (result["batch_size"], result["prompt_len"], result["new_tokens"]) == (1, 32, 16)
    assert len(result["repeats"]) == 2 and all(len(r["step_times_s"]) == 15 for r in result["repeats"])
    assert result["warmup"] and all(len(w["step_times_s"]) == 15 for w in result["warmup"])
    metrics = result["metrics"]
    for name, value in recompute(result).items():
        assert metrics[name]["value"] == pytest.approx(value, rel=1e-12), name
    pooled = [t for r in result["repeats"] for t in r["step_times_s"]]
    assert metrics["tpot_s"]["raw"] == pooled
    assert metrics["tpot_s"]["p99"] == pytest.approx(np.percentile(pooled, 99))
    assert metrics["ttft_s"]["raw"] == [r["ttft_s"] for r in result["repeats"]]
    # The decode throughput is also the training-shaped samples/s of the decode steps (the run table's column).
    assert result["samples_per_s"] == pytest.approx(metrics["decode_tokens_per_s"]["value"])
    # The sizes behind bandwidth and FLOP/s are the tiny shape's (fp32: 4 bytes per weight and per KV element).
    shape = tiny(get_model("llama-3.1-8b"))
    assert result["weight_bytes"] >= 4 * param_count(shape)
    assert result["decode_weight_bytes"] == pytest.approx(result["weight_bytes"] - 4 * shape.vocab * shape.hidden)
    assert result["kv_bytes_per_position"] == kv_cache_bytes(shape, tokens=1, bytes_per_elem=4)
    assert result["prefill_flops"] == pytest.approx(prefill_flops(shape, 32, 1))
    # A CPU has no catalogue bandwidth or peak: not reported, and the result says why.
    assert "bandwidth_fraction" not in metrics and "mfu" not in metrics
    assert any(w.startswith("bandwidth_fraction not reported: cpu") for w in result["warnings"])
    assert result["precision_flags"]["kv_cache"] == "static" and result["precision_flags"]["attention"] == "sdpa"
    # The document is a valid version-2 result document; the store took it, and reads the headline back.
    from dlbench.schema import validate_document
    from dlbench.schema.metrics import primary_value, throughput

    validate_document(doc)
    assert "not stored" not in err
    assert primary_value(result) == throughput(result) == metrics["decode_tokens_per_s"]["value"]
    from cli_helpers import cli

    code, shown, _ = cli(capsys, "results", "show", doc["run_id"], "--json")
    assert code == 0 and json.loads(shown)["results"][0]["metrics"]["tpot_s"]["raw"] == pooled


def test_roofline_metrics_use_the_catalogue_gpu_and_energy_per_token_counts_every_output_token():
    config = RunConfig("llama-3.1-8b", precision="bf16", batch_size=2, scenario="generate", prompt_len=512,
                       new_tokens=4)
    measurement = {
        "repeats": [{"ttft_s": 0.1, "step_times_s": [0.01, 0.012, 0.011]},
                    {"ttft_s": 0.12, "step_times_s": [0.01, 0.01, 0.01]}],
        "batch_size": 2, "prompt_len": 512, "new_tokens": 4, "decode_weight_bytes": 15e9,
        "kv_bytes_per_position": 2 * 131072.0, "prefill_flops": 1.5e13, "device": "cuda:0",
        "device_name": "NVIDIA H100 80GB HBM3", "device_memory_bytes": 85_000_000_000,
        "telemetry": {"available": True, "energy_j": 48.0}, "peak_memory_bytes": 17e9,
    }
    metrics = generate_metrics(measurement, config)
    moved = decode_bytes(15e9, 2 * 131072.0, 512, 3)
    assert moved == 3 * 15e9 + 2 * 131072.0 * (513 + 514 + 515)
    bandwidth = np.mean([moved / 0.033, moved / 0.03])
    assert metrics["bandwidth_bytes_per_s"]["value"] == pytest.approx(bandwidth)
    assert metrics["bandwidth_fraction"]["value"] == pytest.approx(bandwidth / 3.35e12)  # H100 SXM: 3.35 TB/s
    flops = np.mean([1.5e13 / 0.1, 1.5e13 / 0.12])
    assert metrics["mfu"]["value"] == pytest.approx(flops / 989.4e12, rel=1e-3)  # dense BF16 tensor peak
    assert metrics["decode_tokens_per_s"]["repeats"] == pytest.approx([6 / 0.033, 6 / 0.03])
    assert metrics["energy_per_token_j"]["value"] == pytest.approx(48.0 / (2 * 2 * 4))
    assert metrics["peak_memory_bytes"]["value"] == 17e9
    unknown = generate_metrics({**measurement, "device_name": "Imaginary GPU 9000"}, config)
    assert "bandwidth_fraction" not in unknown and "mfu" not in unknown and "bandwidth_bytes_per_s" in unknown
    assert generate_metrics({**measurement, "repeats": []}, config) == {}


def test_prefill_flops_count_causal_attention_and_one_lm_head():
    shape = get_model("llama-3.1-8b")
    p = 512
    per_position = [forward_flops_per_token(shape, t + 1) - 2 * shape.vocab * shape.hidden for t in range(p)]
    expected = sum(per_position) + 2 * shape.vocab * shape.hidden
    assert prefill_flops(shape, p, 3) == pytest.approx(3 * expected, rel=1e-12)


# ---------------------------------------------------------------------------------- precisions and refusals


def test_int8_weight_only_runs_on_the_cpu(capsys, tmp_path):
    pytest.importorskip("torchao")
    code, _, err, doc = run_cli(capsys, tmp_path, "-w", "llama-3.2-1b", "-p", "int8-weight-only", *TINY)
    assert code == 0, err
    (result,) = doc["results"]
    assert result["status"] == "ok", result["error"]
    assert result["precision_flags"]["quantization"] == "Int8WeightOnlyConfig"
    assert result["precision_flags"]["quantized_modules"] > 0
    assert result["metrics"]["decode_tokens_per_s"]["value"] > 0


def test_fp8_on_the_cpu_is_skipped_with_the_reason_and_exit_code_0(capsys, tmp_path):
    code, _, err, doc = run_cli(capsys, tmp_path, "-w", "llama-3.1-8b", "-p", "fp8", *TINY)
    assert code == 0 and "Traceback" not in err  # skipped is not a failure (exit 1 is for oom/error/timeout)
    (result,) = doc["results"]
    assert result["status"] == "skipped"
    assert "fp8" in result["error"] and "not available on cpu" in result["error"]


@pytest.mark.parametrize("args,message", [
    (("-w", "llama-3.1-8b", "--tiny", "--prompt-len", "0"), "--prompt-len must be a positive finite number, got 0"),
    (("-w", "llama-3.1-8b", "--tiny", "--prompt-len", "-3"), "--prompt-len must be a positive finite number"),
    (("-w", "llama-3.1-8b", "--tiny", "--new-tokens", "0"), "--new-tokens must be a positive finite number"),
    (("-w", "llama-3.1-8b", "--tiny", "--prompt-len", "2040", "--new-tokens", "16"),
     "--prompt-len 2040 + --new-tokens 16 = 2056 positions; llama-3.1-8b-tiny has 2048"),
    (("-w", "llama-2-7b", "--prompt-len", "4000", "--new-tokens", "128"),
     "--prompt-len 4000 + --new-tokens 128 = 4128 positions; llama-2-7b has 4096"),
    (("-w", "llama-3.1-8b", "--seq-len", "64"), "--seq-len does not apply to --scenario generate"),
    (("-w", "resnet50", "--tiny"), "workload resnet50 does not generate text"),
    (("-w", "qwen2.5-7b",), "qwen2.5-7b is a qwen2 model; the generate scenario builds Llama-architecture"),
    (("-w", "mixtral-8x7b",), "mixtral-8x7b is a mixture of experts (8 experts)"),
])
def test_bad_generate_input_is_one_error_line_and_exit_2(capsys, args, message):
    from cli_helpers import cli

    code, out, err = cli(capsys, "run", "--scenario", "generate", "--device", "cpu", *args)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("args,message", [
    (("-w", "llama-3.1-8b", "--tiny"), "workload llama-3.1-8b runs in the generate scenario only, not train"),
    (("-w", "resnet50", "--prompt-len", "32"), "--prompt-len applies to --scenario generate only"),
])
def test_the_train_scenario_refuses_llama_workloads_and_generate_options(capsys, args, message):
    from cli_helpers import cli

    code, out, err = cli(capsys, "run", "--device", "cpu", *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    config = RunConfig("llama-3.1-8b", flavour="tiny", device="cpu")
    assert scenarios.unsupported_reason(config).startswith("workload llama-3.1-8b runs in the generate scenario")


def test_generate_settings_and_plan_defaults():
    from dlbench.measurement.device import DeviceFacts
    from dlbench.runner.plan import RunOptions, build_plan

    generate = scenarios.get("generate")
    assert generate.settings(RunConfig("llama-3.1-8b", scenario="generate")) == GenerateConfig(512, 128, 10, 3)
    h100 = DeviceFacts(cuda=[{"name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85_000_000_000,
                              "compute_capability": [9, 0], "uuid": None}])
    plan = build_plan(RunOptions(scenario="generate", device="cuda"), h100)
    combos = [(i.config.workload, i.config.precision, i.config.compile, i.config.batch_size, i.config.prompt_len,
               i.config.new_tokens) for i in plan.items]
    assert combos == [(w, "bf16", c, 1, 512, 128) for w in ("llama-3.2-1b", "llama-3.1-8b")
                      for c in ("off", "reduce-overhead")]
    assert all(i.config.seq_len == 512 and i.unit == "tokens" for i in plan.items)
    cpu = build_plan(RunOptions(scenario="generate", device="cpu"), DeviceFacts())
    assert [(i.config.workload, i.config.precision, i.config.prompt_len, i.config.new_tokens)
            for i in cpu.items] == [("llama-3.2-1b", "fp32", 64, 16)]
    assert cpu.notes and cpu.notes[0].startswith("quick check")
    batches = build_plan(RunOptions(scenario="generate", device="cpu", workloads=["llama-3.1-8b"], tiny=True,
                                    batch_size=4, prompt_len=8, new_tokens=4), DeviceFacts())
    assert [(i.config.batch_size, i.config.prompt_len, i.config.new_tokens, i.config.flavour)
            for i in batches.items] == [(4, 8, 4, "tiny")]
    assert not math.isnan(plan.items[0].timeout_s)
    several = build_plan(RunOptions(scenario="generate", device="cpu", workloads=["llama-3.1-8b"], tiny=True,
                                    batch_sizes=[1, 4, 1], compile_modes=["off"]), DeviceFacts())
    assert [i.config.batch_size for i in several.items] == [1, 4]  # repeatable -b, in order, once each


@pytest.mark.parametrize("batches,message", [
    (("-b", "1", "-b", "0"), "--batch-size must be a positive integer or 'auto', got 0"),
    (("-b", "auto", "-b", "2"), "cannot be combined with other batch sizes"),
])
def test_several_batch_sizes_are_checked_each(capsys, batches, message):
    from cli_helpers import cli

    code, _, err = cli(capsys, "run", "--scenario", "generate", "-w", "llama-3.1-8b", "--tiny", "--device", "cpu",
                       *batches)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_compiled_decode_step_on_the_cpu(capsys, tmp_path):
    """`--compile default` compiles the one-token decode step (about a minute on a 2-core CPU)."""
    code, _, err, doc = run_cli(capsys, tmp_path, "-w", "llama-3.2-1b", "-c", "default", "--repeats", "1",
                                "--warmup", "0", *TINY)
    assert code == 0, err
    (result,) = doc["results"]
    assert result["status"] == "ok", result["error"]
    assert result["precision_flags"]["compiled"] == "decode step" and result["compile_time_s"] > 0
    assert not any("recompiled" in w for w in result["warnings"])
    assert result["metrics"]["compile_time_s"]["value"] == result["compile_time_s"]


def test_a_generate_configuration_reads_with_its_prompt_and_output_lengths():
    from dlbench.analysis.configuration import config_label

    config = RunConfig("llama-3.1-8b", precision="bf16", batch_size=1, seq_len=512, scenario="generate",
                       prompt_len=512, new_tokens=128)
    assert config.label == "llama-3.1-8b bf16 compile=off bs=1 pp=512 tg=128"
    assert config_label(config.to_dict(), words=True) == "llama-3.1-8b bf16 eager bs 1 prompt 512 128 new tokens"
