"""The HTML report: `dlbench report --latest --output report/` writes `report/index.html` plus every chart.

`write_report(documents, out_dir)` draws the charts (PNG and SVG files next to the page) and renders
`templates/report.html.j2`; `write_report_files` does the same and says what it wrote (`WrittenReport`). The page is self-contained: each chart is embedded as an SVG data URI, so
`index.html` can be mailed or attached on its own; the files are there for slides and posts.
Figures come from `dlbench.analysis` (ranking, speed-ups, scaling, fleet); this module only arranges them. The fleet
section is `fleet_section`, the telemetry charts `telemetry_section`, and how a fleet's many runs are thinned for
the per-run charts `represent`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dlbench import __version__
from dlbench.analysis.configuration import config_key
from dlbench.analysis.fleet import DEFAULT_ALPHA, DEFAULT_THRESHOLD_PCT
from dlbench.analysis.ranking import (
    canonical_gpu,
    load_published_rows,
    not_comparable_reason,
    rank_among_published,
    result_gpu,
    vs_published_in,
)
from dlbench.analysis.scaling import scaling_series
from dlbench.analysis.speedups import speedups
from dlbench.analysis.stats import CV_WARN, step_time_percentiles
from dlbench.report import charts, fmt
from dlbench.report.fleet_section import fleet_section
from dlbench.report.represent import THINNED, chart_where, short_config, thin
from dlbench.report.summary_section import summary_section
from dlbench.report.telemetry_section import telemetry_figures, telemetry_series  # noqa: F401 (named here too)
from dlbench.schema.metrics import throughput

_short_config = short_config  # the name tests and older callers use

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
    runs = [_run_info(doc, i, len(documents), by_host) for i, doc in enumerate(documents)]
    # Each result against published results, once: the results table and the ranking charts read the same one.
    vs = [[vs_published_in(doc, r, published) for r in doc.get("results") or []] for doc in documents]
    rows = _result_rows(documents, runs, vs)
    # As in the run table: no "vs published" column when no result has a ratio or rank (a CPU or --tiny run);
    # the "Against published results" section says why, once.
    show_vs = any(r["vs_main"] != fmt.DASH for r in rows)
    # The chart sections from the headline down to the diagnostics: how it ranks, what compile and precision buy,
    # how it scales, what the GPUs did, then how steady each step was.
    groups = [g for g in (
        _ranking_group(documents, runs, vs, published, chart_dir),
        _speedup_group(documents, runs, chart_dir),
        _scaling_group(documents, runs, chart_dir),
        _telemetry_group(documents, runs, chart_dir),
        _step_time_group(documents, runs, chart_dir),
    ) if g is not None]
    fleet = fleet_section(documents, chart_dir, threshold_pct=threshold_pct, alpha=alpha)
    if fleet:
        for g in fleet["groups"]:
            g["figure"] = _figure(g.pop("chart"))
    summary = summary_section(documents, runs, vs, chart_dir, published, fleet)
    if summary["figure"] is not None:
        wide, narrow = summary["figure"]
        summary["figure"] = {**_figure(wide), "narrow_uri": _data_uri(narrow), "narrow": narrow}
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
        "columns": _columns(rows),
        "groups": groups,
        "fleet": fleet,
        "summary": summary,
        # A fleet's results (one row per run and configuration) behind a toggle: the fleet section sums them up.
        "collapse_results": len(runs) > FACT_RUNS_MAX and len(rows) > RESULT_ROWS_MAX,
        "config_count": len({config_key(r) for doc in documents for r in doc.get("results") or []}),
        "facts": _facts(runs),
        "environment": _environment_table(documents, runs),
        "methodology": _methodology(documents),
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


def _run_info(doc: dict[str, Any], index: int, count: int, by_host: bool = False) -> dict[str, Any]:
    env = doc.get("environment") or {}
    gpus = [canonical_gpu(g.get("name"), g.get("memory_bytes")) or g.get("name")
            for g in env.get("gpus") or [] if isinstance(g, dict)]
    names = sorted(set(gpus))
    if names:
        gpu_text = ", ".join(f"{gpus.count(n)}\u00d7 {n}" for n in names)
    else:
        cores = f", {env['cpu_count']} cores" if env.get("cpu_count") else ""
        gpu_text = f"CPU only ({env.get('cpu_model') or 'unknown CPU'}{cores})"
    short = str(doc.get("run_id") or f"run{index + 1}")[:8]
    software = " \u00b7 ".join(f"{label} {env[key]}" for label, key in
                               (("PyTorch", "torch_version"), ("CUDA", "cuda_version")) if env.get(key))
    return {"run_id": doc.get("run_id"), "short": short, "created_at": doc.get("created_at"),
            "hostname": env.get("hostname"), "gpus": gpu_text, "software": software or fmt.DASH,
            "tag": env["hostname"] if by_host else short, "by_host": by_host,
            "prefix": (env["hostname"] if by_host else f"run {short}") if count > 1 else None}


# Past this many runs the header sums the runs up instead of giving each its own three cards (a fleet of 64).
FACT_RUNS_MAX = 3
RESULT_ROWS_MAX = 16  # more results than this from more than FACT_RUNS_MAX runs: the results table is folded
FEW = 3  # a value at most this many runs have is named with those runs: the odd ones out of a fleet


def _facts(runs: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The header's cards: per run its hardware, software, host and time; for many runs, each of these summed up."""
    def when(run: dict[str, Any]) -> str:
        return (run["created_at"] or fmt.DASH)[:16].replace("T", " ")

    if len(runs) <= FACT_RUNS_MAX:
        return [card for run in runs for card in (
            {"k": f"Run {run['short']}", "v": run["gpus"]}, {"k": "Software", "v": run["software"]},
            {"k": "Host \u00b7 created (UTC)", "v": f"{run['hostname'] or fmt.DASH} \u00b7 {when(run)}"})]
    times = sorted(when(r) for r in runs if r["created_at"])
    hosts = sorted({r["hostname"] for r in runs if r["hostname"]}, key=fmt.natural_key)  # "first, …, last"
    shown = ", ".join(hosts) if len(hosts) <= 3 else f"{hosts[0]}, {hosts[1]}, \u2026 {hosts[-1]}"
    return [
        {"k": "Runs \u00b7 created (UTC)",
         "v": f"{len(runs)} runs \u00b7 " + (f"{times[0]} \u2013 {times[-1]}" if times else fmt.DASH)},
        {"k": "Hosts", "v": f"{len(hosts)} host{'s' if len(hosts) != 1 else ''}: {shown}" if hosts else fmt.DASH},
        {"k": "Hardware", "v": _counted(r["gpus"] for r in runs)},
        {"k": "Software", "v": _counted(r["software"] for r in runs)},
    ]


