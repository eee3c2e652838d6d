"""The step-time chart: box plots (or, for a few steps, dots) of every measured step per configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.report import fmt
from dlbench.report.charts.style import (
    MUTED,
    TEXT,
    Chart,
    figure,
    listed,
    on,
    precision_colour,
    precision_legend,
    save,
    suptitle,
)

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
    title = f"Step-time distribution{on(where)}"
    caption = ("Every measured step of every repeat (warm-up excluded). Box: quartiles and median; whiskers: "
               "5th-95th percentile; dots: steps outside them. CV: coefficient of variation of throughput "
               "across repeats.")
    if any(len(c["step_times_s"]) < BOX_MIN_STEPS for g in groups for c in g["configs"]):
        caption += (f" Fewer than {BOX_MIN_STEPS} steps: every step is a dot and the line its median, too few for "
                    "a box.")
    zoomed = False
    with figure(0.9 + 0.42 * total + 0.75 * len(groups), nrows=len(groups), ncols=1,
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
                    patch.set_facecolor(precision_colour(configs[i].get("precision")))
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
        precision_legend(fig, [c.get("precision") for g in groups for c in g["configs"]])
        suptitle(fig, title)
        medians = [f"{fmt.workload_name(g['workload'])} {c['label']}: median "
                   f"{_box_stats([t * 1e3 for t in c['step_times_s']], c)['med']:.1f} ms"
                   for g in groups for c in g["configs"] if c["step_times_s"]]
        alt = f"Box plots of measured step times per configuration: {title}. " + listed(medians) + "."
        return save(fig, out_dir, name, title, caption, alt)


def _step_dots(ax, y: int, times_ms: list[float], config: dict[str, Any]) -> None:
    """A configuration with few steps: each step a dot in its precision's colour (neighbours spread over the row, a
    fixed pattern so re-rendering gives the same picture), the median, as a box would draw it, a line across."""
    offsets = [((k % 3) - 1) * 0.13 for k in range(len(times_ms))]
    ax.plot(times_ms, [y + o for o in offsets], marker="o", linestyle="none", markersize=6,
            markerfacecolor=precision_colour(config.get("precision")), markeredgecolor=TEXT, markeredgewidth=0.8,
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
