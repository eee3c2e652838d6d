"""`dlbench reference list`: the packaged published training throughputs, each row with its source; with
`--scenario infer|generate`, the published inference and LLM-generation figures instead.

    dlbench reference list --gpu "NVIDIA H100 80GB HBM3" --workload resnet50 --precision amp-fp16
    dlbench reference list --scenario generate -w llama-3.1-8b --comparable
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import typer

from dlbench.cli._common import console, json_option, print_json
from dlbench.errors import BadInput


def register(app: typer.Typer) -> None:
    """Add the `dlbench reference` command group to `app`."""
    group = typer.Typer(help="Published results from other benchmarks, with sources: training throughput (Lambda, "
                             "NVIDIA, AIME); inference and LLM generation (--scenario: llama.cpp, gpt-fast, MLPerf, "
                             "NVIDIA).", no_args_is_help=True)
    app.add_typer(group, name="reference")

    @group.command("list")
    def list_published(
        gpu: str | None = typer.Option(None, "--gpu",
                                       help="Only this GPU (any spelling: catalogue name, alias or torch name)."),
        workload: str | None = typer.Option(None, "--workload", "-w", help="Only this dlbench workload, e.g. resnet50."),
        precision: str | None = typer.Option(None, "--precision", "-p", help="Only this precision: fp32, tf32, amp-fp16, "
                                             "amp-bf16."),
        num_gpus: int | None = typer.Option(None, "--num-gpus", help="Only results on this many GPUs."),
        scenario: str | None = typer.Option(None, "--scenario", help="infer or generate: published inference and "
                                            "LLM-generation figures instead of training throughput."),
        comparable: bool = typer.Option(False, "--comparable", help="With --scenario: only the rows a dlbench run "
                                        "is ranked against (PyTorch, a dlbench precision)."),
        as_json: bool = json_option(),
    ) -> None:
        """List published results, one row each, with the source of every figure."""
        if scenario is not None:
            _list_inference(scenario, gpu, workload, precision, num_gpus, comparable, as_json)
            return
        if comparable:
            raise BadInput("--comparable needs --scenario infer or generate")
        rows = filter_published(gpu, workload, precision, num_gpus)
        if as_json:
            print_json([asdict(r) for r in rows])
            return
        _print_table(rows)


def filter_published(gpu: str | None = None, workload: str | None = None, precision: str | None = None,
                     num_gpus: int | None = None, published: list[Any] | None = None) -> list[Any]:
    """Published rows matching every given filter; an unknown GPU, workload or precision is `BadInput`."""
    from dlbench.analysis.configuration import check_precision
    from dlbench.analysis.ranking import load_published_rows

    rows = load_published_rows() if published is None else published
    if precision is not None:
        precision = check_precision(precision)
        rows = [r for r in rows if r.precision == precision]
    if workload is not None:  # any case, as `dlbench run -w` takes it; a known one with nothing published is no error
        from dlbench.analysis.points import check_workload

        given = {r.workload for r in rows}  # the rows given may hold workloads the packaged table does not
        workload = workload.strip().lower() if workload.strip().lower() in given else check_workload(workload)
        rows = [r for r in rows if r.workload == workload]
    if gpu is not None:
        from dlbench.catalog import resolve

        name = resolve(gpu).name
        rows = [r for r in rows if r.gpu == name]
    if num_gpus is not None:
        if num_gpus < 1:
            raise BadInput(f"--num-gpus must be at least 1, got {num_gpus}")
        rows = [r for r in rows if int(r.num_gpus) == num_gpus]
    return sorted(rows, key=lambda r: (r.workload, r.seq_len or 0, r.precision, r.num_gpus, -r.samples_per_s))


def _list_inference(scenario: str, gpu: str | None, workload: str | None, precision: str | None,
                    num_gpus: int | None, comparable: bool, as_json: bool) -> None:
    from dlbench.reference.inference import check_scenario, inference_for

    scenario = check_scenario(scenario)
    if num_gpus is not None and num_gpus < 1:
        raise BadInput(f"--num-gpus must be at least 1, got {num_gpus}")
    rows = inference_for(scenario, workload, gpu, precision, gpu_count=num_gpus, comparable_only=comparable)
    rows = sorted(rows, key=lambda r: (r.workload, r.metric, r.precision, r.gpu_count, r.mode, -r.value))
    if as_json:
        print_json([r.to_dict() for r in rows])
        return
    from dlbench.report.reference_inference import inference_reference_table

    out = console()
    if not rows:
        out.print("No published figures match these filters.")
        return
    sources = list(dict.fromkeys(r.source for r in rows))
    out.print(inference_reference_table([r.to_dict() for r in rows], sources, scenario))
    out.print("Sources:")
    for i, source in enumerate(sources, 1):
        out.print(f"  [{i}] {source}", highlight=False, markup=False, soft_wrap=True)
    out.print("  cmp = yes (comparable): PyTorch in a dlbench precision on one GPU, ranked against a dlbench run; the "
              "others (llama.cpp formats, TensorRT, TensorFlow, AMP, tensor parallel) are context only. "
              "`--json` has each row's note.", highlight=False, markup=False)


def _print_table(rows: list[Any]) -> None:
    from dlbench.report.comparison_tables import reference_table

    out = console()
    if not rows:
        out.print("No published results match these filters.")
        return
    sources: list[str] = []
    table_rows = []
    for r in rows:
        key = f"{r.source}: {r.source_ref}" if r.source_ref else r.source
        if key not in sources:
            sources.append(key)
        table_rows.append({**asdict(r), "source_key": key})
    out.print(reference_table(table_rows, sources))
    out.print("Sources:")
    for i, key in enumerate(sources, 1):
        out.print(f"  [{i}] {key}", highlight=False, markup=False)
    odd = sorted({r.notes or "measured differently" for r in rows if not getattr(r, "comparable", True)})
    if odd:
        out.print(f"  * not comparable with dlbench's fixed-length synthetic runs, never ranked against: "
                  f"{'; '.join(odd)}", highlight=False, markup=False)
