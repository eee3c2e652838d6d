"""The scaling chart: data-parallel throughput against GPU (or process) count, measured and ideal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.report import fmt
from dlbench.report.charts.style import (
    MUTED,
    Chart,
    figure,
    listed,
    on,
    precision_colour,
    save,
    suptitle,
    text_colour,
    thousands,
)


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
    title = f"Multi-{unit} scaling{on(where)}"
    caption = (f"Measured throughput against number of {units}; dashed: ideal linear scaling ({unit} count \u00d7 "
               f"one-{unit} throughput); labels: scaling efficiency (measured / ideal).")
    ncols = 1 if len(series) == 1 else 2
    nrows = math.ceil(len(series) / ncols)
    with figure(1.0 + (3.8 if ncols == 1 else 3.5 * nrows), nrows=nrows, ncols=ncols) as (fig, axes):
        flat = [ax for row in axes for ax in row]
        for s, ax in zip(series, flat, strict=False):
            colour = precision_colour(s["precision"])  # as in the step-time chart: one colour per precision
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
            ax.yaxis.set_major_formatter(thousands())
            panel = (f"{fmt.workload_name(s['workload'], s.get('seq_len'))} \u00b7 "
                     f"{fmt.precision_name(s['precision'])} \u00b7 {fmt.compile_name(s['compile'])}")
            ax.set_title(textwrap.fill(panel, 34 if ncols > 1 else 80), fontsize=10.5, pad=6)
            ax.legend(loc="upper left", fontsize=8)
        for ax in flat[len(series):]:
            ax.set_visible(False)
        suptitle(fig, title)
        parts = [f"{fmt.workload_name(s['workload'], s.get('seq_len'))} {fmt.precision_name(s['precision'])}: "
                 + ", ".join(f"{p['world_size']} {unit if p['world_size'] == 1 else units} "
                             f"{fmt.throughput(p['samples_per_s'])} {fmt.unit_of(s)}/s"
                             + (f" ({fmt.percent(p['scaling_efficiency'])} of linear)"
                                if p.get("scaling_efficiency") is not None else "") for p in s["points"])
                 for s in series]
        alt = f"Line charts of throughput against the number of {units}: {title}. " + listed(parts) + "."
        return save(fig, out_dir, name, title, caption, alt)
