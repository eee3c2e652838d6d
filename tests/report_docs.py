"""Build schema-v1 result documents (issue 2's "Output") with step times drawn from known distributions.

Used by the comparison, ranking and report tests, so that they need neither a GPU nor the runner.
"""

from __future__ import annotations

import statistics
import uuid
from typing import Any

import numpy as np

H100_TORCH_NAME = "NVIDIA H100 80GB HBM3"


def environment(gpu_name: str | None = H100_TORCH_NAME, gpu_count: int = 1, **overrides: Any) -> dict[str, Any]:
    gpus = [] if gpu_name is None else [
        {"name": gpu_name, "memory_bytes": 85_520_809_984, "compute_capability": "9.0",
         "multiprocessor_count": 132} for _ in range(gpu_count)]
    env = {
        "hostname": "testhost", "os": "Linux-6.1-x86_64", "python_version": "3.11.2",
        "torch_version": "2.11.0+cu128", "cuda_version": "12.8", "cudnn_version": "91002",
        "nccl_version": "2.27.3", "driver_version": "570.133.20", "cpu_model": "Test CPU", "cpu_count": 32,
        "memory_bytes": 270_000_000_000, "gpus": gpus, "git_commit": None,
    }
    env.update(overrides)
    return env


def make_result(workload: str = "resnet50", precision: str = "amp-fp16", compile: str = "off",
                batch_size: int = 256, seq_len: int | None = None, world_size: int = 1,
                step_time_s: float = 0.1, noise_s: float = 0.001, steps: int = 50, repeats: int = 3,
                seed: int = 0, status: str = "ok", device: str = "cuda:0", flavour: str = "full",
                telemetry: dict[str, Any] | None = None) -> dict[str, Any]:
    """One result whose step times are normal(step_time_s, noise_s), clipped positive; stats derived from them."""
    rng = np.random.default_rng(seed)
    base = {"workload": workload, "precision": precision, "compile": compile, "batch_size": batch_size,
            "seq_len": seq_len, "device": device, "world_size": world_size, "status": status, "flavour": flavour,
            "unit": "images" if workload == "resnet50" else "sequences"}
    empty = {"error": None, "samples_per_s": None, "samples_per_s_repeats": [], "cv": None,
             "step_time_s": {"mean": None, "median": None, "p5": None, "p95": None}, "warmup_step_times_s": [],
             "repeats": [], "compile_time_s": None, "peak_memory_bytes": None, "flops_per_sample": None,
             "achieved_flops_per_s": None, "start_temperature_c": None, "telemetry": telemetry}
    if status != "ok":
        return {**base, **empty, "error": f"simulated {status}"}
    reps = [np.clip(rng.normal(step_time_s, noise_s, steps), step_time_s * 0.05, None).tolist()
            for _ in range(repeats)]
    samples = batch_size * world_size
    tputs = [samples * len(r) / sum(r) for r in reps]
    flat = sorted(t for r in reps for t in r)
    mean_tput = statistics.fmean(tputs)
    flops_per_sample = 24.3e9 if workload == "resnet50" else 739e9
    return {**base, **empty,
            "samples_per_s": mean_tput,
            "samples_per_s_repeats": tputs,
            "cv": statistics.pstdev(tputs) / mean_tput if len(tputs) > 1 else None,
            "step_time_s": {"mean": statistics.fmean(flat), "median": statistics.median(flat),
                            "p5": float(np.percentile(flat, 5)), "p95": float(np.percentile(flat, 95))},
            "warmup_step_times_s": [step_time_s * 3] + [step_time_s] * 4,
            "repeats": [{"step_times_s": r} for r in reps],
            "compile_time_s": None if compile == "off" else 42.0,
            "peak_memory_bytes": 30_000_000_000,
            "flops_per_sample": flops_per_sample,
            "achieved_flops_per_s": mean_tput * flops_per_sample,
            "start_temperature_c": 41.0}


