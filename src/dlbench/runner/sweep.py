"""Run every configuration of a plan, each in its own child process, with a timeout.

Exercised by `dlbench run` (see `dlbench.cli.run`), and by `tests/test_sweep.py` with fault-injection workloads.

For each configuration the parent starts `python -m dlbench.runner.worker` in a new session (its own process
group), then blocks on the worker's progress pipe and on its exit (a pidfd on Linux) until the deadline: no
spinning. Outcomes:
- the worker wrote a result file: its status (`ok`, `oom`, `error`);
- the deadline passed: the whole process group is killed, status `timeout`;
- the worker died without a result: status `error`, "worker crashed (SIGSEGV)" (the outcome's `signal` names the
  signal that killed it: "SIGKILL" is the host's OOM killer's) or "worker exited with code N".
One bad configuration never stops the others. Ctrl-C (SIGINT) or SIGTERM kills the running worker's process
group, waits for it, and ends the sweep with what was measured (`SweepOutcome.interrupted`); the worker also
asks the kernel to kill it if the parent dies (PR_SET_PDEATHSIG), so no worker is ever orphaned.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dlbench.measurement.thermal import (
    DEFAULT_MAX_START_TEMP_C,
    DEFAULT_MAX_WAIT_S,
    GpuThermometer,
    wait_until_cool,
)
from dlbench.runner.config import RunConfig
from dlbench.runner.document import make_result
from dlbench.runner.plan import Plan
from dlbench.runner.probe import child_env
from dlbench.runner.worker import killed_hint, signal_name

KILL_GRACE_S = 5.0


class Interrupted(KeyboardInterrupt):
    """The sweep was stopped by a signal (SIGINT or SIGTERM); `signum` says which."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


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


# ------------------------------------------------------------------------------------------- one worker


def run_worker(config: RunConfig, timeout_s: float,
               on_event: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Measure `config` in a fresh child process; returns the outcome dict
    `{"status", "error", "measurement", "telemetry_reason", "signal", "wall_time_s"}` (`signal`: the name of the
    signal that killed a worker which left no result, else None; never raises for a failed config;
    KeyboardInterrupt/Interrupted propagate after the child's process group is killed)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dlbench-worker-") as tmp:
        result_path = Path(tmp) / "result.json"
        log_path = Path(tmp) / "worker.log"
        read_fd, write_fd = os.pipe()
        debug = bool(os.environ.get("DLBENCH_DEBUG"))
        cmd = [sys.executable, "-m", "dlbench.runner.worker", "--config", json.dumps(config.to_dict()),
               "--result", str(result_path), "--progress-fd", str(write_fd)]
        with open(log_path, "wb") as log:
            try:
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=None if debug else log,
                                        pass_fds=(write_fd,), start_new_session=True, env=child_env())
            finally:
                os.close(write_fd)
            last = {"phase": None, "done": 0, "total": 0}

            def handle(event: dict[str, Any]) -> None:
                if event.get("event") == "progress":
                    last.update(phase=event.get("phase"), done=event.get("done"), total=event.get("total"))
                if on_event is not None:
                    on_event(event)

            try:
                finished = _wait(proc, read_fd, started + timeout_s, handle)
            except BaseException:
                _kill_group(proc)
                raise
            finally:
                os.close(read_fd)
            if not finished:
                _kill_group(proc)
                where = f" in {last['phase']} {last['done']}/{last['total']}" if last["phase"] else ""
                outcome = _outcome("timeout", f"timed out after {timeout_s:.0f} s{where}; "
                                              "raise --timeout if this configuration needs longer")
            else:
                _kill_group(proc)  # stray grandchildren (compile workers) go with the worker
                outcome = _read_outcome(result_path, proc.returncode, log_path)
    outcome["wall_time_s"] = time.monotonic() - started
    return outcome


def _outcome(status: str, error: str | None, signal_: str | None = None) -> dict[str, Any]:
    return {"status": status, "error": error, "measurement": None, "telemetry_reason": None, "signal": signal_}


def _wait(proc: subprocess.Popen, read_fd: int, deadline: float,
          on_event: Callable[[dict[str, Any]], None]) -> bool:
    """Block until the worker exits (True) or the deadline passes (False), forwarding progress events.

    Waits on the progress pipe and, on Linux, on a pidfd that becomes readable when the worker exits (the pipe
    alone is not enough: a grandchild may hold its write end). Elsewhere it re-checks the exit every 0.25 s.
    The worker is left unreaped (a zombie) so that its process-group id cannot be reused before we kill it.
    """
    selector = selectors.DefaultSelector()
    selector.register(read_fd, selectors.EVENT_READ, "pipe")
    pidfd = None
    if hasattr(os, "pidfd_open"):
        with contextlib.suppress(OSError):
            pidfd = os.pidfd_open(proc.pid)
            selector.register(pidfd, selectors.EVENT_READ, "exit")
    buffer = b""
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            exited = False
            for key, _ in selector.select(remaining if pidfd is not None else min(remaining, 0.25)):
                if key.data == "exit":
                    exited = True
                    continue
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    selector.unregister(read_fd)
                    continue
                buffer = _dispatch(buffer + chunk, on_event)
            if pidfd is None and _exited_unreaped(proc):
                exited = True
            if exited:
                os.set_blocking(read_fd, False)
                with contextlib.suppress(BlockingIOError, OSError):
                    while chunk := os.read(read_fd, 65536):
                        buffer = _dispatch(buffer + chunk, on_event)
                return True
    finally:
        selector.close()
        if pidfd is not None:
            os.close(pidfd)


def _exited_unreaped(proc: subprocess.Popen) -> bool:
    """Has the worker exited? (waitid with WNOWAIT where available, so it stays unreaped.)"""
    if hasattr(os, "waitid"):
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return info is not None
    return proc.poll() is not None


def _dispatch(buffer: bytes, on_event: Callable[[dict[str, Any]], None]) -> bytes:
    *lines, rest = buffer.split(b"\n")
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            on_event(event)
    return rest


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the worker's whole process group (the worker leads it: start_new_session), then reap the worker."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored; a D-state process lingers
        pass


def _read_outcome(result_path: Path, returncode: int, log_path: Path) -> dict[str, Any]:
    if result_path.exists():
        try:
            outcome = json.loads(result_path.read_text(encoding="utf-8"))
        except ValueError:
            return _outcome("error", "worker wrote an unreadable result file")
        outcome.setdefault("telemetry_reason", None)
        outcome.setdefault("signal", None)
        return outcome
    if returncode < 0:
        name = signal_name(-returncode)
        return _outcome("error", f"worker crashed ({name}){killed_hint(-returncode)}", name)
    if returncode > 0:
        tail = _last_line(log_path)
        return _outcome("error", f"worker exited with code {returncode}" + (f": {tail}" if tail else ""))
    return _outcome("error", "worker exited without writing a result")


def _last_line(path: Path, limit: int = 200) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    if not lines:
        return ""
    return lines[-1] if len(lines[-1]) <= limit else lines[-1][: limit - 3] + "..."


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

    if config.world_size > 1:  # data-parallel: one process per device through torchrun (dlbench.runner.launch)
        from dlbench.runner.launch import run_group_worker

        worker = run_group_worker(config, timeout_s, on_event)
    else:
        worker = run_worker(config, timeout_s, on_event)
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
