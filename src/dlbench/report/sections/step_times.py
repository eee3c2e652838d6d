"""The "Step-time distribution" section: how steady each configuration's measured steps were."""

from __future__ import annotations

from typing import Any

from dlbench.analysis.configuration import config_key
from dlbench.analysis.stats import step_time_percentiles
from dlbench.report import charts
from dlbench.report.represent import THINNED, chart_where, short_config, thin
from dlbench.report.sections.figures import figure, group
from dlbench.schema.metrics import throughput


def step_time_group(documents, runs, chart_dir) -> dict[str, Any] | None:
    by_workload: dict[str, list[dict[str, Any]]] = {}
    for doc, run in zip(documents, runs, strict=True):
        for r in doc.get("results") or []:
            times = [t for rep in r.get("repeats") or [] for t in rep.get("step_times_s") or []]
            if r.get("status") != "ok" or not times:
                continue
            label = short_config(r)
            if run["prefix"]:
                label = f"{run['tag']} \u00b7 {label}"
            spread = r.get("step_time_s") or {}
            p5, p95 = spread.get("p5"), spread.get("p95")
            if p5 is None or p95 is None:  # a document without them: the same definition, from analysis
                p5, p95 = step_time_percentiles(times)
            by_workload.setdefault(r["workload"], []).append(
                {"label": label, "step_times_s": times, "cv": r.get("cv"), "precision": r.get("precision"),
                 "p5_s": p5, "p95_s": p95, "samples_per_s": throughput(r), "key": config_key(r)})
    if not by_workload:
        return None
    groups, thinned = [], False
    for workload, configs in by_workload.items():
        kept = thin(configs, lambda c: c["key"])
        thinned = thinned or len(kept) < len(configs)
        groups.append({"workload": workload, "configs": [{**c, "label": f"{c['label']} ({role})"} if role else c
                                                         for c, role in kept]})
    chart = charts.step_time_chart(groups, chart_dir, where=chart_where(runs))
    return group("distribution", "Step-time distribution",
                 "How steady the measurement was: a tight box means every step took about as long.",
                 [figure(chart, f"{chart.caption} {THINNED}") if thinned else figure(chart)])
