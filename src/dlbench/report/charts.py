"""Charts for `dlbench report` (matplotlib, Agg, no pyplot state): rendering only.

Every function takes figures already computed in `dlbench.analysis` (or raw step times and telemetry
series straight from the result document), draws one chart and saves it as PNG and SVG in `out_dir`.
It returns a `Chart` naming both files. Colours are the Okabe-Ito palette, which stays distinguishable
for the common forms of colour blindness; this run's bars are also set apart by bold labels, not colour alone.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlbench.report import fmt

# Okabe & Ito (2008), "Color Universal Design": https://jfly.uni-koeln.de/color/
OKABE_ITO = {
    "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442",
    "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7", "black": "#000000",
}
# Lines and markers: Okabe-Ito without its yellow, which on white (contrast 1.3:1) all but disappears as a line.
SERIES = [OKABE_ITO[k] for k in ("blue", "orange", "green", "vermillion", "purple", "sky", "black")]
PUBLISHED_COLOUR = "#AEB8C2"  # neutral grey-blue: the field; this run is vermillion on top of it
SAME_GPU_COLOUR = "#52606D"  # darker slate: what others published for the GPU this run used
THIS_RUN_COLOUR = OKABE_ITO["vermillion"]
TEXT = "#1F2933"
MUTED = "#616E7C"
# WCAG 2 AA: body-size text needs a contrast of 4.5:1 with its background (https://www.w3.org/TR/WCAG21/#contrast-minimum).
TEXT_CONTRAST = 4.5


def _rgb(colour: str) -> tuple[float, float, float]:
    """`#RRGGBB` as three fractions (the palette is hex: no matplotlib import for it)."""
    h = colour.lstrip("#")
    return tuple(int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))  # type: ignore[return-value]


def contrast(colour: str, background: str = "#FFFFFF") -> float:
    """WCAG 2 contrast ratio of two `#RRGGBB` colours (1 to 21)."""
    def luminance(c: str) -> float:
        r, g, b = (x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in _rgb(c))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    hi, lo = sorted((luminance(colour), luminance(background)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def text_colour(colour: str) -> str:
    """`colour` for text on white: itself where it is dark enough, else darkened (towards black, the hue kept) to
    `TEXT_CONTRAST`. Okabe-Ito's orange (2.2:1) and vermillion (3.9:1) are fine for bars and dots, too light for
    a label beside them."""
    rgb = _rgb(colour)
    for step in range(101):
        shade = "#" + "".join(f"{round(x * (1 - step / 100) * 255):02X}" for x in rgb)
        if contrast(shade) >= TEXT_CONTRAST:
            return shade
    return TEXT


THIS_RUN_TEXT = text_colour(THIS_RUN_COLOUR)

_STYLE = {
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 13,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.titlepad": 22,
    "axes.labelsize": 10,
    "axes.labelcolor": TEXT,
    "axes.edgecolor": "#CBD2D9",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#E4E7EB",
    "grid.linewidth": 0.8,
    "axes.axisbelow": True,
    "xtick.color": MUTED,
    "ytick.color": TEXT,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.frameon": False,
    "legend.fontsize": 9,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "svg.fonttype": "path",  # text as outlines: the SVG looks the same without the font installed
    "svg.hashsalt": "dlbench",  # stable element ids, so re-rendering gives identical files
    "text.parse_math": False,  # host names and error messages are text: "$x$" must not become mathtext
}
# File stems this module writes: `html.write_report` removes earlier ones it did not rewrite.
CHART_STEMS = ("fleet_*", "ranking_*", "speedups", "step_times", "scaling", "telemetry", "telemetry_*",
               "vs_published", "vs_published_narrow")
WIDTH_IN = 9.0
DPI = 150
# Characters of a 13 pt bold title that fit across WIDTH_IN (DejaVu Sans Bold averages about 8.5 pt a character).
TITLE_CHARS = 72
SUBTITLE_CHAR_PT = 5.6  # a generous average width of a 9 pt DejaVu Sans character


@dataclass(frozen=True)
class Chart:
    """One rendered chart: a stable `name` (file stem), title, caption and its PNG and SVG files."""

    name: str
    title: str
    caption: str
    png: Path
    svg: Path
    alt: str = ""  # what the chart shows, in words, for a reader who cannot see it (the page's alt text)


@contextmanager
def _figure(height_in: float, nrows: int = 1, ncols: int = 1, width_in: float = WIDTH_IN, **kwargs: Any):
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(width_in, height_in), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False, **kwargs)
        yield fig, axes


def _save(fig, out_dir: Path, name: str, title: str, caption: str, alt: str = "") -> Chart:
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg = out_dir / f"{name}.png", out_dir / f"{name}.svg"
    fig.savefig(png, dpi=DPI)
    fig.savefig(svg, metadata={"Date": None})
    return Chart(name=name, title=title, caption=caption, png=png, svg=svg, alt=alt or title)


def _listed(parts: list[str], most: int = 12) -> str:
    """Items of an alt text, the first `most` of them and a count of the rest."""
    shown = "; ".join(parts[:most])
    return shown + (f"; and {len(parts) - most} more" if len(parts) > most else "")


def _suptitle(fig, title: str) -> None:
    """Bold title at the figure's left edge, wrapped so that a long hardware name is never cut off."""
    import textwrap

    chars = int(TITLE_CHARS * fig.get_figwidth() / WIDTH_IN)
    fig.suptitle(textwrap.fill(title, chars), x=0.01, ha="left", fontweight="bold", fontsize=13, color=TEXT)


