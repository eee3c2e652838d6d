"""`dlbench advise --workload bert-large-squad --precision amp-fp16 --model-params 3e8 --budget-usd 5000 --max-gpus 2`.

GPU builds ranked by training throughput per 1,000 USD of total cost of ownership (analysis/advise.py). With
`--llm MODEL --task serve|qlora|lora|full-finetune`: builds that hold and serve (or fine-tune) an LLM, ranked by
cost per million tokens or per fine-tuning hour (analysis/llm_advise.py), e.g.
`dlbench advise --llm llama-3.1-8b --task serve --context 8192 --users 4 --min-tokens-per-s 20 --budget 2000`.
"""

from __future__ import annotations

import typer

from dlbench.cli._common import db_option, json_option, print_json, table_console
from dlbench.cli._measured import load_points, runs_option

KIND_STYLE = {"measured": "green", "published": "cyan", "estimated": "yellow"}


def register(app: typer.Typer) -> None:
    """Add `dlbench advise` to `app`."""
    from dlbench.analysis import advise as adv
    from dlbench.analysis import cost as costs

    @app.command("advise")
    def advise_command(
        workload: str = typer.Option(adv.DEFAULT_WORKLOAD, "--workload", "-w",
                                     help="Workload to rank by: resnet50, bert-base-squad, bert-large-squad, "
                                          "bert-base-mlm, bert-large-mlm."),
        precision: str = typer.Option(adv.DEFAULT_PRECISION, "--precision", "-p",
                                      help="fp32, tf32, amp-fp16 or amp-bf16."),
        min_memory_gb: float | None = typer.Option(None, "--min-memory-gb",
                                                   help="Only GPUs with at least this much memory each (GB)."),
        model_params: float | None = typer.Option(
            None, "--model-params",
            help="Model size in parameters (e.g. 1.3e9): turned into a memory need per GPU for AdamW training."),
        budget_usd: float | None = typer.Option(None, "--budget-usd", "--budget",
                                                help="Maximum purchase price of the build (GPUs + host) in USD."),
        form_factor: str | None = typer.Option(None, "--form-factor", help="workstation or server."),
        max_gpus: int | None = typer.Option(None, "--max-gpus",
                                            help="Also consider builds of 2..N identical GPUs (default 2; with "
                                                 "--llm 8, tensor parallel over 1, 2, 4 or 8)."),
        llm: str | None = typer.Option(None, "--llm",
                                       help="Advise for an LLM of `dlbench fit --list` (llama-3.1-8b, ...) instead "
                                            "of a training workload."),
        task: str = typer.Option("serve", "--task", help="With --llm: serve, qlora, lora or full-finetune."),
        context: int = typer.Option(4096, "--context", help="With --llm: tokens per sequence (prompt + output)."),
        users: int = typer.Option(1, "--users", help="With --llm --task serve: sequences generated at once."),
        min_tokens_per_s: float | None = typer.Option(
            None, "--min-tokens-per-s", help="With --llm --task serve: decode speed each user must get."),
        gpu: list[str] | None = typer.Option(
            None, "--gpu", help="With --llm: compare these builds only, e.g. --gpu \"RTX PRO 6000\" "
                                "--gpu \"2x RTX 5090\" (repeatable)."),
        cloud_price: float | None = typer.Option(
            None, "--cloud-price-per-hour",
            help="With --llm: rental price per GPU-hour, to show each build's cloud cost and break-even days."),
        electricity_price: float = typer.Option(costs.DEFAULT_ELECTRICITY_PRICE_USD_PER_KWH, "--electricity-price",
                                                help="Electricity price in USD per kWh (seed 001: 0.175)."),
        utilization: float = typer.Option(costs.DEFAULT_UTILIZATION, "--utilization",
                                          help="Fraction of the time the GPUs are busy, in (0, 1] (seed 001: 0.15)."),
        years: float = typer.Option(costs.DEFAULT_YEARS, "--years", help="Years of ownership (seed 001: 5)."),
        host_price_usd: float = typer.Option(costs.DEFAULT_HOST_PRICE_USD, "--host-price-usd",
                                             help="Price of a 2-GPU host (seed 001's barebone: about 700 USD)."),
        host_power_w: float = typer.Option(costs.DEFAULT_HOST_POWER_W, "--host-power-w",
                                           help="Power of a 2-GPU host without its GPUs, in W (seed 001: 100)."),
        top: int = typer.Option(15, "--top", help="Show this many options in the table (all with --json)."),
        use_runs: bool = runs_option(),
        db: str | None = db_option(),
        as_json: bool = json_option(),
    ) -> None:
        """Rank GPUs (and multi-GPU builds) by performance per dollar of total cost of ownership."""
        from dlbench.errors import BadInput

        if top < 1:
            raise BadInput(f"--top must be at least 1, got {top}")
        if llm is not None:
            from dlbench.analysis.llm_advise import advise_llm

            if model_params is not None or min_memory_gb is not None:
                raise BadInput("--llm computes the memory it needs: leave out --model-params and --min-memory-gb")
            a = advise_llm(llm, task=task, precision=None if precision == adv.DEFAULT_PRECISION else precision,
                           context=context, users=users, min_tokens_per_s=min_tokens_per_s, budget_usd=budget_usd,
                           builds=gpu or (), max_gpus=max_gpus or 8, cloud_usd_per_gpu_hour=cloud_price,
                           electricity_price_usd_per_kwh=electricity_price, utilization=utilization, years=years,
                           host_price_usd=host_price_usd, host_power_w=host_power_w)
            if as_json:
                print_json(a.to_dict())
            else:
                _print_llm(a, top)
            return
        if gpu or cloud_price is not None or min_tokens_per_s is not None or users != 1:
            raise BadInput("--gpu, --cloud-price-per-hour, --users and --min-tokens-per-s go with --llm")
        max_gpus = adv.DEFAULT_MAX_GPUS if max_gpus is None else max_gpus
        a = adv.advise(workload=workload, precision=precision, min_memory_gb=min_memory_gb,
                       model_params=model_params, budget_usd=budget_usd, form_factor=form_factor,
                       max_gpus=max_gpus, electricity_price_usd_per_kwh=electricity_price,
                       utilization=utilization, years=years, host_price_usd=host_price_usd,
                       host_power_w=host_power_w, extra_points=load_points(db, use_runs))
        if as_json:
            print_json(a.to_dict())
            return
        _print(a, top)


