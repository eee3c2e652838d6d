"""The multi-GPU scaling table under `dlbench run --gpus 1,2,4` (rendering only; figures from
`dlbench.analysis.measured_scaling`).

One row per configuration and device count: throughput, the ideal (linear) throughput, scaling efficiency and the
number of nodes. Figures are taken as stored; only formatting happens here.
"""

from __future__ import annotations

from typing import Any


def has_scaling(results: list[dict[str, Any]]) -> bool:
    """Whether the results measured one thing at several device counts (`dlbench run --gpus 1,2,4`)."""
    return len({r.get("world_size") for r in results if r.get("status") == "ok"}) > 1


def scaling_table(results: list[dict[str, Any]], title: str = "Data-parallel scaling (batch size per device)"):
    """A rich Table: configuration, devices, global batch, samples/s, ideal samples/s, efficiency."""
    from rich import box
    from rich.table import Table

    from dlbench.analysis.configuration import config_key
    from dlbench.analysis.measured_scaling import scaling_series

    # Keyed like every other display of a configuration (flavour included: a tiny and a full run differ).
    nodes = {config_key(r): r.get("nodes") for r in results}
    # The run table's look; numbers never cut, the configuration wraps (an 80-column terminal cut its header).
    table = Table(title=title, header_style="bold", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  show_edge=False, padding=(0, 1, 0, 0))
    for col, justify in (("configuration", "left"), ("devices", "right"), ("nodes", "right"),
                         ("global batch", "right"), ("samples/s", "right"), ("ideal", "right"),
                         ("efficiency", "right")):
        table.add_column(col, justify=justify, no_wrap=col != "configuration",
                         min_width=len(col) if col == "configuration" else None)
    for series in scaling_series(results):
        for p in series["points"]:
            key = config_key({**series, "world_size": p["world_size"]})
            table.add_row(
                series["label"],
                str(p["world_size"]),
                str(nodes.get(key) or 1),
                str(series["batch_size"] * p["world_size"]) if series["batch_size"] else "-",
                f"{p['samples_per_s']:,.1f}",
                "-" if p["ideal_samples_per_s"] is None else f"{p['ideal_samples_per_s']:,.1f}",
                "-" if p["scaling_efficiency"] is None else f"{p['scaling_efficiency']:.2f}",
            )
    return table