def _titles(fig, ax, title: str, subtitle: str | None = None) -> None:
    """Bold title at the figure's left edge; the subtitle, wrapped, above the plot in muted grey."""
    import textwrap

    _suptitle(fig, title)
    if subtitle:
        # The subtitle starts at the plot's left edge, right of the tick labels: wrap it to the plot's width
        # (known once the layout has run), so that long labels never push it off the figure.
        fig.draw_without_rendering()
        width_pt = ax.get_position().width * WIDTH_IN * 72
        chars = max(30, int(width_pt / SUBTITLE_CHAR_PT))
        ax.set_title(textwrap.fill(subtitle, chars), loc="left", fontsize=9, color=MUTED, fontweight="normal",
                     pad=8)


def _on(where: str) -> str:
    """Charts are shared on their own, so their titles say which hardware they show."""
    return f" \u00b7 {where}" if where else ""


def _thousands():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: f"{v:,.0f}")


def ranking_chart(rows: list[dict[str, Any]], title: str, unit: str, subtitle: str, out_dir: Path,
                  name: str, num_gpus: int = 1, same_gpu: frozenset[str] | set[str] = frozenset(),
                  ours: str = "this run") -> Chart:
    """Horizontal bars of samples/s, fastest on top; rows with `is_this_run` highlighted (AIME/Lambda style).

    `rows` come from `analysis.ranking.rank_among_published`: `label`, `samples_per_s`, `is_this_run`.
    Published bars whose label is in `same_gpu` (the GPU this run used) are drawn darker, so the gap between
    this run and what others measured on the same GPU shows at a glance. `ours` names the highlighted bars in the
    legend (`this run`, or the runs of a report of several).
    """
    n = len(rows)
    with _figure(1.3 + 0.34 * n) as (fig, axes):
        ax = axes[0][0]
        ordered = list(reversed(rows))  # barh draws bottom-up; fastest goes on top
        ys = range(n)
        values = [r["samples_per_s"] for r in ordered]
        colours = [THIS_RUN_COLOUR if r["is_this_run"] else SAME_GPU_COLOUR if r["label"] in same_gpu
                   else PUBLISHED_COLOUR for r in ordered]
        ax.barh(ys, values, color=colours, height=0.72)
        ax.set_yticks(list(ys), [r["label"] for r in ordered])
        for tick, r in zip(ax.get_yticklabels(), ordered, strict=True):
            if r["is_this_run"]:
                tick.set_fontweight("bold")
                tick.set_color(THIS_RUN_TEXT)
        top = max(values) if values else 1.0
        for y, r in zip(ys, ordered, strict=True):
            ax.text(r["samples_per_s"] + top * 0.01, y, fmt.throughput(r["samples_per_s"], top), va="center",
                    fontsize=8.5, color=THIS_RUN_TEXT if r["is_this_run"] else TEXT,
                    fontweight="bold" if r["is_this_run"] else "normal")
        ax.set_xlim(0, top * 1.12)
        ax.set_ylim(-0.6, n - 0.4)
        ax.grid(axis="y", visible=False)
        ax.xaxis.set_major_formatter(_thousands())
        total = f", total of {num_gpus} GPUs" if num_gpus > 1 else ""
        ax.set_xlabel(f"training throughput ({unit}/s{total}, higher is better)")
        _ranking_legend(ax, any(r["label"] in same_gpu and not r["is_this_run"] for r in rows), ours)
        _titles(fig, ax, title, subtitle)
        alt = (f"Bar chart of training throughput in {unit}/s, fastest first: {title}. " + _listed(
            [f"{r['label'].lstrip(chr(0x25b6) + ' ')} {fmt.throughput(r['samples_per_s'])}" for r in rows], 20) + ".")
        return _save(fig, out_dir, name, title, subtitle, alt)


# The headline chart's phone-width variant: about the width of a phone's page, so its text reads at its own size.
NARROW_WIDTH_IN = 4.4


