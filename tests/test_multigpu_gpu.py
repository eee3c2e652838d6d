"""GPU checks of the multi-GPU path (skipped without CUDA): NVML topology, NCCL under torchrun, `dlbench comm`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from _dist_helpers import env

pytestmark = pytest.mark.gpu


def _cuda_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def test_topology_from_real_nvml():
    if _cuda_count() < 1:
        pytest.skip("needs a CUDA GPU")
    from dlbench.telemetry.topology import collect

    topo = collect()
    assert topo["available"], topo["reason"]
    assert len(topo["gpus"]) >= _cuda_count()
    for gpu in topo["gpus"]:
        assert gpu["pcie_generation_max"] and gpu["pcie_width_max"]
        assert gpu["pcie_generation_current"] <= gpu["pcie_generation_max"]


def test_torchrun_on_one_gpu_uses_nccl_and_records_the_gpu(isolated_home):
    if _cuda_count() < 1:
        pytest.skip("needs a CUDA GPU")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1",
                           "-m", "dlbench", "run", "--device", "cuda", "--tiny", "-w", "resnet50", "-p", "amp-fp16",
                           "--warmup", "2", "--steps", "5", "--repeats", "2", "--quiet"],
                          capture_output=True, text=True, timeout=600, env=env(DLBENCH_HOME=str(isolated_home)))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    (doc_path,) = (isolated_home / "results").glob("*.json")
    (result,) = json.loads(doc_path.read_text())["results"]
    assert result["status"] == "ok" and result["world_size"] == 1
    assert result["ranks"][0]["gpu_name"] and result["ranks"][0]["device"] == "cuda:0"


def test_comm_between_two_gpus():
    if _cuda_count() < 2:
        pytest.skip("needs two CUDA GPUs")
    proc = subprocess.run([sys.executable, "-m", "dlbench", "comm", "--gpus", "2", "--sizes", "1M..16M", "--json"],
                          capture_output=True, text=True, timeout=600, env=env())
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["backend"] == "nccl" and report["topology"]["available"]
    assert all(row["busbw_bytes_per_s"] > 0 for row in report["results"])
