"""The HTML report's fleet section: which hosts are slower than their peers, as `dlbench fleet` judges them.

    dlbench report --since 1d --host 'node*' --output fleet-report
    PYTHONPATH=src:tests python -m pytest -q tests/test_report_fleet.py

`fleet_section(documents, chart_dir)` runs `analysis.fleet.fleet_report` on the report's documents and, for every
like-for-like group measured on at least `MIN_RUNS` hosts, draws `charts.fleet_chart` and lays out the group's
table; groups, verdicts, medians and causes are the analysis's, this module only arranges them. Without such a group
(one host, or hosts that measured different things) there is no section.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dlbench.analysis.fleet import DEFAULT_ALPHA, DEFAULT_THRESHOLD_PCT, MIN_RUNS, fleet_report, main_cause
from dlbench.report import charts, fmt
from dlbench.report.comparison_tables import cause_parts, device_text, vs_median
from dlbench.report.represent import short_config

# Past this many hosts the table shows the hosts that are not ok, and the others behind a "show" toggle.
TABLE_ROWS_MAX = 16
_CHIP = {"ok": "ok", "slow": "bad", "failed": "bad", "within noise": "warn"}
_STYLE_CLASS = {"red": "bad", "dim": "muted", "": ""}


def fleet_section(documents: list[dict[str, Any]], chart_dir: Path, threshold_pct: float = DEFAULT_THRESHOLD_PCT,
                  alpha: float = DEFAULT_ALPHA) -> dict[str, Any] | None:
    """The section's context (summary, intro, one entry per group with its `chart`), or None when no configuration
    was measured on `MIN_RUNS` hosts or more; hosts are judged with `threshold_pct` and `alpha` as in `fleet_report`."""
    report = fleet_report(documents, threshold_pct=threshold_pct, alpha=alpha)
    shown = [g for g in report["groups"] if len({row["host"] for row in g["rows"]}) >= MIN_RUNS]
    if not shown:
        return None
    names: set[str] = set()
    groups = [_group(g, report, chart_dir, _chart_name(g, names)) for g in shown]
    left_out = len(report["groups"]) - len(shown)
    notes = [f"{left_out} configuration{'s' if left_out != 1 else ''} measured on fewer than {MIN_RUNS} hosts "
             "not shown here (dlbench fleet lists every one)."] if left_out else []
    return {"summary": report["summary"], "flagged": bool(report["flagged"]), "groups": groups, "notes": notes,
            "intro": (f"Runs of the same configuration on different hosts, each judged against its peers as the "
                      f"dlbench fleet command judges them: slow when more than {report['threshold_pct']:g}% below the "
                      f"fleet median and its step times differ from its peers' (Welch's t-test and Mann-Whitney U, "
                      f"both p < {report['alpha']:g}); a configuration that failed where its peers measured it is "
                      "flagged too. The newest run of each host counts.")}


def _group(group: dict[str, Any], report: dict[str, Any], chart_dir: Path, name: str) -> dict[str, Any]:
    unit = fmt.unit_of(group)
    what = f"{fmt.workload_name(group['workload'], group.get('seq_len'))} \u00b7 {short_config(group)}"
    hosts = len({row["host"] for row in group["rows"]})
    median = group["median_samples_per_s"]
    heading = f"{what} on {group['gpu']}"
    if median is not None:
        runs = group["measured"]
        subtitle = (f"{hosts} hosts; fleet median {fmt.throughput(median)} {unit}/s over {runs} "
                    f"run{'s' if runs != 1 else ''}. Flagged hosts are named with their distance from the median "
                    "and likely cause.")
    else:
        subtitle = f"{hosts} hosts; no run measured this configuration."
    caption = (f"One dot per host (its newest run), slowest at the top. Line: fleet median; shaded: up to "
               f"{report['threshold_pct']:g}% below it, within the threshold; vermillion: flagged.")
    points = [{"node": row["node"], "samples_per_s": row["samples_per_s"], "vs_median_pct": row["vs_median_pct"],
               "verdict": row["verdict"], "flagged": row["flagged"], "label": _point_label(row)}
              for row in group["rows"]]
    chart = charts.fleet_chart(points, median, report["threshold_pct"], unit, f"Fleet: {heading}", subtitle,
                               caption, chart_dir, name)
    rows = [_table_row(row) for row in group["rows"]]
    more: list[dict[str, Any]] = []
    if len(rows) > TABLE_ROWS_MAX:
        more = [r for r in rows if r["verdict"] == "ok"]
        rows = [r for r in rows if r["verdict"] != "ok"]
    return {"heading": heading, "chart": chart, "rows": rows, "more_rows": more, "unit": unit,
            "notes": _notes(group)}


def _point_label(row: dict[str, Any]) -> str | None:
    """What stands beside a point: a flagged or failed host's distance and cause, `within noise` where it is below
    the threshold but its step times do not tell it apart."""
    pct = "" if row["vs_median_pct"] is None else f"{row['vs_median_pct']:+.0f}%"
    if row["flagged"] or row["verdict"] == "failed":
        cause = main_cause(row)
        head = pct if row["samples_per_s"] is not None else "failed"
        return f"{head} \u00b7 {cause}" if cause else head
    if row["verdict"] == "within noise":
        return f"{pct} \u00b7 within noise"
    return None


def _table_row(row: dict[str, Any]) -> dict[str, Any]:
    return {"host": row["host"], "device": device_text(row), "samples_per_s": fmt.throughput(row["samples_per_s"]),
            "vs_median": vs_median(row["vs_median_pct"]), "verdict": row["verdict"] or fmt.DASH,
            "chip": _CHIP.get(row["verdict"], "skip"), "flagged": row["flagged"],
            "cause": [(text, _STYLE_CLASS.get(style, "")) for text, style in cause_parts(row, with_gpus=True)]}


def _notes(group: dict[str, Any]) -> list[str]:
    notes = []
    if not group["judged"]:
        notes.append(f"Not judged: {group['reason']}.")
    if group["fleet_wide_causes"]:
        seen = ", ".join(f"{c['text']} ({c['runs']} of {group['runs']})" for c in group["fleet_wide_causes"])
        notes.append(f"Seen on most runs, so it singles out no node: {seen}.")
    if group["superseded"]:
        n = len(group["superseded"])
        notes.append(f"{n} older run{'s' if n != 1 else ''} of the same host{'s' if n != 1 else ''} left out: the "
                     "newest run of each host counts.")
    return notes


def _chart_name(group: dict[str, Any], taken: set[str]) -> str:
    """`fleet_resnet50-amp-fp16-compile-off-bs-256-h100-sxm5-80gb`: a file stem from the configuration and GPU,
    unique within the report."""
    stem = "fleet_" + re.sub(r"[^a-z0-9]+", "-", f"{group['label']} {group['gpu'] or ''}".lower()).strip("-")[:90]
    name, n = stem, 2
    while name in taken:
        name, n = f"{stem}-{n}", n + 1
    taken.add(name)
    return name
