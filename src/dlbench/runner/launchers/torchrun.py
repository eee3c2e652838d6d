"""Start one multi-process group through torch.distributed's own launcher: `launch(Job(module, payload,
nproc=2), timeout_s)`, used by `dlbench run --gpus 2` and `dlbench comm --gpus 2`.

`run(job, timeout_s)` runs `python -m torch.distributed.run --standalone --nproc-per-node N
-m MODULE JOB.json` (standalone: a c10d rendezvous on a free local port; torchrun and each rank through
`launchers.tied`, which ties each one's life to its parent) in its own session and waits for it. Each rank (see
`dlbench.runner.rank_worker`) writes a small status file (`rank-<r>.json`: pid, phase, progress, status, error);
rank 0 writes the result. When the launcher returns non-zero, or the timeout expires, the whole process tree is
torn down (SIGTERM to the launcher, which stops its workers, then SIGKILL to anything still alive) and the outcome
names the failed rank and why, from the ranks' status files and torchrun's failure summary.

A group's status is `ok`, `oom`, `error`, `timeout` or `interrupted`: a rank killed by a signal, or the launcher
killed by one, ends the group with `error` naming the rank (`Outcome.failed_rank`) and the signal
(`Outcome.signal`), since the group as a whole was torn down, not killed.
"""

from __future__ import annotations

import os
import re
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

# Grace period between SIGTERM to the launcher and SIGKILL to whatever is left.
TERM_GRACE_S = 5.0
POLL_S = 0.25


def torchrun_command(nproc: int, module: str, job_path: Path, monitor_interval_s: float = 0.5) -> list[str]:
    """The launcher command line for one group on this machine: torchrun, each level dying with its parent."""
    return tied_command("torch.distributed.run", [
        "--standalone",
        f"--nproc-per-node={nproc}",
        "--max-restarts=0",
        f"--monitor-interval={monitor_interval_s:g}",
        "-m", "dlbench.runner.launchers.tied", module, str(job_path),
    ])


def run(job: Job, timeout_s: float, on_event: OnEvent | None = None, workdir: Path | None = None) -> Outcome:
    """Run `job.module` on `job.nproc` local processes; tear everything down on failure.

    `on_event` gets rank 0's progress (`{"event": "progress", ...}`) while the group runs.
    """
    started = time.monotonic()
    own_tmp = None
    if workdir is None:
        own_tmp = tempfile.TemporaryDirectory(prefix="dlbench-group-")
        workdir = Path(own_tmp.name)
    workdir.mkdir(parents=True, exist_ok=True)
    nproc = job.nproc
    payload = {**job.payload, "status_dir": str(workdir), "result_path": str(workdir / "result.json")}
    job_path = workdir / "job.json"
    write_json_atomic(job_path, payload)
    log_path = workdir / "torchrun.log"
    env = child_env(job.env)
    device = str(payload.get("device") or payload.get("config", {}).get("device") or "cpu")
    if device == "cpu" and "OMP_NUM_THREADS" not in os.environ:
        # CPU ranks share the cores: each gets its part, so N processes together use what one process would
        # (torchrun would give each a single thread). On GPUs torchrun's default of 1 thread stays.
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // nproc))
    env["PYTHONUNBUFFERED"] = "1"
    try:
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(torchrun_command(nproc, job.module, job_path), stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    start_new_session=True)
            timed_out = False
            interrupted = None
            try:
                timed_out = _wait(proc, timeout_s, workdir, on_event)
            except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM made into one (`sweep.Interrupted`)
                interrupted = interrupting_signal(exc)
                tear_down(proc)
            except BaseException:
                tear_down(proc)
                raise
            if timed_out:
                dump_stacks(workdir)
            if interrupted is None and (timed_out or proc.returncode != 0):
                tear_down(proc)
        log_tail = _tail(log_path)
        ranks = read_rank_status(workdir)
        if interrupted is not None:
            outcome = Outcome("interrupted", f"interrupted ({interrupted}); the group was torn down",
                              signal=interrupted, exit_code=proc.returncode, stderr_tail=log_tail, ranks=ranks)
        else:
            outcome = _outcome(proc.returncode, timed_out, timeout_s, workdir, ranks, log_tail, nproc)
        outcome.wall_time_s = time.monotonic() - started
        return outcome
    finally:
        if own_tmp is not None:
            own_tmp.cleanup()


def _wait(proc: subprocess.Popen, timeout_s: float, workdir: Path, on_event: OnEvent | None) -> bool:
    """Wait for the launcher; True when the timeout expired first."""
    deadline = time.monotonic() + timeout_s
    last = None
    while True:
        try:
            proc.wait(timeout=min(POLL_S, max(0.0, deadline - time.monotonic())))
            return False
        except subprocess.TimeoutExpired:
            pass
        if on_event is not None:
            state = _read_json(workdir / "rank-0.json") or {}
            current = (state.get("phase"), state.get("done"), state.get("total"))
            if current != last and current[0] and current[2]:
                on_event({"event": "progress", "phase": current[0], "done": int(current[1] or 0),
                          "total": int(current[2])})
                last = current
        if time.monotonic() >= deadline:
            return True


