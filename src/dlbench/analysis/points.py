"""Throughput figures the estimator uses: published results and your runs, as points: `dlbench estimate --help`.

Also the light lists of workload and precision names (the torch-side workload registry is not imported: it would
pull in torch) and their checks, shared by `estimate` and `advise` (GPU names: `catalog.resolve`). Nothing here
imports torch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from dlbench.analysis.configuration import PRECISIONS, check_precision  # noqa: F401 - re-exported

# dlbench's workload names (the torch-side registry is not imported here: it would pull in torch) with the
# sequence length a published row must have to be comparable (CONTRACTS: bert-*-squad384 -> seq 384,
# bert-*-pretrain128 -> bert-*-mlm seq 128).
WORKLOAD_SEQ_LEN: dict[str, int | None] = {
    "resnet50": None,
    "bert-base-squad": 384,
    "bert-large-squad": 384,
    "bert-base-mlm": 128,
    "bert-large-mlm": 128,
}
WORKLOAD_UNITS = {"resnet50": "images"}  # others: sequences


@dataclass(frozen=True)
class Point:
    """One throughput figure for calibration or display."""

    gpu: str  # catalogue canonical name
    workload: str
    precision: str
    num_gpus: int
    samples_per_s: float
    kind: str  # "published" | "measured"
    source: str
    family: str  # results from one harness/software stack share a family


@lru_cache(maxsize=1)
def _workload_names() -> tuple[str, ...]:
    names = set(WORKLOAD_SEQ_LEN)
    names.update(p.workload for p in _published_rows())
    return tuple(sorted(names))


def workload_names() -> list[str]:
    """dlbench workload names that can be estimated (the light list plus any in the published data)."""
    return list(_workload_names())


def check_workload(name: str) -> str:
    """The known workload `name` is, regardless of case (`BERT-Base-SQuAD` is bert-base-squad), else BadInput
    with the name probably meant, as `dlbench run` says it (`dlbench.names.match_workload`)."""
    from dlbench.names import match_workload

    return match_workload(name, workload_names())


def gpu_name(spec) -> str:
    return getattr(spec, "name", None) or spec.canonical_name


def _family(source: str, source_ref: str) -> str:
    """Results from one harness share a family: the repository part of the source reference."""
    ref = (source_ref or "").split()
    return ref[0] if ref else (source or "unknown")


@lru_cache(maxsize=1)
def _published_rows() -> tuple:
    from dlbench.reference import load_published

    return tuple(load_published())


def _comparable(row) -> bool:
    want = WORKLOAD_SEQ_LEN.get(row.workload, row.seq_len)
    if row.seq_len != want:
        return False
    return bool(getattr(row, "comparable", True))


@lru_cache(maxsize=1)
def published_points() -> tuple[Point, ...]:
    """Published results as points (rows that are not comparable with dlbench's workloads left out)."""
    return tuple(
        Point(gpu=r.gpu, workload=r.workload, precision=r.precision, num_gpus=int(r.num_gpus),
              samples_per_s=float(r.samples_per_s), kind="published",
              source=f"{r.source} [{r.source_ref}]", family=_family(r.source, r.source_ref))
        for r in _published_rows() if _comparable(r) and r.samples_per_s
    )


def measured_point(gpu: str, workload: str, precision: str, samples_per_s: float, num_gpus: int = 1,
                   source: str = "dlbench run") -> Point:
    """A point from the user's own run (family "measured"); `gpu` may be any name the catalogue knows."""
    from dlbench.catalog import resolve

    spec = resolve(gpu)
    return Point(gpu=gpu_name(spec), workload=workload, precision=precision, num_gpus=num_gpus,
                 samples_per_s=float(samples_per_s), kind="measured", source=source, family="measured")


def points_from_rows(rows: Iterable[dict]) -> list[Point]:
    """Measured points from stored results (`Store.export_rows()` rows).

    Kept: status ok, full-size workloads on CUDA, one GPU model per run that the catalogue knows, the workload's
    comparable sequence length. Per GPU, workload, precision and GPU count the best samples/s over compile modes
    and runs is kept (what that GPU can do with dlbench), its run id named in the source.
    """
    best: dict = {}
    for r in rows:
        if r.get("status") != "ok" or r.get("flavour", "full") != "full" or r.get("scenario", "train") != "train":
            continue  # the published figures and the estimates are training throughput
        if not isinstance(r.get("samples_per_s"), (int, float)) or not r["samples_per_s"] > 0:
            continue  # nothing measured, or a value no measurement gives (a database from before import checks)
        if not str(r.get("device") or "").startswith("cuda"):
            continue
        names = [n for n in str(r.get("gpu_names") or "").split("; ") if n]
        workload, precision = r.get("workload"), r.get("precision")
        if len(names) != 1 or workload not in WORKLOAD_SEQ_LEN or precision not in PRECISIONS:
            continue
        if r.get("seq_len") not in (None, WORKLOAD_SEQ_LEN[workload]) and WORKLOAD_SEQ_LEN[workload] is not None:
            continue
        spec = _spec(names[0])
        if spec is None:
            continue
        n = int(r.get("world_size") or 1)
        key = (gpu_name(spec), workload, precision, n)
        if key not in best or r["samples_per_s"] > best[key].samples_per_s:
            best[key] = Point(gpu=key[0], workload=workload, precision=precision, num_gpus=n,
                              samples_per_s=float(r["samples_per_s"]), kind="measured",
                              source=f"dlbench run {str(r.get('run_id'))[:12]} (compile={r.get('compile')})",
                              family="measured")
    return list(best.values())


@lru_cache(maxsize=512)
def _spec(name: str):
    from dlbench import catalog

    return catalog.lookup(name)


@lru_cache(maxsize=1)
def _published_gpus() -> frozenset[str]:
    return frozenset(p.gpu for p in published_points())


@lru_cache(maxsize=1)
def _published_index() -> dict:
    index = defaultdict(list)
    for p in published_points():
        index[(p.gpu, p.workload, p.precision, p.num_gpus)].append(p)
    return index


def _match(points: Iterable[Point] | None, gpu: str, workload: str, precision: str, num_gpus: int) -> list[Point]:
    """Points for exactly this GPU, workload, precision and count (`None`: the published ones, indexed)."""
    if points is None:
        return list(_published_index().get((gpu, workload, precision, num_gpus), ()))
    return [p for p in points if p.gpu == gpu and p.workload == workload and p.precision == precision
            and p.num_gpus == num_gpus]