def _counted(values, tags: list[str] | None = None) -> str:
    """`A (60 runs), B (4 runs)`, most common first; a value every run shares stands alone, and one that at most
    `FEW` runs have names them when `tags` (one per value) are given: `550.54.15 (1 run: node08)`."""
    from collections import Counter

    values = list(values)
    counts = Counter(values).most_common()
    if len(counts) == 1:
        return counts[0][0]
    parts = []
    for v, n in counts:
        who = [t for t, x in zip(tags, values, strict=True) if x == v] if tags and n <= FEW else []
        parts.append(f"{v} ({n} run{'s' if n != 1 else ''}{': ' + ', '.join(who) if who else ''})")
    return ", ".join(parts)


def _result_rows(documents, runs, vs_by_doc) -> list[dict[str, Any]]:
    """The results table; `vs_by_doc[i][j]` is `vs_published_in` of document i's result j."""
    rows = []
    for doc, run, vs_by_result in zip(documents, runs, vs_by_doc, strict=True):
        for r, vs in zip(doc.get("results") or [], vs_by_result, strict=True):
            st = r.get("step_time_s") or {}
            details = [fmt.precision_name(r.get("precision", "?")), fmt.compile_name(r.get("compile")),
                       f"batch {fmt.plain(r.get('batch_size'))}"]
            if (r.get("world_size") or 1) > 1:
                details.append(f"{r['world_size']} GPUs")
            if (r.get("flavour") or "full") != "full":
                details.append(f"{r['flavour']} flavour")
            rows.append({
                "run": run["tag"], "run_id": run["short"] if run["by_host"] else "",
                "workload": fmt.workload_name(r.get("workload", "?"), r.get("seq_len")),
                "details": " \u00b7 ".join(details),
                "throughput": fmt.throughput(throughput(r)), "unit": f"{fmt.unit_of(r)}/s",
                "cv": fmt.percent(r.get("cv")), "noisy": (r.get("cv") or 0) > CV_WARN,
                "step_ms": fmt.ms(st.get("median")),
                "step_range_ms": f"{fmt.ms(st.get('p5'))}\u2013{fmt.ms(st.get('p95'))}" if st.get("p5") else "",
                "memory": fmt.gigabytes(r.get("peak_memory_bytes")),
                "tflops": fmt.tflops(r.get("achieved_flops_per_s")),
                "vs_main": fmt.vs_published_short(vs),
                # The list of what is published instead belongs to the ranking notes, not to every table cell.
                "vs_title": _vs_note(vs).split(" (published: ", 1)[0] if r.get("status") == "ok" else "",
                # Under the ratio only its rank: the sentence ("of published median (45 results); #4 of 10 GPUs")
                # took four lines in every row; it stays in the cell's tooltip and the ranking captions.
                "vs_note": _vs_short_note(vs) if r.get("status") == "ok" else "",
                "vs_good": (vs["ratio"] or 0) >= 0.95,
                "status": r.get("status") or "?", "status_text": STATUS_TEXT.get(r.get("status"), r.get("status") or "?"),
                "error": r.get("error") or "", "sources": vs["sources"],
            })
    return rows


