"""The terminal table of `dlbench reference list --scenario infer|generate` (rich), rendering only.

Rows come from `dlbench.reference.inference`; each points to a numbered source printed under the table.
"""

from __future__ import annotations

from typing import Any

from dlbench.report import fmt


def value_text(metric: str, value: float | None) -> str:
    """A published figure in the unit people read it in: ms for latencies, GB/s for bandwidth, else as is."""
    if value is None:
        return fmt.DASH
    if metric.endswith("_s") and not metric.endswith("_per_s"):
        return f"{fmt.ms(value)} ms"
    if metric == "bandwidth_bytes_per_s":
        return f"{value / 1e9:,.0f} GB/s"
    return fmt.throughput(value)


_METRIC_NAMES = {
    "samples_per_s": "samples/s",
    "tokens_per_s": "out tokens/s",
    "prefill_tokens_per_s": "prefill tok/s",
    "decode_tokens_per_s": "decode tok/s",
    "bandwidth_bytes_per_s": "bandwidth",
    "latency_mean_s": "latency mean",
    "latency_p50_s": "latency p50",
    "latency_p90_s": "latency p90",
    "latency_p99_s": "latency p99",
    "ttft_p99_s": "TTFT p99",
    "tpot_p99_s": "TPOT p99",
}


_FRAMEWORK_NAMES = {"mlperf-closed-tensorrt": "MLPerf TRT"}


def _shape(row: dict[str, Any]) -> str:
    """Batch and lengths of a row, e.g. `bs 1, seq 384` or `bs 1, 512+0`."""
    parts = []
    if row.get("batch_size"):
        parts.append(f"bs {row['batch_size']}")
    if row.get("seq_len"):
        parts.append(f"seq {row['seq_len']}")
    if row.get("prompt_len") is not None and row.get("new_tokens") is not None:
        parts.append(f"{row['prompt_len']}+{row['new_tokens']}")
    return ", ".join(parts) or fmt.DASH


def inference_reference_table(rows: list[dict[str, Any]], sources: list[str], scenario: str):
    """Published inference or generation figures, one per row, with a numbered source (indexing `sources`).

    `cmp` (comparable) says whether a dlbench run is ranked against the row (PyTorch, a dlbench precision, one
    GPU). Multi-GPU rows read `8× H100 SXM5 80GB` and hold the whole system's figure.
    """
    from rich import box
    from rich.table import Table

    title = "Published LLM generation" if scenario == "generate" else "Published inference"
    table = Table(title=f"{title} figures ({len(rows)} rows)", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    table.add_column("GPU", min_width=9)
    table.add_column("workload", min_width=8, overflow="fold")
    table.add_column("precision", min_width=6, overflow="fold")
    table.add_column("setup", min_width=10)
    table.add_column("metric", min_width=7)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("cmp", no_wrap=True)
    table.add_column("src", justify="right", no_wrap=True)
    for row in rows:
        gpu = row["gpu"] if row["gpu_count"] == 1 else f"{row['gpu_count']}\u00d7 {row['gpu']}"
        how = f"{_FRAMEWORK_NAMES.get(row['framework'], row['framework'])} {row['mode']}, {_shape(row)}"
        table.add_row(gpu, row["workload"], row["precision"], how,
                      _METRIC_NAMES.get(row["metric"], row["metric"]), value_text(row["metric"], row["value"]),
                      "yes" if row["comparable"] else "no", f"[{sources.index(row['source']) + 1}]")
    return table
