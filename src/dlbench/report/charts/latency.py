"""The latency-percentile chart: p50, p90 and p99 per configuration (infer batch-1 requests, generate TPOT)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.report.charts.style import OKABE_ITO, TEXT, Chart, figure, listed, on, save, titles

# One colour per percentile, light to dark as the tail grows.
PERCENTILES = (("p50", OKABE_ITO["sky"]), ("p90", OKABE_ITO["blue"]), ("p99", OKABE_ITO["vermillion"]))


def latency_chart(entries: list[dict[str, Any]], title: str, quantity: str, out_dir: Path, name: str,
                  where: str = "") -> Chart:
    """Horizontal dots on one line per configuration: its p50, p90 and p99 in ms, joined by a bar from p50 to p99.

    `entries`: `label`, `p50`, `p90`, `p99` (seconds), in the order to show them (top first). `quantity` says
    what was timed ("batch-1 request latency", "time per output token").
    """
    n = len(entries)
    with figure(1.5 + 0.36 * n) as (fig, axes):
        ax = axes[0][0]
        ordered = list(reversed(entries))
        ys = range(n)
        top = max((e["p99"] for e in entries), default=0.0) * 1e3 or 1.0
        for y, e in zip(ys, ordered, strict=True):
            ax.plot([e["p50"] * 1e3, e["p99"] * 1e3], [y, y], color=TEXT, linewidth=1.0, alpha=0.5, zorder=1)
            for key, colour in PERCENTILES:
                ax.scatter([e[key] * 1e3], [y], color=colour, s=36, zorder=2, label=key if y == 0 else None)
            ax.text(e["p99"] * 1e3 + top * 0.015, y, f"{e['p50'] * 1e3:.3g} / {e['p99'] * 1e3:.3g} ms",
                    va="center", fontsize=8.5, color=TEXT)
        ax.set_yticks(list(ys), [e["label"] for e in ordered])
        ax.set_xlim(0, top * 1.3)
        ax.set_ylim(-0.6, n - 0.4)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel(f"{quantity} (ms, lower is better)")
        ax.legend(loc="lower right", fontsize=8.5, facecolor="white", framealpha=0.9, frameon=True,
                  edgecolor="none")
        subtitle = f"p50, p90 and p99 of every measured {quantity.split(' (')[0]}; labels give p50 / p99."
        titles(fig, ax, title + on(where), subtitle)
        alt = (f"Dot chart of {quantity} percentiles in ms: {title}. " + listed(
            [f"{e['label']} p50 {e['p50'] * 1e3:.3g}, p90 {e['p90'] * 1e3:.3g}, p99 {e['p99'] * 1e3:.3g}"
             for e in entries], 20) + ".")
        return save(fig, out_dir, name, title + on(where), subtitle, alt)
