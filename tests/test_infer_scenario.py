"""The infer scenario: `dlbench run --scenario infer` on the CPU, metrics recomputed from the raw times, defaults,
refusals (docs/infer.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from dlbench import scenarios
from dlbench.measurement.config import RunConfig
from dlbench.measurement.device import DeviceFacts
from dlbench.scenarios.infer import LATENCY_REQUESTS_PER_STEP, InferConfig, InferScenario

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

INFER = scenarios.get("infer")


def _recompute(result: dict) -> dict[str, float]:
    """The headline figures of an infer result, from its raw per-repeat times alone."""
    offline = [r["step_times_s"] for r in result["repeats"]]
    requests = [r["request_times_s"] for r in result["repeats"]]
    per_repeat = [len(times) * result["batch_size"] / sum(times) for times in offline]
    raw = [t for times in requests for t in times]
    return {
        "samples_per_s": sum(per_repeat) / len(per_repeat),
        "step_time_s": float(np.median([t for times in offline for t in times])),
        "latency_s": float(np.percentile(raw, 50)),
        "latency_mean_s": sum(raw) / len(raw),
        "latency_p50_s": float(np.percentile(raw, 50)),
        "latency_p90_s": float(np.percentile(raw, 90)),
        "latency_p99_s": float(np.percentile(raw, 99)),
        "latency_samples_per_s": sum(len(t) / sum(t) for t in requests) / len(requests),
    }


def test_registered_with_the_inference_precisions():
    assert "infer" in scenarios.names() and isinstance(INFER, InferScenario)
    assert INFER.precisions == ("fp32", "tf32", "fp16", "bf16", "int8-weight-only", "int4-weight-only", "fp8")
    assert INFER.headline == "samples_per_s" and INFER.config_class is InferConfig


def test_settings_take_the_run_options_and_four_requests_per_offline_batch():
    settings = INFER.settings(RunConfig("resnet50", warmup_steps=2, steps=5, repeats=2, scenario="infer"))
    assert settings == InferConfig(warmup_steps=2, steps=5, repeats=2, latency_requests=5 * LATENCY_REQUESTS_PER_STEP)
    assert INFER.settings(RunConfig("resnet50", scenario="infer")).latency_requests == 200  # 50 steps


def test_metrics_follow_from_the_raw_values_alone():
    measurement = {"batch_size": 4, "repeats": [
        {"step_times_s": [0.1, 0.1, 0.2], "request_times_s": [0.01, 0.02, 0.03, 0.04]},
        {"step_times_s": [0.2, 0.2, 0.2], "request_times_s": [0.02, 0.02, 0.02, 0.10]}],
        "compile_time_s": None, "peak_memory_bytes": None, "weight_bytes": 1000, "flops_per_sample": 2e9}
    metrics = INFER.metrics(measurement, RunConfig("resnet50", batch_size=4, scenario="infer"))
    assert list(metrics) == ["samples_per_s", "step_time_s", "latency_s", "latency_mean_s", "latency_p50_s",
                             "latency_p90_s", "latency_p99_s", "latency_samples_per_s", "weight_bytes",
                             "achieved_flops_per_s"]
    assert metrics["samples_per_s"]["repeats"] == pytest.approx([12 / 0.4, 12 / 0.6])
    assert metrics["samples_per_s"]["value"] == pytest.approx((30 + 20) / 2)
    assert metrics["step_time_s"]["value"] == pytest.approx(0.2) and len(metrics["step_time_s"]["raw"]) == 6
    raw = [0.01, 0.02, 0.03, 0.04, 0.02, 0.02, 0.02, 0.10]
    assert metrics["latency_s"]["raw"] == raw and metrics["latency_s"]["value"] == pytest.approx(0.02)
    assert metrics["latency_s"]["repeats"] == pytest.approx([0.025, 0.02])  # each repeat's median
    assert metrics["latency_mean_s"]["value"] == pytest.approx(sum(raw) / 8)
    assert metrics["latency_p90_s"]["value"] == pytest.approx(np.percentile(raw, 90))
    assert metrics["latency_p99_s"]["value"] == pytest.approx(0.0958)  # 93% of the way from 0.04 to 0.10 (rank 6.93)
    assert metrics["latency_samples_per_s"]["repeats"] == pytest.approx([4 / 0.1, 4 / 0.16])
    assert metrics["achieved_flops_per_s"]["value"] == pytest.approx(25 * 2e9)
    for name, found in metrics.items():
        assert found["better"] == ("higher" if name.endswith("per_s") else "lower")
        assert found["unit"] == {"samples_per_s": "samples/s", "latency_samples_per_s": "samples/s",
                                 "weight_bytes": "bytes", "achieved_flops_per_s": "FLOP/s"}.get(name, "s")
    assert INFER.metrics({"repeats": []}, RunConfig("resnet50", scenario="infer")) == {}


def test_one_device_and_inference_precisions_only():
    cpu = DeviceFacts()
    assert INFER.unsupported_reason(RunConfig("resnet50", device="cpu", scenario="infer"), cpu) is None
    assert INFER.unsupported_reason(RunConfig("resnet50", device="cpu", world_size=2, scenario="infer"), cpu) == (
        "the infer scenario measures one device; --gpus applies to training only")
    assert INFER.unsupported_reason(RunConfig("resnet50", precision="amp-fp16", device="cpu", scenario="infer"),
                                    cpu).startswith("precision amp-fp16 is not measured by the infer scenario")
    assert INFER.unsupported_reason(RunConfig("resnet50", precision="fp8", device="cpu", scenario="infer"), cpu) == (
        "fp8 is an NVIDIA tensor-core mode (CUDA compute capability >= 8.9); not available on cpu")
    assert "CUDA graphs" in INFER.unsupported_reason(
        RunConfig("resnet50", compile="reduce-overhead", device="cpu", scenario="infer"), cpu)


def _plan(facts, **options):
    from dlbench.runner.plan import RunOptions, build_plan

    plan = build_plan(RunOptions(scenario="infer", **options), facts)
    return [(i.config.workload, i.config.precision, i.config.compile) for i in plan.items], plan


def test_default_plan_on_a_cpu_and_on_gpus():
    items, plan = _plan(DeviceFacts(), device="cpu")  # the quick suite: training's small one
    assert items == [("resnet50", "fp32", "off"), ("bert-base-mlm", "fp32", "off")] and plan.quick_suite
    assert [(i.config.batch_size, i.config.seq_len) for i in plan.items] == [(2, None), (1, 128)]
    assert all(i.config.scenario == "infer" for i in plan.items)
    items, _ = _plan(DeviceFacts(), device="cpu", tiny=True)
    assert items == [("resnet50", "fp32", "off"), ("bert-base-squad", "fp32", "off")]
    gpu = {"name": "NVIDIA H100 80GB HBM3", "memory_bytes": 80 * 10**9, "compute_capability": [9, 0]}
    items, plan = _plan(DeviceFacts(cuda=[gpu]), device="auto")
    assert items == [("resnet50", "bf16", "off"), ("resnet50", "bf16", "reduce-overhead"),
                     ("bert-base-squad", "bf16", "off"), ("bert-base-squad", "bf16", "reduce-overhead")]
    old = {**gpu, "name": "Tesla V100-SXM2-16GB", "compute_capability": [7, 0]}
    assert {p for _, p, _ in _plan(DeviceFacts(cuda=[old]), device="auto")[0]} == {"fp16"}
    items, _ = _plan(DeviceFacts(), device="cpu", workloads=["bert-large-mlm"], precisions=["int8-weight-only"],
                     tiny=True)
    assert items == [("bert-large-mlm", "int8-weight-only", "off")]


def test_unknown_precision_is_one_error_line_and_exit_2(capsys):
    from cli_helpers import cli

    code, out, err = cli(capsys, "run", "--scenario", "infer", "-p", "fp4", "--tiny", "--device", "cpu")
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.strip().startswith("error: unknown precision 'fp4'; choose from: fp32, tf32")


def test_measure_in_process_keeps_every_raw_time():
    config = RunConfig("bert-base-squad", precision="bf16", flavour="tiny", batch_size=2, warmup_steps=1, steps=2,
                       repeats=2, scenario="infer")
    m = scenarios.measure(config)
    assert m["scenario"] == "infer" and m["latency_batch_size"] == 1
    assert len(m["warmup_step_times_s"]) == 1 and len(m["latency_warmup_times_s"]) == 1
    assert [len(r["step_times_s"]) for r in m["repeats"]] == [2, 2]
    assert [len(r["request_times_s"]) for r in m["repeats"]] == [8, 8]
    flags = m["precision_flags"]
    assert flags["inference_mode"] and flags["weights_dtype"] == "bfloat16" and flags["autocast_dtype"] is None
    assert m["weight_bytes"] == flags["weight_bytes"] > 0 and m["flops_per_sample"] > 0


def test_run_infer_on_the_cpu_stores_results_whose_metrics_follow_from_the_raw_times(isolated_home, tmp_path, capsys):
    """The issue's command, with int8 weight-only and fp8 (refused on a CPU: skipped with the reason, exit 0)."""
    from cli_helpers import cli

    out_path = tmp_path / "infer.json"
    code, out, err = cli(capsys, "run", "--scenario", "infer", "-w", "resnet50", "-w", "bert-base-squad", "--tiny",
                         "--device", "cpu", "-p", "fp32", "-p", "int8-weight-only", "-p", "fp8",
                         "--json", str(out_path))
    assert code == 0, err
    assert "Traceback" not in out + err
    document = json.loads(out_path.read_text())
    stored = list((isolated_home).rglob(f"{document['run_id']}.json"))
    assert len(stored) == 1 and json.loads(stored[0].read_text())["results"] == document["results"]
    results = {(r["workload"], r["precision"]): r for r in document["results"]}
    assert set(results) == {(w, p) for w in ("resnet50", "bert-base-squad")
                            for p in ("fp32", "int8-weight-only", "fp8")}
    for workload in ("resnet50", "bert-base-squad"):
        skipped = results[(workload, "fp8")]
        assert skipped["status"] == "skipped"
        assert skipped["error"] == "fp8 is an NVIDIA tensor-core mode (CUDA compute capability >= 8.9); not available on cpu"
        for precision in ("fp32", "int8-weight-only"):
            result = results[(workload, precision)]
            assert result["status"] == "ok", result["error"]
            assert result["scenario"] == "infer" and result["primary_metric"] == "samples_per_s"
            # --tiny: 2 warm-up, 5 batches and 20 requests per repeat, 2 repeats
            assert [len(r["step_times_s"]) for r in result["repeats"]] == [5, 5]
            assert [len(r["request_times_s"]) for r in result["repeats"]] == [20, 20]
            metrics = result["metrics"]
            for name, value in _recompute(result).items():
                assert metrics[name]["value"] == pytest.approx(value, rel=1e-9), (workload, precision, name)
            assert metrics["latency_s"]["raw"] == [t for r in result["repeats"] for t in r["request_times_s"]]
            assert result["samples_per_s"] == pytest.approx(metrics["samples_per_s"]["value"])
        int8 = results[(workload, "int8-weight-only")]["precision_flags"]
        fp32 = results[(workload, "fp32")]["precision_flags"]
        assert int8["quantization"] == "Int8WeightOnlyConfig" and int8["quantized_modules"] >= 1
        assert int8["compute_dtype"] == "bfloat16" and fp32["quantization"] is None
        assert results[(workload, "int8-weight-only")]["weight_bytes"] < results[(workload, "fp32")]["weight_bytes"]


