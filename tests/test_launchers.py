"""Every way a child can end, each produced by a real small child: `launch(job, timeout_s) -> Outcome`.

Run with `python -m pytest tests/test_launchers.py`. The children are the module `tests/_launcher_child.py`
(a stand-in worker: it reads `--job`, writes `--result` and does what the job says), started exactly as the
real worker is, so the launcher is tested without torch or a workload.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from dlbench.runner.launchers import STATUSES, Interrupted, Job, Outcome, launch

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and signals are POSIX")

TESTS = str(Path(__file__).resolve().parent)


def child(action: str, **payload) -> Job:
    # The tests folder is importable in the child: PYTHONPATH is added to, not replaced.
    return Job("_launcher_child", {"action": action, **payload}, env={"PYTHONPATH": _pythonpath()})


def _pythonpath() -> str:
    src = str(Path(__file__).resolve().parents[1] / "src")
    parts = [src, TESTS, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return os.pathsep.join(dict.fromkeys(parts))


def test_ok_carries_the_childs_result_and_its_events():
    events = []
    outcome = launch(child("ok", value=42), 60, events.append)
    assert outcome.status == "ok" and outcome.error is None and outcome.signal is None
    assert outcome.result == {"status": "ok", "value": 42} and outcome.exit_code == 0
    assert {"event": "progress", "phase": "work", "done": 1, "total": 1} in events
    assert outcome.wall_time_s > 0


def test_a_child_that_says_error_or_exits_non_zero_is_an_error():
    said = launch(child("report", status="error", error="ValueError: bad"), 60)
    assert (said.status, said.error) == ("error", "ValueError: bad")
    exited = launch(child("raise"), 60)
    assert exited.status == "error" and exited.exit_code == 1
    assert exited.error.startswith("worker exited with code 1: ") and "ValueError: no such thing" in exited.error
    assert "Traceback" in exited.stderr_tail


def test_out_of_memory_said_or_shaped_is_oom():
    said = launch(child("report", status="oom", error="out of memory at batch size 64"), 60)
    assert (said.status, said.error) == ("oom", "out of memory at batch size 64")
    # A child that dies of an out-of-memory error it did not catch: its last words say so.
    died = launch(child("oom"), 60)
    assert died.status == "oom" and "out of memory" in died.error.lower() and died.exit_code == 1


def test_timeout_kills_the_child_and_its_group_and_says_where_it_was(tmp_path):
    pids = tmp_path / "pids"
    started = time.monotonic()
    outcome = launch(child("hang", pids=str(pids)), 3)
    assert time.monotonic() - started < 20
    assert outcome.status == "timeout" and outcome.error.startswith("timed out after 3 s in work 1/2")
    for pid in json.loads(pids.read_text()):  # the child and the grandchild it started are gone
        assert not _alive(pid)


def test_a_child_killed_by_a_signal_names_it():
    outcome = launch(child("kill", signum=int(signal.SIGKILL)), 60)
    assert outcome.status == "signal" and outcome.signal == "SIGKILL" and outcome.signum == signal.SIGKILL
    assert outcome.error == "worker crashed (SIGKILL); the system may have run out of memory"
    segv = launch(Job("_launcher_child", {"action": "kill", "signum": int(signal.SIGSEGV)}, what="planning child",
                      env={"PYTHONPATH": _pythonpath()}), 60)
    assert (segv.status, segv.error, segv.exit_code) == ("signal", "planning child crashed (SIGSEGV)",
                                                        -signal.SIGSEGV)


def test_an_interrupted_parent_kills_the_child_and_says_so(tmp_path):
    """SIGTERM to this process while it waits (the sweep makes it `Interrupted`): the child goes, no exception."""
    pids = tmp_path / "pids"

    def handler(signum, _frame):
        raise Interrupted(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    timer = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGTERM))
    try:
        timer.start()
        outcome = launch(child("hang", pids=str(pids)), 60)
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, previous)
    assert outcome.status == "interrupted" and outcome.signal == "SIGTERM" and outcome.signum == signal.SIGTERM
    for pid in json.loads(pids.read_text()):
        assert not _alive(pid)


def test_every_status_is_named():
    assert set(STATUSES) == {"ok", "oom", "error", "timeout", "signal", "interrupted"}
    assert Outcome("ok").signum is None


def test_the_torchrun_launcher_runs_a_group_and_reports_a_failed_rank():
    pytest.importorskip("torch.distributed")
    ok = launch(Job("_launcher_child", {"action": "rank"}, nproc=2, what="group",
                    env={"PYTHONPATH": _pythonpath()}), 120)
    assert ok.status == "ok", ok.error
    assert ok.result == {"world_size": 2, "rank": 0}
    assert sorted(ok.ranks) == [0, 1]
    failed = launch(Job("_launcher_child", {"action": "rank", "fail_rank": 1}, nproc=2, what="group",
                        env={"PYTHONPATH": _pythonpath()}), 120)
    assert failed.status == "error" and failed.failed_rank == 1
    assert failed.error.startswith("rank 1 failed: ValueError: rank 1 was told to fail")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True
