"""Throughput statistics from raw per-step times, with pyperf-style stability warnings (no torch).

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_stats.py`.

- Throughput of a repeat = samples / sum of its step times, samples = steps x batch_size x world_size.
- `samples_per_s` = mean of the repeats' throughputs; `cv` = sample standard deviation / mean of those
  (None with a single repeat).
- `step_time_s`: mean, median, 5th and 95th percentile (linear interpolation) of all measured steps pooled.
- Warnings, as pyperf's `check`: CV across repeats above 5%; per-step standard deviation above 10% of the
  mean; slowest or fastest step more than 50% away from the median (outliers: a recompilation, a GC pause,
  throttling, another process); steps shorter than 1 ms (dominated by launch and timer overhead, or a
  missing device synchronisation).
"""

from __future__ import annotations

import math
import statistics

import numpy as np

CV_WARN = 0.05  # CV across repeats; the stability threshold
STEP_STD_WARN = 0.10  # pyperf: std dev greater than 10% of the mean
OUTLIER_WARN = 0.50  # pyperf: min/max more than 50% away from the mean
SHORT_STEP_S = 1e-3  # pyperf warns below 1 ms per sample


def summarize(repeats_step_times_s: list[list[float]], batch_size: int, world_size: int = 1) -> dict:
    """Summarise measured step times (one list per repeat) for `batch_size` samples per device per step."""
    if not repeats_step_times_s or not all(repeats_step_times_s):
        raise ValueError("summarize needs at least one repeat with at least one step time")
    if batch_size <= 0 or world_size <= 0:
        raise ValueError("batch_size and world_size must be positive")
    samples_per_step = batch_size * world_size
    warnings: list[str] = []

    per_repeat: list[float] = []
    for times in repeats_step_times_s:
        total = float(sum(times))
        if total <= 0:
            raise ValueError("step times must add up to a positive duration")
        per_repeat.append(samples_per_step * len(times) / total)
    mean_rate = statistics.fmean(per_repeat)
    cv = statistics.stdev(per_repeat) / mean_rate if len(per_repeat) > 1 else None
    if cv is not None and cv > CV_WARN:
        warnings.append(
            f"unstable: throughput varies {cv:.1%} across repeats (CV > {CV_WARN:.0%}); "
            "check clocks, temperature and other load on the machine, or use more steps"
        )

    steps = np.asarray([t for times in repeats_step_times_s for t in times], dtype=float)
    mean = float(steps.mean())
    median = float(np.median(steps))
    p5, p95 = step_time_percentiles(steps)
    if len(steps) > 1:
        std = float(steps.std(ddof=1))
        if std > STEP_STD_WARN * mean:
            warnings.append(
                f"step times vary: standard deviation {std / mean:.0%} of the mean (> {STEP_STD_WARN:.0%})"
            )
    slowest, fastest = float(steps.max()), float(steps.min())
    if slowest > (1 + OUTLIER_WARN) * median:
        warnings.append(
            f"outlier: slowest step {_ms(slowest)} is {slowest / median - 1:.0%} above the median {_ms(median)}"
        )
    if fastest < (1 - OUTLIER_WARN) * median:
        warnings.append(
            f"outlier: fastest step {_ms(fastest)} is {1 - fastest / median:.0%} below the median {_ms(median)}"
        )
    if median < SHORT_STEP_S:
        warnings.append(
            f"implausibly short steps: median {_ms(median)} (< {_ms(SHORT_STEP_S)}); timer and launch overhead "
            "dominate, or the device was not synchronised"
        )

    return {
        "samples_per_s": mean_rate,
        "samples_per_s_repeats": per_repeat,
        "cv": cv,
        "step_time_s": {"mean": mean, "median": median, "p5": p5, "p95": p95},
        "warnings": warnings,
    }


def step_time_percentiles(step_times_s) -> tuple[float, float]:
    """The 5th and 95th percentile of pooled step times (linear interpolation), as `summarize` records them."""
    p5, p95 = np.percentile(np.asarray(step_times_s, dtype=float), [5, 95])
    return float(p5), float(p95)


def _ms(seconds: float) -> str:
    """Three significant digits in ms, without the exponent `.3g` gives from 1000 ms up ("2,550 ms")."""
    value = seconds * 1e3
    if not math.isfinite(value):
        return "inf ms"
    return f"{value:,.0f} ms" if value >= 1000 else f"{value:.3g} ms"
