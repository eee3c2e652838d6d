"""The roofline chart: achieved decode bandwidth against the card's catalogue bandwidth, prefill FLOP/s
against the precision's peak, one bar per generate configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.report.charts.style import OKABE_ITO, TEXT, Chart, figure, listed, on, save, suptitle

PANELS = (
    ("bandwidth", "decode memory bandwidth", "GB/s", 1e-9, OKABE_ITO["blue"]),
    ("flops", "prefill compute", "TFLOP/s", 1e-12, OKABE_ITO["green"]),
)


def roofline_chart(entries: list[dict[str, Any]], out_dir: Path, name: str = "roofline", where: str = "") -> Chart:
    """Two panels of horizontal bars, each bar the achieved share of the card's ceiling (the line at 100%):
    decode bandwidth / catalogue bandwidth, prefill FLOP/s / peak FLOP/s (MFU).

    `entries`: `label`, and per panel `bandwidth` / `flops` = `{"achieved", "peak"}` (SI units) or None where the
    run or the catalogue gives no figure.
    """
    n = len(entries)
    with figure(2.4 + 0.6 * n, nrows=2, ncols=1, sharex=True) as (fig, axes):
        ordered = list(reversed(entries))
        ys = range(n)
        parts = []
        for (ax,), (key, what, unit, scale, colour) in zip(axes, PANELS, strict=True):
            for y, e in zip(ys, ordered, strict=True):
                found = e.get(key)
                if not found or not found.get("peak"):
                    ax.text(2, y, "no figure (catalogue or run)", va="center", fontsize=8, color=TEXT, alpha=0.7)
                    continue
                share = found["achieved"] / found["peak"]
                ax.barh([y], [min(share, 1.5) * 100], color=colour, height=0.65)
                text = f"{share:.0%}: {found['achieved'] * scale:,.0f} of {found['peak'] * scale:,.0f} {unit}"
                # Right of the ceiling line, so that no label crosses it.
                ax.text(max(share * 100, 100) + 3, y, text, va="center", fontsize=8, color=TEXT)
                parts.append(f"{e['label']}: {what} {text}")
            ax.axvline(100, color=TEXT, linewidth=1.0, linestyle="--")
            ax.set_xlim(0, 190)
            ax.set_xticks([0, 25, 50, 75, 100])
            ax.set_yticks(list(ys), [e["label"] for e in ordered])
            ax.set_ylim(-0.6, n - 0.4)
            ax.set_title(f"{what} (% of the card's {'bandwidth' if key == 'bandwidth' else 'peak'})",
                         loc="left", fontsize=9.5)
            ax.grid(axis="y", visible=False)
        axes[1][0].set_xlabel("% of the ceiling (dashed: the catalogue figure)")
        title = "LLM generation against the roofline" + on(where)
        suptitle(fig, title)
        caption = ("Decode reads the weights and the KV cache once per token, so its ceiling is the card's memory "
                   "bandwidth (catalogue figure, dashed line); prefill is compute-bound, its ceiling the "
                   "precision's peak FLOP/s.")
        alt = "Bar chart of achieved shares of the card's ceilings. " + listed(parts, 20) + "."
        return save(fig, out_dir, name, title, caption, alt)
