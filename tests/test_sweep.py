"""The sweep with real worker processes: faults (OOM, hang, crash) are recorded while the rest completes;
`--batch-size auto` search. Run: `PYTHONPATH=src python -m pytest -q tests/test_sweep.py`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dlbench.measurement.config import RunConfig
from dlbench.runner.batch_search import RESOLUTION, find_batch_size
from dlbench.runner.plan import Plan, PlannedConfig
from dlbench.runner.sweep import SweepObserver, run_sweep
from fault_workloads import processes_with_env

TESTS_DIR = Path(__file__).resolve().parent


@pytest.fixture
def plugins(monkeypatch):
    """Make the fault-injection workloads visible here and in every child process."""
    monkeypatch.setenv("DLBENCH_PLUGINS", "fault_workloads")
    paths = [str(TESTS_DIR), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))


def tiny(workload: str, **kw) -> RunConfig:
    base = {"flavour": "tiny", "device": "cpu", "batch_size": 4, "warmup_steps": 1, "steps": 2, "repeats": 2}
    base.update(kw)
    return RunConfig(workload=workload, **base)


class Recorder(SweepObserver):
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def config_started(self, index, total, config):
        self.events.append(("start", index, config.workload))

    def progress(self, phase, done, total):
        self.events.append(("progress", phase, done, total))

    def config_finished(self, index, result):
        self.events.append(("finished", index, result["status"]))


def test_faults_are_recorded_and_the_sweep_goes_on(plugins, tmp_path, monkeypatch):
    pidfile = tmp_path / "hang.pid"
    monkeypatch.setenv("DLBENCH_FAULT_PIDFILE", str(pidfile))
    plan = Plan(device="cpu", items=[
        PlannedConfig(tiny("fault-oom"), timeout_s=120),
        PlannedConfig(tiny("fault-hang"), timeout_s=8),
        PlannedConfig(tiny("fault-crash"), timeout_s=120),
        PlannedConfig(tiny("resnet50", precision="tf32"), skip_reason="tf32 needs CUDA compute capability >= 8.0"),
        PlannedConfig(tiny("resnet50"), timeout_s=120, unit="images"),
    ])
    saved: list[dict] = []
    recorder = Recorder()
    outcome = run_sweep(plan, recorder, on_result=saved.append)

    assert outcome.interrupted is None
    statuses = [r["status"] for r in outcome.results]
    assert statuses == ["oom", "timeout", "error", "skipped", "ok"]
    assert saved == outcome.results  # handed on one by one, in order

    oom, timeout, crash, skipped, ok = outcome.results
    assert ok["error"] is None and ok["samples_per_s"] > 0 and ok["unit"] == "images"
    assert len(ok["repeats"]) == 2 and all(len(rep["step_times_s"]) == 2 for rep in ok["repeats"])
    assert "batch size 4" in oom["error"] and "--batch-size auto" in oom["error"]
    assert "timed out after 8 s" in timeout["error"]
    assert "SIGABRT" in crash["error"] and "crashed" in crash["error"]
    assert skipped["error"] == "tf32 needs CUDA compute capability >= 8.0"
    for r in outcome.results:
        assert "\n" not in (r["error"] or "")
        assert r["status"] == "ok" or r["samples_per_s"] is None

    # the hung worker (and every other worker) was killed or exited, none is left behind
    assert processes_with_env("DLBENCH_FAULT_PIDFILE", str(pidfile)) == []

    # the progress display heard every phase of the measured configurations
    phases = {e[1] for e in recorder.events if e[0] == "progress"}
    assert {"warmup", "measure"} <= phases
    measured = [e for e in recorder.events if e[0] == "progress" and e[1] == "measure"]
    assert measured[-1][2] == measured[-1][3] == 4  # steps x repeats of the last config


def test_batch_size_auto_probes_in_child_processes(plugins, monkeypatch):
    monkeypatch.setenv("DLBENCH_FAULT_MAX_BATCH", "2")
    plan = Plan(device="cpu", items=[PlannedConfig(tiny("fault-oom-above", batch_size=2), auto_batch=True,
                                                   timeout_s=120, unit="images")])
    (result,) = run_sweep(plan).results
    assert result["status"] == "ok"
    assert result["batch_size"] == 2  # the measurement ran at the size found
    search = result["batch_size_search"]
    assert search["largest_ok"] == 2 and search["smallest_failed"] == 3
    assert [(p["batch_size"], p["status"]) for p in search["probes"]] == [(2, "ok"), (4, "oom"), (3, "oom")]


def test_batch_size_auto_searches_below_a_large_size_that_fails_otherwise(plugins, monkeypatch):
    """A failure other than OOM above a size that trained bounds the search (and a warning says so); when the
    first probe fails, the configuration reports that error."""
    monkeypatch.setenv("DLBENCH_FAULT_MAX_BATCH", "2")
    plan = Plan(device="cpu", items=[
        PlannedConfig(tiny("fault-error-above", batch_size=2), auto_batch=True, timeout_s=120, unit="images"),
        PlannedConfig(tiny("fault-error-above", batch_size=4), auto_batch=True, timeout_s=120, unit="images"),
    ])
    bounded, failed = run_sweep(plan).results
    assert bounded["status"] == "ok" and bounded["batch_size"] == 2 and bounded["samples_per_s"] > 0
    search = bounded["batch_size_search"]
    assert [(p["batch_size"], p["status"]) for p in search["probes"]] == [(2, "ok"), (4, "error"), (3, "error")]
    assert search["largest_ok"] == 2 and search["smallest_failed"] == 3
    cudnn = "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear"
    assert search["notes"][0].startswith(f"bs 4 failed: {cudnn}") and search["notes"][0].endswith(
        "; searched below it")
    assert search["notes"][1].startswith("bs 3 failed: ")
    assert [w for w in bounded["warnings"] if w.startswith("--batch-size auto: bs ")] == [
        f"--batch-size auto: {note}" for note in search["notes"]]

    assert failed["status"] == "error" and failed["samples_per_s"] is None
    assert failed["error"].startswith(f"batch size search stopped at batch size 4: {cudnn}")
    assert failed["batch_size_search"]["notes"] == []


def _fake_probe(limit: int, calls: list[int]):
    def run_probe(config: RunConfig, timeout_s: float) -> dict:
        calls.append(config.batch_size)
        assert config.steps >= 1 and config.repeats == 1
        if config.batch_size > limit:
            return {"status": "oom", "error": f"out of memory at batch size {config.batch_size}"}
        return {"status": "ok", "error": None}
    return run_probe


@pytest.mark.parametrize("limit,start", [(12, 8), (100, 8), (5, 32), (1, 1), (4096, 1024)])
def test_batch_search_finds_the_largest_batch(limit, start):
    calls: list[int] = []
    search = find_batch_size(tiny("resnet50", batch_size=start), 60, run_probe=_fake_probe(limit, calls))
    assert limit - max(1, int(limit * RESOLUTION)) <= search.batch_size <= limit  # within the resolution
    assert search.status == "ok"
    assert len(calls) == len(set(calls))  # never probes the same size twice
    assert search.info()["probes"][-1]["batch_size"] == calls[-1]


def test_batch_search_stops_within_resolution_on_aligned_sizes():
    calls: list[int] = []
    search = find_batch_size(tiny("resnet50", batch_size=64), 60, run_probe=_fake_probe(1000, calls))
    assert 1000 * (1 - RESOLUTION) <= search.batch_size <= 1000
    assert len(calls) <= 9  # 64..1024 doubling (5 probes) + at most 4 bisection probes, not 9 more
    assert all(c % 8 == 0 for c in calls)  # tensor-core friendly sizes from 64 up
    small: list[int] = []
    assert find_batch_size(tiny("resnet50", batch_size=8), 60, run_probe=_fake_probe(13, small)).batch_size == 13


def test_batch_search_when_nothing_fits_or_a_probe_fails():
    search = find_batch_size(tiny("resnet50", batch_size=8), 60, run_probe=_fake_probe(0, []))
    assert search.batch_size is None and search.status == "oom" and "batch size 1" in search.error

    def broken(config, timeout_s):
        if config.batch_size > 8:
            return {"status": "timeout", "error": "timed out after 60 s"}
        return {"status": "ok", "error": None}

    search = find_batch_size(tiny("resnet50", batch_size=8), 60, run_probe=broken)
    assert search.batch_size == 8 and search.status == "ok" and search.error is None
    assert search.notes[0] == "bs 16 failed: timed out after 60 s; searched below it"
    assert [p["batch_size"] for p in search.probes] == [8, 16, 12, 10, 9]
    search = find_batch_size(tiny("resnet50", batch_size=16), 60, run_probe=broken)
    assert search.batch_size is None and search.status == "timeout"
    assert "batch size 16" in search.error and search.notes == []


def test_a_probe_killed_by_sigkill_is_too_big_whatever_its_error_text(tmp_path):
    """The host's OOM killer is read from the outcome's `signal` (set where the sweep classifies the worker's
    exit), not from the word SIGKILL in an error message: one that merely mentions it is another failure."""
    import signal

    from dlbench.runner.isolate import worker_result
    from dlbench.runner.launchers.process import read_outcome

    killed = worker_result(read_outcome(tmp_path / "no-result.json", -signal.SIGKILL, tmp_path / "no.log"))
    assert killed["status"] == "error" and killed["signal"] == "SIGKILL"

    def probe(config, timeout_s):
        if config.batch_size > 12:
            return {**killed, "error": "worker crashed"}
        if config.batch_size > 10:  # an exception whose text names the signal: the worker was not killed
            return {"status": "error", "error": "RuntimeError: peer rank killed by SIGKILL", "signal": None}
        return {"status": "ok", "error": None}

    search = find_batch_size(tiny("resnet50", batch_size=8), 60, run_probe=probe)
    assert [(p["batch_size"], p["status"], p.get("signal")) for p in search.probes] == [
        (8, "ok", None), (16, "error", "SIGKILL"), (12, "error", None), (10, "ok", None), (11, "error", None)]
    assert search.batch_size == 10 and search.smallest_failed == 11
    assert search.notes == ["bs 12 failed: RuntimeError: peer rank killed by SIGKILL; searched below it",
                            "bs 11 failed: RuntimeError: peer rank killed by SIGKILL; searched below it"]


def test_batch_size_auto_searches_once_for_every_gpu_count(monkeypatch):
    """`--gpus 1,2 --batch-size auto`: the probes are one process whatever the count, so the search runs once and
    the two-process configuration measures at the size it found."""
    import dlbench.runner.batch_search as batch_search
    import dlbench.runner.sweep as sweep
    from dlbench.runner.batch_search import BatchSearch

    searched, measured = [], []

    def fake_search(config, timeout_s, observer=None):
        searched.append(config)
        return BatchSearch(start=config.batch_size, batch_size=24, smallest_failed=26)

    def fake_measure(config, timeout_s, observer, thermometer, max_start_temp_c, max_wait_s, extra):
        measured.append(config)
        return {"status": "ok", "world_size": config.world_size, "batch_size": config.batch_size, **extra}

    monkeypatch.setattr(batch_search, "find_batch_size", fake_search)
    monkeypatch.setattr(sweep, "_measure_one", fake_measure)
    plan = Plan(device="cpu", items=[
        PlannedConfig(tiny("resnet50", batch_size=8, world_size=n), auto_batch=True, timeout_s=60, unit="images")
        for n in (1, 2)])
    results = run_sweep(plan).results
    assert searched == [tiny("resnet50", batch_size=8, world_size=1)]
    assert [(c.world_size, c.batch_size) for c in measured] == [(1, 24), (2, 24)]
    assert results[0]["batch_size_search"] == results[1]["batch_size_search"]
