"""`dlbench doctor`: is this machine fit to benchmark, and why is a stored run slower than it should be?

    dlbench doctor                 # checks this machine: one verdict per check, exit 1 if any warns or fails
    dlbench doctor latest          # explains the latest stored run (or a run id / unique prefix)
    dlbench doctor results.json    # explains a result document file
    dlbench doctor --json          # the same as JSON

The checks live in `dlbench.telemetry.checks`, the run analysis in `dlbench.analysis.diagnose`; this module
parses, calls and prints.
"""

from __future__ import annotations

from typing import Any

import typer

from dlbench.cli._common import console, db_option, json_option, plain_tree, print_json

VERDICT_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "n/a": "dim"}
SEVERITY_STYLE = {"warn": "yellow", "info": "cyan"}


def register(app: typer.Typer) -> None:
    """Add `doctor` to `app`."""

    @app.command("doctor")
    def doctor(
        run: str | None = typer.Argument(
            None, help="A stored run (id, unique prefix or 'latest') or a result JSON file to explain. "
                       "Without it: check this machine.", show_default=False),
        as_json: bool = json_option(),
        db: str | None = db_option(),
        no_load: bool = typer.Option(False, "--no-load",
                                     help="Do not put a short load on the GPUs to read their PCIe links "
                                          "(idle links read low)."),
    ) -> None:
        """Check this machine for what slows benchmarks, or explain how a stored run compares with its GPU."""
        if run is None:
            raise typer.Exit(machine(as_json, load=not no_load))
        explain(run, as_json, db)


# --- the machine -------------------------------------------------------------------------------------------


def machine(as_json: bool, load: bool = True, nvml: Any = None, torch_info: Any = None) -> int:
    """Run the checks, print them, return the exit code."""
    from dlbench.telemetry import checks as ck

    results = ck.run_checks(nvml=nvml, torch=torch_info, load=ck.gpu_load if load else None)
    code = ck.exit_code(results)
    counts = {v: sum(1 for c in results if c.verdict == v) for v in ck.VERDICTS}
    if as_json:
        print_json({"checks": [c.to_dict() for c in results], "counts": counts, "exit_code": code})
        return code
    from rich.text import Text

    out = console()
    out.print(Text("dlbench doctor: this machine", style="bold"))
    width = max(len(c.title) for c in results)
    for c in results:
        line = Text(f"  {c.verdict:<5} ", style=VERDICT_STYLE.get(c.verdict, ""))
        line.append(f"{c.title:<{width}}  ", style="bold")
        line.append(c.message)
        out.print(line)
        if c.advice and c.verdict in ("warn", "fail"):
            out.print(Text(f"  {'':<5} {'':<{width}}  → {c.advice}", style="dim"))
    if code == 0:
        out.print(Text("Nothing wrong found.", style="green"))
    else:
        out.print(Text(f"{counts['fail']} failed, {counts['warn']} warning(s): see above.", style="yellow"))
    return code


# --- a stored run --------------------------------------------------------------------------------------------


def explain(ref: str, as_json: bool, db: str | None) -> None:
    from dlbench.analysis.diagnose import diagnose
    from dlbench.cli._runs import load_run

    report = diagnose(load_run(ref, db))
    if as_json:
        print_json(report)
        return
    render_diagnosis(report)


def _fmt_rate(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f}/s" if value >= 100 else f"{value:,.1f}/s"


def render_diagnosis(report: dict[str, Any]) -> None:
    from rich.text import Text

    report = plain_tree(report)  # document text (workload names, errors) must not drive the terminal
    out = console()
    names = report.get("gpus") or []
    gpus = ", ".join(f"{names.count(n)} x {n}" if names.count(n) > 1 else n
                     for n in sorted(set(names))) or "no GPU"
    head = Text(f"dlbench doctor: run {str(report.get('run_id'))[:12]}", style="bold")
    head.append(f"  ({gpus}{' = ' + report['gpu'] if report.get('gpu') else ''})", style="dim")
    out.print(head)
    for f in report.get("findings", []):
        _print_finding(out, f, indent="  ")
    for e in report.get("results", []):
        line = Text(f"\n  {e['label']}: ", style="bold")
        if e.get("verdict") == "not measured":
            line.append(f"{e.get('status')}, nothing to compare", style="dim")
            out.print(line)
            continue
        line.append(_fmt_rate(e.get("samples_per_s")))
        if e.get("rate_unit"):  # infer, generate: say which throughput this is
            line.append(f" ({e['rate_unit']})")
        ref = e.get("published") if e.get("compared_with") == "published" else e.get("estimate")
        if e.get("compared_with") == "roofline":
            style = "yellow" if e["verdict"] == "below" else "green"
            line.append(f"  {e['ratio']:.0%} of the card's memory bandwidth (decode roofline)", style=style)
        elif ref:
            if e["compared_with"] == "published":
                sources = ", ".join(sorted({src.split(" (")[0] for src in ref["sources"]}))
                batches = ", ".join(str(b) for b in ref.get("batch_sizes_per_gpu") or [])
                what = (f"published median {_fmt_rate(ref['samples_per_s'])} ({ref['count']} result(s), "
                        f"{sources}{', batch ' + batches if batches else ''})")
            else:
                what = f"spec-based estimate {_fmt_rate(ref['samples_per_s'])}"
            style = {"below": "yellow", "in line": "green", "above": "green"}.get(e["verdict"], "")
            line.append(f"  {e['ratio']:.0%} of {what}", style=style)
            if e["compared_with"] == "published" and e.get("estimate"):
                line.append(f"; estimate {_fmt_rate(e['estimate']['samples_per_s'])}", style="dim")
        else:
            line.append("  no published result or estimate to compare with", style="dim")
        out.print(line)
        tel = e.get("telemetry")
        if tel:
            bits = []
            gpus = f" over {tel['num_gpus']} GPUs" if (tel.get("num_gpus") or 1) > 1 else ""
            if tel.get("power_mean_w") is not None:
                bits.append(f"{tel['power_mean_w']:.0f} W{gpus}")
            if tel.get("samples_per_s_per_w") is not None:
                bits.append(f"{tel['samples_per_s_per_w']:.2f} {e.get('unit') or 'samples'}/s per W")
            if tel.get("temperature_max_c") is not None:
                hottest = f" ({tel['hottest_gpu']})" if tel.get("hottest_gpu") else ""
                bits.append(f"max {tel['temperature_max_c']:.0f} C{hottest}")
            if tel.get("sm_clock_mean_mhz") is not None:
                bits.append(f"SM {tel['sm_clock_mean_mhz']:.0f} MHz")
            if bits and tel.get("rank0_only"):
                bits.append(f"rank 0's GPU only, of {e.get('world_size')}")
            if bits:
                out.print(Text("    " + ", ".join(bits), style="dim"))
        findings = e.get("findings") or []
        if not findings and e.get("verdict") == "below":
            out.print(Text("    no cause visible in the telemetry", style="dim"))
        for f in findings:
            _print_finding(out, f, indent="    ")
    for note in report.get("notes", []):
        out.print(Text(f"\nnote: {note}", style="dim"))


def _print_finding(out: Any, f: dict[str, Any], indent: str) -> None:
    from rich.text import Text

    line = Text(indent)
    line.append(f"{f['severity']:<4} ", style=SEVERITY_STYLE.get(f["severity"], ""))
    line.append(f["message"])
    out.print(line)
    if f.get("advice") and f["severity"] == "warn":
        out.print(Text(f"{indent}     → {f['advice']}", style="dim"))