def dump_stacks(workdir: Path, wait_s: float = 1.0) -> None:
    """Ask every rank still running for its Python stack (SIGUSR1 -> faulthandler, see rank_worker)."""
    sent = False
    for status in read_rank_status(workdir).values():
        pid = status.get("pid")
        if isinstance(pid, int) and status.get("status") == "running" and _alive(pid):
            try:
                os.kill(pid, signal.SIGUSR1)
                sent = True
            except (ProcessLookupError, PermissionError):
                pass
    if sent:
        time.sleep(wait_s)


# A stack whose innermost frame is inside these torch modules is waiting on the other ranks (a collective in
# backward, a barrier, an all_gather); anywhere else (the model, user code, a sleep) the rank is stuck itself.
_WAITING_IN = ("torch/distributed/", "torch/autograd/", "torch/nn/parallel/")
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


def innermost_frame(workdir: Path, rank: int) -> tuple[str, int, str] | None:
    """(file, line, function) of the innermost frame in a rank's stack dump, or None."""
    try:
        text = (workdir / f"stack-{rank}.txt").read_text(errors="replace")
    except OSError:
        return None
    m = _FRAME.search(text)
    return (m.group("file"), int(m.group("line")), m.group("func")) if m else None


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (Linux /proc; an empty list elsewhere)."""
    children: dict[int, list[int]] = {}
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return []
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may contain spaces: the fields after the last ")".
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    out: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purposes
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return True


def tear_down(proc: subprocess.Popen, grace_s: float = TERM_GRACE_S) -> None:
    """Stop the launcher and every process it started: SIGTERM first, SIGKILL after `grace_s`."""
    tree = descendants(proc.pid)
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)  # torchrun forwards it to its workers
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if proc.poll() is not None and not any(_alive(p) for p in tree):
            break
        time.sleep(0.05)
    tree = sorted(set(tree) | set(descendants(proc.pid)))
    for pid in tree:
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if proc.poll() is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass
    proc.wait()
    # The workers were children of the launcher, which reaped them (or init does); wait for them to go.
    deadline = time.monotonic() + grace_s
    while any(_alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.05)


def read_rank_status(workdir: Path) -> dict[int, dict[str, Any]]:
    """Every rank's last status file, by rank."""
    out = {}
    for path in sorted(workdir.glob("rank-*.json")):
        data = _read_json(path)
        if data and isinstance(data.get("rank"), int):
            out[data["rank"]] = data
    return out


def _read_json(path: Path) -> dict[str, Any] | None:
    import json

    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _tail(path: Path, n_chars: int = 6000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-n_chars:].decode("utf-8", "replace")


# torchrun's failure summary has one block per failed rank: "rank      : 1 (local_rank: 1)" ...
# "exitcode  : -9 (pid: 1234)" ... "traceback : Signal 9 (SIGKILL) received by PID 1234"; the block after
# "Root Cause" is the first failure torchrun observed.
_FAILURE_BLOCK = re.compile(
    r"rank\s*:\s*(?P<rank>\d+) \(local_rank.*?exitcode\s*:\s*(?P<code>-?\d+).*?traceback\s*:\s*(?P<tb>[^\n]*)",
    re.S,
)
# A rank whose peer died reports a broken connection; that is a consequence, not the cause.
_PEER_LOSS = ("closed by peer", "reset by peer", "remote worker", "broken pipe", "communicator was aborted",
              "socket timeout", "distnetworkerror", "connection refused", "watchdog caught collective")


def parse_torchrun_failures(log: str) -> tuple[dict[int, tuple[int, str]], int | None]:
    """({rank: (exit code, reason)}, root-cause rank) from torchrun's failure summary (empty when absent)."""
    failures: dict[int, tuple[int, str]] = {}
    root = None
    head, _, root_part = log.rpartition("Root Cause")
    for m in _FAILURE_BLOCK.finditer(log):
        failures[int(m.group("rank"))] = (int(m.group("code")), m.group("tb").strip())
    if root_part and head:
        m = _FAILURE_BLOCK.search(root_part)
        if m:
            root = int(m.group("rank"))
    return failures, root


def is_peer_loss(message: str | None) -> bool:
    """Whether a rank's error says it lost its connection to a peer (which died first) rather than failed itself."""
    text = (message or "").lower()
    return any(key in text for key in _PEER_LOSS)


# A collective that waited past the process group's timeout: gloo "Timed out waiting 10000ms for recv operation",
# NCCL's watchdog "... ran for 600000 milliseconds before timing out".
_COLLECTIVE_TIMEOUT = ("timed out waiting", "watchdog caught collective operation timeout", "before timing out")


def is_collective_timeout(message: str | None) -> bool:
    """Whether a rank's error says a collective waited past the group's timeout (a peer hung, died or lags)."""
    text = (message or "").lower()
    return any(key in text for key in _COLLECTIVE_TIMEOUT)