def vs_published_chart(panels: list[dict[str, Any]], tolerance: float, out_dir: Path, name: str = "vs_published",
                       where: str = "", narrow: bool = False) -> Chart:
    """The report's headline: each configuration's throughput as a multiple of the published median for its GPU,
    one bar each (from 0), a line at 1.0\u00d7 (as published) and the band within `tolerance` of it shaded.

    `panels`: `[{"title": str | None, "rows": [{"label": str, "ratio": float, "precision": str}]}]`, one panel per
    run where a report has several (they share the axis); the ratios are `analysis.ranking.vs_published`'s.
    `narrow` draws it `NARROW_WIDTH_IN` wide for a phone, each configuration's name above its bar instead of
    beside it (the names would take half the width).
    """
    n_rows = sum(len(p["rows"]) for p in panels)
    title = f"Against published results{_on(where)}"
    caption = ("Each bar: throughput divided by the median of published results for the same GPU, workload, "
               "sequence length, precision and GPU count; 1.0\u00d7 is as published, the shaded band within "
               f"{tolerance:.0%} of it. Batch sizes and software versions differ by source.")
    ratios = [r["ratio"] for p in panels for r in p["rows"]]
    top = max(ratios + [1.0 + tolerance])
    row_in, bar = (0.5, 0.4) if narrow else (0.34, 0.66)
    with _figure(1.5 + row_in * n_rows + 0.55 * len(panels) + (0.5 if narrow else 0), nrows=len(panels), ncols=1,
                 sharex=True, width_in=NARROW_WIDTH_IN if narrow else WIDTH_IN,
                 gridspec_kw={"height_ratios": [len(p["rows"]) + 0.6 for p in panels]}) as (fig, axes):
        for panel, row_axes in zip(panels, axes, strict=True):
            ax = row_axes[0]
            rows = panel["rows"]
            ys = list(range(len(rows)))[::-1]  # first row on top
            bar_ys = [y - 0.12 for y in ys] if narrow else ys  # room above each bar for its name
            ax.axvspan(1.0 - tolerance, 1.0 + tolerance, color=OKABE_ITO["sky"], alpha=0.16, linewidth=0, zorder=0)
            ax.barh(bar_ys, [r["ratio"] for r in rows], color=[_precision_colour(r["precision"]) for r in rows],
                    height=bar, zorder=2)
            ax.axvline(1.0, color=TEXT, linewidth=1.3, zorder=3)
            for y, r in zip(bar_ys, rows, strict=True):
                ax.text(r["ratio"] + top * 0.012, y, fmt.ratio(r["ratio"]), va="center", fontsize=8.5, color=TEXT,
                        zorder=4, bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 0.5})
                if narrow:
                    ax.text(0.0, y + bar / 2 + 0.04, r["label"], va="bottom", ha="left", fontsize=8.5, color=TEXT,
                            zorder=4, bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 0.5})
            if narrow:
                ax.set_yticks([])
                ax.spines["left"].set_visible(True)
            else:
                ax.set_yticks(ys, [r["label"] for r in rows])
            ax.set_ylim(-0.6, len(rows) - (0.25 if narrow else 0.4))
            ax.grid(axis="y", visible=False)
            if panel.get("title"):
                ax.set_title(panel["title"], fontsize=11, pad=8)
        last = axes[-1][0]
        last.set_xlim(0, top * (1.2 if narrow else 1.14))
        from matplotlib.ticker import FuncFormatter, MaxNLocator

        last.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.1f}\u00d7"))
        if narrow:
            last.xaxis.set_major_locator(MaxNLocator(nbins=4))
            last.set_xlabel("\u00d7 published median, same GPU\n(higher is better)")
        else:
            last.set_xlabel("\u00d7 the published median for the same GPU (higher is better)")
        _vs_published_legend(fig, [r["precision"] for p in panels for r in p["rows"]], tolerance, 2 if narrow else 0)
        _suptitle(fig, title)
        alt = (f"Bar chart of each configuration's throughput as a multiple of the published median for its GPU: "
               f"{title}. " + _listed([f"{p['title'] + ' ' if p.get('title') else ''}{r['label']} "
                                       f"{fmt.ratio(r['ratio'])}" for p in panels for r in p["rows"]], 40) + ".")
        return _save(fig, out_dir, name, title, caption, alt)


def _vs_published_legend(fig, precisions: list[str], tolerance: float, ncols: int = 0) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=_precision_colour(p), label=fmt.precision_name(p)) for p in dict.fromkeys(precisions)]
    handles += [Line2D([], [], color=TEXT, linewidth=1.3, label="published median"),
                Patch(facecolor=OKABE_ITO["sky"], alpha=0.3, label=f"within {tolerance:.0%}")]
    fig.legend(handles=handles, loc="outside lower center", ncols=ncols or len(handles), fontsize=8.5,
               handlelength=1.2)


def _ranking_legend(ax, has_same_gpu: bool, ours: str = "this run") -> None:
    from matplotlib.patches import Patch

    handles = [Patch(color=THIS_RUN_COLOUR, label=ours)]
    if has_same_gpu:
        handles.append(Patch(color=SAME_GPU_COLOUR, label="published, same GPU"))
    handles.append(Patch(color=PUBLISHED_COLOUR, label="published, other GPUs"))
    ax.legend(handles=handles, loc="lower right", fontsize=8.5, handlelength=1.2,
              facecolor="white", framealpha=0.9, frameon=True, edgecolor="none")


