"""One rank of a group started by `dlbench.runner.launchers.torchrun`:
`python -m torch.distributed.run --standalone --nproc-per-node 2 -m dlbench.runner.rank_worker JOB.json`
(the launcher runs it through `launchers.tied`, which ties its life to the torchrun agent's).

JOB.json says what to do (`kind`: "measure" a RunConfig with DDP, or "comm" for the collective benchmark), where
to write this rank's status file (`status_dir/rank-<r>.json`) and where rank 0 writes the result
(`result_path`). Each rank keeps its status file current (pid, phase, progress) so that the parent can say which
rank failed or hung and where; an exception is recorded as `status: "error"` (or `"oom"`) with a one-line
message before the process exits non-zero, which makes torchrun tear the rest of the group down.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from dlbench.jsonio import write_json_atomic


def register_stack_dump(status_dir: Path, rank: int):
    """On SIGUSR1, write this rank's Python stack to `stack-<rank>.txt` (faulthandler: no cost until then).

    The parent sends it to every rank of a group that timed out, to tell the rank stuck in its own code from the
    ranks waiting for it in a collective.
    """
    import faulthandler
    import signal

    if not hasattr(signal, "SIGUSR1"):
        return None
    handle = open(status_dir / f"stack-{rank}.txt", "w")  # noqa: SIM115 - stays open for the process lifetime
    faulthandler.register(signal.SIGUSR1, file=handle, all_threads=False)
    return handle


class StatusFile:
    """This rank's status file; rewritten atomically, at most every 0.2 s for progress updates."""

    def __init__(self, status_dir: Path, rank: int):
        self.path = status_dir / f"rank-{rank}.json"
        self.state: dict[str, Any] = {"rank": rank, "pid": os.getpid(), "phase": "starting", "status": "running"}
        self._last_write = 0.0
        self.config = None
        self.write()

    def write(self, force: bool = True) -> None:
        now = time.monotonic()
        if not force and now - self._last_write < 0.2:
            return
        self._last_write = now
        write_json_atomic(self.path, self.state)

    def update(self, force: bool = True, **kwargs: Any) -> None:
        self.state.update(kwargs)
        self.write(force)

    def progress(self, phase: str, done: int, total: int) -> None:
        finished = done >= total
        self.update(force=finished or phase != self.state.get("phase"), phase=phase, done=done, total=total)


def classify(exc: BaseException, config=None) -> tuple[str, str]:
    """(status, one-line error) for an exception raised while measuring (the runner's worker's wording)."""
    from dlbench.runner.distributed import RendezvousTimeout
    from dlbench.runner.worker import is_oom, one_line, oom_message

    if config is not None and is_oom(exc):
        return "oom", oom_message(config)
    if isinstance(exc, RendezvousTimeout):
        return "error", " ".join(str(exc).split())
    return "error", one_line(exc)


def _measure(job: dict[str, Any], dist_env, status: StatusFile) -> Any:
    from dlbench.measurement.config import RunConfig
    from dlbench.runner.distributed import measure_distributed, rank_sampler

    config = RunConfig.from_dict(job["config"])
    status.config = config
    # Every rank samples its own GPU: one card that throttles or runs hot sets the group's pace.
    sampler, telemetry_reason = rank_sampler(dist_env, config.device)
    status.update(phase="rendezvous")
    return measure_distributed(config, dist_env, progress=status.progress, sampler=sampler,
                               timeout_s=float(job.get("pg_timeout_s") or 600), telemetry_reason=telemetry_reason)


def _comm(job: dict[str, Any], dist_env, status: StatusFile) -> Any:
    from dlbench.runner.comm import measure_comm

    status.update(phase="rendezvous")
    return measure_comm(dist_env, device=job["device"], sizes_bytes=job["sizes_bytes"], ops=job["ops"],
                        iters=int(job["iters"]), warmup_iters=int(job["warmup_iters"]),
                        pg_timeout_s=float(job.get("pg_timeout_s") or 600), progress=status.progress)


KINDS = {"measure": _measure, "comm": _comm}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    job = json.loads(Path(argv[0]).read_text())

    from dlbench.runner.distributed import destroy_process_group, detect

    dist_env = detect()
    if dist_env is None:
        print("dlbench.runner.rank_worker must be started by torch.distributed.run", file=sys.stderr)
        return 2
    status = StatusFile(Path(job["status_dir"]), dist_env.rank)
    register_stack_dump(Path(job["status_dir"]), dist_env.rank)
    try:
        result = KINDS[job["kind"]](job, dist_env, status)
        status.update(phase="gather")
        if dist_env.is_main:
            write_json_atomic(Path(job["result_path"]), result)
        status.update(status="ok", phase="done")
    except BaseException as exc:  # noqa: BLE001 - recorded for the parent, then the rank exits non-zero
        state, message = classify(exc, status.config)
        status.update(status=state, error=message)
        print(f"rank {dist_env.rank}: {message}", file=sys.stderr)
        os._exit(1)  # skip interpreter teardown: other ranks may hold this one in a collective
    destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