def _outcome(returncode: int | None, timed_out: bool, timeout_s: float, workdir: Path,
             ranks: dict[int, dict[str, Any]], log_tail: str, nproc: int) -> Outcome:
    result = _read_json(workdir / "result.json")
    if not timed_out and returncode == 0 and result is not None:
        return Outcome("ok", result=result, ranks=ranks, exit_code=0, stderr_tail=log_tail)

    def fail(status: str, error: str, rank: int | None, signal_: str | None = None) -> Outcome:
        return Outcome(status, error=error, failed_rank=rank, signal=signal_, ranks=ranks,
                       exit_code=returncode, stderr_tail=log_tail)

    failures, root = parse_torchrun_failures(log_tail)
    reported = {r: s for r, s in ranks.items() if s.get("status") in ("error", "oom")}

    # 1. A rank that reported its own failure (an exception, out of memory) is the clearest cause.
    own = [r for r in sorted(reported) if not is_peer_loss(reported[r].get("error"))]
    if own:
        r = own[0]
        return fail(reported[r]["status"], f"rank {r} failed: {reported[r].get('error') or 'no message'}", r)

    # 2. A rank killed by a signal (SIGKILL, SIGSEGV...): the others only lost their connection to it.
    signalled = [r for r in sorted(failures) if failures[r][0] < 0]
    if signalled:
        r = root if root in signalled else signalled[0]
        code, reason = failures[r]
        name = signal_name(-code)
        return fail("error", f"rank {r} failed: killed by {name} ({reason}) during "
                             f"{_phase(ranks.get(r))}; the group was torn down", r, name)

    # 3. A rank that exited without a report while its peers lost their connection to it.
    silent = [r for r in range(nproc) if ranks.get(r, {}).get("status") == "running"]
    if reported and silent and not timed_out:
        r = silent[0]
        code = failures.get(r, (returncode, ""))[0]
        return fail("error", f"rank {r} failed: exited with code {code} without a report during "
                             f"{_phase(ranks.get(r))}; the group was torn down", r)

    if timed_out:
        unfinished = [r for r in range(nproc) if ranks.get(r, {}).get("status") != "ok"]
        detail = ", ".join(_where(r, ranks.get(r)) for r in unfinished) or "all ranks"
        suspect, why = _hang_suspect(unfinished, ranks, workdir)
        hint = f"; {why}" if why else ""
        return fail("timeout", f"timed out after {timeout_s:g} s (group torn down); ranks not finished: "
                               f"{detail}{hint}", suspect)

    if root is not None:
        code, reason = failures[root]
        return fail("error", f"rank {root} failed: exit code {code} ({reason}); the group was torn down", root)
    if reported:
        r = sorted(reported)[0]
        return fail(reported[r]["status"], f"rank {r} failed: {reported[r].get('error')}", r)
    where = ", ".join(_where(r, ranks.get(r)) for r in range(nproc))
    if returncode is not None and returncode < 0:  # the launcher itself was killed (OOM killer, kill -9)
        name = signal_name(-returncode)
        return fail("error", f"the launcher was killed by {name} before the group finished ({where})"
                             f"{killed_hint(-returncode)}", None, name)
    last_line = next((ln for ln in reversed(log_tail.strip().splitlines()) if ln.strip()), "")
    return fail("error", f"the launcher exited with code {returncode} before the group finished ({where})"
                         + (f": {last_line[:300]}" if last_line else ""), None)


def _phase(status: dict[str, Any] | None) -> str:
    """Where a rank was: "measure 3/10", "rendezvous", "never started"."""
    if not status:
        return "never started"
    phase = status.get("phase") or "?"
    return f"{phase} {status.get('done', 0)}/{status['total']}" if status.get("total") else phase


def _where(rank: int, status: dict[str, Any] | None) -> str:
    return f"rank {rank} ({_phase(status)})"


_PHASE_ORDER = {"starting": 0, "rendezvous": 1, "compile": 2, "warmup": 3, "measure": 4, "gather": 5}


def _hang_suspect(unfinished: list[int], ranks: dict[int, dict[str, Any]],
                  workdir: Path) -> tuple[int | None, str | None]:
    """(rank, explanation) of the rank that hung a timed-out group, or (None, None) when it cannot be told.

    First by progress: a rank behind all others. Then by stack: the only rank not waiting inside torch's
    collectives (its innermost frame is in the model or user code).
    """
    if len(unfinished) <= 1:
        return (unfinished[0], None) if unfinished else (None, None)

    def key(r: int):
        s = ranks.get(r) or {}
        return (_PHASE_ORDER.get(s.get("phase"), -1), s.get("done", 0))

    keys = {r: key(r) for r in unfinished}
    lowest = min(keys.values())
    behind = [r for r in unfinished if keys[r] == lowest]
    if len(behind) == 1:
        return behind[0], f"rank {behind[0]} made the least progress"
    stuck = []
    for r in behind:
        frame = innermost_frame(workdir, r)
        if frame is not None and not any(part in frame[0].replace(os.sep, "/") for part in _WAITING_IN):
            stuck.append((r, frame))
    if len(stuck) == 1:
        r, (file, line, func) = stuck[0]
        return r, (f"rank {r} was stuck in {func} ({Path(file).name}:{line}) while the others waited for it in "
                   "a collective")
    return None, None
