"""Scaling efficiency, slowest-rank timing and the mixed-GPU warning (pure Python, no torch)."""

from __future__ import annotations

import pytest

from dlbench.analysis.measured_scaling import (
    add_scaling_efficiency,
    mixed_gpu_warning,
    scaling_efficiency,
    scaling_series,
    slowest_rank_repeats,
)


def _result(world_size, samples_per_s, status="ok", batch_size=8, device="cuda:0"):
    return {"workload": "resnet50", "precision": "amp-fp16", "compile": "off", "batch_size": batch_size,
            "seq_len": None, "flavour": "full", "device": device, "world_size": world_size,
            "status": status, "samples_per_s": samples_per_s}


def test_efficiency_is_throughput_over_n_times_single():
    assert scaling_efficiency(190.0, 2, 100.0) == pytest.approx(0.95)
    assert scaling_efficiency(400.0, 4, 100.0) == pytest.approx(1.0)
    assert scaling_efficiency(None, 2, 100.0) is None
    assert scaling_efficiency(190.0, 2, None) is None


def test_add_scaling_efficiency_matches_same_per_device_batch_only():
    results = [_result(1, 100.0), _result(2, 180.0), _result(4, 300.0),
               _result(2, 50.0, batch_size=16),  # no one-device baseline with batch 16
               _result(2, None, status="error")]
    add_scaling_efficiency(results)
    assert "scaling_efficiency" not in results[0]
    assert results[1]["scaling_efficiency"] == pytest.approx(0.9)
    assert results[2]["scaling_efficiency"] == pytest.approx(0.75)
    assert results[3]["scaling_efficiency"] is None
    assert results[4]["scaling_efficiency"] is None


def test_baseline_on_a_different_device_type_does_not_count():
    results = [_result(1, 100.0, device="cpu"), _result(2, 150.0, device="cuda:0")]
    add_scaling_efficiency(results)
    assert results[1]["scaling_efficiency"] is None


def test_scaling_series_has_ideal_line():
    series = scaling_series([_result(2, 180.0), _result(1, 100.0), _result(4, 300.0)])
    assert len(series) == 1
    points = series[0]["points"]
    assert [p["world_size"] for p in points] == [1, 2, 4]
    assert [p["ideal_samples_per_s"] for p in points] == [100.0, 200.0, 400.0]
    assert points[2]["scaling_efficiency"] == pytest.approx(0.75)


def test_slowest_rank_sets_the_pace_per_repeat():
    rank0 = [[0.10, 0.10, 0.10], [0.20, 0.20, 0.20]]
    rank1 = [[0.12, 0.09, 0.11], [0.10, 0.10, 0.10]]
    assert slowest_rank_repeats([rank0, rank1]) == [[0.12, 0.09, 0.11], [0.20, 0.20, 0.20]]


def test_mixed_gpu_warning():
    assert mixed_gpu_warning(["NVIDIA H100", "NVIDIA H100", None]) is None
    warning = mixed_gpu_warning(["NVIDIA RTX 4090", "NVIDIA RTX 3090"])
    assert "RTX 3090" in warning and "slowest" in warning


def test_superlinear_scaling_is_flagged():
    results = [_result(1, 100.0), _result(2, 300.0)]
    add_scaling_efficiency(results)
    add_scaling_efficiency(results)  # idempotent: the document is rebuilt after every configuration
    assert results[1]["scaling_efficiency"] == pytest.approx(1.5)
    assert len([w for w in results[1]["warnings"] if "above 1" in w]) == 1


@pytest.mark.parametrize(("key", "other"), [("precision", "fp32"), ("compile", "default"), ("seq_len", 128),
                                            ("flavour", "tiny"), ("workload", "bert-large-squad")])
def test_a_baseline_that_differs_in_any_configuration_key_does_not_count(key, other):
    # A tiny-model, fp32, eager or other-length one-GPU run is no baseline for this 2-GPU run: efficiency None,
    # not 190 / (2 x 100). The matching baseline, present too, is the one used.
    unlike = {**_result(1, 100.0), key: other}
    results = [unlike, _result(2, 190.0)]
    add_scaling_efficiency(results)
    assert results[1]["scaling_efficiency"] is None
    results = [unlike, _result(1, 125.0), _result(2, 190.0)]
    add_scaling_efficiency(results)
    assert results[2]["scaling_efficiency"] == pytest.approx(0.76)
    series = scaling_series(results)
    assert sorted(len(s["points"]) for s in series) == [1, 2]


@pytest.mark.parametrize("missing", [("compile",), ("flavour",), ("compile", "flavour", "world_size")])
def test_an_older_result_without_defaulted_fields_pairs_with_its_baseline(missing):
    # Older documents leave out fields whose absence means the default (compile off, flavour full, one GPU):
    # such a one-device result is the baseline of a new 2-GPU run, and an old 2-GPU run finds a new baseline.
    old = {k: v for k, v in _result(1, 100.0).items() if k not in missing}
    results = [old, _result(2, 190.0)]
    add_scaling_efficiency(results)
    assert results[1]["scaling_efficiency"] == pytest.approx(0.95)
    (series,) = scaling_series(results)
    assert [p["world_size"] for p in series["points"]] == [1, 2]
    assert (series["compile"], series["flavour"]) == ("off", "full")
    old_multi = {k: v for k, v in _result(2, 180.0).items() if k == "world_size" or k not in missing}
    results = [_result(1, 100.0), old_multi]
    add_scaling_efficiency(results)
    assert results[1]["scaling_efficiency"] == pytest.approx(0.9)
