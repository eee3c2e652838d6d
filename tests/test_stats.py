"""summarize(): throughput, CV and percentiles from raw step times, with hand-checked numbers."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from dlbench.analysis.stats import summarize


def test_hand_checked_numbers():
    # Repeat 1: 2 steps x 10 samples in 0.2 s = 100/s; repeat 2: 20 samples in 0.4 s = 50/s.
    stats = summarize([[0.1, 0.1], [0.2, 0.2]], batch_size=10)
    assert stats["samples_per_s_repeats"] == pytest.approx([100.0, 50.0])
    assert stats["samples_per_s"] == pytest.approx(75.0)
    assert stats["cv"] == pytest.approx(math.sqrt(1250) / 75)  # stdev(100, 50) = 35.36
    st = stats["step_time_s"]
    assert st["mean"] == pytest.approx(0.15) and st["median"] == pytest.approx(0.15)
    assert st["p5"] == pytest.approx(0.1) and st["p95"] == pytest.approx(0.2)
    assert any(w.startswith("unstable") for w in stats["warnings"])


def test_throughput_uses_the_sum_of_step_times_not_the_mean_rate():
    # 3 samples per step; steps of 1 s and 3 s: 6 samples in 4 s = 1.5/s (the mean of rates would say 2).
    stats = summarize([[1.0, 3.0]], batch_size=3)
    assert stats["samples_per_s"] == pytest.approx(1.5)
    assert stats["cv"] is None  # one repeat


def test_world_size_multiplies_samples():
    one = summarize([[0.5, 0.5]], batch_size=8)
    four = summarize([[0.5, 0.5]], batch_size=8, world_size=4)
    assert four["samples_per_s"] == pytest.approx(4 * one["samples_per_s"]) == pytest.approx(64.0)


def test_stable_run_has_no_warnings():
    times = [[0.100, 0.101, 0.099, 0.100], [0.100, 0.100, 0.101, 0.099], [0.099, 0.100, 0.100, 0.101]]
    stats = summarize(times, batch_size=32)
    assert stats["warnings"] == []
    assert stats["cv"] < 0.01


def test_outlier_and_short_step_warnings():
    stats = summarize([[0.1] * 9 + [0.5]], batch_size=1)
    assert any(w.startswith("outlier: slowest") for w in stats["warnings"])
    short = summarize([[2e-4, 2e-4, 2e-4]], batch_size=1)
    assert any("implausibly short" in w for w in short["warnings"])


@pytest.mark.parametrize(("times", "batch"), [([], 1), ([[]], 1), ([[0.1]], 0), ([[0.0, 0.0]], 1)])
def test_invalid_input(times, batch):
    with pytest.raises(ValueError):
        summarize(times, batch)


def test_analysis_does_not_import_torch():
    code = "import sys, dlbench.analysis.stats; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_warnings_read_well_for_slow_cpu_steps():
    # Seconds-long steps (a CPU) used to print "2.55e+03 ms", and the CV hint named "GPU clocks" on a CPU.
    stats = summarize([[2.55, 1.0, 2.6], [2.5, 2.55, 7.0]], batch_size=1)
    text = " | ".join(stats["warnings"])
    assert "e+0" not in text
    assert "7,000 ms" in text and "2,550 ms" in text
    assert "GPU" not in text


def test_percentiles_interpolate_linearly_over_all_measured_steps():
    # Ten steps of 1..10 s in two repeats. Linear interpolation (numpy's default, as the docstring says):
    # p5 sits at rank 0.05 x 9 = 0.45 -> 1.45 s; p95 at rank 8.55 -> 9.55 s. Nearest-rank would give 1 and 10,
    # p10/p90 1.9 and 9.1, percentiles of one repeat only something else again.
    stats = summarize([[1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0]], batch_size=1)
    st = stats["step_time_s"]
    assert st["p5"] == pytest.approx(1.45) and st["p95"] == pytest.approx(9.55)
    assert st["median"] == pytest.approx(5.5) and st["mean"] == pytest.approx(5.5)


def test_cv_is_the_sample_standard_deviation_over_the_mean_of_three_repeats():
    # One step of 10 samples per repeat, in 0.1, 0.2 and 1/6 s: 100, 50 and 60 samples/s. Mean 70 (median 60);
    # sample standard deviation sqrt((30^2 + 20^2 + 10^2) / 2) = sqrt(700) (the population one divides by 3).
    stats = summarize([[0.1], [0.2], [1 / 6]], batch_size=10)
    assert stats["samples_per_s_repeats"] == pytest.approx([100.0, 50.0, 60.0])
    assert stats["samples_per_s"] == pytest.approx(70.0)
    assert stats["cv"] == pytest.approx(math.sqrt(700) / 70)
