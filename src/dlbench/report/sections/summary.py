"""The report's opening, "At a glance": what a reader should take away in five seconds.

    dlbench report --latest --output dlbench-report     # the first card under the header
    PYTHONPATH=src:tests python -m pytest -q tests/test_report_visual.py -k glance

`summary_section(...)` returns a handful of findings, each a tone (good, warn, bad, info), a title and a sentence,
plus the headline chart (`charts.vs_published_chart`): how fast this hardware is against published results for the
same GPU, what did not run, what its telemetry says is wrong (`analysis.diagnose`, as `dlbench doctor` explains a
run), which results are noisy and how far data-parallel runs scale. Every figure is the analysis's or the document's:
the ratios are the results table's (`analysis.ranking.vs_published`), the causes `diagnose`'s, the scaling
efficiencies `analysis.measured_scaling`'s; this module picks and phrases them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.analysis.diagnose import IN_LINE_TOLERANCE, diagnose
from dlbench.analysis.energy import usable
from dlbench.analysis.measured_scaling import scaling_series
from dlbench.analysis.stats import CV_WARN
from dlbench.report import charts, fmt
from dlbench.report.represent import chart_where, short_config

# Past this many configurations a finding names the first few and counts the rest.
NAMED_MAX = 3
# Past this many runs (a fleet) the report's fleet section says what is wrong host by host: no per-run diagnosis
# and no per-run headline chart here.
DIAGNOSED_RUNS_MAX = 3
# `analysis.diagnose` causes as the summary titles them; a cause not listed reads as its name.
CAUSE_TITLES = {
    "thermal_throttling": "Thermal throttling", "power_throttling": "Power throttling",
    "hardware_slowdown": "Hardware slowdown", "reduced_power_limit": "Power limit below the default",
    "narrow_pcie_link": "Narrow PCIe link", "shared_gpu": "GPU shared with other processes",
    "cpu_bound": "GPU waiting on the host", "mixed_gpu_models": "Mixed GPU models",
    "compile_off": "torch.compile is faster", "uneven_temperature": "Uneven temperatures",
}
# A diagnosis message opens with its cause ("thermal throttling: ..."); a head this short is left to the title.
SHORT_HEAD = 24
# Causes that are advice rather than a fault of the machine.
TIPS = {"compile_off"}
_FAILED = {"oom": "out of memory", "error": "error", "timeout": "timed out", "skipped": "skipped"}


def _item(tone: str, title: str, text: str, href: str | None = None) -> dict[str, Any]:
    return {"tone": tone, "title": title, "text": text, "href": href}


def _name(result: dict[str, Any], run: dict[str, Any]) -> str:
    """`ResNet-50 v1.5 · AMP FP16 · eager · bs 256`, after the run's name where the report has several."""
    label = f"{fmt.workload_name(result.get('workload', '?'))} \u00b7 {short_config(result)}"
    return f"{run['tag']} \u00b7 {label}" if run["prefix"] else label


def _named(names: list[str]) -> str:
    shown = "; ".join(names[:NAMED_MAX])
    return shown + (f"; and {len(names) - NAMED_MAX} more" if len(names) > NAMED_MAX else "")


def summary_section(documents: list[dict[str, Any]], runs: list[dict[str, Any]],
                    vs_by_doc: list[list[dict[str, Any]]], chart_dir: Path, published: list[Any],
                    fleet: dict[str, Any] | None = None) -> dict[str, Any]:
    """The "At a glance" card's context: `items` (tone, title, text, href) and `figure` (the headline chart and its
    phone-width variant, or None)."""
    items: list[dict[str, Any]] = []
    if fleet:
        items.append(_item("bad" if fleet["flagged"] else "good", "Fleet", fleet["summary"], "#fleet"))
    items += _published_items(documents, runs, vs_by_doc)
    items += _not_run_items(documents, runs)
    if len(documents) <= DIAGNOSED_RUNS_MAX:
        items += _cause_items(documents, runs, published)
    items += _noisy_items(documents, runs)
    items += _scaling_items(documents, runs)
    recorded = any(usable(r.get("telemetry")) for doc in documents for r in doc.get("results") or [])
    if recorded and len(documents) <= DIAGNOSED_RUNS_MAX and not any(item["tone"] in ("bad", "warn")
                                                                     for item in items):
        items.append(_item("good", "Nothing wrong found", "Every configuration ran, steadily, and the GPU telemetry "
                           "shows no throttling or other cause of lost throughput."))
    figure = _chart(documents, runs, vs_by_doc, chart_dir) if len(documents) <= DIAGNOSED_RUNS_MAX else None
    return {"items": items, "figure": figure, "doctor": _doctor_hint(documents, runs, items)}


