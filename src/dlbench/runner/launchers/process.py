"""One child process for one job: `launch(Job("dlbench.runner.worker", payload), timeout_s)` with `nproc` 1.

Exercised by every configuration of `dlbench run` (`runner.sweep`), each `--batch-size auto` probe and the
planning child (`runner.planning`); by tests/test_launchers.py.

The child is `python -m dlbench.runner.launchers.tied MODULE --job JOB.json --result RESULT.json
--progress-fd N`, started in a new session (its own process group). The parent then blocks on the child's
progress pipe and on its exit (a pidfd on Linux) until the deadline: no spinning. When the child has exited,
timed out or this process was interrupted, the whole process group is killed (stray grandchildren such as
compile workers go with it) and the child's end becomes an `Outcome` (see `dlbench.runner.launchers`).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from dlbench.jsonio import write_json_atomic
from dlbench.runner.launchers import (
    Job,
    OnEvent,
    Outcome,
    child_env,
    interrupting_signal,
    killed_hint,
    signal_name,
    tied_command,
)

KILL_GRACE_S = 5.0
# Last words of a child that died of an out-of-memory error it did not catch itself.
OOM_WORDS = ("outofmemoryerror", "out of memory", "memoryerror")


def run(job: Job, timeout_s: float, on_event: OnEvent | None = None) -> Outcome:
    """Run `job` in one fresh child process (see the module docstring); never raises for a failed child."""
    started = time.monotonic()
    debug = bool(os.environ.get("DLBENCH_DEBUG"))
    with tempfile.TemporaryDirectory(prefix="dlbench-child-") as tmp:
        job_path, result_path, log_path = Path(tmp) / "job.json", Path(tmp) / "result.json", Path(tmp) / "child.log"
        write_json_atomic(job_path, job.payload)
        read_fd, write_fd = os.pipe()
        cmd = tied_command(job.module, ["--job", str(job_path), "--result", str(result_path),
                                        "--progress-fd", str(write_fd)])
        with open(log_path, "wb") as log:
            try:
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=None if debug else log,
                                        pass_fds=(write_fd,), start_new_session=True, env=child_env(job.env))
            finally:
                os.close(write_fd)
            last: dict[str, Any] = {"phase": None, "done": 0, "total": 0}

            def handle(event: dict[str, Any]) -> None:
                if event.get("event") == "progress":
                    last.update(phase=event.get("phase"), done=event.get("done"), total=event.get("total"))
                if on_event is not None:
                    on_event(event)

            interrupted: str | None = None
            try:
                finished = _wait(proc, read_fd, started + timeout_s, handle)
            except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM made into one (`sweep.Interrupted`)
                interrupted, finished = interrupting_signal(exc), False
            except BaseException:
                kill_group(proc)
                raise
            finally:
                os.close(read_fd)
            kill_group(proc)  # after an exit too: stray grandchildren (compile workers) go with the child
            if interrupted is not None:
                outcome = Outcome("interrupted", f"interrupted ({interrupted})", signal=interrupted,
                                  exit_code=proc.returncode)
            elif not finished:
                where = f" in {last['phase']} {last['done']}/{last['total']}" if last["phase"] else ""
                outcome = Outcome("timeout", f"timed out after {timeout_s:.0f} s{where}; "
                                             "raise --timeout if this configuration needs longer",
                                  exit_code=proc.returncode)
            else:
                outcome = read_outcome(result_path, proc.returncode, log_path, job.what)
        outcome.stderr_tail = _tail(log_path)
    outcome.wall_time_s = time.monotonic() - started
    return outcome


def _wait(proc: subprocess.Popen, read_fd: int, deadline: float, on_event: OnEvent) -> bool:
    """Block until the child exits (True) or the deadline passes (False), forwarding progress events.

    Waits on the progress pipe and, on Linux, on a pidfd that becomes readable when the child exits (the pipe
    alone is not enough: a grandchild may hold its write end). Elsewhere it re-checks the exit every 0.25 s.
    The child is left unreaped (a zombie) so that its process-group id cannot be reused before we kill it.
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
    """Has the child exited? (waitid with WNOWAIT where available, so it stays unreaped.)"""
    if hasattr(os, "waitid"):
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return info is not None
    return proc.poll() is not None


def _dispatch(buffer: bytes, on_event: OnEvent) -> bytes:
    *lines, rest = buffer.split(b"\n")
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            on_event(event)
    return rest


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the child's whole process group (the child leads it: start_new_session), then reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored; a D-state process lingers
        pass


def read_outcome(result_path: Path, returncode: int, log_path: Path, what: str = "worker") -> Outcome:
    """The outcome of a child that exited with `returncode`, from its result file or, without one, its exit."""
    if result_path.exists():
        try:
            payload = json.loads(result_path.read_text(encoding="utf-8"))
        except ValueError:
            return Outcome("error", f"{what} wrote an unreadable result file", exit_code=returncode)
        said = payload.get("status") if isinstance(payload, dict) else None
        status = said if said in ("oom", "error") else "ok"
        error = payload.get("error") if isinstance(payload, dict) and status != "ok" else None
        return Outcome(status, error, exit_code=returncode, result=payload)
    if returncode < 0:
        name = signal_name(-returncode)
        return Outcome("signal", f"{what} crashed ({name}){killed_hint(-returncode)}", signal=name,
                       exit_code=returncode)
    if returncode > 0:
        tail = _last_line(log_path)
        status = "oom" if any(word in tail.lower() for word in OOM_WORDS) else "error"
        return Outcome(status, f"{what} exited with code {returncode}" + (f": {tail}" if tail else ""),
                       exit_code=returncode)
    return Outcome("error", f"{what} exited without writing a result", exit_code=returncode)


def _last_line(path: Path, limit: int = 200) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    if not lines:
        return ""
    return lines[-1] if len(lines[-1]) <= limit else lines[-1][: limit - 3] + "..."


def _tail(path: Path, n_chars: int = 4000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-n_chars:].decode("utf-8", "replace")