def speedup_chart(entries: list[dict[str, Any]], out_dir: Path, name: str = "speedups",
                  prefix: dict[int, str] | None = None, where: str = "") -> Chart:
    """Two panels of horizontal bars: torch.compile vs eager, and mixed precision vs TF32/FP32.

    `entries` come from `analysis.speedups.speedups`; `prefix` optionally maps an entry index to a run label.
    """
    panels = [("compile", "torch.compile vs eager"), ("precision", "Mixed precision vs TF32 / FP32")]
    panels = [(k, t) for k, t in panels if any(e["kind"] == k for e in entries)]
    counts = [sum(1 for e in entries if e["kind"] == k) for k, _ in panels]
    title = f"Speed-ups from torch.compile and mixed precision{_on(where)}"
    caption = ("Throughput of each variant divided by its baseline in the same run (same workload and GPU count; "
               "the same batch size unless the label names two); 1.0\u00d7 means no change.")
    with _figure(1.0 + 0.36 * sum(counts) + 0.9 * len(panels), nrows=len(panels), ncols=1,
                 gridspec_kw={"height_ratios": [max(c, 1) for c in counts]}) as (fig, axes):
        for (kind, panel_title), row_axes in zip(panels, axes, strict=True):
            ax = row_axes[0]
            items = [(i, e) for i, e in enumerate(entries) if e["kind"] == kind]
            labels = [_speedup_label(e, (prefix or {}).get(i)) for i, e in items]
            values = [e["speedup"] for _, e in items]
            ys = list(range(len(items)))[::-1]
            # Each bar in its variant's precision colour, as on every other chart (blue here meant "faster" and
            # read as TF32 beside the step-time boxes); a slow-down is hatched and its value in bold.
            bars = ax.barh(ys, values, color=[_precision_colour(_speedup_precision(e)) for _, e in items],
                           height=0.66)
            for patch, v in zip(bars, values, strict=True):
                if v < 1:
                    patch.set_hatch("///")
                    patch.set_edgecolor(TEXT)
            ax.set_yticks(ys, labels)
            ax.axvline(1.0, color=TEXT, linewidth=1, linestyle="--", zorder=3)
            top = max(values + [1.0])
            for y, v in zip(ys, values, strict=True):
                ax.text(v + top * 0.01, y, fmt.ratio(v), va="center", fontsize=8.5, color=TEXT, zorder=4,
                        fontweight="bold" if v < 1 else "normal",
                        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.5})
            ax.set_xlim(0, top * 1.15)
            ax.grid(axis="y", visible=False)
            ax.set_title(panel_title, fontsize=11, pad=8)
            ax.set_xlabel("speed-up (\u00d7 baseline throughput, higher is better)")
        _precision_legend(fig, [_speedup_precision(e) for e in entries],
                          slower=any(e["speedup"] < 1 for e in entries))
        _suptitle(fig, title)
        alt = (f"Bar chart: {title}. " + _listed([f"{_speedup_label(e, (prefix or {}).get(i))} "
                                                  f"{fmt.ratio(e['speedup'])}" for i, e in enumerate(entries)]) + ".")
        return _save(fig, out_dir, name, title, caption, alt)


def _speedup_precision(entry: dict[str, Any]) -> str:
    """The precision of a speed-up's variant: the run's for compile vs eager, the mixed one for precision."""
    return entry["context"] if entry["kind"] == "compile" else entry["label"].split(" vs ", 1)[0]


def _speedup_label(entry: dict[str, Any], run_label: str | None) -> str:
    label = fmt.workload_name(entry["workload"])
    if entry["kind"] == "compile":
        mode = entry["label"].split(" vs ", 1)[0].replace("compile=", "")
        label += f" \u00b7 {fmt.precision_name(entry['context'])} \u00b7 mode {mode}"
    else:
        variant, base = entry["label"].split(" vs ", 1)
        context = entry["context"].replace("compile=", "compile ")
        label += f" \u00b7 {fmt.precision_name(variant)} vs {fmt.precision_name(base)} \u00b7 {context}"
        if entry.get("baseline_batch_size") not in (None, entry.get("batch_size")):
            label += f" \u00b7 bs {entry['batch_size']} vs {entry['baseline_batch_size']}"
    if (entry.get("world_size") or 1) > 1:
        label += f" \u00b7 {entry['world_size']} GPUs"
    return f"{run_label}: {label}" if run_label else label


# Fewer measured steps than this (a CPU quick run has 2 x 2): a box of quartiles and whiskers drawn over a handful
# of points suggests a distribution that was never measured, so each step is drawn as a dot instead.
BOX_MIN_STEPS = 10


