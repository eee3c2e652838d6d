"""`dlbench compare A B` (run vs run, with significance) and `dlbench compare A --published`.

A and B are run ids (full, unique prefix, or `latest`) from the store, or paths to JSON result documents.
"""

from __future__ import annotations

from typing import Any

import typer

from dlbench.cli._common import console, db_option, json_option, print_json
from dlbench.errors import BadInput


def register(app: typer.Typer) -> None:
    """Add `dlbench compare` to `app`."""

    @app.command("compare")
    def compare(
        a: str = typer.Argument(..., metavar="A", help="Baseline run: run id, unique prefix, `latest`, or a JSON result file."),
        b: str | None = typer.Argument(None, metavar="B", help="Run to compare with A (same forms as A)."),
        published: bool = typer.Option(False, "--published",
                                       help="Rank A's results among published results for other GPUs instead."),
        alpha: float = typer.Option(0.05, "--alpha", help="Significance level for the tests on step times."),
        min_change: float = typer.Option(0.0, "--min-change", metavar="PCT",
                                         help="Never call a throughput change smaller than this many percent "
                                              "significant (as pyperf's --min-speed)."),
        as_json: bool = json_option(),
        db: str | None = db_option(),
    ) -> None:
        """Compare two runs configuration by configuration, or one run with published results."""
        from dlbench.cli._runs import load_run, load_runs

        if not 0 < alpha < 1:
            raise BadInput(f"--alpha must be between 0 and 1, got {alpha}")
        if min_change < 0:
            raise BadInput(f"--min-change must be 0 or more percent, got {min_change}")
        if published:
            if b is not None:
                raise BadInput("give one run with --published, or two runs without it")
            _published(load_run(a, db), as_json)
            return
        if b is None:
            raise BadInput("compare needs two runs (A B), or one run with --published")
        doc_a, doc_b = load_runs([a, b], db)
        _two_runs(doc_a, doc_b, alpha, min_change, as_json)


def _two_runs(doc_a: dict[str, Any], doc_b: dict[str, Any], alpha: float, min_change: float, as_json: bool) -> None:
    from dlbench.analysis.compare import compare_documents

    report = compare_documents(doc_a, doc_b, alpha, min_change)
    if as_json:
        print_json(report)
        return
    from dlbench.report.comparison_tables import compare_table

    out = console()
    if report["rows"]:
        out.print(compare_table(report))
        out.print(f"[dim]B/A is the throughput ratio. p: the larger of Welch's t-test and Mann-Whitney U on the "
                  f"raw step times; significant when both are below alpha {alpha:g} (--json has both).[/dim]")
    else:
        out.print("No configuration was measured in both runs.")
    from rich.markup import escape

    # Labels and warnings carry names from the documents (GPU, workload): text, never markup.
    for side, labels in (("A", report["only_in_a"]), ("B", report["only_in_b"])):
        if labels:
            out.print(f"Only in {side}: " + "; ".join(labels), markup=False)
    for warning in report["warnings"]:
        out.print(f"[yellow]warning:[/yellow] {escape(str(warning))}")


def published_rows(doc: dict[str, Any], published: list[Any] | None = None) -> list[dict[str, Any]]:
    """Each result of a document with its `vs_published` comparison (the `--published --json` rows)."""
    from dlbench.analysis.configuration import config_fields, config_label
    from dlbench.analysis.ranking import load_published_rows, result_gpu_name, vs_published_in
    from dlbench.schema.metrics import throughput

    if published is None:
        published = load_published_rows()
    rows = []
    for result in doc.get("results") or []:
        gpu_name = result_gpu_name(doc, result)
        row = config_fields(result)
        row.update(label=config_label(result), status=result.get("status"), gpu_name=gpu_name,
                   samples_per_s=throughput(result),
                   vs_published=vs_published_in(doc, result, published))
        rows.append(row)
    return rows


def _published(doc: dict[str, Any], as_json: bool) -> None:
    rows = published_rows(doc)
    if as_json:
        print_json({"run_id": doc.get("run_id"), "rows": rows})
        return
    from dlbench.report.comparison_tables import published_notes, published_sources, published_table

    out = console()
    if not rows:
        out.print("This run has no results.")
        return
    out.print(published_table(rows, doc.get("run_id")))
    for i, note in enumerate(published_notes(rows), 1):
        out.print(f"[{i}] {note}", highlight=False, markup=False)
    sources = published_sources(rows)
    if sources:
        out.print("Published figures from: " + "; ".join(sources), highlight=False, markup=False)
    out.print("[dim]Ratio: this result / median of published results for the same GPU, workload, sequence "
              "length, precision and GPU count. Rank: among published GPUs' medians for the same.[/dim]")
