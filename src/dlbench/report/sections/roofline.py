"""The "Roofline" section: LLM decode's achieved memory bandwidth against the card's catalogue bandwidth, and
prefill's FLOP/s against the precision's peak (`generate` results; present only when one has such figures)."""

from __future__ import annotations

from typing import Any

from dlbench.report import charts, fmt
from dlbench.report.represent import chart_where
from dlbench.report.sections.figures import figure, group
from dlbench.schema.metrics import scenario, value


def _ceiling(achieved: float | None, share: float | None) -> dict[str, float] | None:
    """The achieved figure and the card's ceiling it was measured against (the stored share is achieved over the
    catalogue figure, so the ceiling is the catalogue's own number)."""
    if achieved is None or not share:
        return None
    return {"achieved": achieved, "peak": achieved / share}


def roofline_group(documents, runs, chart_dir) -> dict[str, Any] | None:
    entries = []
    for doc, run in zip(documents, runs, strict=True):
        for r in doc.get("results") or []:
            if scenario(r) != "generate" or r.get("status") != "ok":
                continue
            bandwidth = _ceiling(value(r, "bandwidth_bytes_per_s"), value(r, "bandwidth_fraction"))
            flops = _ceiling(value(r, "prefill_flops_per_s"), value(r, "mfu"))
            if bandwidth is None and flops is None:
                continue
            label = " \u00b7 ".join([str(r.get("workload")), fmt.precision_name(r.get("precision", "?")),
                                     fmt.compile_name(r.get("compile")), f"batch {r.get('batch_size')}"])
            entries.append({"label": f"{run['prefix']}: {label}" if run.get("prefix") else label,
                            "bandwidth": bandwidth, "flops": flops})
    if not entries:  # no generate result on a catalogued GPU: no section
        return None
    chart = charts.roofline_chart(entries, chart_dir, where=chart_where(runs))
    return group("roofline", "Against the roofline",
                 "How close LLM generation came to what the card can do: decode is bound by memory bandwidth "
                 "(bytes of weights and KV cache read per token x tokens/s), prefill by compute (MFU). "
                 "gpt-fast reaches 69% of the bandwidth on an A100 at batch 1.", [figure(chart)])