def step_time_chart(groups: list[dict[str, Any]], out_dir: Path, name: str = "step_times", where: str = "") -> Chart:
    """Box plots of measured step times (ms) per configuration, one panel per workload.

    `groups`: `[{"workload": str, "configs": [{"label": str, "step_times_s": [float], "p5_s": float, "p95_s": float,
    "cv": float|None}]}]`.
    Boxes span the quartiles, whiskers p5-p95, dots are the steps outside them: noise you can see. A configuration
    with fewer than `BOX_MIN_STEPS` steps shows each step as a dot and its median as a line.
    """
    total = sum(len(g["configs"]) for g in groups)
    title = f"Step-time distribution{_on(where)}"
    caption = ("Every measured step of every repeat (warm-up excluded). Box: quartiles and median; whiskers: "
               "5th-95th percentile; dots: steps outside them. CV: coefficient of variation of throughput "
               "across repeats.")
    if any(len(c["step_times_s"]) < BOX_MIN_STEPS for g in groups for c in g["configs"]):
        caption += (f" Fewer than {BOX_MIN_STEPS} steps: every step is a dot and the line its median, too few for "
                    "a box.")
    zoomed = False
    with _figure(0.9 + 0.42 * total + 0.75 * len(groups), nrows=len(groups), ncols=1,
                 gridspec_kw={"height_ratios": [len(g["configs"]) + 0.8 for g in groups]}) as (fig, axes):
        for group, row_axes in zip(groups, axes, strict=True):
            ax = row_axes[0]
            configs = list(reversed(group["configs"]))
            data = [[t * 1e3 for t in c["step_times_s"]] for c in configs]
            boxed = [i for i, d in enumerate(data) if len(d) >= BOX_MIN_STEPS]
            if boxed:
                bp = ax.bxp([_box_stats(data[i], configs[i]) for i in boxed], positions=[i + 1 for i in boxed],
                            **_horizontal(), widths=0.55, patch_artist=True,
                            medianprops={"color": TEXT, "linewidth": 1.4},
                            flierprops={"marker": "o", "markersize": 2.5, "markerfacecolor": MUTED,
                                        "markeredgecolor": "none", "alpha": 0.6},
                            whiskerprops={"color": MUTED}, capprops={"color": MUTED})
                for patch, i in zip(bp["boxes"], boxed, strict=True):
                    patch.set_facecolor(_precision_colour(configs[i].get("precision")))
                    patch.set_edgecolor(TEXT)
                    patch.set_linewidth(0.8)
                    patch.set_alpha(0.85)
            for i, d in enumerate(data):
                if d and len(d) < BOX_MIN_STEPS:
                    _step_dots(ax, i + 1, d, configs[i])
            ax.set_yticks(range(1, len(configs) + 1), [c["label"] for c in configs])
            ax.grid(axis="y", visible=False)
            right = max(max(d) for d in data if d) if any(data) else 1.0
            left = min(min(d) for d in data if d) if any(data) else 0.0
            span = right - left or right * 0.1 or 1.0
            ax.set_xlim(max(0.0, left - span * 0.08), right + span * 0.28)
            zoomed = zoomed or ax.get_xlim()[0] > 0
            for y, c in enumerate(configs, start=1):
                if c.get("cv") is not None:
                    ax.text(1.0, y, f"CV {fmt.percent(c['cv'])}", transform=ax.get_yaxis_transform(),
                            ha="right", va="center", fontsize=8, color=MUTED)
            ax.set_title(fmt.workload_name(group["workload"]), fontsize=11, pad=8)
            ax.set_xlabel("step time (ms, lower is better)")
        if zoomed:  # a spread is the point here, so each axis spans its steps: say so on the last one, once
            axes[-1][0].set_xlabel("step time (ms, lower is better; axes zoomed to the steps, not from 0)")
        _precision_legend(fig, [c.get("precision") for g in groups for c in g["configs"]])
        _suptitle(fig, title)
        medians = [f"{fmt.workload_name(g['workload'])} {c['label']}: median "
                   f"{_box_stats([t * 1e3 for t in c['step_times_s']], c)['med']:.1f} ms"
                   for g in groups for c in g["configs"] if c["step_times_s"]]
        alt = f"Box plots of measured step times per configuration: {title}. " + _listed(medians) + "."
        return _save(fig, out_dir, name, title, caption, alt)


def _step_dots(ax, y: int, times_ms: list[float], config: dict[str, Any]) -> None:
    """A configuration with few steps: each step a dot in its precision's colour (neighbours spread over the row, a
    fixed pattern so re-rendering gives the same picture), the median, as a box would draw it, a line across."""
    offsets = [((k % 3) - 1) * 0.13 for k in range(len(times_ms))]
    ax.plot(times_ms, [y + o for o in offsets], marker="o", linestyle="none", markersize=6,
            markerfacecolor=_precision_colour(config.get("precision")), markeredgecolor=TEXT, markeredgewidth=0.8,
            zorder=3)
    median = _box_stats(times_ms, config)["med"]
    ax.plot([median, median], [y - 0.3, y + 0.3], color=TEXT, linewidth=1.4, zorder=2)


def _box_stats(times_ms: list[float], config: dict[str, Any]) -> dict[str, Any]:
    """One box for `Axes.bxp`: quartiles and median as matplotlib computes them, whiskers at exactly the result's
    p5 and p95 (`p5_s`/`p95_s`: `step_time_s` in the document, the figures the tables print, or
    `analysis.stats.step_time_percentiles` for a document without them), dots for the steps beyond them.

    matplotlib's own `whis=(5, 95)` ends each whisker at the last step inside the percentile instead, which
    with a few steps (a CPU run) can sit far from the p95 the table shows."""
    import numpy as np
    from matplotlib import cbook

    stats = cbook.boxplot_stats(times_ms, whis=(5, 95))[0]
    low, high = config["p5_s"] * 1e3, config["p95_s"] * 1e3
    stats["whislo"], stats["whishi"] = low, high
    stats["fliers"] = np.array([t for t in times_ms if t < low or t > high])
    return stats


def _horizontal() -> dict[str, Any]:
    """matplotlib >= 3.10 spells a horizontal boxplot `orientation=`; older releases only know `vert=False`."""
    import matplotlib

    major, minor = (int(x) for x in matplotlib.__version__.split(".")[:2])
    return {"orientation": "horizontal"} if (major, minor) >= (3, 10) else {"vert": False}


_PRECISION_COLOURS = {"fp32": OKABE_ITO["sky"], "tf32": OKABE_ITO["blue"], "amp-fp16": OKABE_ITO["orange"],
                      "amp-bf16": OKABE_ITO["green"]}


def _precision_colour(precision: str | None) -> str:
    return _PRECISION_COLOURS.get(precision or "", OKABE_ITO["purple"])


