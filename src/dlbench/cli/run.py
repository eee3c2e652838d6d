"""`dlbench run`: measure training throughput on this machine.

Exercised by `dlbench run` (default suite for the device found), `dlbench run -w resnet50 -p amp-fp16 -c default`,
`dlbench run --tiny` (smoke test). The flow: validate the options here, plan in a child process
(`runner.planning`), measure each configuration in its own child (`runner.sweep`), then build the result document
(`runner.document`) and hand it to `RunSaver.save`, which writes the JSON and stores it in the database. Exit codes: 0 every configuration ok or skipped,
1 some configuration failed (oom/error/timeout; the document is still written), 2 bad input, 130 interrupted
(Ctrl-C; what was measured is written), 143 terminated (SIGTERM; same).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import typer

from dlbench.cli._common import db_option
from dlbench.measurement.thermal import DEFAULT_MAX_START_TEMP_C, DEFAULT_MAX_WAIT_S
from dlbench.runner.plan import DEFAULT_TIMEOUT_S, MAX_AUTOTUNE_TIMEOUT_S
from dlbench.schema.keys import FAILED_STATUSES

EXIT_FAILED = 1


class RunSaver:
    """Hands a finished (or interrupted) run's document on: the JSON file first (always), then the database.

    `save` is called after every configuration and once at the end, so an interrupted sweep keeps what it
    measured; the store replaces the run's earlier partial copy (same run_id) in one transaction. A database
    that cannot be used (corrupt file, unreachable server, SQLAlchemy missing) never loses the run: the JSON is
    on disk already, a warning says so once, and `dlbench results import` can load it later.
    """

    def __init__(self, db_url: str | None = None, on_warning=None) -> None:
        self.db_url = db_url
        self.on_warning = on_warning
        self._store = None
        self._failed = False
        self.json_failed = False  # the --json copy could not be written (the run is saved all the same)

    def save(self, document: dict[str, Any], json_path: Path | None = None) -> list[Path]:
        from dlbench import paths
        from dlbench.jsonio import write_json_atomic

        written = [write_json_atomic(paths.results_dir() / f"{document['run_id']}.json", document)]
        if not self._failed:
            self._save_to_store(document, written[0])
        if json_path is not None:  # last: a path that refuses the copy (checked before the run, yet) loses nothing
            try:
                written.append(write_json_atomic(json_path, document))
            except OSError as exc:
                self.json_failed = True
                if self.on_warning is not None:
                    stored = "" if self._failed else " and the results database"
                    self.on_warning(f"error: --json {json_path}: cannot write ({exc.strerror or exc}); the run is "
                                    f"saved in {written[0]}{stored}")
        return written

    def _save_to_store(self, document: dict[str, Any], json_file: Path) -> None:
        from dlbench.errors import BadInput

        try:
            if self._store is None:
                from dlbench.store import open_store

                self._store = open_store(self.db_url)
            self._store.save_run(document)
        except (ImportError, BadInput) as exc:
            self._failed = True
            reason = exc.message if isinstance(exc, BadInput) else f"{exc} (install dlbench's dependencies)"
            if self.on_warning is not None:
                self.on_warning(f"warning: run not stored in the database: {reason}; the result is in {json_file} "
                                "(`dlbench results import` loads it later)")

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def check_writable(path: Path) -> None:
    """`--json PATH` must be a file we can create: BadInput now rather than a lost run later."""
    import os

    from dlbench.errors import BadInput

    if path.is_dir():
        raise BadInput(f"--json {path}: is a directory; give a file name")
    folder = path.parent if str(path.parent) else Path(".")
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise BadInput(f"--json {path}: cannot write there ({folder} is not a writable folder)")


def run(
    workload: list[str] = typer.Option(
        [], "--workload", "-w", help="Workload to measure (repeatable): resnet50, bert-base-squad, "
        "bert-large-squad, bert-base-mlm, bert-large-mlm. Default: resnet50, bert-base-squad, bert-large-squad on "
        "a GPU; a quick suite otherwise."),
    precision: list[str] = typer.Option(
        [], "--precision", "-p", help="Precision (repeatable): fp32 (strict, TF32 off), tf32 (CUDA compute "
        "capability >= 8.0), amp-fp16, amp-bf16. Default on a GPU: tf32 (fp32 before Ampere) and amp-fp16; "
        "on a CPU: fp32."),
    compile_mode: list[str] = typer.Option(
        [], "--compile", "-c", help="torch.compile mode (repeatable): off, default, max-autotune, "
        "reduce-overhead. Default on a GPU: off and default; on a CPU: off."),
    device: str = typer.Option("auto", "--device", help="auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N or "
                               "mps. ROCm GPUs are cuda devices."),
    batch_size: list[str] = typer.Option(
        [], "--batch-size", "-b", help="Batch size per device (a positive integer; repeatable: -b 1 -b 8 measures "
        "each), or 'auto' to find the largest that trains. Default: per workload, scaled with device memory "
        "(generate: 1).", metavar="N|auto"),
    seq_len: int | None = typer.Option(None, "--seq-len", help="Sequence length for BERT workloads. Default: "
                                       "384 (squad), 128 (mlm)."),
    warmup: int | None = typer.Option(None, "--warmup", help="Warm-up steps before the measured repeats: timed "
                                      "and recorded, never counted. Default: 10 on a GPU, 1 on a CPU, 2 with --tiny."),
    steps: int | None = typer.Option(None, "--steps", help="Measured steps per repeat. Default: 50 on a GPU, 2 on a "
                                     "CPU, 5 with --tiny."),
    repeats: int | None = typer.Option(None, "--repeats", help="Repeats of the measured steps; the spread across "
                                       "repeats gives the CV. Default: 3 on a GPU, 2 on a CPU or with --tiny."),
    timeout: float | None = typer.Option(
        None, "--timeout", help=f"Seconds one configuration may take in its child process before it is killed "
        f"(status timeout). Default {DEFAULT_TIMEOUT_S:.0f}, {MAX_AUTOTUNE_TIMEOUT_S:.0f} for max-autotune."),
    max_start_temp: float = typer.Option(
        DEFAULT_MAX_START_TEMP_C, "--max-start-temp", help="NVIDIA GPUs: wait before each configuration until "
        "the GPU is at or below this temperature (C)."),
    max_wait: float = typer.Option(DEFAULT_MAX_WAIT_S, "--max-wait", help="Give up waiting for the GPU to cool "
                                   "after this many seconds (the result records the start temperature)."),
    tiny: bool = typer.Option(False, "--tiny", help="Use the tiny flavour of each workload (a few layers, small "
                              "inputs): a smoke test of the whole pipeline, not a benchmark."),
    seed: int = typer.Option(0, "--seed", help="Random seed for weights and synthetic inputs (0 to 2**32 - 1)."),
    json_path: Path | None = typer.Option(None, "--json", help="Also write the result document (JSON, schema "
                                          "version 2, docs/schema.md) to this path.", metavar="PATH"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display (the table is still printed)."),
    gpus: str | None = typer.Option(
        None, "--gpus", help="Data-parallel device counts to measure each configuration at, e.g. 1,2,4, or 'all' "
        "(DistributedDataParallel, one process per GPU via torchrun; batch size stays per device). With --device "
        "cpu, N CPU processes (gloo). Under torchrun, the launch decides and this is ignored.", metavar="N,N|all"),
    scenario: str = typer.Option("train", "--scenario", help="Kind of benchmark to run. Default train: "
                                 "forward, loss, backward and optimizer steps (samples/s); generate: LLM "
                                 "prefill and decode with a static KV cache (tokens/s, TTFT, TPOT; "
                                 "docs/generate.md). An unknown name lists the scenarios."),
    prompt_len: int | None = typer.Option(None, "--prompt-len", help="--scenario generate: prompt tokens "
                                          "(synthetic ids) prefilled before decoding. Default 512 (llama-bench "
                                          "pp512); 64 in the CPU quick check."),
    new_tokens: int | None = typer.Option(None, "--new-tokens", help="--scenario generate: tokens generated "
                                          "greedily after the prompt, EOS ignored. Default 128 (tg128); 16 in the "
                                          "CPU quick check."),
    db: str | None = db_option(),
) -> None:
    """Measure training throughput (samples/s) of each workload x precision x compile mode.

    Each configuration runs in its own child process; the result document is saved in the dlbench data
    directory (and at --json PATH) and stored in the results database (`dlbench results list`).
    """
    from dlbench.cli._common import console, table_console
    from dlbench.errors import BadInput
    from dlbench.runner.plan import RunOptions, check_scenario_workloads, check_workloads, validate_options

    options = validate_options(RunOptions(
        workloads=list(workload), precisions=list(precision), compile_modes=list(compile_mode), device=device,
        batch_size=batch_size[0] if len(batch_size) == 1 else None,
        batch_sizes=list(batch_size) if len(batch_size) > 1 else [], seq_len=seq_len, warmup=warmup, steps=steps,
        repeats=repeats, seed=seed,
        tiny=tiny, timeout_s=timeout, gpus=gpus, scenario=scenario, prompt_len=prompt_len, new_tokens=new_tokens))
    options.workloads = check_workloads(options.workloads)  # the registry needs no torch: fail fast on a typo
    check_scenario_workloads(options, options.workloads, "tiny" if tiny else "full")
    if not 0 <= max_wait < math.inf:  # nan compares False: it would never give up, or never wait
        raise BadInput(f"--max-wait must be a finite number of seconds, 0 or more, got {max_wait}")
    if not 0 <= seed < 2**32:  # NumPy's seed range; torch and Python take it too (measurement.seeding seeds all three)
        raise BadInput(f"--seed must be between 0 and 2**32 - 1 ({2**32 - 1}), got {seed}")
    if not 0 < max_start_temp < math.inf:  # at or below 0 C no GPU ever gets there: every start would time out
        raise BadInput(f"--max-start-temp must be a finite temperature in C above 0, got {max_start_temp} "
                       "(--max-wait 0 starts without waiting)")
    if json_path is not None:
        check_writable(json_path)  # before the run, not after an hour of measuring
    err, out = console(stderr=True), table_console(min_width=130)
    from dlbench.runner.distributed import detect

    dist_env = detect()
    saver = RunSaver(db, on_warning=lambda line: err.print(line, style="yellow", highlight=False, markup=False))
    try:
        if dist_env is not None:  # started by torchrun: join the group, rank 0 prints and stores (runner.joined)
            code = _run_joined(options, dist_env, err, out, json_path, quiet, saver.save)
        else:
            code = _run(options, err, out, json_path, quiet, max_start_temp, max_wait, saver.save)
    except KeyboardInterrupt:  # a second Ctrl-C outside the sweep (which handles the first itself)
        err.print("interrupted")
        code = 130
    finally:
        saver.close()
    if saver.json_failed and code in (0, EXIT_FAILED):  # the --json PATH given could not be written: bad input
        code = 2
    raise typer.Exit(code)


def _run(options, err, out, json_path: Path | None, quiet: bool, max_start_temp: float, max_wait: float,
         finish_run) -> int:
    from dlbench.report.run_table import result_messages, results_table
    from dlbench.runner.document import build_document, new_run_id, utc_now_iso
    from dlbench.runner.planning import plan_in_child
    from dlbench.runner.sweep import (
        SweepObserver,
        interrupted_note,
        nothing_stored_line,
        run_sweep,
        sigint_ignored,
    )

    try:
        if quiet:
            planned = plan_in_child(options)
        else:
            with err.status("planning: probing devices and workloads"):
                planned = plan_in_child(options)
    except KeyboardInterrupt:
        err.print("interrupted before anything was measured")
        return 130
    plan = planned.plan
    for note in plan.notes:
        err.print(f"[bold]{note}[/bold]", highlight=False, soft_wrap=not err.is_terminal)

    run_id, created_at = new_run_id(), utc_now_iso()
    command = ["dlbench", *sys.argv[1:]]
    results: list[dict[str, Any]] = []

    def document(extra_notes: list[str]) -> dict[str, Any]:
        from dlbench.analysis.measured_scaling import add_scaling_efficiency

        add_scaling_efficiency(results)  # `--gpus 1,2,...`: results above one device get scaling_efficiency
        from dlbench.analysis.ranking import add_vs_published

        add_vs_published(results, planned.environment)  # ratio to / rank among published results
        return build_document(results, planned.environment, run_id=run_id, command=command,
                              notes=[*plan.notes, *extra_notes], created_at=created_at)

    def save_partial(result: dict[str, Any]) -> None:
        results.append(result)
        finish_run(document([f"in progress: {len(results)} of {len(plan.items)} configurations done"]))

    if quiet:
        outcome = run_sweep(plan, SweepObserver(), save_partial, max_start_temp, max_wait, planned.devices["cuda"])
    else:
        from dlbench.cli.progress import RichProgress

        with RichProgress(err) as display:
            outcome = run_sweep(plan, display, save_partial, max_start_temp, max_wait, planned.devices["cuda"])

    if outcome.interrupted is not None and not results:
        # Nothing to keep: an empty run would only become "latest" and leave `dlbench report` nothing to show.
        err.print(nothing_stored_line(outcome.interrupted), highlight=False)
        return 128 + int(outcome.interrupted.signum)

    with sigint_ignored():  # until the document is on disk
        extra: list[str] = []
        if outcome.interrupted is not None:
            extra.append(interrupted_note(outcome.interrupted, len(results), len(plan.items)))
        written = finish_run(document(extra), json_path)

    title = "dlbench run" + (" (quick suite)" if plan.quick_suite else "") + f" on {plan.device}"
    if results:
        out.print(results_table(results, title=title, width=out.width))
        for line in result_messages(results):
            out.print(line, highlight=False, markup=False, soft_wrap=not out.is_terminal)  # whole lines in a log
        from dlbench.report.scaling_table import has_scaling, scaling_table

        if has_scaling(results):  # `--gpus 1,2,...`
            out.print(scaling_table(results))
    err.print(f"results: {written[0]}" + (f" and {written[1]}" if len(written) > 1 else ""), highlight=False,
              markup=False, soft_wrap=True)  # paths whole: not markup, not broken across lines
    if outcome.interrupted is not None:
        err.print(f"interrupted: {len(plan.items) - len(results)} configuration(s) not measured")
        return 128 + int(outcome.interrupted.signum)
    return EXIT_FAILED if any(r["status"] in FAILED_STATUSES for r in results) else 0


def _run_joined(options, dist_env, err, out, json_path: Path | None, quiet: bool, finish_run) -> int:
    """`dlbench run` as one rank of a group torchrun started: every rank measures (`runner.joined`), rank 0 alone
    shows progress, prints the table and writes the result document (one run, `world_size` = the group's size,
    `nodes` = distinct node ranks/host names, `telemetry` over every GPU of the group) after every
    configuration, so a failure later still leaves what was measured. A rank that fails prints one line naming
    itself and exits non-zero, and torchrun tears the group down (rank 0 first stores what was measured plus the
    failed configuration). Ctrl-C and SIGTERM, which torchrun forwards to every rank, end the sweep as in
    `dlbench run`: rank 0 stores what was measured, noted as interrupted, and exits 128 + the signal; the other
    ranks exit quietly."""
    from dataclasses import replace

    from dlbench.analysis.measured_scaling import add_scaling_efficiency
    from dlbench.runner.distributed import RendezvousTimeout, destroy_process_group
    from dlbench.runner.document import build_document, new_run_id, utc_now_iso
    from dlbench.runner.joined import RankFailed, joined_plan, measure_item
    from dlbench.runner.sweep import Interrupted, SweepObserver, signals_raise_interrupted

    main = dist_env.is_main
    results: list[dict[str, Any]] = []
    state: dict[str, Any] = {}  # what an interruption needs: the plan and the document builder, once made
    display = None
    try:
        # torchrun forwards Ctrl-C and SIGTERM to every rank: raise Interrupted so that rank 0 stores the run as
        # interrupted and the other ranks leave quietly.
        with signals_raise_interrupted():
            plan, notes = joined_plan(options, dist_env)
            environment = None
            if main:
                from dlbench.telemetry.environment import collect

                environment = collect()
                for note in notes:
                    err.print(f"[bold]{note}[/bold]", highlight=False, soft_wrap=not err.is_terminal)

            run_id, created_at = new_run_id(), utc_now_iso()
            command = ["dlbench", *sys.argv[1:]]

            def document(extra_notes: list[str]) -> dict[str, Any]:
                add_scaling_efficiency(results)
                return build_document(results, environment, run_id=run_id, command=command,
                                      notes=[*notes, *extra_notes], created_at=created_at)

            state.update(plan=plan, document=document)
            observer = SweepObserver()
            if main and not quiet:
                from dlbench.cli.progress import RichProgress

                display = RichProgress(err).__enter__()
                observer = display
            total = len(plan.items)
            observer.sweep_started(total)
            for index, item in enumerate(plan.items):
                observer.config_started(index, total, replace(item.config, world_size=dist_env.world_size))
                try:
                    result = measure_item(item, dist_env, observer.progress)
                except RankFailed as exc:
                    _leave_group(dist_env, exc, results, document, finish_run, json_path)
                results.append(result)
                observer.config_finished(index, result)
                if main:
                    finish_run(document([f"in progress: {len(results)} of {total} configurations done"]))
    except RendezvousTimeout as exc:
        if display is not None:
            display.__exit__(None, None, None)
            display = None
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Interrupted as exc:
        if display is not None:
            display.__exit__(None, None, None)
            display = None
        return _joined_interrupted(exc, dist_env, results, state, err, out, json_path, finish_run)
    finally:
        if display is not None:
            display.__exit__(None, None, None)
    destroy_process_group()
    if not main:
        return 0
    written = finish_run(document([]), json_path)
    return _print_joined(results, plan, dist_env, written, err, out)


def _joined_interrupted(exc, dist_env, results, state, err, out, json_path, finish_run) -> int:
    """Ctrl-C or SIGTERM (torchrun forwards both to every rank): rank 0 stores what was measured, noted as
    interrupted, as `dlbench run` does; the other ranks leave without a word. The exit code is 128 + the signal."""
    from dlbench.runner.sweep import interrupted_note, nothing_stored_line, sigint_ignored

    code = 128 + int(exc.signum)
    if not dist_env.is_main:
        return code
    if not results:  # nothing was saved yet, and an empty run would only become "latest"
        err.print(nothing_stored_line(exc), highlight=False)
        return code
    plan = state["plan"]
    with sigint_ignored():
        written = finish_run(state["document"]([interrupted_note(exc, len(results), len(plan.items))]), json_path)
    _print_joined(results, plan, dist_env, written, err, out)
    err.print(f"interrupted: {len(plan.items) - len(results)} configuration(s) not measured")
    return code


def _leave_group(dist_env, failed, results, document, finish_run, json_path) -> None:
    """Leave the group at once: torchrun notices the exit and stops every other rank. Rank 0 first stores what
    was measured plus the failed configuration (`failed`: `runner.joined.RankFailed`)."""
    import os
    import signal

    from dlbench.runner.worker import one_line

    # torchrun's SIGTERM to the rest of the group must not cut rank 0's save short; the process exits below.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    print(f"dlbench: {failed.error}", file=sys.stderr)
    if dist_env.is_main:
        try:
            results.append(failed.result)
            finish_run(document([f"stopped: {failed.result['error']}"]), json_path)
        except Exception as exc:  # noqa: BLE001 - exiting anyway; say why nothing was saved
            print(f"dlbench: could not save the partial result: {one_line(exc)}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)  # no interpreter teardown: other ranks may be blocked in a collective with this one


def _print_joined(results, plan, dist_env, written, err, out) -> int:
    from dlbench.report.run_table import result_messages, results_table

    nodes = max((r.get("nodes") or 1 for r in results), default=1)
    title = f"dlbench run under torchrun: {dist_env.world_size} processes on {nodes} node(s), {plan.device}"
    if results:
        out.print(results_table(results, title=title, width=out.width))
        for line in result_messages(results):
            out.print(line, highlight=False, markup=False, soft_wrap=not out.is_terminal)  # whole lines in a log
    err.print(f"results: {written[0]}" + (f" and {written[1]}" if len(written) > 1 else ""), highlight=False,
              markup=False, soft_wrap=True)  # paths whole: not markup, not broken across lines (as `dlbench run`)
    return EXIT_FAILED if any(r["status"] in FAILED_STATUSES for r in results) else 0


def register(app: typer.Typer) -> None:
    """Add `dlbench run` to `app`."""
    app.command("run")(run)