def make_document(results: list[dict[str, Any]], env: dict[str, Any] | None = None,
                  run_id: str | None = None, created_at: str = "2026-11-22T04:00:00Z") -> dict[str, Any]:
    return {"schema_version": 1, "run_id": run_id or uuid.uuid4().hex, "created_at": created_at,
            "dlbench_version": "0.1.0", "environment": env if env is not None else environment(),
            "results": results}


def telemetry_block(seconds: float = 5.0, interval_s: float = 0.1, power_limit_w: float = 700.0) -> dict[str, Any]:
    """A telemetry block as the NVML sampler writes it: summary figures plus column `series`."""
    t = [i * interval_s for i in range(int(seconds / interval_s))]
    power = [300 + 350 * min(1.0, x) for x in t]
    return {"available": True, "source": "nvml", "sample_interval_s": interval_s, "num_samples": len(t),
            "duration_s": t[-1], "power_mean_w": statistics.fmean(power), "power_limit_w": power_limit_w,
            "series": {"t_s": t, "power_w": power, "temperature_c": [45 + 4 * x for x in t],
                       "sm_clock_mhz": [1980 - 10 * x for x in t]}}


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """`cli_helpers.cli` with what was printed before it dropped: (exit code, out, err) of this command only."""
    from cli_helpers import cli

    capsys.readouterr()
    return cli(capsys, *argv)


def sample_document() -> dict[str, Any]:
    """A small but complete H100 run: two precisions x eager/compiled, a 2-GPU result, a telemetry series and
    one failed configuration, so that every chart of the report is drawn."""
    results = []
    for i, (precision, step_s) in enumerate((("tf32", 0.30), ("amp-fp16", 0.17))):
        for j, (mode, factor) in enumerate((("off", 1.0), ("default", 0.85))):
            results.append(make_result("resnet50", precision, mode, 256, step_time_s=step_s * factor,
                                       noise_s=step_s * 0.01, steps=30, seed=10 * i + j,
                                       telemetry=telemetry_block() if (i, j) == (1, 0) else None))
    results.append(make_result("resnet50", "amp-fp16", "off", 256, world_size=2, step_time_s=0.172, steps=30,
                               seed=7))
    results.append(make_result("bert-large-squad", "amp-bf16", "off", 64, seq_len=384, status="oom"))
    return make_document(results, env=environment(gpu_count=2))


# Every chart `sample_document()` gives, by file stem.
SAMPLE_CHARTS = ("vs_published", "ranking_resnet50_tf32_na_1gpu", "ranking_resnet50_amp-fp16_na_1gpu",
                 "ranking_resnet50_amp-fp16_na_2gpu", "speedups", "step_times", "scaling", "telemetry")


def write_sample_report(out_dir) -> tuple[dict[str, Any], Any]:
    from dlbench.report.html import write_report

    doc = sample_document()
    return doc, write_report([doc], out_dir)



_SAMPLE_REPORT: dict[str, Any] = {}


def sample_report_in(tmp_path_factory) -> tuple[dict[str, Any], Any]:
    """The sample document's report, written once per test session: (document, path of index.html)."""
    if "report" not in _SAMPLE_REPORT:
        _SAMPLE_REPORT["report"] = write_sample_report(tmp_path_factory.mktemp("report"))
    return _SAMPLE_REPORT["report"]


def readme_compare() -> tuple[dict[str, Any], dict[str, Any]]:
    """The manual's `dlbench compare` example (docs/report.md): run B (CUDA 13.0) against baseline A (CUDA 12.8),
    ResNet-50 5% faster and BERT-large unchanged within its noise. Synthetic step times, not a measurement."""
    a = make_document([make_result(step_time_s=256 / 2562, seed=1),
                       make_result("bert-large-squad", batch_size=112, seq_len=384, step_time_s=112 / 320,
                                   noise_s=0.02, seed=2)],
                      run_id="1cddfcb4" + "0" * 24)
    b = make_document([make_result(step_time_s=256 / 2694, seed=3),
                       make_result("bert-large-squad", batch_size=112, seq_len=384, step_time_s=112 / 321,
                                   noise_s=0.02, seed=4)],
                      env=environment(cuda_version="13.0"), run_id="33134b93" + "0" * 24)
    return a, b
