"""What `dlbench doctor RUN_ID` says about infer and generate results (training's causes are in `diagnose`).

- generate: batch-1 decode is memory-bound, so its speed is judged against the bandwidth roofline: the bytes of
  weights and KV cache each decode step reads, times steps/s (`bandwidth_bytes_per_s`), over the card's catalogue
  bandwidth (`bandwidth_fraction`). Below half of it the GPU mostly waits (kernel launches, the host); a tuned
  PyTorch loop reaches far more (gpt-fast's README: 69% on an A100, issue 13's H100 target 80%). Prefill is
  compute-bound and judged by its MFU.
- infer: the spread of batch-1 request latencies (p99 against p50) says whether the tail comes from the host.

Published inference figures (`analysis.inference_ranking`) give the same-GPU comparison where a row exists.
No torch here.
"""

from __future__ import annotations

from typing import Any

from dlbench.schema.metrics import metric, scenario, value

# Decode below this share of the card's bandwidth is "below the roofline" (issue 13: a slow decode is one under
# half of what the memory can deliver; gpt-fast reaches 69% on an A100 with a plain PyTorch loop).
DECODE_ROOFLINE_LOW = 0.5
# Prefill below this MFU is named (dlbench's choice: a 512-token prompt keeps tensor cores busy; gpt-fast's and
# llama.cpp's prefill figures put a tuned 8B model well above a quarter of peak on current cards).
PREFILL_MFU_LOW = 0.25
# A batch-1 latency p99 this many times the p50 is a tail worth naming (dlbench's choice; MLPerf's
# SingleStream reports the 90th percentile because the tail, not the median, is what a user waits on).
LATENCY_TAIL_RATIO = 1.5

ADVICE_DECODE = ("Batch-1 decode reads every weight once per token, so its speed is set by memory bandwidth when "
                 "the GPU is kept busy; well under half of it, the GPU waits on kernel launches and the host. "
                 "Use --compile reduce-overhead (CUDA graphs over the static KV cache, transformers' LLM guide), "
                 "and check that no other process shares the GPU.")
ADVICE_PREFILL = ("Prefill is compute-bound: check the precision (bf16/fp16 use tensor cores, fp32 does not) and "
                  "that SDPA attention is in use; a longer prompt or a larger batch fills the GPU better.")
ADVICE_TAIL = ("A long tail at batch 1 comes from the host: CPU frequency scaling, other processes, Python's "
               "garbage collector, kernel launch overhead. Compile with reduce-overhead (CUDA graphs) and pin the "
               "process to cores (taskset).")


def _finding(cause: str, severity: str, message: str, advice: str | None = None) -> dict[str, Any]:
    return {"cause": cause, "severity": severity, "message": message, "advice": advice}


def card_bandwidth(gpu: str | None) -> float | None:
    """The catalogue memory bandwidth (bytes/s) of a canonical GPU name, None when unknown."""
    if not gpu:
        return None
    from dlbench import catalog

    spec = catalog.lookup(gpu)
    return None if spec is None else spec.memory_bandwidth_bytes_per_s


def scenario_findings(result: dict[str, Any], gpu: str | None) -> list[dict[str, Any]]:
    """The infer or generate findings of one measured result (empty for training)."""
    name = scenario(result)
    if name == "generate":
        return _generate_findings(result, gpu)
    if name == "infer":
        return _infer_findings(result)
    return []


def _generate_findings(result: dict[str, Any], gpu: str | None) -> list[dict[str, Any]]:
    out = []
    bandwidth = value(result, "bandwidth_bytes_per_s")
    fraction = value(result, "bandwidth_fraction")
    card = card_bandwidth(gpu)
    if fraction is None and bandwidth is not None and card:
        fraction = bandwidth / card
    if fraction is not None and bandwidth is not None:
        of_card = f" of the {gpu}'s {card / 1e9:,.0f} GB/s" if card else " of the card's catalogue bandwidth"
        text = f"decode read weights and KV cache at {bandwidth / 1e9:,.0f} GB/s, {fraction:.0%}{of_card}"
        if fraction < DECODE_ROOFLINE_LOW:
            eager = " in eager mode" if result.get("compile") == "off" else ""
            out.append(_finding("decode_below_roofline", "warn",
                                f"{text}: below half of the bandwidth roofline{eager}", ADVICE_DECODE))
        else:
            out.append(_finding("decode_roofline", "info", f"{text} (bandwidth roofline)"))
    elif bandwidth is not None:
        out.append(_finding("decode_roofline", "info", f"decode read {bandwidth / 1e9:,.1f} GB/s; no catalogue "
                            "bandwidth for this device, so no roofline share"))
    mfu = value(result, "mfu")
    if mfu is not None:
        if mfu < PREFILL_MFU_LOW:
            out.append(_finding("prefill_mfu_low", "warn", f"prefill at {mfu:.0%} MFU (under "
                                f"{PREFILL_MFU_LOW:.0%} of the precision's peak)", ADVICE_PREFILL))
        else:
            out.append(_finding("prefill_mfu", "info", f"prefill at {mfu:.0%} MFU"))
    return out


def _infer_findings(result: dict[str, Any]) -> list[dict[str, Any]]:
    latency = metric(result, "latency_s")
    if latency is None or not latency.get("p50") or latency.get("p99") is None:
        return []
    p50, p99 = float(latency["p50"]), float(latency["p99"])
    tail = p99 / p50
    text = f"batch-1 latency p50 {p50 * 1e3:.3g} ms, p99 {p99 * 1e3:.3g} ms (p99 = {tail:.2f} x p50)"
    if tail > LATENCY_TAIL_RATIO:
        return [_finding("latency_tail", "warn", f"{text}: a long tail", ADVICE_TAIL)]
    return [_finding("latency_spread", "info", text)]


def published_inference_for(result: dict[str, Any], gpu: str | None) -> dict[str, Any] | None:
    """The same-GPU published inference figure for an infer/generate result (doctor's `published` block)."""
    if gpu is None:
        return None
    from dlbench.analysis.inference_ranking import published_inference_medians

    own = next((m for m in published_inference_medians(result) if m["gpu"] == gpu), None)
    if own is None:
        return None
    return {"samples_per_s": own["value"], "low": own["value"], "high": own["value"], "count": own["count"],
            "batch_sizes_per_gpu": [result["batch_size"]] if result.get("batch_size") else [],
            "sources": own["sources"]}


# What a scenario's throughput is, for doctor's line ("133/s decode tokens").
RATE_UNITS = {"infer": "samples/s offline", "generate": "decode tokens/s"}
