"""`dlbench estimate --gpu "RTX 5090" --workload resnet50 --precision amp-fp16 [--gpus 2] [--spec-only]`.

Predicted training throughput with a low-high band and what it was calibrated on (analysis/estimate.py).
"""

from __future__ import annotations

import typer

from dlbench.cli._common import console, db_option, json_option, print_json
from dlbench.cli._measured import load_points, runs_option


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def register(app: typer.Typer) -> None:
    """Add `dlbench estimate` to `app`."""

    @app.command("estimate")
    def estimate_command(
        gpu: str = typer.Option(..., "--gpu", help="GPU name as in `dlbench gpus`."),
        workload: str = typer.Option(..., "--workload", "-w",
                                     help="Workload: resnet50, bert-base-squad, bert-large-squad, bert-base-mlm, "
                                          "bert-large-mlm."),
        precision: str = typer.Option(..., "--precision", "-p", help="fp32, tf32, amp-fp16 or amp-bf16."),
        gpus: int = typer.Option(1, "--gpus", help="Number of identical GPUs (data parallel)."),
        spec_only: bool = typer.Option(False, "--spec-only",
                                       help="Use the model even where a published result exists."),
        use_runs: bool = runs_option(),
        db: str | None = db_option(),
        as_json: bool = json_option(),
    ) -> None:
        """Estimate training samples/s for a GPU, with a low-high band and its basis."""
        from dlbench.analysis.estimate import estimate
        from dlbench.catalog import resolve

        resolve(gpu)  # an unknown name fails before any database is opened
        e = estimate(gpu, workload, precision, num_gpus=gpus, spec_only=spec_only,
                     extra_points=load_points(db, use_runs))
        if e.samples_per_s is None:
            from dlbench.errors import BadInput

            raise BadInput(f"{e.num_gpus}x {e.gpu} {e.workload} {e.precision}: {e.basis}")
        if as_json:
            print_json(e.to_dict())
            return
        from rich.markup import escape
        from rich.table import Table

        unit = f"{e.unit}/s"
        table = Table(title=f"{e.num_gpus}x {e.gpu}: {e.workload} {e.precision}", show_header=False)
        table.add_column("", style="bold")
        table.add_column("")
        style = {"measured": "green", "published": "cyan", "estimated": "yellow"}.get(e.kind, "red")
        table.add_row("answer", f"[bold]{_fmt(e.samples_per_s)}[/] {unit}  [{style}]{e.kind}[/]"
                      + (f"  (range {_fmt(e.low)}-{_fmt(e.high)})" if e.low is not None else ""))
        if e.published_samples_per_s is not None:
            table.add_row("published", f"{_fmt(e.published_samples_per_s)} {unit}")
        if e.measured_samples_per_s is not None:
            table.add_row("measured", f"{_fmt(e.measured_samples_per_s)} {unit}")
        if e.model_samples_per_s is not None:
            table.add_row("model", f"{_fmt(e.model_samples_per_s)} {unit} "
                                   f"(band {_fmt(e.model_low)}-{_fmt(e.model_high)}; fitted without this GPU)")
        table.add_row("basis", escape(e.basis))
        for src in e.published_sources:
            table.add_row("source", escape(src))
        for note in e.notes:
            table.add_row("note", escape(note))
        console().print(table)
