"""The speed-up chart: what torch.compile and mixed precision buy, within one run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.report import fmt
from dlbench.report.charts.style import (
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


def speedup_chart(entries: list[dict[str, Any]], out_dir: Path, name: str = "speedups",
                  prefix: dict[int, str] | None = None, where: str = "") -> Chart:
    """Two panels of horizontal bars: torch.compile vs eager, and mixed precision vs TF32/FP32.

    `entries` come from `analysis.speedups.speedups`; `prefix` optionally maps an entry index to a run label.
    """
    panels = [("compile", "torch.compile vs eager"), ("precision", "Mixed precision vs TF32 / FP32")]
    panels = [(k, t) for k, t in panels if any(e["kind"] == k for e in entries)]
    counts = [sum(1 for e in entries if e["kind"] == k) for k, _ in panels]
    title = f"Speed-ups from torch.compile and mixed precision{on(where)}"
    caption = ("Throughput of each variant divided by its baseline in the same run (same workload and GPU count; "
               "the same batch size unless the label names two); 1.0\u00d7 means no change.")
    with figure(1.0 + 0.36 * sum(counts) + 0.9 * len(panels), nrows=len(panels), ncols=1,
                 gridspec_kw={"height_ratios": [max(c, 1) for c in counts]}) as (fig, axes):
        for (kind, panel_title), row_axes in zip(panels, axes, strict=True):
            ax = row_axes[0]
            items = [(i, e) for i, e in enumerate(entries) if e["kind"] == kind]
            labels = [_speedup_label(e, (prefix or {}).get(i)) for i, e in items]
            values = [e["speedup"] for _, e in items]
            ys = list(range(len(items)))[::-1]
            # Each bar in its variant's precision colour, as on every other chart (blue here meant "faster" and
            # read as TF32 beside the step-time boxes); a slow-down is hatched and its value in bold.
            bars = ax.barh(ys, values, color=[precision_colour(_speedup_precision(e)) for _, e in items],
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
        precision_legend(fig, [_speedup_precision(e) for e in entries],
                          slower=any(e["speedup"] < 1 for e in entries))
        suptitle(fig, title)
        alt = (f"Bar chart: {title}. " + listed([f"{_speedup_label(e, (prefix or {}).get(i))} "
                                                  f"{fmt.ratio(e['speedup'])}" for i, e in enumerate(entries)]) + ".")
        return save(fig, out_dir, name, title, caption, alt)


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
