"""The "Speed-ups" section: what torch.compile and mixed precision buy, within each run (`analysis.speedups`)."""

from __future__ import annotations

from typing import Any

from dlbench.analysis.speedups import speedups
from dlbench.report import charts
from dlbench.report.represent import chart_where
from dlbench.report.sections.figures import figure, group


def speedup_group(documents, runs, chart_dir) -> dict[str, Any] | None:
    entries, prefix = [], {}
    for doc, run in zip(documents, runs, strict=True):
        for e in speedups(doc.get("results") or []):
            if run["prefix"]:
                prefix[len(entries)] = run["prefix"]
            entries.append(e)
    intro = "What torch.compile and mixed precision buy on this hardware, measured within the same run."
    if not entries:  # no pair that differs in compile mode or precision alone: no section
        return None
    chart = charts.speedup_chart(entries, chart_dir, prefix=prefix, where=chart_where(runs))
    return group("speedups", "Speed-ups", intro, [figure(chart)])
