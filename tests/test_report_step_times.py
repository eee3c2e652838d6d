"""The step-time chart's whiskers are the p5 and p95 the tables print, taken from `analysis.stats`; `report/`
draws and computes no percentile of its own.

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_report_step_times.py`.
"""

from __future__ import annotations

import pytest


def test_step_time_whiskers_are_the_p5_p95_the_table_prints(tmp_path, monkeypatch):
    # The chart says "whiskers: 5th-95th percentile", but matplotlib's whis=(5, 95) stops each whisker at the
    # last step inside the percentile: with 10 steps and one slow one, the table's p95 of 1,253 ms was drawn at
    # 341 ms.
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.axes import Axes

    from dlbench.report import charts

    steps = [1.9994, 0.3410, 0.0498, 0.0487, 0.0526, 0.0485, 0.0534, 0.0498, 0.0526, 0.0486]
    import numpy as np

    p5, p95 = (float(v) for v in np.percentile(steps, [5, 95]))
    seen = []
    original = Axes.bxp

    def spy(self, bxpstats, *args, **kwargs):
        seen.extend(bxpstats)
        return original(self, bxpstats, *args, **kwargs)

    monkeypatch.setattr(Axes, "bxp", spy)
    groups = [{"workload": "resnet50", "configs": [
        {"label": "FP32 · eager · bs 8", "step_times_s": steps, "cv": 1.15, "precision": "fp32",
         "p5_s": p5, "p95_s": p95}]}]
    charts.step_time_chart(groups, tmp_path)
    assert len(seen) == 1
    assert seen[0]["whislo"] == pytest.approx(p5 * 1e3)
    assert seen[0]["whishi"] == pytest.approx(p95 * 1e3)
    assert sorted(seen[0]["fliers"]) == pytest.approx([48.5, 1999.4])  # the steps beyond p5 and p95


def test_step_time_whiskers_of_a_document_without_percentiles_come_from_analysis(tmp_path, monkeypatch):
    """A result without stored p5/p95 gets them from analysis.stats (the definition `summarize` records), passed
    to the chart: report/ draws, it does not compute."""
    import report_docs
    from dlbench.analysis.stats import step_time_percentiles
    from dlbench.report import charts
    from dlbench.report.html import write_report

    result = report_docs.make_result(steps=7, repeats=2, noise_s=0.02)
    result["step_time_s"] = {"mean": None, "median": None}  # an older or hand-made document
    pooled = [t for rep in result["repeats"] for t in rep["step_times_s"]]
    seen = []
    original = charts.step_time_chart

    def spy(groups, *args, **kwargs):
        seen.extend(c for g in groups for c in g["configs"])
        return original(groups, *args, **kwargs)

    monkeypatch.setattr(charts, "step_time_chart", spy)
    write_report([report_docs.make_document([result])], tmp_path, published=[])
    (config,) = seen
    assert (config["p5_s"], config["p95_s"]) == pytest.approx(step_time_percentiles(pooled))
    assert config["p5_s"] < config["p95_s"]


def test_report_modules_compute_no_percentiles():
    """STYLE: report/ only renders; percentiles are analysis.stats' (one definition for tables and charts)."""
    import ast
    from pathlib import Path

    import dlbench.report

    called = {}
    for path in Path(dlbench.report.__file__).parent.rglob("*.py"):  # charts/ and sections/ too
        names = {node.attr for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Attribute)}
        found = names & {"percentile", "nanpercentile", "quantile", "nanquantile", "quantiles"}
        if found:
            called[path.name] = sorted(found)
    assert called == {}
