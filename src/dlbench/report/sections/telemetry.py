"""The HTML report's telemetry section: power, temperature and clock charts from each result's telemetry block.

`telemetry_figures(documents, runs, chart_dir)` draws one chart of the one-GPU configurations together (a line
each) and one per data-parallel configuration (a line per GPU, at most `TELEMETRY_GPU_LINES_MAX`), at most
`TELEMETRY_GROUP_CHARTS_MAX` of those, the most throttled then hottest first, the last caption naming the rest.
It returns (chart, caption) pairs; `telemetry_group` makes them the page's section. Throttle kinds and GPU names are `analysis.energy`'s.
"""

from __future__ import annotations

from typing import Any

from dlbench.analysis.configuration import config_key
from dlbench.analysis.energy import THROTTLED_SHARE, gpu_label, gpus_of, rank0_only, throttle_kind
from dlbench.report import charts, fmt
from dlbench.report.represent import THINNED, chart_where, short_config, thin
from dlbench.report.sections.figures import figure, group
from dlbench.schema.metrics import throughput


def telemetry_series(telemetry: Any) -> dict[str, list] | None:
    """Column series `{"t_s": [...], "power_w": [...], ...}` from a result's `telemetry` block, or None.

    The NVML sampler writes columns under `series`; a list of per-reading dicts under `samples` is read too.
    A block without readings (no NVML, a CPU run: `available` false) gives None.
    """
    if not isinstance(telemetry, dict) or telemetry.get("available") is False:
        return None
    keys = ["t_s"] + [k for k, _, _ in charts.TELEMETRY_PANELS]
    samples = telemetry.get("samples")
    if isinstance(samples, list) and samples and isinstance(samples[0], dict):
        cols = {k: [s.get(k) for s in samples] for k in keys}
    elif isinstance(telemetry.get("series"), dict):
        cols = {k: list(telemetry["series"].get(k) or []) for k in keys}
    else:
        return None
    if not cols["t_s"] or not any(any(v is not None for v in cols[k]) for k in keys[1:]):
        return None
    t0 = cols["t_s"][0]
    cols["t_s"] = [t - t0 for t in cols["t_s"]]
    return {k: (v if any(x is not None for x in v) else []) for k, v in cols.items()}


# Data-parallel configurations get a telemetry chart each (one line per GPU); past this many, the ones whose GPUs
# throttled most, then ran hottest, are drawn and the caption names the rest.
TELEMETRY_GROUP_CHARTS_MAX = 4
# Past this many GPUs in one configuration, its chart draws the throttled and hottest ones (a 64-GPU run's 64
# lines would be as unreadable as one line per GPU of every configuration on one chart).
TELEMETRY_GPU_LINES_MAX = 16


def telemetry_group(documents, runs, chart_dir) -> dict[str, Any] | None:
    figures = telemetry_figures(documents, runs, chart_dir)
    if figures is None:
        return None
    return group("telemetry", "GPU telemetry", "Power, temperature and clock while the measured steps ran: "
                 "falling clocks at a power or thermal limit explain lower throughput.",
                 [figure(chart, caption) for chart, caption in figures])


def telemetry_figures(documents, runs, chart_dir) -> list[tuple[charts.Chart, str]] | None:
    """(chart, caption) pairs: one chart of the one-GPU configurations together (a line each), then one per
    data-parallel configuration (a line per GPU, from each GPU's own series); None when nothing was recorded."""
    recorded = []
    for doc, run in zip(documents, runs, strict=True):
        for r in doc.get("results") or []:
            gpus = gpus_of(r.get("telemetry"))
            series = [(block, telemetry_series(block)) for block in gpus or [r.get("telemetry")]]
            if any(ts for _, ts in series):
                recorded.append({"run": run, "result": r, "series": series, "group": bool(gpus),
                                 "samples_per_s": throughput(r) or 0.0, "key": config_key(r)})
    if not recorded:
        return None
    figures = []
    singles = [m for m in recorded if not m["group"]]
    if singles:
        kept = thin(singles, lambda m: m["key"])
        traces = [{"label": _telemetry_label(m, role), "series": series, "power_limit_w": block.get("power_limit_w")}
                  for m, role in kept for block, series in m["series"] if series]
        drawn = [block for m, _ in kept for block, series in m["series"] if series]
        chart = charts.telemetry_chart(traces, chart_dir, where=chart_where(runs), note=thinning_note(drawn))
        figures.append((chart, f"{chart.caption} {THINNED}" if len(kept) < len(singles) else chart.caption))
    groups = [m for m in recorded if m["group"]]
    if groups:
        kept = thin(groups, lambda m: m["key"])
        # Throttled first (by share of samples), then hottest: the charts worth a look when not all fit.
        kept.sort(key=lambda item: _severity(item[0]["result"]["telemetry"]))
        shown, left_out = kept[:TELEMETRY_GROUP_CHARTS_MAX], kept[TELEMETRY_GROUP_CHARTS_MAX:]
        for i, (m, role) in enumerate(shown):
            chart = _gpu_telemetry_chart(m, role, chart_dir, f"telemetry_{i + 1}")
            caption = chart.caption
            if i == len(shown) - 1 and left_out:
                caption += " " + _left_out_caption(len(kept), [_telemetry_label(lm, lrole) for lm, lrole in left_out])
            if i == len(shown) - 1 and len(kept) < len(groups):
                caption += " " + THINNED
            figures.append((chart, caption))
    return figures


