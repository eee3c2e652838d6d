"""Published training throughputs (Lambda, NVIDIA DeepLearningExamples, AIME) as data with a source per row.

Exercise it with `dlbench reference list --gpu "H100 SXM5 80GB"`. The packaged `published.csv` is built by
`tools/build_reference.py` from the shared reference CSV; it is read on first use and cached.

`samples_per_s` is the total for all `num_gpus` GPUs of the row (images/s for resnet50, sequences/s for BERT).
Rows marked `comparable=False` (NVIDIA's sequence-binned seq-512 BERT figures) are kept for reference but
excluded from medians and rankings by default.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class PublishedResult:
    """One published measurement, mapped to dlbench's GPU, workload and precision names."""

    gpu: str  # catalogue canonical name
    gpu_listed: str  # the name the source used
    num_gpus: int
    workload: str  # dlbench workload name
    seq_len: int | None
    precision: str  # dlbench precision name
    batch_size_per_gpu: int | None
    samples_per_s: float  # total over num_gpus
    source: str
    source_ref: str  # file and commit (or issue) of the source
    system: str | None
    notes: str | None
    comparable: bool = True  # False: measured differently (e.g. sequence binning), not comparable
    workload_listed: str | None = None
    precision_listed: str | None = None
    gpu_tdp_w_listed: float | None = None
    system_price_usd_listed: float | None = None
    mapping_note: str | None = None  # why gpu_listed was mapped to gpu, when the listing alone does not say

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _opt(value: str) -> str | None:
    return value or None


def _opt_float(value: str) -> float | None:
    return float(value) if value else None


def _opt_int(value: str) -> int | None:
    return int(value) if value else None


def _result(row: dict[str, str]) -> PublishedResult:
    return PublishedResult(
        gpu=row["gpu"],
        gpu_listed=row["gpu_listed"],
        num_gpus=int(row["num_gpus"]),
        workload=row["workload"],
        seq_len=_opt_int(row["seq_len"]),
        precision=row["precision"],
        batch_size_per_gpu=_opt_int(row["batch_size_per_gpu"]),
        samples_per_s=float(row["samples_per_s"]),
        source=row["source"],
        source_ref=row["source_ref"],
        system=_opt(row["system"]),
        notes=_opt(row["notes"]),
        comparable=row["comparable"] == "true",
        workload_listed=_opt(row["workload_listed"]),
        precision_listed=_opt(row["precision_listed"]),
        gpu_tdp_w_listed=_opt_float(row["gpu_tdp_w_listed"]),
        system_price_usd_listed=_opt_float(row["system_price_usd_listed"]),
        mapping_note=_opt(row["mapping"]),
    )


@lru_cache(maxsize=1)
def _load() -> tuple[PublishedResult, ...]:
    path = resources.files("dlbench.reference").joinpath("published.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        return tuple(_result(row) for row in csv.DictReader(handle))


def load_published() -> list[PublishedResult]:
    """Every packaged published result, in source order."""
    return list(_load())


def published_for(
    gpu: str | None = None,
    workload: str | None = None,
    precision: str | None = None,
    seq_len: int | None = None,
    num_gpus: int | None = None,
    comparable_only: bool = False,
) -> list[PublishedResult]:
    """Published results matching every filter given (None = any).

    `gpu` may be any name the catalogue knows (canonical, alias, torch device name); a name it does not know
    matches nothing (check with `dlbench.catalog.lookup` first to tell the user).
    """
    canonical = None
    if gpu is not None:
        from dlbench.catalog import canonical_name

        canonical = canonical_name(gpu)
        if canonical is None:
            return []
    return [
        result for result in _load()
        if (canonical is None or result.gpu == canonical)
        and (workload is None or result.workload == workload)
        and (precision is None or result.precision == precision)
        and (seq_len is None or result.seq_len == seq_len)
        and (num_gpus is None or result.num_gpus == num_gpus)
        and (result.comparable or not comparable_only)
    ]


def median_for(
    gpu: str,
    workload: str,
    precision: str,
    seq_len: int | None = None,
    num_gpus: int = 1,
) -> float | None:
    """Median published samples/s (total over `num_gpus`) for one GPU and configuration, or None.

    Only comparable rows count. For the "vs published" ratio: measured / median_for(...).
    """
    values = [r.samples_per_s for r in published_for(gpu, workload, precision, seq_len, num_gpus, True)]
    return statistics.median(values) if values else None


def medians_by_gpu(
    workload: str,
    precision: str,
    seq_len: int | None = None,
    num_gpus: int = 1,
) -> dict[str, float]:
    """Median published samples/s per GPU for one configuration, fastest first (for rankings and charts)."""
    groups: dict[str, list[float]] = {}
    for result in published_for(None, workload, precision, seq_len, num_gpus, True):
        groups.setdefault(result.gpu, []).append(result.samples_per_s)
    medians = {gpu: statistics.median(values) for gpu, values in groups.items()}
    return dict(sorted(medians.items(), key=lambda item: item[1], reverse=True))
