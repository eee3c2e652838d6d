"""Build schema-2 infer and generate results by hand (as `InferScenario.metrics` and `generate_metrics` would
store them), so that the table, report, doctor and export tests need neither the runner nor a model.

`make_infer_result(...)` and `make_generate_result(...)` return one result; `document(results)` wraps results in a
version-2 document on an H100 (tests/report_docs.environment).
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from dlbench.schema.metrics import percentile
from report_docs import environment

H100_BANDWIDTH = 3.35e12  # catalogue: H100 SXM5 80GB, HBM3


def _metric(value: float, unit: str, better: str, **extra: Any) -> dict[str, Any]:
    return {"value": value, "unit": unit, "better": better, **extra}


def _stats(raw: list[float]) -> dict[str, float]:
    return {"p50": percentile(raw, 50), "p90": percentile(raw, 90), "p99": percentile(raw, 99)}


def _base(scenario: str, workload: str, precision: str, compile: str, batch_size: int, device: str,
          flavour: str, status: str) -> dict[str, Any]:
    return {"scenario": scenario, "workload": workload, "precision": precision, "compile": compile,
            "batch_size": batch_size, "seq_len": None, "device": device, "world_size": 1, "status": status,
            "flavour": flavour, "error": None if status == "ok" else f"simulated {status}",
            "samples_per_s": None, "samples_per_s_repeats": [], "cv": None,
            "step_time_s": {"mean": None, "median": None, "p5": None, "p95": None}, "warmup_step_times_s": [],
            "repeats": [], "compile_time_s": None, "peak_memory_bytes": None, "flops_per_sample": None,
            "achieved_flops_per_s": None, "start_temperature_c": None, "telemetry": None, "metrics": {},
            "primary_metric": "samples_per_s" if scenario == "infer" else "decode_tokens_per_s"}


def make_infer_result(workload: str = "resnet50", precision: str = "fp16", compile: str = "off",
                      batch_size: int = 256, step_time_s: float = 0.02, latency_s: float = 0.002,
                      spread: float = 0.05, requests: int = 200, seed: int = 0, status: str = "ok",
                      device: str = "cuda:0", flavour: str = "full") -> dict[str, Any]:
    """An infer result: offline batches of about `step_time_s`, batch-1 requests of about `latency_s`
    (normal, relative standard deviation `spread`)."""
    out = _base("infer", workload, precision, compile, batch_size, device, flavour, status)
    if status != "ok":
        return out
    rng = np.random.default_rng(seed)
    steps = [np.clip(rng.normal(step_time_s, step_time_s * 0.01, 50), step_time_s / 2, None).tolist()
             for _ in range(3)]
    reqs = [np.clip(rng.normal(latency_s, latency_s * spread, requests), latency_s / 10, None).tolist()
            for _ in range(3)]
    rates = [batch_size * len(s) / sum(s) for s in steps]
    offline = [t for s in steps for t in s]
    raw = [t for r in reqs for t in r]
    samples_per_s = sum(rates) / len(rates)
    out.update(samples_per_s=samples_per_s, samples_per_s_repeats=rates, peak_memory_bytes=4_000_000_000,
               repeats=[{"step_times_s": s, "request_times_s": r} for s, r in zip(steps, reqs, strict=True)])
    out["metrics"] = {
        "samples_per_s": _metric(samples_per_s, "samples/s", "higher", repeats=rates),
        "step_time_s": _metric(percentile(offline, 50), "s", "lower", **_stats(offline), raw=offline),
        "latency_s": _metric(percentile(raw, 50), "s", "lower", mean=sum(raw) / len(raw), **_stats(raw), raw=raw),
        "latency_p50_s": _metric(percentile(raw, 50), "s", "lower"),
        "latency_p90_s": _metric(percentile(raw, 90), "s", "lower"),
        "latency_p99_s": _metric(percentile(raw, 99), "s", "lower"),
        "latency_samples_per_s": _metric(len(raw) / sum(raw), "samples/s", "higher"),
        "peak_memory_bytes": _metric(4_000_000_000, "bytes", "lower"),
        "achieved_flops_per_s": _metric(samples_per_s * 8.2e9, "FLOP/s", "higher"),
    }
    return out


def make_generate_result(workload: str = "llama-3.1-8b", precision: str = "bf16", compile: str = "reduce-overhead",
                         batch_size: int = 1, tpot_s: float = 0.0075, ttft_s: float = 0.05, prompt_len: int = 512,
                         new_tokens: int = 128, bandwidth_fraction: float | None = 0.8, mfu: float | None = 0.5,
                         seed: int = 0, status: str = "ok", device: str = "cuda:0",
                         flavour: str = "full") -> dict[str, Any]:
    """A generate result: per-token decode times around `tpot_s`, time to first token around `ttft_s`;
    bandwidth and MFU as the given fractions of an H100 (None: the catalogue gave none)."""
    out = _base("generate", workload, precision, compile, batch_size, device, flavour, status)
    out.update(prompt_len=prompt_len, new_tokens=new_tokens)
    if status != "ok":
        return out
    rng = np.random.default_rng(seed)
    decodes = [np.clip(rng.normal(tpot_s, tpot_s * 0.03, new_tokens - 1), tpot_s / 2, None).tolist()
               for _ in range(3)]
    ttfts = [float(t) for t in np.clip(rng.normal(ttft_s, ttft_s * 0.02, 3), ttft_s / 2, None)]
    rates = [batch_size * len(d) / sum(d) for d in decodes]
    raw = [t for d in decodes for t in d]
    prefill = [batch_size * prompt_len / t for t in ttfts]
    e2e = [t + sum(d) for t, d in zip(ttfts, decodes, strict=True)]
    decode = sum(rates) / len(rates)
    out["repeats"] = [{"ttft_s": t, "step_times_s": d} for t, d in zip(ttfts, decodes, strict=True)]
    metrics = {
        "prefill_tokens_per_s": _metric(sum(prefill) / 3, "tokens/s", "higher", repeats=prefill),
        "ttft_s": _metric(percentile(ttfts, 50), "s", "lower", **_stats(ttfts), raw=ttfts),
        "decode_tokens_per_s": _metric(decode, "tokens/s", "higher", repeats=rates),
        "tpot_s": _metric(percentile(raw, 50), "s", "lower", mean=sum(raw) / len(raw), **_stats(raw), raw=raw),
        "e2e_s": _metric(percentile(e2e, 50), "s", "lower", **_stats(e2e), repeats=e2e),
        "peak_memory_bytes": _metric(17_000_000_000, "bytes", "lower"),
        "prefill_flops_per_s": _metric(0.5 * 989e12 if mfu is None else mfu * 989e12, "FLOP/s", "higher"),
    }
    if bandwidth_fraction is not None:
        metrics["bandwidth_bytes_per_s"] = _metric(bandwidth_fraction * H100_BANDWIDTH, "bytes/s", "higher")
        metrics["bandwidth_fraction"] = _metric(bandwidth_fraction, "fraction", "higher")
    if mfu is not None:
        metrics["mfu"] = _metric(mfu, "fraction", "higher")
    out["metrics"] = metrics
    return out


def document(results: list[dict[str, Any]], gpu_name: str | None = "NVIDIA H100 80GB HBM3",
             created_at: str = "2026-11-26T04:00:00Z", **env: Any) -> dict[str, Any]:
    """A version-2 document; a version-1 training result (tests/report_docs.make_result) gets its metrics."""
    from dlbench.schema.metrics import training_metrics

    results = [r if "scenario" in r else {**r, "scenario": "train", "metrics": training_metrics(r),
                                          "primary_metric": "samples_per_s"} for r in results]
    return {"schema_version": 2, "run_id": uuid.uuid4().hex, "created_at": created_at,
            "dlbench_version": "0.1.0", "environment": environment(gpu_name, **env), "results": results,
            "notes": [], "command": ["dlbench", "run"]}