def _telemetry_label(m: dict[str, Any], role: str | None) -> str:
    """A configuration's name on the telemetry charts: the run (of several) or the workload, then the rest."""
    run, r = m["run"], m["result"]
    label = short_config(r)
    label = f"{run['tag']} \u00b7 {label}" if run["prefix"] else f"{fmt.workload_name(r['workload'])} \u00b7 {label}"
    if role:
        label += f" ({role})"
    if rank0_only(r.get("telemetry"), r.get("world_size")):  # older multi-GPU results: one GPU's readings
        label += " \u00b7 rank 0's GPU"
    return label


def _gpu_telemetry_chart(m: dict[str, Any], role: str | None, chart_dir, name: str) -> charts.Chart:
    """A data-parallel configuration's chart: a line per GPU (the throttled and hottest, past the line limit)."""
    run = m["run"]
    lines = [(i, block, series) for i, (block, series) in enumerate(m["series"]) if series]
    # A throttle kind every GPU shares (a power cap at full load) is said once, in the caption, not on each line.
    kinds = {i: throttle_kind(block) for i, block, _ in lines}
    common = [k for k in kinds[lines[0][0]] if all(k in ks for ks in kinds.values())]
    notes = [f"Every GPU throttled ({', '.join(common)}) in at least {THROTTLED_SHARE:.0%} of its samples."
             ] if common else []
    if len(lines) > TELEMETRY_GPU_LINES_MAX:
        drawn = {i for i, _, _ in sorted(lines, key=lambda line: (_severity(line[1]), line[0]))[
            :TELEMETRY_GPU_LINES_MAX]}
        notes.append(f"{TELEMETRY_GPU_LINES_MAX} of its {len(lines)} GPUs are drawn: those that throttled most, then "
                     "ran hottest; `dlbench results show` lists every GPU's figures.")
        lines = [line for line in lines if line[0] in drawn]
    traces = []
    for i, block, series in lines:
        label = gpu_label(block, home_host=run.get("hostname"), position=i)
        own = [k for k in kinds[i] if k not in common]
        if own:
            label += f" \u00b7 throttled ({', '.join(own)})"
        traces.append({"label": label, "series": series, "power_limit_w": block.get("power_limit_w")})
    subject = _telemetry_label(m, role)
    if run.get("gpus") and not run.get("prefix"):
        subject += f" \u00b7 {run['gpus']}"
    thinning = thinning_note([block for _, block, _ in lines])
    if thinning:
        notes.append(thinning)
    return charts.telemetry_chart(traces, chart_dir, name=name, subject=subject, note=" ".join(notes) or None)


def thinning_note(blocks: list[dict[str, Any]]) -> str | None:
    """`Every 4th of 2,400 readings drawn; summaries use all.` when a drawn series was thinned on storing
    (its block's `series_thinning`), else None; ranges where the drawn series were thinned differently."""
    cuts = [t for t in (b.get("series_thinning") for b in blocks if isinstance(b, dict))
            if isinstance(t, dict) and isinstance(t.get("every"), int) and t["every"] > 1
            and isinstance(t.get("readings"), int)]
    if not cuts:
        return None
    every = sorted({t["every"] for t in cuts})
    readings = sorted({t["readings"] for t in cuts})
    kth = _ordinal(every[0]) if len(every) == 1 else f"{_ordinal(every[0])} to {_ordinal(every[-1])}"
    of = f"{readings[0]:,}" if len(readings) == 1 else f"{readings[0]:,}\u2013{readings[-1]:,}"
    some = "" if len(cuts) == len(blocks) else f"{len(cuts)} of the {len(blocks)} series: "
    text = f"every {kth} of {of} readings drawn; summaries use all."
    return (some + text) if some else text[0].upper() + text[1:]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _severity(telemetry: dict[str, Any]) -> tuple[float, float]:
    """Sort key, worst first: the larger share of samples throttled, then the higher peak temperature."""
    return (-(telemetry.get("throttle_share") or 0.0), -(telemetry.get("temperature_max_c") or 0.0))


def _left_out_caption(count: int, labels: list[str]) -> str:
    """What the data-parallel telemetry charts leave out, by name (the first few)."""
    named = "; ".join(labels[:LEFT_OUT_NAMED])
    more = f"; and {len(labels) - LEFT_OUT_NAMED} more" if len(labels) > LEFT_OUT_NAMED else ""
    return (f"Of {count} data-parallel configurations, the {count - len(labels)} whose GPUs throttled most, then "
            f"ran hottest, are drawn; not drawn: {named}{more}. `dlbench results show` lists every GPU's figures.")


LEFT_OUT_NAMED = 6
