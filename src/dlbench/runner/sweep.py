"""Run every configuration of a plan, each in processes of its own, with a timeout.

Exercised by `dlbench run` (see `dlbench.cli.run`), and by `tests/test_sweep.py` with fault-injection workloads.

For each configuration the sweep waits for the GPU to cool (`measurement.thermal`), searches the batch size where
asked (`runner.batch_search`), then measures it in its own child process(es) (`runner.isolate`, started by
`dlbench.runner.launchers`, which also say how a child ended):
- the worker wrote a result file: its status (`ok`, `oom`, `error`);
- the deadline passed: the whole process group is killed, status `timeout`;
- the worker died without a result: status `error`, "worker crashed (SIGSEGV)" (the result's `signal` names the
  signal that killed it: "SIGKILL" is the host's OOM killer's) or "worker exited with code N".
One bad configuration never stops the others. Ctrl-C (SIGINT) or SIGTERM kills the running worker's process
group, waits for it, and ends the sweep with what was measured (`SweepOutcome.interrupted`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from dlbench.measurement.config import RunConfig
from dlbench.measurement.thermal import (
    DEFAULT_MAX_START_TEMP_C,
    DEFAULT_MAX_WAIT_S,
    GpuThermometer,
    wait_until_cool,
)
from dlbench.runner.document import make_result
from dlbench.runner.isolate import run_worker
from dlbench.runner.launchers import Interrupted
from dlbench.runner.plan import Plan

__all__ = ["Interrupted", "SweepObserver", "SweepOutcome", "interrupted_note", "nothing_stored_line", "run_sweep",
           "signals_raise_interrupted", "sigint_ignored"]


def nothing_stored_line(interrupted: Interrupted) -> str:
    """What `dlbench run` (and rank 0 under torchrun) says when interrupted before any configuration finished."""
    return (f"interrupted ({interrupted}) before any configuration finished: nothing was measured, "
            "nothing stored")


def interrupted_note(interrupted: Interrupted, done: int, total: int) -> str:
    """The note an interrupted run's document carries."""
    return f"interrupted ({interrupted}) after {done} of {total} configurations"


@contextlib.contextmanager
def sigint_ignored():
    """Saving must not be cut short by a second Ctrl-C: SIGINT is ignored inside (then restored)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class SweepObserver:
    """Hooks for a progress display; every method is optional (this base does nothing)."""

    def sweep_started(self, total: int) -> None: ...

    def config_started(self, index: int, total: int, config: RunConfig) -> None: ...

    def status(self, text: str) -> None: ...

    def progress(self, phase: str, done: int, total: int) -> None: ...

    def config_finished(self, index: int, result: dict[str, Any]) -> None: ...


@dataclass
class SweepOutcome:
    results: list[dict[str, Any]] = field(default_factory=list)
    interrupted: Interrupted | None = None
    planned: int = 0


# ------------------------------------------------------------------------------------------------ sweep


def run_sweep(plan: Plan, observer: SweepObserver | None = None,
              on_result: Callable[[dict[str, Any]], None] | None = None,
              max_start_temp_c: float = DEFAULT_MAX_START_TEMP_C, max_wait_s: float = DEFAULT_MAX_WAIT_S,
              cuda_devices: list[dict[str, Any]] | None = None) -> SweepOutcome:
    """Measure each planned configuration in turn; `on_result(result)` after each (incremental saving)."""
    from dlbench.runner.batch_search import find_batch_size

    observer = observer or SweepObserver()
    outcome = SweepOutcome(planned=len(plan.items))
    total = len(plan.items)
    observer.sweep_started(total)
    thermometer = GpuThermometer.open(plan.device, cuda_devices)
    # A batch-size search probes one process per size, whatever the GPU count (the per-device batch is what fits),
    # so `--gpus 1,2,4 --batch-size auto` searches once per configuration and the other counts reuse it.
    searches: dict[RunConfig, Any] = {}
    try:
        with signals_raise_interrupted():
            for index, item in enumerate(plan.items):
                config = item.config
                observer.config_started(index, total, config)
                extra: dict[str, Any] = {"unit": item.unit}
                if item.skip_reason:
                    result = make_result(config, "skipped", item.skip_reason, extra=extra)
                else:
                    search_notes: list[str] = []
                    if item.auto_batch:
                        one_device = replace(config, world_size=1)
                        if one_device not in searches:
                            searches[one_device] = find_batch_size(one_device, item.timeout_s, observer)
                        search = searches[one_device]
                        extra["batch_size_search"] = search.info()
                        if search.batch_size is None:
                            result = make_result(config, search.status, search.error, extra=extra)
                            _finish(outcome, observer, on_result, index, result)
                            continue
                        config = replace(config, batch_size=search.batch_size)
                        search_notes = [f"--batch-size auto: {note}" for note in search.notes]
                    result = _measure_one(config, item.timeout_s, observer, thermometer, max_start_temp_c,
                                          max_wait_s, extra)
                    if search_notes:
                        result["warnings"] = [*result.get("warnings", []), *search_notes]
                _finish(outcome, observer, on_result, index, result)
    except Interrupted as exc:
        outcome.interrupted = exc
    finally:
        if thermometer is not None:
            thermometer.close()
    return outcome


def _finish(outcome: SweepOutcome, observer: SweepObserver, on_result, index: int,
            result: dict[str, Any]) -> None:
    outcome.results.append(result)
    observer.config_finished(index, result)
    if on_result is not None:
        on_result(result)


def _measure_one(config: RunConfig, timeout_s: float, observer: SweepObserver,
                 thermometer: GpuThermometer | None, max_start_temp_c: float, max_wait_s: float,
                 extra: dict[str, Any]) -> dict[str, Any]:
    def on_wait(temperature: float, left: float) -> None:
        observer.status(f"GPU at {temperature:.0f} C, waiting until <= {max_start_temp_c:.0f} C "
                        f"(gives up in {left:.0f} s)")

    start_temp, thermal_warning = wait_until_cool(thermometer, max_start_temp_c, max_wait_s, on_wait)
    observer.status("starting the worker process")

    def on_event(event: dict[str, Any]) -> None:
        if event.get("event") == "progress":
            observer.progress(str(event.get("phase")), int(event.get("done", 0)), int(event.get("total", 0)))
        elif event.get("event") == "status":
            observer.status(str(event.get("text")))

    worker = run_worker(config, timeout_s, on_event)  # data-parallel: one process per device through torchrun
    extra = dict(extra)
    extra["telemetry_reason"] = worker.get("telemetry_reason")
    extra.update(worker.get("extra") or {})
    result = make_result(config, worker["status"], worker.get("error"), worker.get("measurement"),
                         start_temperature_c=start_temp, extra=extra)
    if worker.get("warnings"):
        result["warnings"] = [*result.get("warnings", []), *worker["warnings"]]
    if thermal_warning:
        result["warnings"] = [*result.get("warnings", []), thermal_warning]
    return result


@contextlib.contextmanager
def signals_raise_interrupted():
    """SIGINT and SIGTERM raise `Interrupted` in the main thread while the sweep runs (then restored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, _frame):
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
