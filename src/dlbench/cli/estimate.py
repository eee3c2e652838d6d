"""`dlbench estimate --gpu "RTX 5090" --workload resnet50 --precision amp-fp16 [--gpus 2] [--spec-only]`.

Predicted training throughput with a low-high band and what it was calibrated on (analysis/estimate.py);
with `--scenario generate -w llama-3.1-8b -p bf16`, LLM decode and prefill tokens/s (analysis/llm_estimate.py).
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
                                          "bert-large-mlm; with --scenario generate an LLM of `dlbench fit --list` "
                                          "(llama-3.1-8b, qwen2.5-7b, ...)."),
        precision: str = typer.Option(..., "--precision", "-p",
                                      help="fp32, tf32, amp-fp16 or amp-bf16; with --scenario generate: bf16, fp16, "
                                           "int8, int4 (weight-only) or llama.cpp's q8_0, q4_0, q4_k_m."),
        gpus: int = typer.Option(1, "--gpus", help="Number of identical GPUs (training: data parallel; generate: tensor parallel, 1/2/4/8)."),
        scenario: str = typer.Option("train", "--scenario",
                                     help="train (default: training samples/s) or generate (LLM decode and "
                                          "prefill tokens/s)."),
        batch_size: int = typer.Option(1, "--batch-size", help="generate: sequences decoded together."),
        context: int = typer.Option(4096, "--context", help="generate: tokens in the KV cache (and prompt length)."),
        software: str | None = typer.Option(None, "--software",
                                            help="generate: calibrate on gpt-fast or llama.cpp rows only "
                                                 "(default: the first with rows for the precision)."),
        spec_only: bool = typer.Option(False, "--spec-only",
                                       help="Use the model even where a published result exists."),
        use_runs: bool = runs_option(),
        db: str | None = db_option(),
        as_json: bool = json_option(),
    ) -> None:
        """Estimate training samples/s (or LLM tokens/s) for a GPU, with a low-high band and its basis."""
        from dlbench.analysis.estimate import estimate
        from dlbench.catalog import resolve
        from dlbench.errors import BadInput

        scenario = scenario.strip().lower()
        if scenario == "generate":
            _generate(gpu, workload, precision, batch_size, context, spec_only, software, as_json, gpus)
            return
        if scenario != "train":
            raise BadInput(f"unknown scenario {scenario!r} for estimate; expected train or generate")
        if software is not None:
            raise BadInput("--software applies to --scenario generate only")

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


def _tok(v: float | None) -> str:
    return "-" if v is None else (f"{v:,.0f}" if v >= 100 else f"{v:,.1f}")


def _generate(gpu: str, model: str, precision: str, batch: int, context: int, spec_only: bool,
              software: str | None, as_json: bool, num_gpus: int = 1) -> None:
    from dlbench.analysis.llm_estimate import estimate_generate

    e = estimate_generate(model, precision, gpu, batch=batch, context=context, spec_only=spec_only,
                          software=software, num_gpus=num_gpus)
    if as_json:
        print_json(e.to_dict())
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"{e.num_gpus}x {e.gpu}: {e.model} {e.precision}, batch {e.batch}, context {e.context:,}"
                  + ("  (spec only)" if e.spec_only else ""), show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    table.add_row("bytes per step", f"{e.bytes_per_step / 1e9:,.2f} GB (weights {e.weights_bytes / 1e9:,.2f} + KV "
                  f"cache {e.kv_cache_bytes / 1e9:,.2f}) at {e.memory_bandwidth_bytes_per_s / 1e9:,.0f} GB/s")
    if e.peak_flops_per_s:
        table.add_row("FLOPs per token", f"{e.flops_per_token / 1e9:,.1f} GFLOP at {e.peak_flops_per_s / 1e12:,.0f} "
                      f"TFLOP/s ({escape(e.peak_kind)})")
    for name, phase in (("decode", e.decode), ("prefill", e.prefill)):
        if phase is None:
            continue
        per_user = f" ({_tok(phase.tokens_per_s / e.batch)} per sequence)" if name == "decode" and e.batch > 1 else ""
        table.add_row(name, f"[bold]{_tok(phase.tokens_per_s)}[/] tokens/s{per_user}  [yellow]estimated[/]  "
                      f"(band {_tok(phase.low)}-{_tok(phase.high)}; {phase.efficiency:.0%} of the "
                      f"{_tok(phase.roofline_tokens_per_s)} tokens/s roofline)")
        table.add_row("", f"calibrated on {escape(phase.calibrated_on)}")
        table.add_row("", escape(phase.basis))
        for row in phase.published:
            table.add_row("", f"published {row['software']} {row['precision']} {row['mode']}: {_tok(row['value'])} "
                          f"tokens/s" + (" (not used: --spec-only)" if e.spec_only else ""))
    for note in e.notes:
        table.add_row("note", escape(note))
    console().print(table)
