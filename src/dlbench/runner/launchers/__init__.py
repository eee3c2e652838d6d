"""One way to start a child: `launch(job, timeout_s, on_event) -> Outcome`, whatever runs in it.

Exercised by every `dlbench run` (the planning child, each configuration's worker, each data-parallel group) and
`dlbench comm --gpus 2`; by tests/test_launchers.py with small real children.

A `Job` names a module to run as `python -m MODULE` and the JSON payload it reads. One process (`nproc` 1) is
started by `launchers.process`: `python -m MODULE --job JOB.json --result RESULT.json [--progress-fd N]`; several
(`nproc` > 1) by `launchers.torchrun`, torch.distributed's own launcher, one rank each
(`python -m MODULE JOB.json`, the payload plus where to write status files and the result). Either way the
child runs through `launchers.tied`, which has the kernel kill it when its parent dies, so the module itself
knows nothing of how it was started (pyperf's `_worker.py`, optimum-benchmark's `launchers/`).

Every way a child can end becomes one `Outcome.status`:
- `ok`: the child wrote its result (`Outcome.result`, the payload it wrote);
- `oom`, `error`: the child said so in its result (`{"status": "oom", "error": ...}`), or it exited non-zero
  without one (`oom` when its last words were an out-of-memory error);
- `timeout`: the deadline passed; the child and everything it started were killed;
- `signal`: a signal killed it (`Outcome.signal` names it: SIGKILL is what the host's OOM killer sends);
- `interrupted`: this process got Ctrl-C or SIGTERM while waiting; the child was killed, and the caller decides
  whether to stop (`Outcome.signal` names the signal).
A launcher never raises for a child that failed.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATUSES = ("ok", "oom", "error", "timeout", "signal", "interrupted")


@dataclass
class Job:
    """What to run: `python -m module` reading `payload`, on `nproc` processes (> 1: through torchrun).

    `what` names the child in error messages ("worker crashed (SIGSEGV)"); `env` is added to the environment.
    """

    module: str
    payload: dict[str, Any] = field(default_factory=dict)
    nproc: int = 1
    what: str = "worker"
    env: dict[str, str] | None = None


@dataclass
class Outcome:
    """How a child (or a group) ended; `status` is one of `STATUSES`.

    `error` is one line for a user; `signal` the name of the signal that killed the child (or interrupted this
    process); `exit_code` the child's (negative: killed by that signal); `stderr_tail` the end of what it wrote;
    `result` the payload it wrote; `ranks` and `failed_rank` describe a torchrun group.
    """

    status: str
    error: str | None = None
    signal: str | None = None
    exit_code: int | None = None
    stderr_tail: str = ""
    result: Any = None
    wall_time_s: float = 0.0
    ranks: dict[int, dict[str, Any]] = field(default_factory=dict)
    failed_rank: int | None = None

    @property
    def signum(self) -> int | None:
        """The number of the signal named in `signal`, where this platform has one."""
        try:
            return int(signal.Signals[self.signal]) if self.signal else None
        except KeyError:
            return None


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped what was running (`signum` says which): raised by the sweep's signal handlers
    (`sweep.signals_raise_interrupted`) and again, after the children are gone, for an `interrupted` outcome."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


OnEvent = Callable[[dict[str, Any]], None]


def launch(job: Job, timeout_s: float, on_event: OnEvent | None = None) -> Outcome:
    """Run `job` until it ends or `timeout_s` passes; `on_event(event)` gets its progress events
    (`{"event": "progress", "phase": "warmup", "done": 3, "total": 10}`, `{"event": "status", "text": ...}`)."""
    if job.nproc > 1:
        from dlbench.runner.launchers import torchrun

        return torchrun.run(job, timeout_s, on_event)
    from dlbench.runner.launchers import process

    return process.run(job, timeout_s, on_event)


def signal_name(signum: int) -> str:
    """The name of signal number `signum` ("SIGKILL" for 9), or "signal N" where this platform names none.

    A process killed by signal N has return code -N (Popen.returncode, torchrun's "exitcode" in its failure
    summary): pass -returncode."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def killed_hint(signum: int) -> str:
    """What a death by `signum` suggests, to add to its message: SIGKILL is what the host's OOM killer sends."""
    return "; the system may have run out of memory" if signum == signal.SIGKILL else ""


def interrupting_signal(exc: BaseException) -> str:
    """The name of the signal behind a KeyboardInterrupt (the sweep's `Interrupted` carries `signum`)."""
    return signal_name(int(getattr(exc, "signum", signal.SIGINT)))


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for child processes: ours, with `src` importable when running from a checkout."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[3])
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    # From a source checkout (`PYTHONPATH=src`) the children need `src` too; an installed package is found anyway.
    if not package_root.endswith("-packages") and package_root not in paths:
        paths.insert(0, package_root)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(extra or {})
    return env


def tied_command(module: str, args: list[str]) -> list[str]:
    """`python -m dlbench.runner.launchers.tied MODULE ARGS...`: MODULE run as `python -m MODULE ARGS...`,
    killed by the kernel when its parent dies."""
    return [sys.executable, "-m", "dlbench.runner.launchers.tied", module, *args]
