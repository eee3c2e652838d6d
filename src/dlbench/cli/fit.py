"""`dlbench fit MODEL`: GPU memory to serve or fine-tune an LLM, term by term, and which GPUs hold it.

    dlbench fit llama-3.1-8b --mode serve --context 8192
    dlbench fit llama-3.1-70b --mode qlora --gpu "RTX 4090"
    dlbench fit --list

With a stored full-flavour generate run of the model at the precision (`dlbench run --scenario generate`),
`--task serve` shows it beside the estimate (`dlbench.analysis.fit_measured`). Never imports torch. The arithmetic is `dlbench.analysis.fit` (formulas and sources in its docstring and in
docs/fit.md); this module parses, calls and prints. Memory is printed in GiB, as GPU memory sizes are binary.
"""

from __future__ import annotations

from typing import Any

import typer

from dlbench.cli._common import db_option, json_option, print_json, table_console
from dlbench.errors import BadInput

GIB = 2**30


def _gib(value: float) -> str:
    return f"{value / GIB:,.2f}"


def _model_name(model: str | None, workload: str | None) -> str:
    if model and workload and model != workload:
        raise BadInput(f"name one model: got {model!r} and -w {workload!r}")
    name = model or workload
    if not name:
        raise BadInput("name a model (e.g. `dlbench fit llama-3.1-8b`); `dlbench fit --list` lists them")
    return name


def _list_models(as_json: bool) -> None:
    from rich import box
    from rich.table import Table

    from dlbench.catalog.models import active_param_count, all_models, param_count

    shapes = all_models()
    if as_json:
        print_json([{**s.to_dict(), "params": param_count(s), "active_params": active_param_count(s)}
                    for s in shapes])
        return
    table = Table(title=f"{len(shapes)} model shapes", box=box.SIMPLE_HEAD, pad_edge=False,
                  caption="Each row's figures come from its config.json (`dlbench fit --list --json` gives the "
                  "source); params counted by dlbench.catalog.models.")
    table.add_column("Model", no_wrap=True)
    table.add_column("Family")
    for header in ("Params", "Hidden", "Layers", "Heads", "KV heads", "Head dim", "MLP", "Vocab", "Context"):
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("Experts", justify="right")
    for s in shapes:
        params = f"{param_count(s) / 1e9:.2f}B"
        if s.is_moe:
            params += f" ({active_param_count(s) / 1e9:.1f}B active)"
        table.add_row(s.name, s.family, params, f"{s.hidden:,}", str(s.layers), str(s.heads), str(s.kv_heads),
                      str(s.head_dim), f"{s.intermediate:,}", f"{s.vocab:,}", f"{s.max_position:,}",
                      f"{s.active_experts} of {s.experts}" if s.is_moe else "-")
    table_console(140).print(table)


def _terms_table(est: Any, shape: Any):
    from rich import box
    from rich.table import Table

    settings = ", ".join(f"{k.replace('_', ' ')} {({True: 'on', False: 'off'}.get(v, v))}"
                         for k, v in est.settings.items())
    title = (f"{shape.name}: {est.mode}, {est.precision}, context {est.context:,}, batch {est.batch}"
             + (f" ({settings})" if settings else ""))
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("Term")
    table.add_column("GiB", justify="right", no_wrap=True)
    table.add_column("Arithmetic", overflow="fold")
    for term in est.terms:
        table.add_row(term.name, _gib(term.bytes), term.formula)
    table.add_row("[bold]Total[/bold]", f"[bold]{_gib(est.total_bytes)}[/bold]", "on one GPU")
    return table


def _gpus_table(fits: list[Any]):
    from rich import box
    from rich.table import Table

    table = Table(title="Catalogue GPUs that hold it", box=box.SIMPLE_HEAD, pad_edge=False,
                  caption="Several cards: model states split n ways (tensor parallel to serve, FSDP/ZeRO-3 to "
                  "train), 1 GiB overhead on each card. GiB free: per card.")
    table.add_column("Cards", justify="right", no_wrap=True)
    table.add_column("GPU (memory GiB, GiB free)", overflow="fold")
    for n in sorted({f.gpus_needed for f in fits if f.gpus_needed is not None}):
        names = [f"{f.gpu} ({f.memory_bytes / GIB:g}, {_gib(f.margin_bytes)})" for f in fits if f.gpus_needed == n]
        table.add_row(str(n), "; ".join(names))
    none = [f.gpu for f in fits if f.gpus_needed is None]
    if none:
        table.add_row("> 8", "; ".join(none))
    return table


