"""`dlbench report [RUN_ID...|--latest] --output DIR`: a self-contained HTML report with charts.

    dlbench report --latest --output dlbench-report && xdg-open dlbench-report/index.html
"""

from __future__ import annotations

from pathlib import Path

import typer

from dlbench.cli._common import console, db_option
from dlbench.errors import BadInput


def register(app: typer.Typer) -> None:
    """Add `dlbench report` to `app`."""

    @app.command("report")
    def report(
        runs: list[str] | None = typer.Argument(
            None, metavar="RUN_ID", help="Runs to include: run ids, unique prefixes, `latest`, or JSON result files. Default: latest."),
        latest: bool = typer.Option(False, "--latest", help="Report the newest stored run."),
        output: Path = typer.Option(Path("dlbench-report"), "--output", "-o",
                                    help="Folder to write index.html and the charts (PNG and SVG) into."),
        db: str | None = db_option(),
    ) -> None:
        """Write an HTML report (index.html, charts embedded) plus every chart as PNG and SVG."""
        from dlbench.cli._runs import load_runs

        if latest and runs:
            raise BadInput("give run ids or --latest, not both")
        refs = list(runs or []) or ["latest"]
        if output.exists() and not output.is_dir():
            raise BadInput(f"--output {output}: exists and is not a folder")
        documents = load_runs(refs, db)
        if not any(doc.get("results") for doc in documents):
            raise BadInput("nothing to report: the selected run(s) have no results")
        from dlbench.report.html import write_report

        try:
            index = write_report(documents, output)
        except OSError as exc:
            raise BadInput(f"cannot write the report to {output}: {exc.strerror or exc}") from None
        charts = sorted(p.name for p in (output / "charts").glob("*.png")) if (output / "charts").is_dir() else []
        console().print(f"Wrote {index} ({len(charts)} chart{'s' if len(charts) != 1 else ''}, PNG and SVG in "
                        f"{output / 'charts'})", markup=False, soft_wrap=True)  # paths whole: not markup, not wrapped
