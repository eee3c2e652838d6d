"""The schema-v2 result document: every key with the right type; statistics consistent with the raw step times.
Run: `PYTHONPATH=src python -m pytest -q tests/test_document.py`."""

from __future__ import annotations

import json
import math
import re
import statistics
from datetime import datetime, timezone

import numpy as np
import pytest

from dlbench.measurement.config import RunConfig
from dlbench.runner.document import build_document, make_result
from dlbench.schema import DOCUMENT_KEYS, RESULT_KEYS, STEP_TIME_KEYS, validate_document
from dlbench.telemetry.environment import ENVIRONMENT_KEYS, GPU_KEYS, collect

NUMBER = (int, float)
OPTIONAL_NUMBER = (int, float, type(None))
RESULT_TYPES = {
    "workload": str, "precision": str, "compile": str, "batch_size": int, "seq_len": (int, type(None)),
    "device": str, "world_size": int, "status": str, "error": (str, type(None)),
    "samples_per_s": OPTIONAL_NUMBER, "samples_per_s_repeats": list, "cv": OPTIONAL_NUMBER, "step_time_s": dict,
    "warmup_step_times_s": list, "repeats": list, "compile_time_s": OPTIONAL_NUMBER,
    "peak_memory_bytes": (int, type(None)), "flops_per_sample": OPTIONAL_NUMBER,
    "achieved_flops_per_s": OPTIONAL_NUMBER, "start_temperature_c": OPTIONAL_NUMBER,
    "scenario": str, "metrics": dict, "primary_metric": str,
}


@pytest.fixture(scope="module")
def measured():
    """A real measurement of the tiny ResNet in this process (what a worker returns)."""
    from dlbench.scenarios import measure

    config = RunConfig("resnet50", flavour="tiny", device="cpu", batch_size=4, warmup_steps=1, steps=3, repeats=3)
    return config, measure(config)


def test_statistics_follow_from_raw_step_times(measured):
    config, measurement = measured
    result = make_result(config, "ok", measurement=measurement)
    repeats = [r["step_times_s"] for r in result["repeats"]]
    assert repeats == [r["step_times_s"] for r in measurement["repeats"]]
    assert len(repeats) == 3 and all(len(times) == 3 for times in repeats)

    per_repeat = [config.batch_size * len(times) / sum(times) for times in repeats]
    assert result["samples_per_s_repeats"] == pytest.approx(per_repeat)
    assert result["samples_per_s"] == pytest.approx(statistics.fmean(per_repeat))
    assert result["cv"] == pytest.approx(statistics.stdev(per_repeat) / statistics.fmean(per_repeat))
    pooled = [t for times in repeats for t in times]
    assert result["step_time_s"]["median"] == pytest.approx(float(np.median(pooled)))
    assert result["step_time_s"]["mean"] == pytest.approx(statistics.fmean(pooled))
    assert min(pooled) <= result["step_time_s"]["p5"] <= result["step_time_s"]["p95"] <= max(pooled)
    assert result["warmup_step_times_s"] == measurement["warmup_step_times_s"]
    assert len(result["warmup_step_times_s"]) == 1
    assert result["flops_per_sample"] > 0
    assert result["achieved_flops_per_s"] == pytest.approx(result["samples_per_s"] * result["flops_per_sample"])
    on_gpu = make_result(config, "ok", measurement={**measurement, "peak_memory_bytes": 7 * 2**30,
                                                    "peak_reserved_bytes": 9 * 2**30})
    assert (on_gpu["peak_memory_bytes"], on_gpu["peak_reserved_bytes"]) == (7 * 2**30, 9 * 2**30)