def _precision_legend(fig, precisions: list[str | None], slower: bool = False) -> None:
    """Colours encode precision: say so once, under the panels, in the order precisions appear; `slower` adds the
    hatching of a bar below 1.0x."""
    from matplotlib.patches import Patch

    seen = list(dict.fromkeys(p for p in precisions if p))
    handles = [Patch(facecolor=_precision_colour(p), edgecolor=TEXT, linewidth=0.8, label=fmt.precision_name(p))
               for p in seen]
    if slower:
        handles.append(Patch(facecolor="white", edgecolor=TEXT, hatch="///", linewidth=0.8, label="slower"))
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8.5, handlelength=1.2,
                   title="colour: precision", title_fontsize=8.5)


def scaling_units(series: list[dict[str, Any]]) -> tuple[str, str]:
    """What a data-parallel run adds, plural and singular: processes for `--device cpu --gpus 1,2`, else GPUs."""
    return ("processes", "process") if all(s.get("device_type") == "cpu" for s in series) else ("GPUs", "GPU")


def scaling_chart(series: list[dict[str, Any]], out_dir: Path, name: str = "scaling", where: str = "") -> Chart:
    """Throughput against GPU count, measured (solid, markers) and ideal linear scaling (dashed).

    `series` come from `analysis.measured_scaling.scaling_series`; points above one GPU are labelled with their scaling
    efficiency. Without a one-GPU result there is no ideal line (the efficiency is unknown, not guessed).
    One panel per configuration, each with its own axis and unit: ResNet-50's images/s and BERT's sequences/s
    differ tenfold, and on a shared axis the slower workload's curve would lie flat along the bottom.
    """
    import math
    import textwrap

    units, unit = scaling_units(series)
    title = f"Multi-{unit} scaling{_on(where)}"
    caption = (f"Measured throughput against number of {units}; dashed: ideal linear scaling ({unit} count \u00d7 "
               f"one-{unit} throughput); labels: scaling efficiency (measured / ideal).")
    ncols = 1 if len(series) == 1 else 2
    nrows = math.ceil(len(series) / ncols)
    with _figure(1.0 + (3.8 if ncols == 1 else 3.5 * nrows), nrows=nrows, ncols=ncols) as (fig, axes):
        flat = [ax for row in axes for ax in row]
        for s, ax in zip(series, flat, strict=False):
            colour = _precision_colour(s["precision"])  # as in the step-time chart: one colour per precision
            xs = [p["world_size"] for p in s["points"]]
            ax.plot(xs, [p["samples_per_s"] for p in s["points"]], marker="o", color=colour, linewidth=2,
                    label="measured")
            ideal = [(p["world_size"], p["ideal_samples_per_s"]) for p in s["points"]
                     if p.get("ideal_samples_per_s") is not None]
            if len(ideal) > 1:
                ax.plot(*zip(*ideal, strict=True), linestyle="--", color=MUTED, linewidth=1.2, label="ideal")
            for p in s["points"]:
                if p.get("scaling_efficiency") is not None:
                    ax.annotate(fmt.percent(p["scaling_efficiency"]), (p["world_size"], p["samples_per_s"]),
                                textcoords="offset points", xytext=(0, -16), ha="center", fontsize=8,
                                color=text_colour(colour), fontweight="bold")
            ax.set_xticks(sorted(set(xs)))
            ax.set_xlabel(f"number of {units}")
            ax.set_ylabel(f"{fmt.unit_of(s)}/s, all {units}")
            ax.set_ylim(bottom=0)
            ax.margins(x=0.08)
            ax.yaxis.set_major_formatter(_thousands())
            panel = (f"{fmt.workload_name(s['workload'], s.get('seq_len'))} \u00b7 "
                     f"{fmt.precision_name(s['precision'])} \u00b7 {fmt.compile_name(s['compile'])}")
            ax.set_title(textwrap.fill(panel, 34 if ncols > 1 else 80), fontsize=10.5, pad=6)
            ax.legend(loc="upper left", fontsize=8)
        for ax in flat[len(series):]:
            ax.set_visible(False)
        _suptitle(fig, title)
        parts = [f"{fmt.workload_name(s['workload'], s.get('seq_len'))} {fmt.precision_name(s['precision'])}: "
                 + ", ".join(f"{p['world_size']} {unit if p['world_size'] == 1 else units} "
                             f"{fmt.throughput(p['samples_per_s'])} {fmt.unit_of(s)}/s"
                             + (f" ({fmt.percent(p['scaling_efficiency'])} of linear)"
                                if p.get("scaling_efficiency") is not None else "") for p in s["points"])
                 for s in series]
        alt = f"Line charts of throughput against the number of {units}: {title}. " + _listed(parts) + "."
        return _save(fig, out_dir, name, title, caption, alt)


# Telemetry series to plot: (column of the sampler's `series`, axis label, scale to the axis unit).
TELEMETRY_PANELS = (("power_w", "power (W)", 1.0), ("temperature_c", "temperature (\u00b0C)", 1.0),
                    ("sm_clock_mhz", "SM clock (MHz)", 1.0))