def _one_gpu_line(est: Any, spec: Any) -> tuple[str, dict[str, Any]]:
    from dlbench.analysis.fit import fit_on

    memory = spec.memory_bytes
    n, per_gpu, margin = fit_on(est, memory)
    one = est.per_gpu_bytes(1)
    data = {"name": spec.name, "memory_bytes": memory, "fits_on_one": one <= memory,
            "margin_bytes": memory - one, "gpus_needed": n, "per_gpu_bytes": per_gpu if n else None}
    if one <= memory:
        return (f"{spec.name} ({memory / GIB:g} GiB): yes, {_gib(one)} GiB needed, {_gib(memory - one)} GiB to "
                "spare"), data
    line = f"{spec.name} ({memory / GIB:g} GiB): no, {_gib(one)} GiB needed, {_gib(one - memory)} GiB short"
    if n:
        line += f"; {n} x {spec.name} hold it ({_gib(per_gpu)} GiB each, {_gib(margin)} GiB to spare each)"
    else:
        line += "; not even 8 of them hold it"
    return line, data


def _ratio(measured: float, estimated: float) -> str:
    return f"x{measured / estimated:.2f}" if estimated else "-"


def measured_lines(measured: Any, est: Any) -> list[str]:
    """The stored generate run beside the estimate, as text lines (`analysis.fit_measured.MeasuredServe`)."""
    from dlbench.analysis.fit import FIXED_OVERHEAD_BYTES

    when = (measured.created_at or "")[:16].replace("T", " ")
    where = measured.gpu or measured.device or "unknown device"
    lines = [f"[bold]Measured[/bold] (run {measured.run_id[:12]}, {where}{', ' + when if when else ''}; "
             f"{measured.precision}, batch {measured.batch}, context {measured.context:,} = "
             f"{measured.prompt_len:,} prompt + {measured.new_tokens:,} new tokens):"]
    if measured.weight_bytes is not None:
        lines.append(f"  weights: measured {_gib(measured.weight_bytes)} GiB, estimated "
                     f"{_gib(measured.estimated_weight_bytes)} GiB "
                     f"({measured.weight_bytes - measured.estimated_weight_bytes:+,.0f} B, "
                     f"{_ratio(measured.weight_bytes, measured.estimated_weight_bytes)})")
    if measured.peak_memory_bytes is not None:
        reserved = (f" ({_gib(measured.peak_reserved_bytes)} GiB reserved)"
                    if measured.peak_reserved_bytes is not None else "")
        lines.append(f"  peak memory: measured {_gib(measured.peak_memory_bytes)} GiB allocated{reserved}, "
                     f"estimated {_gib(measured.estimated_total_bytes)} GiB total, "
                     f"{_gib(measured.estimated_without_context_bytes)} GiB without the "
                     f"{FIXED_OVERHEAD_BYTES / GIB:g} GiB CUDA context torch does not count "
                     f"({_ratio(measured.peak_memory_bytes, measured.estimated_without_context_bytes)})")
    else:
        lines.append("  peak memory: not measured (dlbench measures peak memory on CUDA GPUs only)")
    if not measured.same_shape:
        lines.append(f"  The closest stored shape: the question is batch {est.batch}, context {est.context:,}; "
                     "the estimates on these lines are at the run's shape.")
    return lines


def _measured(db: str | None, use_runs: bool, shape: Any, est: Any) -> tuple[Any, int]:
    """(the closest stored generate run beside the estimate or None, --tiny runs left out) for --task serve."""
    if not use_runs or est.mode != "serve":
        return None, 0
    from dlbench.analysis.fit_measured import closest_measured, tiny_only
    from dlbench.cli._measured import stored_documents

    docs = stored_documents(db, shape.name)
    if not docs:
        return None, 0
    measured = closest_measured(docs, shape, est.precision, est.context, est.batch)
    return measured, (0 if measured is not None else tiny_only(docs, shape.name, est.precision))