def _published_items(documents, runs, vs_by_doc) -> list[dict[str, Any]]:
    """Per hardware (runs with the same GPUs together): the range of its ratios to the published median."""
    by_hardware: dict[str, list[tuple[float, str]]] = {}
    runs_of: dict[str, set[str]] = {}
    reasons: list[str] = []
    for doc, run, vs_list in zip(documents, runs, vs_by_doc, strict=True):
        for r, vs in zip(doc.get("results") or [], vs_list, strict=True):
            if r.get("status") != "ok":
                continue
            if vs["ratio"] is not None:
                by_hardware.setdefault(run["gpus"], []).append((vs["ratio"], r, run))
                runs_of.setdefault(run["gpus"], set()).add(run["tag"])
            elif vs["reason"] and vs["rank"] is None:
                reasons.append(vs["reason"].split(" (published: ", 1)[0])
    items = []
    for hardware, found in by_hardware.items():
        ratios = [ratio for ratio, _, _ in found]
        n = len(ratios)
        several = len(runs_of[hardware]) > 1  # then a configuration is named with its run
        across = (f"{n} results from {len(runs_of[hardware])} runs" if several
                  else f"{n} configuration{'s' if n != 1 else ''}")
        span = fmt.ratio(min(ratios)) if n == 1 else f"{fmt.ratio(min(ratios))} to {fmt.ratio(max(ratios))}"
        text = f"{span} the published median for this GPU ({across})."
        below = [f"{_name(r, run) if several else _name(r, {**run, 'prefix': None})} ({fmt.ratio(ratio)})"
                 for ratio, r, run in sorted(found, key=lambda item: item[0]) if ratio < 1.0 - IN_LINE_TOLERANCE]
        if below:
            text += (f" More than {IN_LINE_TOLERANCE:.0%} below it: {_named(below)}.")
            tone = "warn"
        else:
            text += f" All within {IN_LINE_TOLERANCE:.0%} of it or above."
            tone = "good"
        items.append(_item(tone, f"{hardware} against published results", text, "#results"))
    if not by_hardware and reasons:
        unique = list(dict.fromkeys(reasons))
        text = "; ".join(unique) + "."
        cpu = all(str(r.get("device") or "").startswith("cpu") for doc in documents for r in doc.get("results") or []
                  if r.get("status") == "ok")
        if cpu:
            text += (" This was a check that dlbench runs here: on a machine with an NVIDIA GPU, `dlbench run` "
                     "measures the full-size models and sets them against published results.")
        items.append(_item("info", "Not compared with published results", text[0].upper() + text[1:]))
    return items


def _not_run_items(documents, runs) -> list[dict[str, Any]]:
    failed, skipped, total = [], [], 0
    for doc, run in zip(documents, runs, strict=True):
        for r in doc.get("results") or []:
            total += 1
            status = r.get("status")
            if status == "skipped":
                skipped.append(_name(r, run))
            elif status != "ok":
                failed.append(f"{_name(r, run)} ({_FAILED.get(status, status)})")
    items = []
    if failed:
        items.append(_item("bad", f"{len(failed)} of {total} configurations failed", _named(failed) + ".", "#results"))
    if skipped:
        items.append(_item("info", f"{len(skipped)} of {total} configurations skipped", _named(skipped) + ".",
                           "#results"))
    return items


