"""How many telemetry readings a result keeps: `PYTHONPATH=src python -m pytest -q tests/test_telemetry.py -k thin`.

The sampler reads every GPU every 0.1 s, so a long configuration has thousands of readings, and a data-parallel
one has that many per GPU: an 8-GPU sweep of 50 configurations kept every one of them and its result document
grew to tens of MB. The summary figures (`temperature_max_c`, `sm_clock_min_mhz`, energy, throttle shares, ...)
are computed from every reading first; only the raw `series` kept for the report's chart is thinned, by keeping
every k-th reading (and always the first and the last), so each point left is a real reading. The block then
says so under `series_thinning`: `{"readings": all readings taken, "kept": points in the series, "every": k}`.

- One GPU keeps at most `SERIES_MAX_POINTS` (600: a minute at the default interval, about one point per
  1.5 pixels of the report's chart).
- A data-parallel result keeps at most `GROUP_SERIES_MAX_POINTS` (1,200) over all its GPUs, so that a result does
  not grow with its GPU count: 600 per GPU for two, 150 for eight; each GPU keeps at least
  `GPU_SERIES_MIN_POINTS` (60, enough for the shape of a line): `series_cap(num_gpus)`.
"""

from __future__ import annotations

import math
from typing import Any

SERIES_MAX_POINTS = 600
GROUP_SERIES_MAX_POINTS = 1200
GPU_SERIES_MIN_POINTS = 60


def series_cap(num_gpus: int) -> int:
    """The most readings each GPU's series keeps in a result measured on `num_gpus` GPUs."""
    share = GROUP_SERIES_MAX_POINTS // max(num_gpus, 1)
    return max(GPU_SERIES_MIN_POINTS, min(SERIES_MAX_POINTS, share))


def thin_series(block: Any, max_points: int = SERIES_MAX_POINTS) -> Any:
    """`block` with its `series` cut to at most `max_points` readings (every k-th one, the first and last kept),
    recorded under `series_thinning`; a block with fewer readings, or none, comes back as it is.

    Thinning an already thinned block composes: `every` counts readings taken, not points kept."""
    if not isinstance(block, dict) or not isinstance(block.get("series"), dict) or max_points < 2:
        return block
    series = block["series"]
    n = max((len(v) for v in series.values() if isinstance(v, list)), default=0)
    if n <= max_points:
        return block
    k = math.ceil(n / (max_points - 1))  # range(0, n, k) has at most max_points - 1 indices; the last joins them
    keep = list(range(0, n, k))
    if keep[-1] != n - 1:
        keep.append(n - 1)
    before = block.get("series_thinning") or {}
    thinned = {key: [values[i] for i in keep if i < len(values)] if isinstance(values, list) else values
               for key, values in series.items()}
    return {**block, "series": thinned, "series_thinning": {
        "readings": before.get("readings", n), "kept": len(keep), "every": before.get("every", 1) * k}}