def _print_measured(out: Any, measured: Any, tiny: int, est: Any) -> None:
    if measured is not None:
        for line in measured_lines(measured, est):
            out.print(line, highlight=False)
    elif tiny:
        out.print(f"Measured: only --tiny generate runs of {est.model} at {est.precision} are stored ({tiny}); "
                  "a tiny run is a different, smaller shape, so none is shown beside the estimate.", highlight=False)


def register(app: typer.Typer) -> None:
    """Add `dlbench fit` to `app`."""
    from dlbench.analysis.fit import DEFAULT_CONTEXT, DEFAULT_LORA_RANK, MODES, OPTIMIZERS, WEIGHT_BITS

    @app.command("fit")
    def fit_command(
        model: str = typer.Argument(None, help="Model shape, e.g. llama-3.1-8b (`dlbench fit --list` lists them)."),
        workload: str = typer.Option(None, "-w", "--workload", help="The model, as an option (same as MODEL)."),
        mode: str = typer.Option("serve", "--mode", "--task", help=f"One of: {', '.join(MODES)}."),
        precision: str = typer.Option("bf16", "-p", "--precision",
                                      help=f"Weights: {', '.join(WEIGHT_BITS)} (training modes take bf16/fp16; "
                                      "lora also int8; qlora's base is always NF4)."),
        context: int = typer.Option(DEFAULT_CONTEXT, "--context", help="Tokens per sequence (prompt + output)."),
        batch: int = typer.Option(1, "--batch", "--batch-size", help="Sequences at once (users served, or the "
                                  "training micro-batch)."),
        gpu: str = typer.Option(None, "--gpu", help="Answer for this catalogue GPU only: yes/no and the margin."),
        lora_rank: int = typer.Option(DEFAULT_LORA_RANK, "--lora-rank", help="LoRA rank (lora, qlora)."),
        optimizer: str = typer.Option("adamw", "--optimizer", help=f"Training optimizer: {', '.join(OPTIMIZERS)}."),
        checkpointing: bool = typer.Option(True, "--checkpointing/--no-checkpointing",
                                           help="Gradient checkpointing per layer (training modes)."),
        list_models: bool = typer.Option(False, "--list", help="List the model catalogue and exit."),
        use_runs: bool = typer.Option(True, "--runs/--no-runs", help="With --task serve, show your stored "
                                      "generate run of the model and precision (the closest shape) beside the "
                                      "estimate (default); --no-runs: the estimate alone."),
        db: str = db_option(),
        as_json: bool = json_option(),
    ) -> None:
        """Memory to serve or fine-tune an LLM (weights, KV cache, gradients, optimizer, activations, overhead)
        and which catalogue GPUs hold it, on 1, 2, 4 or 8 cards."""
        if list_models:
            _list_models(as_json)
            return
        from dlbench.analysis.fit import gpus_that_hold, memory_needed
        from dlbench.catalog import resolve
        from dlbench.catalog.models import get_model

        shape = get_model(_model_name(model, workload))
        spec = resolve(gpu) if gpu is not None else None
        est = memory_needed(shape, mode, precision, context=context, batch=batch, lora_rank=lora_rank,
                            optimizer=optimizer, checkpointing=checkpointing)
        if spec is not None and not spec.memory_bytes:
            raise BadInput(f"the catalogue has no memory size for {spec.name}")
        measured, tiny = _measured(db, use_runs, shape, est)
        extra: dict[str, Any] = {}
        if measured is not None:
            extra["measured"] = measured.to_dict()
        elif tiny:
            extra["measured"] = None
            extra["measured_note"] = f"only --tiny generate runs are stored ({tiny}): a different shape"
        out = table_console(140)
        if spec is not None:
            line, data = _one_gpu_line(est, spec)
            if as_json:
                print_json({"model": shape.to_dict(), "estimate": est.to_dict(), "gpu": data, **extra})
                return
            out.print(_terms_table(est, shape))
            _print_measured(out, measured, tiny, est)
            out.print(line)
            return
        fits = gpus_that_hold(est)
        if as_json:
            print_json({"model": shape.to_dict(), "estimate": est.to_dict(), "gpus": [f.to_dict() for f in fits],
                        **extra})
            return
        out.print(_terms_table(est, shape))
        _print_measured(out, measured, tiny, est)
        out.print(_gpus_table(fits))
        out.print(f"Shape from {shape.source}. Formulas and sources: docs/fit.md.")
