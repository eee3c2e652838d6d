"""`dlbench report [RUN...|--latest] --output DIR`: a self-contained HTML report with charts.

    dlbench report --latest --output dlbench-report && xdg-open dlbench-report/index.html
    dlbench report --since 1d --host 'node*' -o fleet-report   # a fleet: every matching stored run
    dlbench report /shared/dlbench/ -o fleet-report             # result JSON files, or folders of them

Runs are selected as `dlbench fleet` selects them (`cli._runs.select_runs`); when they come from several hosts
that measured the same configuration, the page opens with the fleet section (`report.sections.fleet`), judged
with `--threshold` and `--alpha` as `dlbench fleet` judges.
"""

from __future__ import annotations

from pathlib import Path

import typer

from dlbench.cli._common import console, db_option, gpu_filter_option, host_option, since_option
from dlbench.cli.fleet import alpha_option, check_judging, threshold_option
from dlbench.errors import BadInput


def register(app: typer.Typer) -> None:
    """Add `dlbench report` to `app`."""

    @app.command("report")
    def report(
        runs: list[str] | None = typer.Argument(
            None, metavar="RUN", show_default=False,
            help="Runs to include: run ids, unique prefixes, `latest`, result JSON files or folders of them. "
                 "Default: the latest run; with --since, --host or --gpu, every stored run that matches."),
        latest: bool = typer.Option(False, "--latest", help="Report the newest stored run."),
        since: str | None = since_option(),
        host: list[str] | None = host_option(),
        gpu: str | None = gpu_filter_option(),
        output: Path = typer.Option(Path("dlbench-report"), "--output", "-o",
                                    help="Folder to write index.html and the charts (PNG and SVG) into."),
        threshold: float = threshold_option(),
        alpha: float = alpha_option(),
        db: str | None = db_option(),
    ) -> None:
        """Write an HTML report (index.html, charts embedded) plus every chart as PNG and SVG. Runs from 3 or more hosts that measured the same configuration get a fleet section, judged as `dlbench fleet` judges them."""  # noqa: E501 - one line: rich keeps the docstring's line breaks
        from dlbench.cli._runs import select_runs

        check_judging(threshold, alpha)
        if latest and runs:
            raise BadInput("give run ids or --latest, not both")
        if output.exists() and not output.is_dir():
            raise BadInput(f"--output {output}: exists and is not a folder")
        selecting = bool(since or host or gpu)
        refs = list(runs or []) or ([] if selecting and not latest else ["latest"])
        documents = select_runs(refs, db, since, host, gpu)
        if not any(doc.get("results") for doc in documents):
            raise BadInput("nothing to report: the selected run(s) have no results")
        from dlbench.report.html import write_report_files

        try:
            written = write_report_files(documents, output, threshold_pct=threshold, alpha=alpha)
        except OSError as exc:
            raise BadInput(f"cannot write the report to {output}: {exc.strerror or exc}") from None
        head = f"{len(documents)} runs" if len(documents) > 1 else ""
        if written.fleet:
            head += " with a fleet section"
        count = len(written.charts)
        what = f"{count} chart{'s' if count != 1 else ''}, PNG and SVG in {output / 'charts'}"
        # paths whole: not markup, not wrapped
        console().print(f"Wrote {written.index} ({head + ', ' if head else ''}{what})", markup=False, soft_wrap=True)
