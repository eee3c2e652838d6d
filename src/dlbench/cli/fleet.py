"""`dlbench fleet`: which nodes of a fleet are slower than their peers, and why.

    dlbench fleet                          # every stored run (one per node, e.g. from a Slurm job array)
    dlbench fleet --since 1d --host 'gpu-*' --gpu H100
    dlbench fleet /shared/dlbench/         # result JSON files, or folders of them, without importing them
    dlbench fleet --json                   # the same as JSON

Exit code: 0 when no node is flagged, 1 when one is (slow, or failed where its peers measured), 2 on bad input
(an unknown run id, an unreadable file, no run matching). The analysis is `dlbench.analysis.fleet`, the table
`dlbench.report.comparison_tables.fleet_table`; this module selects the runs and prints.
"""

from __future__ import annotations

from typing import Any

import typer

from dlbench.analysis.fleet import DEFAULT_ALPHA, DEFAULT_THRESHOLD_PCT, MIN_RUNS
from dlbench.cli._common import (
    db_option,
    gpu_filter_option,
    host_option,
    json_option,
    plain_tree,
    print_json,
    since_option,
    table_console,
)
from dlbench.cli._runs import select_runs
from dlbench.errors import BadInput


def threshold_option() -> Any:
    """`--threshold PCT`, as `dlbench fleet` and `dlbench report` (its fleet section) take it."""
    return typer.Option(
        DEFAULT_THRESHOLD_PCT, "--threshold", metavar="PCT",
        help="Call a node slow when it is more than this many percent below the fleet median of its "
             "configuration (and its step times differ significantly). Same-model GPUs usually sit within a "
             "few percent of each other.")


def alpha_option() -> Any:
    """`--alpha`, as `dlbench fleet` and `dlbench report` (its fleet section) take it."""
    return typer.Option(DEFAULT_ALPHA, "--alpha", help="Significance level of the test on step times (Welch's "
                        "t-test and Mann-Whitney U against the pooled step times of the peers).")


def check_judging(threshold: float, alpha: float) -> None:
    """Bad input (exit code 2) unless 0 < threshold < 100 and 0 < alpha < 1."""
    if not 0 < threshold < 100:
        raise BadInput(f"--threshold must be between 0 and 100 percent, got {threshold:g}")
    if not 0 < alpha < 1:
        raise BadInput(f"--alpha must be between 0 and 1, got {alpha:g}")


def register(app: typer.Typer) -> None:
    """Add `dlbench fleet` to `app`."""

    @app.command("fleet")
    def fleet(
        runs: list[str] | None = typer.Argument(
            None, metavar="RUN", show_default=False,
            help="Runs to judge: run ids, unique prefixes, 'latest', result JSON files or folders of them. "
                 "Default: every stored run."),
        since: str | None = since_option(),
        host: list[str] | None = host_option(),
        gpu: str | None = gpu_filter_option(),
        threshold: float = threshold_option(),
        alpha: float = alpha_option(),
        all_runs: bool = typer.Option(False, "--all-runs", help="Judge every run; by default only the newest run "
                                      "of each host (and device) counts for each configuration."),
        as_json: bool = json_option(),
        db: str | None = db_option(),
    ) -> None:
        """Find the nodes or GPUs of a fleet that are slower than their peers, and say why.

        Exit code 0 when no node is flagged, 1 when one is (slow, or failed where its peers measured), 2 on bad input.
        """  # noqa: E501 - one line: rich keeps the docstring's line breaks
        from dlbench.analysis.fleet import fleet_report

        check_judging(threshold, alpha)
        selected = select_runs(runs or [], db, since, host, gpu)
        report = fleet_report(selected, threshold_pct=threshold, alpha=alpha, all_runs=all_runs)
        if as_json:
            print_json(report)
        else:
            render(report)
        raise typer.Exit(report["exit_code"])


def render(report: dict[str, Any]) -> None:
    """Every configuration's table, its notes, then the summary line."""
    from rich.text import Text

    from dlbench.report.comparison_tables import fleet_table

    report = plain_tree(report)  # host names and error messages must not drive the terminal
    out = table_console()
    for group in report["groups"]:
        out.print(fleet_table(group))
        if not group["judged"]:
            out.print(Text(f"  not judged: {group['reason']}", style="yellow"))
        if group["fleet_wide_causes"]:
            seen = ", ".join(f"{c['text']} ({c['runs']} of {group['runs']})" for c in group["fleet_wide_causes"])
            out.print(Text(f"  seen on most runs, so it singles out no node: {seen}", style="dim"))
        if group["superseded"]:
            n = len(group["superseded"])
            out.print(Text(f"  {n} older run{'s' if n != 1 else ''} of the same host left out (--all-runs "
                           "judges every run)", style="dim"))
        out.print()
    out.print(Text(f"vs median: samples/s against the fleet median of the configuration. slow: more than "
                   f"{report['threshold_pct']:g}% below it, and the step times differ from those of the peers within it "
                   f"(Welch's t-test and Mann-Whitney U both p < {report['alpha']:g}; p shows the larger). "
                   f"Configurations with fewer than {MIN_RUNS} measured runs are not judged. Exit code 1 when a "
                   "node is flagged.", style="dim"))
    style = "bold red" if report["exit_code"] else "bold green"
    out.print(Text(report["summary"], style=style))
