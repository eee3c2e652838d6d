"""`dlbench run` started by torchrun: join the group, measure in-process, rank 0 prints and stores one run.

Exercised by `torchrun --nproc-per-node 2 -m dlbench run --device cpu --tiny -w resnet50` and the two-node
example in docs/multi-gpu.md (`torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint host:29500
-m dlbench run ...`).

The launcher already started one process per device, so there is no child sweep here: every rank builds the same
plan, then measures each configuration with DistributedDataParallel (`distributed.measure_distributed`) on the
device of its LOCAL_RANK, sampling that device's telemetry. Rank 0 alone shows progress, prints the table and
writes the result document (one run, `world_size` = the group's size, `nodes` = distinct node ranks/host names,
`telemetry` over every GPU of the group) after every configuration, so a
failure later still leaves what was measured. A rank that fails records nothing it cannot vouch for: it prints
one line naming itself and exits non-zero, and torchrun tears the group down (the configurations already
measured stay stored on rank 0). A rank that only lost a dead peer, or whose collective timed out waiting for a
hung one, says so rather than taking the blame (`rank_failure`). Ctrl-C and SIGTERM, which torchrun forwards to
every rank, end the sweep as in `dlbench run`: rank 0 stores what was measured, noted as interrupted, and exits
128 + the signal; the other ranks exit quietly.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from dlbench.runner.distributed import DistEnv


def run_joined(options, dist_env: DistEnv, err, out, json_path: Path | None, quiet: bool, finish_run) -> int:
    """Measure the plan for `options` as one rank of the launched group; returns the exit code."""
    from dlbench.analysis.measured_scaling import add_scaling_efficiency
    from dlbench.errors import BadInput
    from dlbench.runner.distributed import (
        RendezvousTimeout,
        destroy_process_group,
        global_batch_note,
        measure_distributed,
        rank_sampler,
    )
    from dlbench.runner.document import build_document, make_result, new_run_id, utc_now_iso
    from dlbench.runner.plan import DEFAULT_TIMEOUT_S, DeviceFacts, build_plan
    from dlbench.runner.sweep import Interrupted, SweepObserver, signals_raise_interrupted

    if options.batch_size == "auto":  # before the plan says a search will run
        raise BadInput("--batch-size auto does not work under torchrun: its search runs each probe in a fresh "
                       "one-device process, and every rank of the group must train the same batch; find the size "
                       "with `dlbench run --batch-size auto` on one GPU, then give it as --batch-size N")
    main = dist_env.is_main
    results: list[dict[str, Any]] = []
    state: dict[str, Any] = {}  # what an interruption needs: the plan and the document builder, once made
    display = None
    try:
        # torchrun forwards Ctrl-C and SIGTERM to every rank: raise Interrupted so that rank 0 stores the run as
        # interrupted and the other ranks leave quietly.
        with signals_raise_interrupted():
            ignored_gpus = options.gpus is not None
            options = replace(options, gpus=None)  # the launch decides the device count
            facts = DeviceFacts.detect()
            plan = build_plan(options, facts)
            notes = list(plan.notes)
            notes.append(f"started by torchrun: {dist_env.world_size} processes, rank 0 reports; "
                         + (global_batch_note([dist_env.world_size], plan.device) or "one process"))
            if ignored_gpus:
                notes.append("--gpus ignored: under torchrun the launch (--nproc-per-node, --nnodes) sets the "
                             "device count")
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
                from dlbench.report.progress import RichProgress

                display = RichProgress(err).__enter__()
                observer = display
            total = len(plan.items)
            observer.sweep_started(total)
            for index, item in enumerate(plan.items):
                config = replace(item.config, world_size=dist_env.world_size)
                observer.config_started(index, total, config)
                extra: dict[str, Any] = {"unit": item.unit}
                if item.skip_reason:
                    result = make_result(config, "skipped", item.skip_reason, extra=extra)
                else:
                    sampler, telemetry_reason = rank_sampler(dist_env, config.device)  # every rank its own GPU
                    try:
                        combined = measure_distributed(config, dist_env, progress=observer.progress,
                                                       sampler=sampler, timeout_s=item.timeout_s or DEFAULT_TIMEOUT_S,
                                                       telemetry_reason=telemetry_reason)
                    except (BadInput, RendezvousTimeout):
                        raise
                    except Exception as exc:  # noqa: BLE001 - this rank cannot go on; torchrun stops the rest
                        status, error = rank_failure(exc, config, dist_env.rank,
                                                     item.timeout_s or DEFAULT_TIMEOUT_S)
                        failed = make_result(config, status, error, extra=extra)
                        _fail(dist_env, error, results, failed, document, finish_run, json_path)
                    extra.update({k: combined.pop(k) for k in ("nodes", "ranks", "ddp") if k in combined})
                    extra["telemetry_reason"] = combined.pop("telemetry_reason", None)
                    group_warnings = combined.pop("warnings", None) or []
                    result = make_result(config, "ok", None, combined, extra=extra)
                    result["warnings"] = [*result.get("warnings", []), *group_warnings]
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
        return _interrupted(exc, dist_env, results, state, err, out, json_path, finish_run)
    finally:
        if display is not None:
            display.__exit__(None, None, None)
    destroy_process_group()
    if not main:
        return 0
    written = finish_run(document([]), json_path)
    return _print(results, plan, dist_env, written, err, out)


def _interrupted(exc, dist_env: DistEnv, results, state, err, out, json_path, finish_run) -> int:
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
    _print(results, plan, dist_env, written, err, out)
    err.print(f"interrupted: {len(plan.items) - len(results)} configuration(s) not measured")
    return code


def rank_failure(exc: BaseException, config, rank: int, timeout_s: float) -> tuple[str, str]:
    """(status, error) for the exception that stops this rank of a torchrun group.

    A rank only sees its side of the group: when a peer dies, the others lose their connection to it, and when a
    peer hangs, the others' collectives time out. Those are told as such (the failed rank is named in the
    torchrun output of its own node), not as this rank's own failure; anything else is this rank's own error.
    """
    from dlbench.runner.launch import is_collective_timeout, is_peer_loss
    from dlbench.runner.rank_worker import classify

    status, message = classify(exc, config)
    if status == "error" and is_collective_timeout(message):
        return "timeout", (f"rank {rank} timed out after {timeout_s:g} s waiting for the other ranks in a collective: "
                           f"another rank hung, died or fell behind; the torchrun output of each node names it "
                           f"({message})")
    if status == "error" and is_peer_loss(message):
        return "error", (f"rank {rank} lost its connection to another rank, which failed or was killed; the "
                         f"torchrun output of each node names it ({message})")
    return status, f"rank {rank}: {message}"


def _fail(dist_env: DistEnv, error: str, results, failed, document, finish_run, json_path) -> None:
    """Leave the group at once: torchrun notices the exit and stops every other rank. Rank 0 first stores what
    was measured plus the failed configuration."""
    import signal

    from dlbench.runner.worker import one_line

    # torchrun's SIGTERM to the rest of the group must not cut rank 0's save short; the process exits below.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    print(f"dlbench: {error}", file=sys.stderr)
    if dist_env.is_main:
        try:
            results.append(failed)
            finish_run(document([f"stopped: {failed['error']}"]), json_path)
        except Exception as exc:  # noqa: BLE001 - exiting anyway; say why nothing was saved
            print(f"dlbench: could not save the partial result: {one_line(exc)}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)  # no interpreter teardown: other ranks may be blocked in a collective with this one


def _print(results, plan, dist_env: DistEnv, written, err, out) -> int:
    from dlbench.cli.run import EXIT_FAILED, FAILED_STATUSES
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
