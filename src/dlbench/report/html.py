"""The HTML report: `dlbench report --latest --output report/` writes `report/index.html` plus every chart.

`write_report(documents, out_dir)` draws the charts (PNG and SVG files next to the page) and renders
`templates/report.html.j2`; `write_report_files` does the same and says what it wrote (`WrittenReport`). The page is self-contained: each chart is embedded as an SVG data URI, so
`index.html` can be mailed or attached on its own; the files are there for slides and posts.
Figures come from `dlbench.analysis` (ranking, speed-ups, scaling, fleet); each section of the page is a module of
`report.sections`, and this module only assembles them: it describes the runs, compares each result with published
results once (the results table and the ranking charts read the same comparison), and renders the template. How a
fleet's many runs are thinned for the per-run charts is `represent`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dlbench import __version__
from dlbench.analysis.configuration import config_key
from dlbench.analysis.fleet import DEFAULT_ALPHA, DEFAULT_THRESHOLD_PCT
from dlbench.analysis.ranking import load_published_rows, vs_published_in
from dlbench.report import charts, fmt
from dlbench.report.sections.environment import environment_table
from dlbench.report.sections.figures import data_uri, figure
from dlbench.report.sections.fleet import fleet_section
from dlbench.report.sections.header import FACT_RUNS_MAX, facts, run_info
from dlbench.report.sections.latency import latency_group
from dlbench.report.sections.methodology import methodology
from dlbench.report.sections.ranking import ranking_group
from dlbench.report.sections.results import RESULT_ROWS_MAX, columns, result_rows
from dlbench.report.sections.roofline import roofline_group
from dlbench.report.sections.scaling import scaling_group
from dlbench.report.sections.speedups import speedup_group
from dlbench.report.sections.step_times import step_time_group
from dlbench.report.sections.summary import summary_section
from dlbench.report.sections.telemetry import telemetry_group
from dlbench.report.sections.tokens_ranking import tokens_ranking_group

TEMPLATE = "report.html.j2"


@dataclass(frozen=True)
class WrittenReport:
    """What `write_report_files` wrote: the page, its charts in page order (each as PNG and SVG), and whether the
    page has a fleet section."""

    index: Path
    charts: tuple[charts.Chart, ...]
    fleet: bool


def write_report(documents: list[dict[str, Any]], out_dir: str | Path, published: list[Any] | None = None,
                 threshold_pct: float = DEFAULT_THRESHOLD_PCT, alpha: float = DEFAULT_ALPHA) -> Path:
    """`write_report_files`, returning the path of `index.html`."""
    return write_report_files(documents, out_dir, published, threshold_pct, alpha).index


def write_report_files(documents: list[dict[str, Any]], out_dir: str | Path, published: list[Any] | None = None,
                       threshold_pct: float = DEFAULT_THRESHOLD_PCT, alpha: float = DEFAULT_ALPHA) -> WrittenReport:
    """Write `out_dir/index.html` and the charts (`out_dir/charts/*.png|svg`) for these result documents; the fleet
    section judges hosts with `threshold_pct` and `alpha` (`dlbench fleet --threshold --alpha`)."""
    out_dir = Path(out_dir)
    chart_dir = out_dir / "charts"
    if published is None:
        published = load_published_rows()
    hosts = [(doc.get("environment") or {}).get("hostname") for doc in documents]
    # A fleet (one run per host): hosts name the runs better than their ids do.
    by_host = len(documents) > 1 and all(hosts) and len(set(hosts)) == len(hosts)
    runs = [run_info(doc, i, len(documents), by_host) for i, doc in enumerate(documents)]
    # Each result against published results, once: the results table and the ranking charts read the same one.
    vs = [[vs_published_in(doc, r, published) for r in doc.get("results") or []] for doc in documents]
    rows = result_rows(documents, runs, vs)
    # As in the run table: no "vs published" column when no result has a ratio or rank (a CPU or --tiny run);
    # the "Against published results" section says why, once.
    show_vs = any(r["vs_main"] != fmt.DASH for r in rows)
    # The chart sections from the headline down to the diagnostics: how it ranks, what compile and precision buy,
    # how it scales, what the GPUs did, then how steady each step was.
    groups = [g for g in (
        ranking_group(documents, runs, vs, published, chart_dir),
        # infer and generate results only (each None without them): published inference figures, the roofline,
        # the latency percentiles
        tokens_ranking_group(documents, runs, vs, chart_dir),
        roofline_group(documents, runs, chart_dir),
        latency_group(documents, runs, chart_dir),
        speedup_group(documents, runs, chart_dir),
        scaling_group(documents, runs, chart_dir),
        telemetry_group(documents, runs, chart_dir),
        step_time_group(documents, runs, chart_dir),
    ) if g is not None]
    fleet = fleet_section(documents, chart_dir, threshold_pct=threshold_pct, alpha=alpha)
    if fleet:
        for g in fleet["groups"]:
            g["figure"] = figure(g.pop("chart"))
    summary = summary_section(documents, runs, vs, chart_dir, published, fleet)
    if summary["figure"] is not None:
        wide, narrow = summary["figure"]
        summary["figure"] = {**figure(wide), "narrow_uri": data_uri(narrow), "narrow": narrow}
    # A finding links to the section with its details only where the page has that section.
    present = {"#results"} | {f"#{g['id']}" for g in groups} | ({"#fleet"} if fleet else set())
    for item in summary["items"]:
        item["href"] = item["href"] if item["href"] in present else None
    figures = ([summary["figure"]] if summary["figure"] else []) + [f for g in groups for f in g["figures"]] + [
        g["figure"] for g in (fleet or {}).get("groups", [])]
    context = {
        "title": "dlbench report",
        "runs": runs,
        "rows": rows,
        "show_vs": show_vs,
        "columns": columns(rows),
        "groups": groups,
        "fleet": fleet,
        "summary": summary,
        # A fleet's results (one row per run and configuration) behind a toggle: the fleet section sums them up.
        "collapse_results": len(runs) > FACT_RUNS_MAX and len(rows) > RESULT_ROWS_MAX,
        "config_count": len({config_key(r) for doc in documents for r in doc.get("results") or []}),
        "facts": facts(runs),
        "environment": environment_table(documents, runs),
        "methodology": methodology(documents),
        "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "version": __version__,
        "sources": sorted({s for r in rows for s in r["sources"]}),
        "ok_count": sum(1 for r in rows if r["status"] == "ok"),
        "skipped_count": sum(1 for r in rows if r["status"] == "skipped"),
        "failed_count": sum(1 for r in rows if r["status"] not in ("ok", "skipped")),
    }
    html = _render(context)
    _remove_stale_charts(chart_dir, {f["chart"].name for f in figures} | {f["narrow"].name for f in figures
                                                                         if f.get("narrow")})
    out_dir.mkdir(parents=True, exist_ok=True)
    index = out_dir / "index.html"
    index.write_text(html, encoding="utf-8")
    return WrittenReport(index, tuple(f["chart"] for f in figures), fleet is not None)


def _remove_stale_charts(chart_dir: Path, written: set[str]) -> None:
    """Delete charts an earlier report left in `chart_dir` that this one did not draw (only dlbench's names),
    so the folder matches the page."""
    if not chart_dir.is_dir():
        return
    for pattern in charts.CHART_STEMS:
        for suffix in (".png", ".svg"):
            for path in chart_dir.glob(pattern + suffix):
                if path.stem not in written:
                    path.unlink()


def _render(context: dict[str, Any]) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), trim_blocks=True,
                             lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    return env.get_template(TEMPLATE).render(**context)