def telemetry_chart(traces: list[dict[str, Any]], out_dir: Path, name: str = "telemetry", where: str = "",
                    subject: str | None = None, note: str | None = None) -> Chart:
    """GPU power, temperature and SM clock over the measured steps: one line per trace.

    `traces`: `[{"label": str, "series": {"t_s": [...], "power_w": [...], ...}, "power_limit_w": float|None}]`
    (see `telemetry_section.telemetry_series`); each distinct power limit is drawn once, as a dotted line. Without `subject`
    the lines are one-GPU configurations (`where` names the hardware); with it, the chart is that one
    data-parallel configuration's and the lines are its GPUs. `note` is added to the caption.
    """
    panels = [p for p in TELEMETRY_PANELS if any(t["series"].get(p[0]) for t in traces)]
    title = f"GPU telemetry: {subject}" if subject else f"GPU telemetry during measurement{_on(where)}"
    caption = "Sampled while the measured steps ran (warm-up and compilation excluded); time from the first step."
    if subject:
        caption += " One line per GPU of this data-parallel configuration."
    if note:
        caption += f" {note}"
    import math

    columns = _legend_columns([t["label"] for t in traces])
    with _figure(1.0 + 2.1 * len(panels) + 0.2 * math.ceil(len(traces) / columns), nrows=len(panels), ncols=1, sharex=True) as (fig, axes):
        for (key, label, scale), row_axes in zip(panels, axes, strict=True):
            ax = row_axes[0]
            limits_drawn: set[float] = set()
            for i, trace in enumerate(traces):
                ys = trace["series"].get(key)
                if not ys:
                    continue
                xs = trace["series"]["t_s"][: len(ys)]
                colour = SERIES[i % len(SERIES)]
                style = ("-", "--", "-.")[i // len(SERIES) % 3]  # past 8 lines (GPUs), colours repeat: dash them
                ax.plot(xs, [None if y is None else y * scale for y in ys], color=colour, linewidth=1.4,
                        linestyle=style, label=trace["label"])
                if key == "power_w" and trace.get("power_limit_w") and trace["power_limit_w"] not in limits_drawn:
                    limits_drawn.add(trace["power_limit_w"])
                    ax.axhline(trace["power_limit_w"], color=colour, linestyle=":", linewidth=1)
                    ax.text(0.99, trace["power_limit_w"], f"power limit {trace['power_limit_w']:g} W ",
                            transform=ax.get_yaxis_transform(), fontsize=8, color=MUTED, va="top", ha="right",
                            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5})
            ax.set_ylabel(label)
        axes[-1][0].set_xlabel("time since first measured step (s)")
        # Under the panels, clear of the lines: inside the top panel a dozen configurations' names covered the
        # power trace and ran off the figure's left edge.
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=columns, fontsize=8.5)
        _suptitle(fig, title)
        what = ", ".join(label.split(" (")[0] for _, label, _ in panels)
        alt = (f"Line charts of {what} over the measured steps, one line per "
               f"{'GPU' if subject else 'configuration'} ({len(traces)}): {title}.")
        return _save(fig, out_dir, name, title, caption, alt)


