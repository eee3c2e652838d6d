"""Multi-GPU scaling: `dlbench run --gpus 1,2,4 ...` adds a `scaling_efficiency` to each result above one GPU.

Definitions (no torch here):

- Each data-parallel configuration keeps the per-device batch fixed, so the global batch is
  `batch_size x world_size` and samples per step grow with the device count.
- The slowest rank sets the pace: for every repeat, the rank whose measured steps took longest in total is the
  one whose step times count for throughput (`slowest_rank_repeats`). Every rank's own step times are kept in
  the result's `ranks`.
- `scaling_efficiency` = samples/s at N / (N x samples/s at 1), where the one-device result has the same
  configuration (`configuration.config_key` less the device count: scenario, workload, precision, compile mode,
  per-device batch, sequence length, flavour, with its defaults for fields older results leave out) and the
  same device type. 1.0 is
  perfect linear scaling; the seeds quote 0.94-0.95 per added RTX 6000 Ada and 0.62-0.75 for RTX 4090.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from dlbench.analysis.configuration import CONFIG_KEYS, config_key_without, config_label
from dlbench.schema.metrics import throughput

# What an N-device result shares with its one-device baseline: the configuration less the device count.
_SERIES_KEYS: tuple[str, ...] = tuple(k for k in CONFIG_KEYS if k != "world_size")


def scaling_efficiency(samples_per_s_n: float | None, world_size: int, samples_per_s_1: float | None) -> float | None:
    """samples/s at N / (N x samples/s at 1); None when either figure is missing or not positive."""
    if not samples_per_s_n or not samples_per_s_1 or world_size < 1:
        return None
    if samples_per_s_n <= 0 or samples_per_s_1 <= 0:
        return None
    return samples_per_s_n / (world_size * samples_per_s_1)


def _device_type(device: str | None) -> str | None:
    """"cuda:3" -> "cuda"; None stays None."""
    if device is None:
        return None
    return str(device).split(":", 1)[0]


def _match_key(result: dict[str, Any]) -> tuple:
    return config_key_without(result, "world_size") + (_device_type(result.get("device")),)


def add_scaling_efficiency(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set `scaling_efficiency` on every ok result with world_size > 1 (in place; returns `results`).

    A result without a matching ok one-device baseline gets `scaling_efficiency: None`, so a reader sees that
    the figure was not computed rather than a guess.
    """
    baselines: dict[tuple, float] = {}
    for r in results:
        if int(r.get("world_size") or 1) == 1 and r.get("status") == "ok" and throughput(r):
            baselines.setdefault(_match_key(r), throughput(r))
    for r in results:
        n = int(r.get("world_size") or 1)
        if n <= 1:
            continue
        base = baselines.get(_match_key(r))
        ok = r.get("status") == "ok"
        r["scaling_efficiency"] = scaling_efficiency(throughput(r), n, base) if ok else None
        warning = superlinear_warning(r["scaling_efficiency"])
        if warning and warning not in (r.get("warnings") or []):
            r["warnings"] = [*(r.get("warnings") or []), warning]
    return list(results)


# Above this, more devices did more than their share: the baseline was held back by something else.
SUPERLINEAR_THRESHOLD = 1.05


def superlinear_warning(efficiency: float | None) -> str | None:
    """A warning for scaling efficiency clearly above 1 (data parallelism cannot beat linear on its own)."""
    if efficiency is None or efficiency <= SUPERLINEAR_THRESHOLD:
        return None
    return (f"scaling efficiency {efficiency:.2f} is above 1: the one-device baseline was held back by something "
            "the multi-process run avoided (CPU thread contention, other load, memory pressure); compare with care")


def scaling_series(results: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Throughput against device count per configuration, with the ideal (linear) line, for charts and tables.

    Returns one entry per configuration: `{"label", "workload", "precision", "compile", "batch_size",
    "device_type" ("cuda", "cpu", None when not recorded), "points": [{"world_size", "samples_per_s", "ideal_samples_per_s", "scaling_efficiency"}]}` sorted by device
    count. `ideal_samples_per_s` is N x the one-device throughput (None without a one-device result).
    """
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in results:
        if r.get("status") != "ok" or not throughput(r):
            continue
        groups.setdefault(_match_key(r), []).append(r)
    series = []
    for rows in groups.values():
        rows = sorted(rows, key=lambda r: int(r.get("world_size") or 1))
        base = next((throughput(r) for r in rows if int(r.get("world_size") or 1) == 1), None)
        points = []
        for r in rows:
            n = int(r.get("world_size") or 1)
            points.append({
                "world_size": n,
                "samples_per_s": throughput(r),
                "ideal_samples_per_s": n * base if base is not None else None,
                "scaling_efficiency": scaling_efficiency(throughput(r), n, base) if n > 1 else None,
            })
        first = rows[0]
        fields = dict(zip(_SERIES_KEYS, config_key_without(first, "world_size"), strict=True))
        series.append({"label": config_label(first, per_device=True), **fields,
                       "device_type": _device_type(first.get("device")), "points": points})
    return series


def slowest_rank_repeats(ranks_repeats: Sequence[Sequence[Sequence[float]]]) -> list[list[float]]:
    """Per repeat, the step times of the rank whose measured steps took longest in total.

    `ranks_repeats[rank][repeat]` is that rank's list of step times. With a barrier before the first and after
    the last measured step of each repeat, every rank's total is close; the slowest one is the honest figure
    (it is when the whole group has finished). Using one rank's whole list, rather than the per-step maximum
    over ranks, keeps the noise of unrelated ranks from adding up.
    """
    if not ranks_repeats:
        return []
    n_repeats = min(len(r) for r in ranks_repeats)
    out = []
    for i in range(n_repeats):
        slowest = max((list(r[i]) for r in ranks_repeats), key=sum)
        out.append(slowest)
    return out


def mixed_gpu_warning(gpu_names: Iterable[str | None]) -> str | None:
    """A warning when the devices in one group are of different models (the slowest sets the pace), else None."""
    names = sorted({n for n in gpu_names if n})
    if len(names) <= 1:
        return None
    return (f"GPUs of different models in one data-parallel group ({', '.join(names)}): every step waits for "
            "the slowest GPU, so it sets the pace for all of them.")
