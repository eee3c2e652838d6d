"""What every chart section hands the page: a chart as a figure (embedded as an SVG data URI, with links to its
PNG and SVG files), and a section as a group of figures.
"""

from __future__ import annotations

import base64
from typing import Any

from dlbench.report import charts


def data_uri(chart: charts.Chart) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(chart.svg.read_bytes()).decode("ascii")


def figure(chart: charts.Chart, caption: str | None = None) -> dict[str, Any]:
    return {"chart": chart, "caption": caption or chart.caption, "data_uri": data_uri(chart),
            "png_href": f"charts/{chart.png.name}", "svg_href": f"charts/{chart.svg.name}"}


def group(key: str, title: str, intro: str, figures: list[dict[str, Any]], notes: list[str] | None = None):
    return {"id": key, "title": title, "intro": intro, "figures": figures, "notes": notes or []}
