"""The Slurm examples, submitted for real: `sbatch --wait` of `examples/slurm/dlbench.sbatch` (torchrun, two CPU
processes) and of `examples/slurm/dlbench-fleet.sbatch` as a four-task array (each task a "node"), then
`dlbench fleet` on what they wrote.

The cluster is a throwaway one-node Slurm that `tools/slurm/up.sh` starts in a temp dir (installing Debian's
slurmctld, slurmd, slurm-client and munge with apt-get when they are missing) and `tools/slurm/down.sh` stops.
Where that cannot be done (not root, no apt-get, no network), every test here is skipped with up.sh's reason.

    PYTHONPATH=src python -m pytest -q tests/test_slurm.py
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _dist_helpers import env, free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "slurm"
TOOLS = ROOT / "tools" / "slurm"
# The shortest measurement that still stores a full run: a smoke test of the path, not a benchmark.
QUICK = "--tiny --warmup 1 --steps 2 --repeats 1"
# apt-get install takes ~30 s on a fresh Debian; the daemons come up in about a second.
UP_TIMEOUT_S = 600


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A running one-node Slurm: yields the environment (SLURM_CONF, and a PATH whose `dlbench` and `torchrun`
    are this interpreter with this worktree's sources) for sbatch and the jobs it starts."""
    cluster = tmp_path_factory.mktemp("slurm")
    ctld_port, slurmd_port = _two_free_ports()
    up_env = {**os.environ, "SLURMCTLD_PORT": str(ctld_port), "SLURMD_PORT": str(slurmd_port)}
    started = time.monotonic()
    try:
        up = subprocess.run(["bash", str(TOOLS / "up.sh"), str(cluster)], capture_output=True, text=True,
                            timeout=UP_TIMEOUT_S, env=up_env)
    except subprocess.TimeoutExpired:
        subprocess.run(["bash", str(TOOLS / "down.sh"), str(cluster)], timeout=120)
        pytest.skip(f"slurm: tools/slurm/up.sh did not finish in {UP_TIMEOUT_S} s")
    if up.returncode != 0:
        subprocess.run(["bash", str(TOOLS / "down.sh"), str(cluster)], capture_output=True, timeout=120)
        lines = up.stderr.strip().splitlines() or [f"exit code {up.returncode}"]
        # Exit 3: Slurm cannot be had here, and the last line says why; otherwise a daemon's log says.
        reason = lines[-1] if up.returncode == 3 else " | ".join(lines[-12:])
        pytest.skip(f"slurm: tools/slurm/up.sh failed: {reason}")
    print(f"slurm up in {time.monotonic() - started:.1f} s", file=sys.stderr)

    bin_dir = cluster / "bin"
    bin_dir.mkdir()
    for name, module in (("dlbench", "dlbench"), ("torchrun", "torch.distributed.run")):
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n')
        (bin_dir / name).chmod(0o755)
    environ = env(SLURM_CONF=str(cluster / "slurm.conf"), DEVICE="cpu", EXTRA=QUICK,
                  WORKLOADS="-w resnet50 -p fp32")
    environ["PATH"] = f"{bin_dir}{os.pathsep}{environ['PATH']}"
    yield environ

    down = subprocess.run(["bash", str(TOOLS / "down.sh"), str(cluster)], capture_output=True, text=True,
                          timeout=120)
    assert down.returncode == 0, f"tools/slurm/down.sh left processes running:\n{down.stderr}"


def _two_free_ports() -> tuple[int, int]:
    """Two different ports that were free a moment ago (both held at once, so the OS cannot hand out one twice)."""
    with socket.socket() as one, socket.socket() as two:
        one.bind(("127.0.0.1", 0))
        two.bind(("127.0.0.1", 0))
        return one.getsockname()[1], two.getsockname()[1]