def test_importing_the_infer_modules_imports_no_torch():
    code = ("import sys, dlbench.scenarios.infer, dlbench.measurement.inference_precision; "
            "print('torch' in sys.modules, 'torchao' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_compiled_infer_on_the_cpu():
    """torch.compile of both batch sizes on a CPU (about 3 minutes on 2 shared cores): opt-in, DLBENCH_RUN_SLOW=1."""
    import os

    if os.environ.get("DLBENCH_RUN_SLOW") != "1":
        pytest.skip("slow: set DLBENCH_RUN_SLOW=1 to compile a tiny model on the CPU")
    config = RunConfig("bert-base-squad", precision="int8-weight-only", flavour="tiny", compile="default",
                       batch_size=4, warmup_steps=1, steps=2, repeats=1, scenario="infer")
    m = scenarios.measure(config)
    assert m["compile_times_s"]["offline"] > max(m["repeats"][0]["step_times_s"])
    assert m["compile_times_s"]["latency"] > max(m["repeats"][0]["request_times_s"])
    assert m["compile_time_s"] == pytest.approx(sum(m["compile_times_s"].values()))
    assert m["precision_flags"]["compile_cache"].startswith("cold")
    assert not [w for w in m["warnings"] if "recompiled" in w]  # one static graph per batch size, no more


@pytest.mark.gpu
@pytest.mark.parametrize("precision, mode", [(p, "off") for p in ("fp32", "tf32", "fp16", "bf16", "int8-weight-only",
                                                                   "int4-weight-only", "fp8")]
                         + [("bf16", "reduce-overhead"), ("fp8", "reduce-overhead")])
def test_cuda_precisions_and_cuda_graphs(precision, mode):
    """Each precision on the GPU (full-size BERT-base: the tiny model's 64-wide layers fit no int4 group), eager
    and with CUDA graphs; refused (with its reason) where the GPU lacks it."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    config = RunConfig("bert-base-squad", precision=precision, compile=mode, device="cuda",
                       batch_size=8, warmup_steps=2, steps=5, repeats=2, scenario="infer")
    reason = INFER.unsupported_reason(config)
    if reason:
        pytest.skip(reason)
    m = scenarios.measure(config)
    assert not m["warnings"], m["warnings"]
    assert m["peak_memory_bytes"] > 0 and m["precision_flags"]["cuda_graphs"] is (mode == "reduce-overhead")
    if mode == "reduce-overhead":
        assert m["precision_flags"]["cuda_graph_skips"] == 0
    if precision in ("int8-weight-only", "int4-weight-only", "fp8"):  # every layer but the 2-output QA head
        assert m["precision_flags"]["quantized_modules"] >= m["precision_flags"]["linear_modules"] - 1 > 0
    metrics = INFER.metrics(m, config)
    assert metrics["latency_p99_s"]["value"] >= metrics["latency_p50_s"]["value"] > 0
