"""The telemetry chart: GPU power, temperature and SM clock over the measured steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.report.charts.style import MUTED, SERIES, WIDTH_IN, Chart, figure, on, save, suptitle

# Telemetry series to plot: (column of the sampler's `series`, axis label, scale to the axis unit).
TELEMETRY_PANELS = (("power_w", "power (W)", 1.0), ("temperature_c", "temperature (\u00b0C)", 1.0),
                    ("sm_clock_mhz", "SM clock (MHz)", 1.0))


def telemetry_chart(traces: list[dict[str, Any]], out_dir: Path, name: str = "telemetry", where: str = "",
                    subject: str | None = None, note: str | None = None) -> Chart:
    """GPU power, temperature and SM clock over the measured steps: one line per trace.

    `traces`: `[{"label": str, "series": {"t_s": [...], "power_w": [...], ...}, "power_limit_w": float|None}]`
    (see `sections.telemetry.telemetry_series`); each distinct power limit is drawn once, as a dotted line. Without `subject`
    the lines are one-GPU configurations (`where` names the hardware); with it, the chart is that one
    data-parallel configuration's and the lines are its GPUs. `note` is added to the caption.
    """
    panels = [p for p in TELEMETRY_PANELS if any(t["series"].get(p[0]) for t in traces)]
    title = f"GPU telemetry: {subject}" if subject else f"GPU telemetry during measurement{on(where)}"
    caption = "Sampled while the measured steps ran (warm-up and compilation excluded); time from the first step."
    if subject:
        caption += " One line per GPU of this data-parallel configuration."
    if note:
        caption += f" {note}"
    import math

    columns = _legend_columns([t["label"] for t in traces])
    with figure(1.0 + 2.1 * len(panels) + 0.2 * math.ceil(len(traces) / columns), nrows=len(panels), ncols=1, sharex=True) as (fig, axes):
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
        suptitle(fig, title)
        what = ", ".join(label.split(" (")[0] for _, label, _ in panels)
        alt = (f"Line charts of {what} over the measured steps, one line per "
               f"{'GPU' if subject else 'configuration'} ({len(traces)}): {title}.")
        return save(fig, out_dir, name, title, caption, alt)


def _legend_columns(labels: list[str], most: int = 4) -> int:
    """As many legend columns as the longest label allows across the figure (8.5 pt text: about 5.2 pt a
    character, plus the line sample and the gap between columns)."""
    widest = max((len(label) for label in labels), default=1) * 5.2 + 40
    return max(1, min(most, len(labels), int(WIDTH_IN * 72 * 0.95 // widest)))
