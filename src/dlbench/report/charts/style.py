"""Shared look of every chart of `dlbench report`: the palette, matplotlib's style, figure set-up and saving.

Charts are drawn with matplotlib (Agg, no pyplot state) from figures already computed in `dlbench.analysis` (or raw
step times and telemetry series straight from the result document); each chart module draws one kind and saves it
as PNG and SVG through `save`, which returns a `Chart` naming both files. Colours are the Okabe-Ito palette, which
stays distinguishable for the common forms of colour blindness; this run's bars are also set apart by bold labels,
not colour alone. Precision has one colour on every chart (`precision_colour`).
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


def hex_rgb(colour: str) -> tuple[float, float, float]:
    """`#RRGGBB` as three fractions (the palette is hex: no matplotlib import for it)."""
    h = colour.lstrip("#")
    return tuple(int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))  # type: ignore[return-value]


def contrast(colour: str, background: str = "#FFFFFF") -> float:
    """WCAG 2 contrast ratio of two `#RRGGBB` colours (1 to 21)."""
    def luminance(c: str) -> float:
        r, g, b = (x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in hex_rgb(c))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    hi, lo = sorted((luminance(colour), luminance(background)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def text_colour(colour: str) -> str:
    """`colour` for text on white: itself where it is dark enough, else darkened (towards black, the hue kept) to
    `TEXT_CONTRAST`. Okabe-Ito's orange (2.2:1) and vermillion (3.9:1) are fine for bars and dots, too light for
    a label beside them."""
    rgb = hex_rgb(colour)
    for step in range(101):
        shade = "#" + "".join(f"{round(x * (1 - step / 100) * 255):02X}" for x in rgb)
        if contrast(shade) >= TEXT_CONTRAST:
            return shade
    return TEXT


THIS_RUN_TEXT = text_colour(THIS_RUN_COLOUR)

STYLE = {
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
# File stems the chart modules write: `html.write_report` removes earlier ones it did not rewrite.
CHART_STEMS = ("fleet_*", "ranking_*", "speedups", "step_times", "scaling", "telemetry", "telemetry_*",
               "vs_published", "vs_published_narrow", "latency_*", "tokens_ranking_*", "roofline")
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
def figure(height_in: float, nrows: int = 1, ncols: int = 1, width_in: float = WIDTH_IN, **kwargs: Any):
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(width_in, height_in), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False, **kwargs)
        yield fig, axes


def save(fig, out_dir: Path, name: str, title: str, caption: str, alt: str = "") -> Chart:
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg = out_dir / f"{name}.png", out_dir / f"{name}.svg"
    fig.savefig(png, dpi=DPI)
    fig.savefig(svg, metadata={"Date": None})
    return Chart(name=name, title=title, caption=caption, png=png, svg=svg, alt=alt or title)


def listed(parts: list[str], most: int = 12) -> str:
    """Items of an alt text, the first `most` of them and a count of the rest."""
    shown = "; ".join(parts[:most])
    return shown + (f"; and {len(parts) - most} more" if len(parts) > most else "")


def suptitle(fig, title: str) -> None:
    """Bold title at the figure's left edge, wrapped so that a long hardware name is never cut off."""
    import textwrap

    chars = int(TITLE_CHARS * fig.get_figwidth() / WIDTH_IN)
    fig.suptitle(textwrap.fill(title, chars), x=0.01, ha="left", fontweight="bold", fontsize=13, color=TEXT)


def titles(fig, ax, title: str, subtitle: str | None = None) -> None:
    """Bold title at the figure's left edge; the subtitle, wrapped, above the plot in muted grey."""
    import textwrap

    suptitle(fig, title)
    if subtitle:
        # The subtitle starts at the plot's left edge, right of the tick labels: wrap it to the plot's width
        # (known once the layout has run), so that long labels never push it off the figure.
        fig.draw_without_rendering()
        width_pt = ax.get_position().width * WIDTH_IN * 72
        chars = max(30, int(width_pt / SUBTITLE_CHAR_PT))
        ax.set_title(textwrap.fill(subtitle, chars), loc="left", fontsize=9, color=MUTED, fontweight="normal",
                     pad=8)


def on(where: str) -> str:
    """Charts are shared on their own, so their titles say which hardware they show."""
    return f" \u00b7 {where}" if where else ""


def thousands():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: f"{v:,.0f}")



PRECISION_COLOURS = {"fp32": OKABE_ITO["sky"], "tf32": OKABE_ITO["blue"], "amp-fp16": OKABE_ITO["orange"],
                      "amp-bf16": OKABE_ITO["green"]}


def precision_colour(precision: str | None) -> str:
    return PRECISION_COLOURS.get(precision or "", OKABE_ITO["purple"])


def precision_legend(fig, precisions: list[str | None], slower: bool = False) -> None:
    """Colours encode precision: say so once, under the panels, in the order precisions appear; `slower` adds the
    hatching of a bar below 1.0x."""
    from matplotlib.patches import Patch

    seen = list(dict.fromkeys(p for p in precisions if p))
    handles = [Patch(facecolor=precision_colour(p), edgecolor=TEXT, linewidth=0.8, label=fmt.precision_name(p))
               for p in seen]
    if slower:
        handles.append(Patch(facecolor="white", edgecolor=TEXT, hatch="///", linewidth=0.8, label="slower"))
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8.5, handlelength=1.2,
                   title="colour: precision", title_fontsize=8.5)
