"""`dlbench run` as a user runs it (real subprocesses): a tiny run end to end, bad input (exit 2, one line),
Ctrl-C (partial JSON, exit 130, no orphan). Run: `PYTHONPATH=src python -m pytest -q tests/test_run_cli.py`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dlbench.schema import RESULT_KEYS
from fault_workloads import processes_with_env

TESTS_DIR = Path(__file__).resolve().parent
SRC_DIR = TESTS_DIR.parent / "src"
FAST = ["--tiny", "--warmup", "1", "--steps", "2", "--repeats", "2"]


def env(**extra: str) -> dict[str, str]:
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join([str(SRC_DIR), str(TESTS_DIR)])
    environ["DLBENCH_PLUGINS"] = "fault_workloads"
    environ.pop("DLBENCH_DEBUG", None)
    environ.update(extra)
    return environ


def dlbench(*args: str, timeout: float = 300, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dlbench", "run", *args], capture_output=True, text=True,
                          timeout=timeout, env=env(**extra))


# `dlbench run` with a report, at exit, of whether the parent process imported torch (it must not: planning and
# measuring happen in child processes).
RUN_AND_REPORT_TORCH = (
    "import sys, atexit\n"
    "atexit.register(lambda: print('torch in parent:', 'torch' in sys.modules, file=sys.stderr))\n"
    "from dlbench.cli.app import main\n"
    "main(sys.argv[1:])\n"
)


def test_tiny_run_writes_the_document(tmp_path, isolated_home):
    out = tmp_path / "run.json"
    proc = subprocess.run([sys.executable, "-c", RUN_AND_REPORT_TORCH, "run", *FAST, "-w", "resnet50", "--quiet",
                           "--json", str(out)], capture_output=True, text=True, timeout=300, env=env())
    assert proc.returncode == 0, proc.stderr
    assert "torch in parent: False" in proc.stderr
    doc = json.loads(out.read_text())
    saved = isolated_home / "results" / f"{doc['run_id']}.json"
    assert json.loads(saved.read_text()) == doc  # also kept in the data directory
    assert doc["schema_version"] == 2 and doc["command"][:2] == ["dlbench", "run"]
    (result,) = doc["results"]
    assert set(RESULT_KEYS) <= set(result)
    assert result["status"] == "ok" and result["samples_per_s"] > 0 and result["flavour"] == "tiny"
    assert "resnet50" in proc.stdout and "samples/s" in proc.stdout  # the table
    assert "Traceback" not in proc.stderr
    from dlbench.store import open_store

    with open_store() as store:  # stored in the results database too, raw step times intact
        assert store.resolve("latest") == doc["run_id"]
        assert store.get_run(doc["run_id"])["results"][0]["repeats"] == result["repeats"]


def test_unusable_database_keeps_the_json_and_warns(tmp_path, isolated_home):
    bad_db = tmp_path / "not-a-db.sqlite"
    bad_db.write_bytes(b"this is not a database file at all" * 100)
    before = bad_db.read_bytes()
    proc = subprocess.run([sys.executable, "-m", "dlbench", "run", *FAST, "-w", "resnet50", "--quiet",
                           "--db", f"sqlite:///{bad_db}"], capture_output=True, text=True, timeout=300, env=env())
    assert proc.returncode == 0, proc.stderr
    assert "run not stored in the database" in proc.stderr and "Traceback" not in proc.stderr
    assert len(list((isolated_home / "results").glob("*.json"))) == 1  # the run itself is kept
    assert bad_db.read_bytes() == before  # and the foreign file is untouched


BAD_INPUTS = [
    (["-w", "resnet5O"], "unknown workload"),
    (["-w", ""], "empty workload name"),
    (["-p", "fp64"], "unknown precision"),
    (["-c", "fast"], "unknown compile mode"),
    (["--batch-size", "0"], "--batch-size"),
    (["--batch-size", "-4"], "--batch-size"),
    (["--batch-size", "lots"], "--batch-size"),
    (["--steps", "0"], "--steps"),
    (["--repeats", "0"], "--repeats"),
    (["--warmup", "-1"], "--warmup"),
    (["--seq-len", "0"], "--seq-len"),
    (["--timeout", "0"], "--timeout"),
    (["--device", "tpu"], "unknown device"),
    (["--max-wait", "-1"], "--max-wait"),
    (["--json", str(TESTS_DIR / "conftest.py" / "run.json")], "--json"),
    (["--json", "/"], "--json"),
    (["--device", "cuda"], "no CUDA"),  # torch here is a CUDA build, but there is no GPU
]


@pytest.mark.parametrize("args,message", BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_exits_2_with_one_line(args, message):
    if args == ["--device", "cuda"]:
        import torch

        if torch.cuda.is_available():
            pytest.skip("this machine has CUDA")
    proc = dlbench(*args, "--quiet", timeout=120)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and message in lines[0]
    if args[0] == "-w":
        assert "resnet50" in lines[0] and "bert-base-squad" in lines[0]  # lists the valid names


def _interrupt_once_hanging(proc, pidfile) -> tuple[str, str]:
    """Ctrl-C `proc` once the fault-hang workload has written `pidfile`; its (stdout, stderr) once it has exited."""
    try:
        deadline = time.monotonic() + 240
        while not pidfile.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the hanging workload never started"
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_ctrl_c_writes_partial_json_and_exits_130(tmp_path, isolated_home):
    out = tmp_path / "partial.json"
    pidfile = tmp_path / "hang.pid"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dlbench", "run", *FAST, "-w", "resnet50", "-w", "fault-hang", "-w", "resnet50",
         "-p", "fp32", "--json", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env(DLBENCH_FAULT_PIDFILE=str(pidfile)))
    stdout, stderr = _interrupt_once_hanging(proc, pidfile)  # the first config is done, the hanging one runs
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    doc = json.loads(out.read_text())
    assert [r["status"] for r in doc["results"]] == ["ok"]
    assert any("interrupted" in note for note in doc["notes"])
    assert (isolated_home / "results" / f"{doc['run_id']}.json").exists()
    assert "resnet50" in stdout  # what was measured is still shown
    assert processes_with_env("DLBENCH_FAULT_PIDFILE", str(pidfile)) == []  # no orphan worker


def test_each_finished_configuration_is_stored_before_the_next_starts(tmp_path, isolated_home):
    # A killed `dlbench run` (SIGKILL, the machine's OOM killer, a lost SSH session without a handler) keeps what
    # it had measured: the run is saved, in the results folder and the database, after every configuration.
    pidfile = tmp_path / "hang.pid"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dlbench", "run", *FAST, "-w", "resnet50", "-w", "fault-hang", "-p", "fp32",
         "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env(DLBENCH_FAULT_PIDFILE=str(pidfile)))
    try:
        deadline = time.monotonic() + 240
        while not pidfile.exists():  # the first config is done and the hanging one is running
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the hanging workload never started"
            time.sleep(0.2)
        proc.kill()  # no chance to save anything at exit
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 30
    while processes_with_env("DLBENCH_FAULT_PIDFILE", str(pidfile)):  # the worker dies with its parent
        assert time.monotonic() < deadline, "the worker outlived the killed dlbench run"
        time.sleep(0.2)
    (saved,) = (isolated_home / "results").glob("*.json")
    doc = json.loads(saved.read_text())
    assert [(r["workload"], r["status"]) for r in doc["results"]] == [("resnet50", "ok")]
    assert "in progress: 1 of 2 configurations done" in doc["notes"]
    listed = subprocess.run([sys.executable, "-m", "dlbench", "results", "list", "--json"], capture_output=True,
                            text=True, timeout=60, env=env())
    assert [run["run_id"] for run in json.loads(listed.stdout)] == [doc["run_id"]]


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA GPU")
def test_tiny_run_on_a_gpu_records_memory_and_start_temperature(tmp_path):
    out = tmp_path / "gpu.json"
    proc = dlbench(*FAST, "-w", "resnet50", "-w", "bert-base-squad", "-p", "amp-fp16", "--device", "cuda",
                   "--max-start-temp", "95", "--max-wait", "30", "--quiet", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["environment"]["gpus"] and doc["environment"]["cuda_version"]
    for result in doc["results"]:
        assert result["status"] == "ok" and result["device"].startswith("cuda")
        assert isinstance(result["peak_memory_bytes"], int) and result["peak_memory_bytes"] > 0
        if doc["environment"]["driver_version"]:  # NVIDIA (NVML): the start temperature is read
            assert isinstance(result["start_temperature_c"], float)


def test_ctrl_c_before_any_configuration_finished_stores_no_empty_run(tmp_path, isolated_home):
    # Ctrl-C during the first configuration stored a run of 0 results, which became "latest": `dlbench report`
    # then failed with "nothing to report" although earlier runs were there.
    pidfile = tmp_path / "hang.pid"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dlbench", "run", *FAST, "-w", "fault-hang", "-w", "resnet50", "-p", "fp32",
         "--json", str(tmp_path / "never.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env(DLBENCH_FAULT_PIDFILE=str(pidfile)))
    _, stderr = _interrupt_once_hanging(proc, pidfile)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "nothing was measured" in stderr
    assert not (tmp_path / "never.json").exists()
    assert not list((isolated_home / "results").glob("*.json")) if (isolated_home / "results").exists() else True
    listed = subprocess.run([sys.executable, "-m", "dlbench", "results", "list", "--json"], capture_output=True,
                            text=True, timeout=60, env=env())
    assert json.loads(listed.stdout) == []