def _cause_items(documents, runs, published) -> list[dict[str, Any]]:
    """`analysis.diagnose`'s warnings, one item per cause: the first configuration's message and how many share it."""
    causes: dict[str, dict[str, Any]] = {}
    measured = 0
    for doc, run in zip(documents, runs, strict=True):
        diagnosis = diagnose(doc, published=published, estimate_fn=lambda *_: None)
        for finding in diagnosis["findings"]:
            if finding["severity"] == "warn":
                causes.setdefault(finding["cause"], {"message": finding["message"], "where": []})
        results = [r for r in doc.get("results") or []]
        for entry, r in zip(diagnosis["results"], results, strict=True):
            if r.get("status") == "ok":
                measured += 1
            for finding in entry.get("findings") or []:
                if finding["severity"] != "warn":
                    continue
                cause = causes.setdefault(finding["cause"], {"message": finding["message"], "where": []})
                cause["where"].append(_name(r, run))
    items = []
    for cause, found in causes.items():
        title = CAUSE_TITLES.get(cause, cause.replace("_", " ").capitalize())
        message = found["message"]
        head, _, rest = message.partition(": ")
        if rest and len(head) <= SHORT_HEAD:  # "thermal throttling: clocks held down ...": the title says it
            message = rest
        where = found["where"]
        if len(where) > 1:
            text = f"{len(where)} of {measured} configurations, first {where[0]}: {message}."
        elif where:
            text = f"{where[0]}: {message}."
        else:
            text = message[0].upper() + message[1:] + "."
        items.append(_item("info" if cause in TIPS else "warn", title, text, "#telemetry"
                           if cause not in TIPS else "#speedups"))
    items.sort(key=lambda item: item["tone"] != "warn")  # faults before tips
    return items


def _noisy_items(documents, runs) -> list[dict[str, Any]]:
    noisy = [f"{_name(r, run)} ({fmt.percent(r['cv'])})" for doc, run in zip(documents, runs, strict=True)
             for r in doc.get("results") or [] if r.get("status") == "ok" and (r.get("cv") or 0) > CV_WARN]
    if not noisy:
        return []
    return [_item("warn", f"{len(noisy)} noisy result{'s' if len(noisy) != 1 else ''}",
                  f"Throughput varied more than {CV_WARN:.0%} between repeats: {_named(noisy)}. Rerun on an idle "
                  "machine, or with more steps.", "#distribution")]


def _scaling_items(documents, runs) -> list[dict[str, Any]]:
    parts = []
    for doc, run in zip(documents, runs, strict=True):
        for series in scaling_series(doc.get("results") or []):
            point = series["points"][-1]
            if point.get("scaling_efficiency") is None:
                continue
            what = (f"{fmt.workload_name(series['workload'])} \u00b7 {fmt.precision_name(series['precision'])} \u00b7 "
                    f"{fmt.compile_name(series['compile'])}")
            if run["prefix"]:
                what = f"{run['tag']} \u00b7 {what}"
            parts.append(f"{fmt.percent(point['scaling_efficiency'])} at {point['world_size']} GPUs ({what})")
    if not parts:
        return []
    return [_item("info", "Multi-GPU scaling", f"Throughput against one GPU \u00d7 the GPU count: {_named(parts)}.",
                  "#scaling")]


def _doctor_hint(documents, runs, items) -> str | None:
    """Where the summary named a cause, the command that explains it with advice."""
    if len(documents) != 1 or not any(item["href"] == "#telemetry" for item in items):
        return None
    return f"dlbench doctor {runs[0]['short']}"


def _chart(documents, runs, vs_by_doc, chart_dir) -> tuple[charts.Chart, charts.Chart] | None:
    """The headline chart, and its variant for a phone; None when nothing is compared with published results."""
    panels = []
    for doc, run, vs_list in zip(documents, runs, vs_by_doc, strict=True):
        rows = [{"label": f"{fmt.workload_name(r['workload'], r.get('seq_len'))} \u00b7 "
                          f"{fmt.precision_name(r['precision'])} \u00b7 {fmt.compile_name(r.get('compile'))}"
                          + (f" \u00b7 {r['world_size']} GPUs" if (r.get("world_size") or 1) > 1 else ""),
                 "ratio": vs["ratio"], "precision": r["precision"]}
                for r, vs in zip(doc.get("results") or [], vs_list, strict=True)
                if r.get("status") == "ok" and vs["ratio"] is not None]
        if rows:
            panels.append({"title": f"{run['prefix']}: {run['gpus']}" if run["prefix"] else None, "rows": rows})
    if not panels:
        return None
    where = chart_where(runs)
    return (charts.vs_published_chart(panels, IN_LINE_TOLERANCE, chart_dir, where=where),
            charts.vs_published_chart(panels, IN_LINE_TOLERANCE, chart_dir, name="vs_published_narrow", where=where,
                                      narrow=True))
