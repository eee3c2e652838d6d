"""A stand-in child for tests/test_launchers.py: does what its job says, as a worker or as one torchrun rank.

One process: `python -m _launcher_child --job JOB.json --result OUT.json --progress-fd N` (the worker's protocol).
One rank: `python -m _launcher_child JOB.json` (the rank worker's: the job names `status_dir` and `result_path`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def _write(path: str, data: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def single(argv: list[str]) -> None:
    job_path, result_path, fd = argv[2], argv[4], int(argv[6])
    with open(job_path) as f:
        job = json.load(f)
    action = job["action"]

    def progress(done: int, total: int) -> None:
        os.write(fd, (json.dumps({"event": "progress", "phase": "work", "done": done, "total": total}) + "\n").encode())

    progress(1, 1 if action == "ok" else 2)
    if action == "ok":
        _write(result_path, {"status": "ok", "value": job["value"]})
    elif action == "report":
        _write(result_path, {"status": job["status"], "error": job["error"]})
    elif action == "raise":
        raise ValueError("no such thing")
    elif action == "oom":
        raise MemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    elif action == "kill":
        os.kill(os.getpid(), job["signum"])
        time.sleep(30)
    elif action == "hang":
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        _write(job["pids"], [os.getpid(), grandchild.pid])
        time.sleep(120)


def rank(job_path: str) -> None:
    with open(job_path) as f:
        job = json.load(f)
    r, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    status_path = os.path.join(job["status_dir"], f"rank-{r}.json")
    state = {"rank": r, "pid": os.getpid(), "phase": "work", "status": "running"}
    _write(status_path, state)
    if job.get("fail_rank") == r:
        _write(status_path, {**state, "status": "error", "error": f"ValueError: rank {r} was told to fail"})
        sys.exit(1)
    if r == 0:
        _write(job["result_path"], {"world_size": world, "rank": r})
    _write(status_path, {**state, "status": "ok", "phase": "done"})


if __name__ == "__main__":
    if sys.argv[1] == "--job":
        single(sys.argv)
    else:
        rank(sys.argv[1])
