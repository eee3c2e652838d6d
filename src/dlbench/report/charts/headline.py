"""The report's headline chart: each configuration's throughput against the published median for its GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.report import fmt
from dlbench.report.charts.style import (
    OKABE_ITO,
    TEXT,
    WIDTH_IN,
    Chart,
    figure,
    listed,
    on,
    precision_colour,
    save,
    suptitle,
)

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
    title = f"Against published results{on(where)}"
    caption = ("Each bar: throughput divided by the median of published results for the same GPU, workload, "
               "sequence length, precision and GPU count; 1.0\u00d7 is as published, the shaded band within "
               f"{tolerance:.0%} of it. Batch sizes and software versions differ by source.")
    ratios = [r["ratio"] for p in panels for r in p["rows"]]
    top = max(ratios + [1.0 + tolerance])
    row_in, bar = (0.5, 0.4) if narrow else (0.34, 0.66)
    with figure(1.5 + row_in * n_rows + 0.55 * len(panels) + (0.5 if narrow else 0), nrows=len(panels), ncols=1,
                 sharex=True, width_in=NARROW_WIDTH_IN if narrow else WIDTH_IN,
                 gridspec_kw={"height_ratios": [len(p["rows"]) + 0.6 for p in panels]}) as (fig, axes):
        for panel, row_axes in zip(panels, axes, strict=True):
            ax = row_axes[0]
            rows = panel["rows"]
            ys = list(range(len(rows)))[::-1]  # first row on top
            bar_ys = [y - 0.12 for y in ys] if narrow else ys  # room above each bar for its name
            ax.axvspan(1.0 - tolerance, 1.0 + tolerance, color=OKABE_ITO["sky"], alpha=0.16, linewidth=0, zorder=0)
            ax.barh(bar_ys, [r["ratio"] for r in rows], color=[precision_colour(r["precision"]) for r in rows],
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
        suptitle(fig, title)
        alt = (f"Bar chart of each configuration's throughput as a multiple of the published median for its GPU: "
               f"{title}. " + listed([f"{p['title'] + ' ' if p.get('title') else ''}{r['label']} "
                                       f"{fmt.ratio(r['ratio'])}" for p in panels for r in p["rows"]], 40) + ".")
        return save(fig, out_dir, name, title, caption, alt)


def _vs_published_legend(fig, precisions: list[str], tolerance: float, ncols: int = 0) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=precision_colour(p), label=fmt.precision_name(p)) for p in dict.fromkeys(precisions)]
    handles += [Line2D([], [], color=TEXT, linewidth=1.3, label="published median"),
                Patch(facecolor=OKABE_ITO["sky"], alpha=0.3, label=f"within {tolerance:.0%}")]
    fig.legend(handles=handles, loc="outside lower center", ncols=ncols or len(handles), fontsize=8.5,
               handlelength=1.2)
