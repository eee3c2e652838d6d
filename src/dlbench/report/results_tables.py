"""The results of a run as terminal tables, one per scenario: what `dlbench run` and `dlbench results show` print.

Training results keep `run_table.results_table` (its output is pinned by tests); infer and generate results get
their own columns (`scenario_table`). A run that mixes scenarios prints one table per scenario, in the order they
first appear, each titled with its scenario; a run of one scenario prints one table under the given title.
"""

from __future__ import annotations

from typing import Any

from dlbench.report.run_table import results_table
from dlbench.report.scenario_table import SCENARIO_COLUMNS, scenario_table
from dlbench.schema.metrics import scenario


def by_scenario(results: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Results grouped by scenario, groups in the order of their first result."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(scenario(r), []).append(r)
    return groups


def results_tables(results: list[dict[str, Any]], title: str | None = None, width: int | None = None,
                   details: bool = False):
    """A rich renderable: the training table for training results, the scenario's table for the others."""
    groups = by_scenario(results)
    tables = []
    for name, members in groups.items():
        named = title if len(groups) <= 1 else f"{title or 'results'}: {name}"
        if name in SCENARIO_COLUMNS:
            tables.append(scenario_table(members, name, title=named, width=width))
        else:  # train, and a scenario this version does not know: the training columns
            tables.append(results_table(members, title=named, width=width, details=details))
    if len(tables) == 1:
        return tables[0]
    if not tables:  # nothing measured: the training table's empty frame, as before
        return results_table(results, title=title, width=width, details=details)
    from rich.console import Group

    return Group(*tables)
