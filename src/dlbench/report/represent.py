"""How the report's per-run charts stand for many runs, and how they name configurations and hardware.

Shared by the page's section modules (`report.sections`): `thin` keeps a fleet's slowest, middle and fastest
run of each configuration (`THINNED` is the caption's note), `chart_where` names the hardware in a chart's title and
`short_config` a configuration under a heading that names the workload.
"""

from __future__ import annotations

from typing import Any

from dlbench.analysis.configuration import config_parts
from dlbench.report import fmt

# Past this many runs of one configuration (a fleet), the per-run charts show three of them, each a measured result:
# the slowest, the middle one and the fastest by throughput. The fleet section and the results table show every run.
REPRESENTED_MAX = 6
THINNED = (f"Where more than {REPRESENTED_MAX} runs measured a configuration, three of them stand for the rest: "
            "the slowest, the middle one and the fastest by throughput; the results table lists every run.")


def thin(items: list[dict[str, Any]], key) -> list[tuple[dict[str, Any], str | None]]:
    """`items` (each with `samples_per_s`) as (item, role): all of them where at most `REPRESENTED_MAX` share a
    `key(item)`, else that configuration's slowest, middle and fastest with their role (`slowest of 64`), in the
    items' order."""
    by_key: dict[Any, list[dict[str, Any]]] = {}
    for item in items:
        by_key.setdefault(key(item), []).append(item)
    roles: dict[int, str | None] = {}
    for same in by_key.values():
        if len(same) <= REPRESENTED_MAX:
            roles.update({id(item): None for item in same})
            continue
        ordered = sorted(same, key=lambda item: item["samples_per_s"] or 0.0)
        n = len(ordered)
        for item, role in ((ordered[0], "slowest"), (ordered[n // 2], "middle"), (ordered[-1], "fastest")):
            roles[id(item)] = f"{role} of {n}"
    return [(item, roles[id(item)]) for item in items if id(item) in roles]


def chart_where(runs: list[dict[str, Any]]) -> str:
    """The hardware a chart shows, for its title: the GPU(s) of the run(s), without repetition."""
    names = []
    for run in runs:
        if run["gpus"] not in names:
            names.append(run["gpus"])
    return " vs ".join(names)


def short_config(r: dict[str, Any]) -> str:
    """`AMP FP16 · eager · bs 64 · seq 128`: the configuration under a heading that names the workload."""
    precision, *rest = config_parts(r, words=True, workload=False)
    return " \u00b7 ".join([fmt.precision_name(precision), *rest])