def _sbatch(environ: dict[str, str], cwd: Path, script: Path, *options: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(["sbatch", "--wait", "--export=ALL", *options, str(script)], capture_output=True,
                          text=True, timeout=240, cwd=cwd, env=environ)
    outputs = "\n".join(f"--- {p.name}:\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(cwd.glob("*.out")))
    assert proc.returncode == 0, f"sbatch exited {proc.returncode}: {proc.stderr}\n{outputs}"
    return proc


def test_torchrun_job_stores_one_two_process_run(slurm, isolated_home, tmp_path):
    # #SBATCH asks for 2 nodes of 8 GPUs and 64 CPUs; the command line fits that to one GPU-less node.
    environ = {**slurm, "DLBENCH_HOME": str(isolated_home), "GPUS_PER_NODE": "2", "COMM_SIZES": "1K,4K",
               "RDZV_PORT": str(free_port()), "RESULTS_JSON": str(tmp_path / "run.json")}
    _sbatch(environ, tmp_path, EXAMPLES / "dlbench.sbatch", "--nodes=1", "--gpus-per-node=0", "--cpus-per-task=1")
    (log,) = tmp_path.glob("dlbench-*.out")
    output = log.read_text(errors="replace")
    assert "all_reduce" in output and "all_gather" in output, output  # step 1: `dlbench comm` over gloo

    doc = json.loads((tmp_path / "run.json").read_text())
    (result,) = doc["results"]
    assert result["status"] == "ok", result.get("error")
    assert (result["workload"], result["precision"], result["world_size"], result["nodes"]) == ("resnet50", "fp32",
                                                                                                 2, 1)
    assert [r["rank"] for r in result["ranks"]] == [0, 1]
    # Rank 0 alone stored the run, once.
    stored = [json.loads(p.read_text()) for p in (isolated_home / "results").glob("*.json")]
    assert [d["run_id"] for d in stored] == [doc["run_id"]]


def test_fleet_array_job_then_dlbench_fleet(slurm, isolated_home, tmp_path):
    results_dir = tmp_path / "fleet"
    environ = {**slurm, "DLBENCH_HOME": str(isolated_home), "GPUS_PER_NODE": "1", "TASK_AS_NODE": "1",
               "RESULTS_DIR": str(results_dir)}
    # Four one-CPU tasks side by side (the script asks for whole nodes with --exclusive).
    _sbatch(environ, tmp_path, EXAMPLES / "dlbench-fleet.sbatch", "--array=0-3", "--gpus-per-node=0",
            "--oversubscribe", "--cpus-per-task=1")
    host = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
    nodes = [f"{host}-task{i}" for i in range(4)]
    assert sorted(p.name for p in results_dir.glob("*.json")) == [f"{n}-cpu.json" for n in nodes]
    for node in nodes:
        doc = json.loads((results_dir / f"{node}-cpu.json").read_text())
        (result,) = doc["results"]
        assert result["status"] == "ok" and result["world_size"] == 1, result.get("error")

    # `dlbench fleet` on the shared folder and on the database the four tasks stored into say the same.
    judged = []
    for args in ([str(results_dir)], ["--since", "1h"]):
        proc = subprocess.run([sys.executable, "-m", "dlbench", "fleet", "--json", *args], capture_output=True,
                              text=True, timeout=120, env={**slurm, "DLBENCH_HOME": str(isolated_home)})
        # 0: no node flagged; 1: a node flagged slow (four busy processes on a shared CPU may differ).
        assert proc.returncode in (0, 1), proc.stderr
        judged.append(json.loads(proc.stdout))
    for report in judged:
        assert report["runs"] == 4 and report["hosts"] == nodes, report
        (group,) = report["groups"]  # one configuration, measured on four "nodes"
        assert sorted(row["host"] for row in group["rows"]) == nodes
    assert [sorted(r["run_id"] for r in rep["groups"][0]["rows"]) for rep in judged] == [
        sorted(json.loads((results_dir / f"{n}-cpu.json").read_text())["run_id"] for n in nodes)] * 2


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to run up.sh as another user")
def test_up_refuses_a_non_root_user_with_its_reason(tmp_path):
    # What the fixture above turns into its skip reason on a developer's machine.
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash",
                           str(TOOLS / "up.sh"), str(tmp_path / "cluster")], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 3
    assert proc.stderr.splitlines()[-1] == ("slurm unavailable: tools/slurm/up.sh must run as root (the daemons run "
                                            "as root), uid is 65534")