def test_document_has_every_schema_key_with_the_right_type(measured):
    config, measurement = measured
    results = [
        make_result(config, "ok", measurement=measurement, extra={"unit": "images"}),
        make_result(config, "oom", "out of memory at batch size 4; try --batch-size auto"),
        make_result(config, "error", "worker crashed (SIGSEGV)"),
        make_result(config, "timeout", "timed out after 600 s"),
        make_result(RunConfig("bert-base-squad", precision="tf32", seq_len=384), "skipped",
                    "tf32 needs CUDA compute capability >= 8.0"),
    ]
    doc = build_document(results, collect(), command=["dlbench", "run", "--tiny"])
    doc = json.loads(json.dumps(doc, allow_nan=False))  # what lands on disk

    assert set(DOCUMENT_KEYS) <= set(doc)
    assert doc["schema_version"] == 2
    assert re.fullmatch(r"[0-9a-f]{32}", doc["run_id"])
    created = datetime.fromisoformat(doc["created_at"])
    assert created.utcoffset() == timezone.utc.utcoffset(None)
    assert isinstance(doc["dlbench_version"], str)
    assert doc["command"] == ["dlbench", "run", "--tiny"]

    env = doc["environment"]
    assert list(env) == list(ENVIRONMENT_KEYS)
    assert isinstance(env["python_version"], str) and isinstance(env["torch_version"], str)
    assert isinstance(env["cpu_count"], int) and isinstance(env["gpus"], list)
    for gpu in env["gpus"]:
        assert set(gpu) == set(GPU_KEYS)
    for key in ("cuda_version", "cudnn_version", "nccl_version", "driver_version", "git_commit", "cpu_model"):
        assert env[key] is None or isinstance(env[key], str)

    for result in doc["results"]:
        assert set(RESULT_KEYS) <= set(result)
        for key, types in RESULT_TYPES.items():
            assert isinstance(result[key], types), (result["status"], key, result[key])
        assert result["peak_reserved_bytes"] is None  # optional, always written; a CPU has no allocator counter
        assert set(result["step_time_s"]) == set(STEP_TIME_KEYS)
        for rep in result["repeats"]:
            assert set(rep) == {"step_times_s"} and all(isinstance(t, float) for t in rep["step_times_s"])
        if result["status"] == "ok":
            assert result["error"] is None and result["samples_per_s"] > 0
            assert all(isinstance(v, float) and math.isfinite(v) for v in result["step_time_s"].values())
        else:
            assert result["error"] and result["samples_per_s"] is None and result["repeats"] == []
            assert all(v is None for v in result["step_time_s"].values())
    assert [r["status"] for r in doc["results"]] == ["ok", "oom", "error", "timeout", "skipped"]
    assert validate_document(doc) == doc  # the store reads it as written


def test_unknown_status_is_refused():
    with pytest.raises(ValueError):
        make_result(RunConfig("resnet50"), "fine")


def test_environment_records_the_versions_of_the_model_libraries():
    import transformers

    from dlbench.telemetry.environment import VERSIONED_PACKAGES, package_versions

    versions = collect()["package_versions"]
    assert list(versions) == list(VERSIONED_PACKAGES)
    assert versions["transformers"] == transformers.__version__  # BERT's code differs between versions
    assert package_versions(("no-such-distribution-dlbench",)) == {"no-such-distribution-dlbench": None}


def test_environment_facts_without_a_gpu_are_null_not_guessed():
    env = collect()
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    assert env["gpus"] == [] or all("MPS" in g["name"] for g in env["gpus"])
    assert env["driver_version"] is None or isinstance(env["driver_version"], str)


def test_data_parallel_throughput_counts_every_devices_samples():
    """world_size 2, batch 8 per device: 16 samples a step. Two repeats of two steps, in 0.2 s and 0.4 s:
    160 and 80 samples/s, 120 on average; achieved FLOP/s is the group's (samples/s x FLOPs per sample)."""
    config = RunConfig("resnet50", device="cuda", batch_size=8, warmup_steps=1, steps=2, repeats=2, world_size=2)
    measurement = {"repeats": [{"step_times_s": [0.1, 0.1]}, {"step_times_s": [0.2, 0.2]}],
                   "warmup_step_times_s": [0.5], "batch_size": 8, "device": "cuda:0", "flops_per_sample": 24.3e9,
                   "precision_flags": {}, "telemetry": None, "warnings": []}
    result = make_result(config, "ok", measurement=measurement)
    assert result["world_size"] == 2 and result["batch_size"] == 8  # per device, as the table shows it
    assert result["samples_per_s_repeats"] == pytest.approx([160.0, 80.0])
    assert result["samples_per_s"] == pytest.approx(120.0)
    assert result["achieved_flops_per_s"] == pytest.approx(120.0 * 24.3e9)
