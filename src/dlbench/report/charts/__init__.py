"""Charts for `dlbench report`, one module per kind; rendering only (`style` holds their shared look).

    dlbench report --latest --output report/    # draws every chart this run has into report/charts/

Each function takes figures already computed in `dlbench.analysis` (or raw step times and telemetry series
straight from the result document), draws one chart, saves it as PNG and SVG in `out_dir` and returns a `Chart`
naming both files. The report's sections call them through this package (`charts.ranking_chart(...)`).
"""

from dlbench.report.charts.fleet import fleet_chart
from dlbench.report.charts.headline import vs_published_chart
from dlbench.report.charts.latency import latency_chart
from dlbench.report.charts.ranking import ranking_chart
from dlbench.report.charts.roofline import roofline_chart
from dlbench.report.charts.scaling import scaling_chart, scaling_units
from dlbench.report.charts.speedups import speedup_chart
from dlbench.report.charts.step_times import step_time_chart
from dlbench.report.charts.style import CHART_STEMS, Chart
from dlbench.report.charts.telemetry import TELEMETRY_PANELS, telemetry_chart

__all__ = ["CHART_STEMS", "TELEMETRY_PANELS", "Chart", "fleet_chart", "latency_chart", "ranking_chart",
           "roofline_chart", "scaling_chart", "scaling_units", "speedup_chart", "step_time_chart", "telemetry_chart",
           "vs_published_chart"]
