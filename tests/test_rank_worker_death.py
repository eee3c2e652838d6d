"""A rank whose torchrun agent died before it asked for a parent-death signal must not live on as an orphan.

Run with `python -m pytest tests/test_rank_worker_death.py`. Found by a second test pass: `dlbench run --gpus
100000 --device cpu` stopped by SIGTERM left a rank running under init, because the rank worker set
PR_SET_PDEATHSIG without checking whether its parent had already gone (the single-process worker checks). Every
child now asks through `dlbench.runner.launchers.tied`, as torchrun starts each rank.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")

# A parent that starts the rank worker, which finds its parent gone once it starts running: the intermediate
# process exits right after forking, so the rank is re-parented to init (or a subreaper) before main() runs.
LAUNCH = r"""
import os, sys, time
pid = os.fork()
if pid:
    os._exit(0)
time.sleep(0.5)  # the parent is gone now
os.execv(sys.executable, [sys.executable, "-m", "dlbench.runner.launchers.tied", "dlbench.runner.rank_worker",
                          sys.argv[1]])
"""


def test_rank_worker_exits_when_its_parent_is_already_gone(tmp_path):
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"kind": "comm", "status_dir": str(tmp_path), "device": "cpu", "sizes_bytes": [1024],
                               "ops": ["all_reduce"], "iters": 1, "warmup_iters": 0, "pg_timeout_s": 600}))
    marker = tmp_path / "pid"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    # A torchrun-like environment: without the check, rank 1 would wait for a rendezvous on a closed port.
    env.update(RANK="1", WORLD_SIZE="2", LOCAL_RANK="1", LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
               MASTER_PORT="1", TORCHELASTIC_RUN_ID="x", GROUP_RANK="0")
    code = LAUNCH.replace("time.sleep(0.5)", f"open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(0.5)")
    subprocess.run([sys.executable, "-c", code, str(job)], env=env, check=True, timeout=30)
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(marker.read_text())
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{pid}/stat") as stat:
            if stat.read().rsplit(")", 1)[-1].split()[0] == "Z":
                break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        pytest.fail("the rank worker outlived its parent")


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.slow
def test_a_killed_dlbench_takes_its_launcher_and_ranks_along():
    # Found by the multi-process QA pass: `dlbench comm` (and `dlbench run --gpus 2`) killed with SIGKILL, or comm
    # stopped by SIGTERM, left torchrun's launcher and both ranks running under init: the ranks die with their
    # launcher, but nothing tied the launcher to dlbench.
    import signal
    import uuid

    from _dist_helpers import env, processes_with

    marker = uuid.uuid4().hex
    parent = subprocess.Popen([sys.executable, "-m", "dlbench", "comm", "--device", "cpu", "--gpus", "2",
                               "--sizes", "1K..1M", "--iters", "1000000", "--json"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=env(DLBENCH_TEST_MARKER=marker))
    try:
        deadline = time.monotonic() + 120
        while sum("rank_worker" in _cmdline(p) for p in processes_with(marker)) < 2:
            assert parent.poll() is None and time.monotonic() < deadline, "the ranks never started"
            time.sleep(0.2)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 15
        while (left := processes_with(marker)) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        if parent.poll() is None:
            parent.kill()
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert left == [], f"left behind: {[_cmdline(p) for p in left]}"