def _legend_columns(labels: list[str], most: int = 4) -> int:
    """As many legend columns as the longest label allows across the figure (8.5 pt text: about 5.2 pt a
    character, plus the line sample and the gap between columns)."""
    widest = max((len(label) for label in labels), default=1) * 5.2 + 40
    return max(1, min(most, len(labels), int(WIDTH_IN * 72 * 0.95 // widest)))


# The fleet chart: flagged hosts in the alert colour; hosts below the threshold whose step times do not differ
# (within noise) in orange; the rest in blue.
FLEET_COLOURS = {"slow": OKABE_ITO["vermillion"], "failed": OKABE_ITO["vermillion"],
                 "within noise": OKABE_ITO["orange"], "ok": OKABE_ITO["blue"]}
# Past this many hosts one row each grows too tall to take in: the hosts within the threshold share one strip.
FLEET_ROWS_MAX = 30


def fleet_chart(points: list[dict[str, Any]], median: float | None, threshold_pct: float, unit: str, title: str,
                subtitle: str, caption: str, out_dir: Path, name: str, rows_max: int = FLEET_ROWS_MAX) -> Chart:
    """A dot plot of samples/s per host, in the given order (the analysis's: slowest first, at the top), with the
    fleet median as a line and the band down to the threshold shaded; flagged hosts in vermillion, labelled with
    their distance from the median and likely cause.

    `points`: `[{"node", "samples_per_s" (None where nothing was measured), "vs_median_pct", "verdict", "flagged",
    "label" (text beside a flagged or failed point, or None)}]`, from `analysis.fleet.fleet_report`'s rows.
    Beyond `rows_max` hosts, those with verdict `ok` share one strip row (their dots spread over its height), so
    that a large fleet stays legible: the hosts that matter keep a row and a name each.
    """
    rows = list(points)
    strip: list[dict[str, Any]] = []
    if len(rows) > rows_max:
        strip = [p for p in rows if p["verdict"] == "ok" and p["samples_per_s"] is not None]
        rows = [p for p in rows if p not in strip]
    measured = [p["samples_per_s"] for p in rows + strip if p["samples_per_s"] is not None]
    limit = median * (1.0 - threshold_pct / 100.0) if median else None
    ends = measured + ([limit, median] if median else [])
    low, high = (min(ends), max(ends)) if ends else (0.0, 1.0)
    span = (high - low) or high * 0.1 or 1.0
    left, right = low - span * 0.12, high + span * 0.12
    slots = len(rows) + (2 if strip else 0)  # the strip takes two rows' height
    with _figure(2.0 + 0.3 * max(slots, 2)) as (fig, axes):
        ax = axes[0][0]
        if median:
            ax.axvspan(limit, median, color=OKABE_ITO["sky"], alpha=0.16, linewidth=0, zorder=0)
            ax.axvline(limit, color=OKABE_ITO["sky"], linewidth=1, linestyle="--", zorder=1)
            ax.axvline(median, color=TEXT, linewidth=1.3, zorder=1)
        for y, p in enumerate(rows):
            colour = FLEET_COLOURS.get(p["verdict"], MUTED)
            if p["samples_per_s"] is None:  # failed or skipped: nothing to place, a cross at the left edge
                ax.plot([left + span * 0.02], [y], marker="X", markersize=8, color=colour, linestyle="none",
                        zorder=3)
                x = left + span * 0.05
            else:
                ax.plot([p["samples_per_s"]], [y], marker="o", markersize=7.5, color=colour,
                        markeredgecolor="white", markeredgewidth=0.8, linestyle="none", zorder=3)
                x = p["samples_per_s"] + span * 0.025
            if p.get("label"):
                ax.text(x, y, p["label"], va="center", ha="left", fontsize=8.5, color=text_colour(colour),
                        fontweight="bold" if p["flagged"] else "normal", zorder=4,
                        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1.0})
        labels = [p["node"] for p in rows]
        ticks = list(range(len(rows)))
        if strip:
            y = len(rows) + 0.5
            xs = sorted(p["samples_per_s"] for p in strip)
            # Spread neighbours over the strip's height (a fixed cycle, so re-rendering gives the same picture).
            ys = [y + ((i % 5) - 2) * 0.22 for i in range(len(xs))]
            ax.plot(xs, ys, marker="o", markersize=5, color=FLEET_COLOURS["ok"], alpha=0.75, linestyle="none",
                    markeredgecolor="white", markeredgewidth=0.5, zorder=3)
            ticks.append(y)
            labels.append(f"{len(strip)} other hosts (ok)")
        ax.set_yticks(ticks, labels)
        for tick, p in zip(ax.get_yticklabels(), rows, strict=False):
            if p["flagged"]:
                tick.set_color(text_colour(FLEET_COLOURS["slow"]))
                tick.set_fontweight("bold")
        ax.set_ylim(slots - 0.4, -0.6)  # first row on top
        ax.set_xlim(left, _label_room(rows, left, right, span))
        ax.grid(axis="y", visible=True, color="#F0F2F5")
        ax.xaxis.set_major_formatter(_thousands())
        ax.set_xlabel(f"{unit}/s per host (higher is better; the axis does not start at zero)")
        if median:
            _fleet_percent_axis(ax, median)
        _fleet_legend(fig, [p["verdict"] for p in rows + strip], threshold_pct, median is not None)
        _titles(fig, ax, title, subtitle)
        flagged = [f"{p['node']} {p['label']}" for p in points if p["flagged"]]
        alt = (f"Dot plot of {unit}/s per host: {title}. {subtitle} "
               + (f"Flagged: {_listed(flagged)}." if flagged else "No host flagged."))
        return _save(fig, out_dir, name, title, caption, alt)


def _label_room(rows: list[dict[str, Any]], left: float, right: float, span: float) -> float:
    """The right end of the x axis, pushed out so that the longest label beside a point still fits: a label's
    width is estimated from its length (8.5 pt characters, about 0.075 in each, on a plot about 6.5 in wide)."""
    end = right
    for _ in range(3):  # each widening shrinks a data unit on screen: settle in a few rounds
        per_inch = (end - left) / 6.5
        need = [(p["samples_per_s"] if p["samples_per_s"] is not None else left + span * 0.05)
                + span * 0.025 + len(p["label"]) * 0.075 * per_inch for p in rows if p.get("label")]
        end = max([right, *need])
    return end


def _fleet_percent_axis(ax, median: float) -> None:
    """A second x axis along the top in percent of the fleet median, so a distance reads off directly."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    top = ax.secondary_xaxis("top", functions=(lambda v: (v / median - 1.0) * 100.0,
                                               lambda pct: median * (1.0 + pct / 100.0)))
    # Whole percents only: at steps of 2.5 the labels rounded -12.5 to "-12%" and -7.5 to "-8%".
    top.xaxis.set_major_locator(MaxNLocator(nbins=8, steps=[1, 2, 5, 10], integer=True))
    top.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: "median" if round(v, 6) == 0 else f"{v:+.0f}%"))
    top.tick_params(labelsize=8, colors=MUTED)


def _fleet_legend(fig, verdicts: list[str], threshold_pct: float, has_median: bool) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    names = {"slow": "slow (flagged)", "failed": "failed (flagged)", "within noise": "below the threshold, "
             "within noise", "ok": "ok"}
    handles = [Line2D([], [], marker="X" if v == "failed" else "o", linestyle="none", markersize=7,
                      color=FLEET_COLOURS[v], label=names[v]) for v in names if v in verdicts]
    if has_median:
        handles += [Line2D([], [], color=TEXT, linewidth=1.3, label="fleet median"),
                    Patch(facecolor=OKABE_ITO["sky"], alpha=0.3, edgecolor=OKABE_ITO["sky"], linestyle="--",
                          label=f"threshold: up to {threshold_pct:g}% below the median")]
    # One line where the labels fit across the figure (about 110 characters at 8.5 pt), else three columns.
    wide = sum(len(h.get_label()) + 6 for h in handles) <= 110
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles) if wide else 3, fontsize=8.5,
               handlelength=1.4)
