"""The ranking chart: published GPUs' training throughput as bars, fastest on top, this run highlighted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.report import fmt
from dlbench.report.charts.style import (
    PUBLISHED_COLOUR,
    SAME_GPU_COLOUR,
    TEXT,
    THIS_RUN_COLOUR,
    THIS_RUN_TEXT,
    Chart,
    figure,
    listed,
    save,
    thousands,
    titles,
)


def ranking_chart(rows: list[dict[str, Any]], title: str, unit: str, subtitle: str, out_dir: Path,
                  name: str, num_gpus: int = 1, same_gpu: frozenset[str] | set[str] = frozenset(),
                  ours: str = "this run", quantity: str = "training throughput") -> Chart:
    """Horizontal bars of samples/s, fastest on top; rows with `is_this_run` highlighted (AIME/Lambda style).

    `rows` come from `analysis.ranking.rank_among_published`: `label`, `samples_per_s`, `is_this_run`.
    Published bars whose label is in `same_gpu` (the GPU this run used) are drawn darker, so the gap between
    this run and what others measured on the same GPU shows at a glance. `ours` names the highlighted bars in the
    legend (`this run`, or the runs of a report of several). `quantity` names what the bars are ("decode
    throughput" for the tokens/s ranking of generate results).
    """
    n = len(rows)
    with figure(1.3 + 0.34 * n) as (fig, axes):
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
        ax.xaxis.set_major_formatter(thousands())
        total = f", total of {num_gpus} GPUs" if num_gpus > 1 else ""
        ax.set_xlabel(f"{quantity} ({unit}/s{total}, higher is better)")
        _ranking_legend(ax, any(r["label"] in same_gpu and not r["is_this_run"] for r in rows), ours)
        titles(fig, ax, title, subtitle)
        alt = (f"Bar chart of {quantity} in {unit}/s, fastest first: {title}. " + listed(
            [f"{r['label'].lstrip(chr(0x25b6) + ' ')} {fmt.throughput(r['samples_per_s'])}" for r in rows], 20) + ".")
        return save(fig, out_dir, name, title, subtitle, alt)



def _ranking_legend(ax, has_same_gpu: bool, ours: str = "this run") -> None:
    from matplotlib.patches import Patch

    handles = [Patch(color=THIS_RUN_COLOUR, label=ours)]
    if has_same_gpu:
        handles.append(Patch(color=SAME_GPU_COLOUR, label="published, same GPU"))
    handles.append(Patch(color=PUBLISHED_COLOUR, label="published, other GPUs"))
    ax.legend(handles=handles, loc="lower right", fontsize=8.5, handlelength=1.2,
              facecolor="white", framealpha=0.9, frameon=True, edgecolor="none")