def _print(a, top: int) -> None:
    from rich.markup import escape
    from rich.table import Table

    con = table_console(min_width=120)
    unit = "img/s" if a.workload == "resnet50" else "seq/s"
    if a.memory_need is not None:
        m = a.memory_need
        g = 2**30
        con.print(f"memory need: {m.total_bytes / g:,.1f} GB per GPU = weights {m.weights_bytes / g:,.1f} + "
                  f"gradients {m.gradients_bytes / g:,.1f} + AdamW {m.optimizer_bytes / g:,.1f} + activations "
                  f"{m.activation_bytes / g:,.1f} GB  ({m.formula}; GB = 2^30 bytes, as GPU memory is sold)")
    elif a.min_memory_bytes is None:
        for rule in a.rules_of_thumb:
            con.print(f"rule of thumb: \"{rule['quote']}\" ({rule['source']}); filter with --min-memory-gb or "
                      "--model-params", highlight=False)
    from rich import box

    # Numbers and kinds are never cut (an 80-column terminal cut the band to "(97-1…"); the build name wraps.
    table = Table(title=f"{a.workload} {a.precision}: ranked by {unit} per 1,000 USD of "
                        f"{a.assumptions['years']:g}-year cost of ownership", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    narrow = con.width < 100  # the band goes under the figure, headers on two lines
    for col, just in (("#", "right"), ("build", "left"), (unit, "right"), ("from", "left"),
                      ("per kUSD", "right"), ("per W", "right"), ("memory", "right"), ("price USD", "right"),
                      ("TCO USD", "right")):
        table.add_column(col.replace(" ", "\n") if narrow else col, justify=just, no_wrap=col != "build",
                         min_width=12 if col == "build" else None)
    shown = a.options[:top]
    for o in shown:
        style = KIND_STYLE.get(o.throughput_kind, "")
        table.add_row(
            str(o.rank), f"{o.num_gpus}x {escape(o.gpu)}",
            f"{o.samples_per_s:,.0f}{chr(10) if narrow else ' '}"
            f"({o.samples_per_s_low:,.0f}-{o.samples_per_s_high:,.0f})",
            f"[{style}]{o.throughput_kind}[/]", f"{o.samples_per_s_per_kusd:,.1f}", f"{o.samples_per_s_per_w:.2f}",
            f"{o.memory_bytes_per_gpu / 2**30:.0f} GB" if o.memory_bytes_per_gpu else "-",
            f"{o.purchase_usd:,.0f}", f"{o.total_cost_usd:,.0f}")
    if shown:  # an empty table says nothing; the line at the end says why
        con.print(table)
    for o in shown:
        con.print(f"  {o.rank:>2}. {o.num_gpus}x {escape(o.gpu)}: {escape(o.reason)}")
    s = a.assumptions
    con.print(f"TCO = GPUs + host ({s['host_price_usd']:,.0f} USD and {s['host_power_w']:.0f} W per "
              f"{s['host_gpus']} GPUs) + electricity for GPU TDP + host at {s['utilization']:.0%} utilisation, "
              f"{s['electricity_price_usd_per_kwh']:.3f} USD/kWh, {s['years']:g} years. Price = purchase of the "
              "build; per W = per W of GPU TDP; range = low-high band.")
    _print_notes(con, a)
    if not a.options:
        con.print("[red]no GPU in the catalogue matches these filters[/]")


def _print_llm(a, top: int) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    con = table_console(min_width=120)
    serve = a.task == "serve"
    terms = ", ".join(f"{t['name']} {t['bytes'] / 2**30:,.1f}" for t in a.memory["terms"])
    con.print(f"memory: {a.memory['total_bytes'] / 2**30:,.1f} GiB for {a.model} {a.task} at {a.precision}, context "
              f"{a.context:,}" + (f", {a.users} user(s)" if serve else "") + f" ({terms} GiB; `dlbench fit` shows "
              "the arithmetic)", highlight=False)
    what = "USD per million generated tokens" if serve else "USD per fine-tuning hour"
    table = Table(title=f"{a.model} {a.task}: ranked by {what} ({a.assumptions['years']:g}-year cost of ownership)",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    cols = ["#", "build", "memory/GPU", "need/GPU", "tokens/s" if serve else "train tok/s"]
    cols += ["per user"] if serve else []
    cols += ["price USD", "TCO USD", "USD/h", "USD/M tok"]
    if a.assumptions["cloud_usd_per_gpu_hour"] is not None:
        cols += ["cloud USD/M", "break-even d"]
    for col in cols:
        table.add_column(col, justify="left" if col == "build" else "right", no_wrap=col != "build")

    def num(v, fmt="{:,.0f}"):
        return "-" if v is None else fmt.format(v)

    for o in a.options[:top]:
        flag = "" if o.fits and o.meets_speed else (" [red](does not fit)[/]" if not o.fits else " [red](too slow)[/]")
        row = [str(o.rank), f"{o.num_gpus}x {escape(o.gpu)}{flag}", f"{o.memory_per_gpu_bytes / 2**30:,.0f} GiB",
               f"{o.need_per_gpu_bytes / 2**30:,.1f} GiB", num(o.tokens_per_s)]
        row += [num(o.tokens_per_s_per_user, "{:,.1f}")] if serve else []
        row += [num(o.purchase_usd), num(o.total_cost_usd), num(o.usd_per_hour, "{:,.3f}"),
                num(o.usd_per_million_tokens, "{:,.2f}")]
        if a.assumptions["cloud_usd_per_gpu_hour"] is not None:
            row += [num(o.cloud_usd_per_million_tokens, "{:,.2f}"), num(o.cloud_break_even_days)]
        table.add_row(*row)
    if a.options:
        con.print(table)
    for o in a.options[:min(top, 5)]:
        con.print(f"  {o.rank:>2}. {o.num_gpus}x {escape(o.gpu)}: {escape(o.basis)}")
    s = a.assumptions
    con.print(f"TCO = GPUs + host + electricity at {s['utilization']:.0%} utilisation "
              f"({s['hours_in_use']:,.0f} hours in use over {s['years']:g} years), "
              f"{s['electricity_price_usd_per_kwh']:.3f} USD/kWh; USD/h = TCO / hours in use; GiB = 2^30 bytes.")
    _print_notes(con, a)
    if not a.options:
        con.print("[red]no build in the catalogue meets these requirements[/]")


def _print_notes(con, a) -> None:
    """An advice's notes, then the GPUs it left out (the first four, with why)."""
    from rich.markup import escape

    for note in a.notes:
        con.print(f"- {escape(note)}")
    if a.excluded:
        con.print(f"[dim]left out: {len(a.excluded)} GPU(s) ("
                  + escape("; ".join(f"{x['gpu']}: {x['reason']}" for x in a.excluded[:4]))
                  + ("; ..." if len(a.excluded) > 4 else "") + "; --json lists all)[/]")
