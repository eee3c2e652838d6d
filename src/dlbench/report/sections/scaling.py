"""The "Multi-GPU scaling" section: data-parallel throughput as GPUs (or CPU processes) are added, within each run
(`analysis.measured_scaling.scaling_series`).
"""

from __future__ import annotations

from typing import Any

from dlbench.analysis.measured_scaling import scaling_series
from dlbench.report import charts
from dlbench.report.represent import chart_where
from dlbench.report.sections.figures import figure, group


def scaling_group(documents, runs, chart_dir) -> dict[str, Any] | None:
    series = [s for doc in documents for s in scaling_series(doc.get("results") or []) if len(s["points"]) > 1]
    if not series:
        return None
    units, unit = charts.scaling_units(series)
    return group("scaling", f"Multi-{unit} scaling",
                 f"Data-parallel throughput as {units} are added, within each run.",
                 [figure(charts.scaling_chart(series, chart_dir, where=chart_where(runs)))])
