"""The "Latency percentiles" section: p50 / p90 / p99 per configuration, of infer's batch-1 requests and of
generate's time per output token (TPOT). Present only when the report has such results."""

from __future__ import annotations

from typing import Any

from dlbench.report import charts, fmt
from dlbench.report.represent import chart_where
from dlbench.report.sections.figures import figure, group
from dlbench.schema.metrics import metric, scenario

# scenario -> (metric, chart name, what was timed, chart title)
TIMED = (
    ("infer", "latency_s", "latency_infer", "batch-1 request latency", "Inference latency per request"),
    ("generate", "tpot_s", "latency_generate", "time per output token", "Decode time per output token (TPOT)"),
)


def _label(run: dict[str, Any], r: dict[str, Any], with_batch: bool) -> str:
    parts = [r.get("workload", "?"), fmt.precision_name(r.get("precision", "?")), fmt.compile_name(r.get("compile"))]
    if with_batch:
        parts.append(f"batch {r.get('batch_size')}")
    label = " \u00b7 ".join(str(p) for p in parts)
    return f"{run['prefix']}: {label}" if run.get("prefix") else label


def latency_group(documents, runs, chart_dir) -> dict[str, Any] | None:
    figures = []
    for name, metric_name, chart_name, quantity, title in TIMED:
        entries = []
        for doc, run in zip(documents, runs, strict=True):
            for r in doc.get("results") or []:
                found = metric(r, metric_name) if scenario(r) == name and r.get("status") == "ok" else None
                if found and all(found.get(k) is not None for k in ("p50", "p90", "p99")):
                    entries.append({"label": _label(run, r, name == "generate"), "p50": found["p50"],
                                    "p90": found["p90"], "p99": found["p99"]})
        if entries:
            chart = charts.latency_chart(entries, title, quantity, chart_dir, chart_name, where=chart_where(runs))
            figures.append(figure(chart))
    if not figures:  # no infer or generate result: no section
        return None
    return group("latency", "Latency percentiles",
                 "What a user waits for, as percentiles of every measured time: a batch-1 request (inference, "
                 "MLPerf's SingleStream) and each generated token after the first (LLM decode). A p99 far above "
                 "the p50 is a tail that an average hides.", figures)
