"""The fleet chart: samples/s per host of a fleet against its median, the slow hosts named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.report.charts.style import (
    MUTED,
    OKABE_ITO,
    TEXT,
    Chart,
    figure,
    listed,
    save,
    text_colour,
    thousands,
    titles,
)

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
    with figure(2.0 + 0.3 * max(slots, 2)) as (fig, axes):
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
        ax.xaxis.set_major_formatter(thousands())
        ax.set_xlabel(f"{unit}/s per host (higher is better; the axis does not start at zero)")
        if median:
            _fleet_percent_axis(ax, median)
        _fleet_legend(fig, [p["verdict"] for p in rows + strip], threshold_pct, median is not None)
        titles(fig, ax, title, subtitle)
        flagged = [f"{p['node']} {p['label']}" for p in points if p["flagged"]]
        alt = (f"Dot plot of {unit}/s per host: {title}. {subtitle} "
               + (f"Flagged: {listed(flagged)}." if flagged else "No host flagged."))
        return save(fig, out_dir, name, title, caption, alt)


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