# How a status reads on the page (the stored names are the schema's, `dlbench.schema.STATUSES`).
STATUS_TEXT = {"oom": "out of memory", "timeout": "timed out"}
# The results table's figure columns after the throughput, each left out when no result has a value for it (a CPU
# run has no peak memory, a run of one repeat no CV): (row key, heading).
_FIGURE_COLUMNS = (("cv", "CV"), ("step", "Step ms"), ("memory", "Peak memory"), ("tflops", "TFLOP/s"))


def _columns(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    value = {"step": "step_ms"}
    return [{"key": key, "title": title} for key, title in _FIGURE_COLUMNS
            if any(r[value.get(key, key)] != fmt.DASH for r in rows if r["status"] == "ok")]


def _vs_short_note(vs: dict[str, Any]) -> str:
    """What stands under the ratio in the results table: its rank among published GPUs."""
    if vs["ratio"] is not None:
        return f"#{vs['rank']} of {vs['rank_of']} GPUs" if vs["rank"] is not None else ""
    return _vs_note(vs).split(" (published: ", 1)[0]


def _vs_note(vs: dict[str, Any]) -> str:
    if vs["ratio"] is not None:
        n = vs["published_count"]
        note = f"of published median ({n} result{'s' if n != 1 else ''}); #{vs['rank']} of {vs['rank_of']} GPUs"
        return note
    if vs["rank"] is not None:
        return f"among published GPUs; {vs['reason']}" if vs["reason"] else "among published GPUs"
    return vs["reason"] or ""


def _data_uri(chart: charts.Chart) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(chart.svg.read_bytes()).decode("ascii")


def _figure(chart: charts.Chart, caption: str | None = None) -> dict[str, Any]:
    return {"chart": chart, "caption": caption or chart.caption, "data_uri": _data_uri(chart),
            "png_href": f"charts/{chart.png.name}", "svg_href": f"charts/{chart.svg.name}"}


def _group(key: str, title: str, intro: str, figures: list[dict[str, Any]], notes: list[str] | None = None):
    return {"id": key, "title": title, "intro": intro, "figures": figures, "notes": notes or []}


def _ranking_group(documents, runs, vs_by_doc, published, chart_dir) -> dict[str, Any] | None:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for doc, run, vs_by_result in zip(documents, runs, vs_by_doc, strict=True):
        for r, vs in zip(doc.get("results") or [], vs_by_result, strict=True):
            gpu = result_gpu(doc, r) or {}
            if not_comparable_reason(r, gpu.get("name")):
                continue
            gpu_label = canonical_gpu(gpu.get("name"), gpu.get("memory_bytes")) or gpu.get("name")
            key = (r["workload"], r["precision"], r.get("seq_len"), int(r.get("world_size") or 1))
            name = f"{run['prefix'] or 'this run'}: {gpu_label} \u00b7 {fmt.compile_name(r.get('compile'))}"
            groups.setdefault(key, []).append({"label": f"\u25b6 {name}", "name": name, "unit": fmt.unit_of(r),
                                               "samples_per_s": throughput(r), "key": (config_key(r), gpu_label),
                                               "vs": vs})
    if not groups:  # nothing comparable (a CPU or --tiny run): no section; "At a glance" says why
        return None
    figures, notes = [], []
    for (workload, precision, seq_len, n), every in sorted(groups.items(), key=lambda kv: str(kv[0])):
        thinned = thin(every, lambda e: e["key"])
        entries = [{**e, "label": f"{e['label']} ({role})", "name": f"{e['name']} ({role})"} if role else e
                   for e, role in thinned]
        what = (f"{fmt.workload_name(workload, seq_len)} \u00b7 {fmt.precision_name(precision)} \u00b7 "
                f"{n} GPU{'s' if n > 1 else ''}")
        ranked = rank_among_published(entries, workload, precision, seq_len, n, published)
        if not ranked:
            notes.append(f"{what}: nothing to rank against: {entries[0]['vs']['reason']}.")
            continue
        sources = sorted({s for r in ranked if not r["is_this_run"] for s in r["sources"]})
        name = f"ranking_{workload}_{precision}_{seq_len or 'na'}_{n}gpu"
        # A report of several runs: its bars are "these runs'", each labelled with its run (or host).
        ours = "this run" if len(documents) == 1 else "these runs"
        whose = "this run's GPU" if len(documents) == 1 else "these runs' GPUs"
        subtitle = (f"Grey: median per GPU of published results ({'; '.join(sources)}), darker for {whose}. "
                    "Batch sizes differ by source.")
        same_gpu = {e["vs"]["gpu"] for e in entries if e["vs"]["gpu"]}
        chart = charts.ranking_chart(ranked, what, entries[0]["unit"], subtitle, chart_dir, name, num_gpus=n,
                                     same_gpu=same_gpu, ours=ours)
        caption = "; ".join(f"{e['name']}: {fmt.vs_published_short(e['vs'])} {_vs_note(e['vs'])}" for e in entries)
        if len(entries) < len(every):
            caption += f". {THINNED}"
        figures.append(_figure(chart, caption))
    ours = "this run's results" if len(documents) == 1 else "the results of these runs"
    return _group("ranking", "Against published results",
                  "Each chart ranks published GPUs by training throughput for one workload, sequence length, "
                  f"precision and GPU count, with {ours} highlighted. Only like is compared with like.",
                  figures, notes)


def _speedup_group(documents, runs, chart_dir) -> dict[str, Any] | None:
    entries, prefix = [], {}
    for doc, run in zip(documents, runs, strict=True):
        for e in speedups(doc.get("results") or []):
            if run["prefix"]:
                prefix[len(entries)] = run["prefix"]
            entries.append(e)
    intro = "What torch.compile and mixed precision buy on this hardware, measured within the same run."
    if not entries:  # no pair that differs in compile mode or precision alone: no section
        return None
    return _group("speedups", "Speed-ups", intro, [_figure(charts.speedup_chart(entries, chart_dir, prefix=prefix, where=chart_where(runs)))])


def _step_time_group(documents, runs, chart_dir) -> dict[str, Any] | None:
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
    return _group("distribution", "Step-time distribution",
                  "How steady the measurement was: a tight box means every step took about as long.",
                  [_figure(chart, f"{chart.caption} {THINNED}") if thinned else _figure(chart)])


def _scaling_group(documents, runs, chart_dir) -> dict[str, Any] | None:
    series = [s for doc in documents for s in scaling_series(doc.get("results") or []) if len(s["points"]) > 1]
    if not series:
        return None
    units, unit = charts.scaling_units(series)
    return _group("scaling", f"Multi-{unit} scaling",
                  f"Data-parallel throughput as {units} are added, within each run.",
                  [_figure(charts.scaling_chart(series, chart_dir, where=chart_where(runs)))])



def _telemetry_group(documents, runs, chart_dir) -> dict[str, Any] | None:
    figures = telemetry_figures(documents, runs, chart_dir)
    if figures is None:
        return None
    return _group("telemetry", "GPU telemetry", "Power, temperature and clock while the measured steps ran: "
                  "falling clocks at a power or thermal limit explain lower throughput.",
                  [_figure(chart, caption) for chart, caption in figures])


_ENV_FIELDS = (
    ("Host", "hostname"), ("GPUs", None), ("NVIDIA driver", "driver_version"), ("CUDA", "cuda_version"),
    ("cuDNN", "cudnn_version"), ("NCCL", "nccl_version"), ("PyTorch", "torch_version"), ("Python", "python_version"),
    ("OS", "os"), ("CPU", "cpu_model"), ("CPU cores", "cpu_count"), ("Memory", "memory_bytes"),
    ("git commit", "git_commit"),
)
_ROCM_ENV_FIELDS = (("MIOpen", "miopen_version"), ("ROCm (HIP)", "hip_version"))


def _environment_table(documents, runs) -> dict[str, Any]:
    """Rows of (label, one value per run) for the environment table."""
    rows = [("Run", [r["run_id"] or fmt.DASH for r in runs]), ("Created", [r["created_at"] or fmt.DASH for r in runs]),
            ("dlbench", [fmt.plain(d.get("dlbench_version")) for d in documents])]
    for label, key in _ENV_FIELDS:
        values = []
        for doc, run in zip(documents, runs, strict=True):
            env = doc.get("environment") or {}
            if key is None:
                values.append(run["gpus"])
            elif key == "memory_bytes":
                values.append(fmt.gigabytes(env.get(key)))
            else:
                values.append(fmt.plain(env.get(key)))
        rows.append((label, values))
    from dlbench.analysis.compare import power_limits_w

    limits = [", ".join(f"{w:g} W" for w in power_limits_w(doc)) or fmt.DASH for doc in documents]
    if any(v != fmt.DASH for v in limits):
        rows.insert(5, ("GPU power limit", limits))
    for label, key in _ROCM_ENV_FIELDS:  # only where some run was on a ROCm build of torch
        values = [fmt.plain((doc.get("environment") or {}).get(key)) for doc in documents]
        if any(v != fmt.DASH for v in values):
            rows.insert([r[0] for r in rows].index("cuDNN") + 1, (label, values))
    # A fact no run recorded (a CPU run's NVIDIA driver, a ROCm run's cuDNN, a run outside git) is a row of dashes:
    # left out.
    rows = [(label, values) for label, values in rows if any(v != fmt.DASH for v in values)]
    if len(runs) <= FACT_RUNS_MAX:
        return {"headers": [r["short"] for r in runs], "rows": rows}
    # Many runs (a fleet): one column, each value once with the runs that have it; a value few runs have names them.
    tags = [r["tag"] for r in runs]
    unique = {"Run", "Host"}
    return {"headers": [f"{len(runs)} runs"],
            "rows": [(label, [f"{len(set(values))} different" if label in unique else _counted(values, tags)])
                     for label, values in rows]}


# How each kind of device is timed (docs/methodology.md, "Clocks"; measurement/clocks.py).
_CLOCKS = {
    "cuda": "CUDA events at every step boundary, the GPU synchronised before the first and after the last step "
            "of each repeat",
    "mps": "the MPS device synchronised before every time.perf_counter() read",
    "cpu": "time.perf_counter() at every step boundary",
}


def _methodology(documents) -> list[tuple[str, str]]:
    """What was timed and how, from the documents' own numbers (warm-up and measured step counts, devices)."""
    warmups, steps, repeats, devices = set(), set(), set(), set()
    for doc in documents:
        for r in doc.get("results") or []:
            if r.get("status") != "ok":
                continue
            warmups.add(len(r.get("warmup_step_times_s") or []))
            reps = r.get("repeats") or []
            repeats.add(len(reps))
            steps.update(len(rep.get("step_times_s") or []) for rep in reps)
            devices.add(str(r.get("device") or "").split(":")[0])

    def counts(values: set[int], noun: str) -> str:
        """`10 steps`, `1 step`, `2 or 3 repeats`: the noun agrees with the largest count."""
        if not values:
            return f"{fmt.DASH} {noun}s"
        return " or ".join(str(v) for v in sorted(values)) + f" {noun}{'' if max(values) == 1 else 's'}"

    kinds = [kind for kind in _CLOCKS if kind in devices]
    clocks = "; ".join(_CLOCKS[kind] + (f" ({kind.upper()} runs)" if len(kinds) > 1 else "") for kind in kinds)
    return [
        ("Data", "Synthetic random inputs drawn once from a fixed seed and moved to the device before timing "
                 "starts; data loading is not measured."),
        ("Warm-up", f"{counts(warmups, 'step')} per configuration, timed but excluded from every figure."),
        ("Measurement", f"{counts(repeats, 'repeat')} of {counts(steps, 'step')}, timed with "
                        f"{clocks or 'the device clock'}; each configuration runs in its own process."),
        ("Throughput", "Per repeat: samples / sum of its step times (samples = batch size \u00d7 GPUs). Reported: "
                       "the mean over repeats; CV is their coefficient of variation (warning above 5%)."),
        ("Compilation", "torch.compile time is measured separately and never counted in throughput."),
        ("Published results", "Median per GPU of published figures with the same workload, sequence length, "
                              "precision and GPU count; each source is named under the chart."),
    ]
