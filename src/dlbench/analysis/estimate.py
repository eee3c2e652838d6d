"""Training throughput estimates for GPUs nobody here measured: `dlbench estimate --gpu "RTX 5090" --workload resnet50 --precision amp-fp16`.

The model follows Tim Dettmers' reasoning (seed 001): tensor cores make matrix multiplication so fast that the
GPU mostly waits for memory, so dense tensor throughput for the precision (with the GeForce half-rate FP32
accumulation, which `catalog.peak_flops_per_s` applies) and memory bandwidth together predict speed. It is a
log-linear fit, pooled over every workload and precision with its own intercept each:

    log(samples/s) = a[workload, precision] + b x log(peak FLOP/s of the precision) + c x log(bandwidth B/s)

calibrated on published single-GPU results (Lambda, NVIDIA DeepLearningExamples, AIME) and on the user's own
measured runs where given (`extra_points`). For each workload and precision one source family calibrates the
intercept (the user's runs when present, else the published source covering most GPUs), so results from
harnesses with different software are never mixed in one intercept.

The low-high band is the range of the leave-one-GPU-out errors for that workload and precision: a new GPU falls
inside the range of n such errors with probability (n-1)/(n+1), 80% for nine GPUs. When fewer than four GPUs
calibrate it, the 10th-90th percentile of those errors over all workloads is used. The estimator's accuracy is
measured by `benchmarks/estimator_accuracy.py`; L2 cache size can be added as a feature there
(`features=("flops", "bandwidth", "l2")`) and is left out by default because it predicted worse.

Multi-GPU figures use published rows for that GPU and count when they exist; else the single-GPU figure times
`1 + f x (N - 1)`, with `f` the per-added-GPU factor the seeds report (`scaling_factor`), or the one published
multi-GPU rows for that GPU imply (`published_scaling`) with the band spanning both.
Nothing here imports torch.
"""

from __future__ import annotations

import difflib
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from dlbench.errors import BadInput

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
PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "amp-fp16", "amp-bf16")
# amp-bf16 runs on the same tensor cores at the same rate as amp-fp16 on every NVIDIA GPU that has it, and no
# published source reports bf16 training: it borrows amp-fp16's calibration (said so in the basis).
CALIBRATION_PRECISION = {"amp-bf16": "amp-fp16"}
DEFAULT_FEATURES: tuple[str, ...] = ("flops", "bandwidth")
MIN_GPUS_FOR_OWN_BAND = 4

# Per-added-GPU scaling factors (low, typical, high) reported by the seeds, for data-parallel training.
# Seed 000 (AIME, "Deep Learning GPU Benchmarks"): RTX 6000 Ada and other pro GPUs with peer-to-peer PCIe
# "around 0.94 to 0.95"; RTX 5090 (P2P disabled, PCIe 5.0) "between 0.91 and 0.97"; RTX 4090 "only 0.62 to 0.75".
# Seed 003 (AIME, "PyTorch 2 GPU Performance Benchmarks"): A100, RTX 6000 Ada, RTX 5000 "between 0.9 and 0.95".
SCALING_PRO_P2P = (0.90, 0.94, 0.95)
SCALING_RTX_4090 = (0.62, 0.685, 0.75)
SCALING_RTX_5090 = (0.91, 0.94, 0.97)
SCALING_UNKNOWN = (0.62, 0.80, 0.97)  # every figure the seeds report, for GPUs they do not cover
SCALING_SOURCES = {
    "pro": "seed 000 (RTX 6000 Ada, pro GPUs with P2P: 0.94-0.95) and seed 003 (A100, RTX 6000 Ada: 0.90-0.95)",
    "4090": "seed 000 (RTX 4090: 0.62-0.75 for the second GPU)",
    "5090": "seed 000 (RTX 5090, PCIe 5.0 without P2P: 0.91-0.97)",
}


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


@dataclass(frozen=True)
class Estimate:
    """What `estimate` answers; figures in samples/s for the whole build of `num_gpus` GPUs."""

    gpu: str
    workload: str
    precision: str
    num_gpus: int
    samples_per_s: float | None
    low: float | None
    high: float | None
    kind: str  # "measured" | "published" | "estimated" | "unknown"
    basis: str
    model_samples_per_s: float | None = None
    model_low: float | None = None
    model_high: float | None = None
    published_samples_per_s: float | None = None
    published_sources: tuple[str, ...] = ()
    measured_samples_per_s: float | None = None
    calibration_gpus: tuple[str, ...] = ()
    scaling: dict | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def unit(self) -> str:
        return WORKLOAD_UNITS.get(self.workload, "sequences")

    def to_dict(self) -> dict:
        out = asdict(self)
        out["unit"] = self.unit
        out["published_sources"] = list(self.published_sources)
        out["calibration_gpus"] = list(self.calibration_gpus)
        out["notes"] = list(self.notes)
        return out


# --- inputs -----------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _workload_names() -> tuple[str, ...]:
    names = set(WORKLOAD_SEQ_LEN)
    names.update(p.workload for p in _published_rows())
    return tuple(sorted(names))


def workload_names() -> list[str]:
    """dlbench workload names that can be estimated (the light list plus any in the published data)."""
    return list(_workload_names())


def check_workload(name: str) -> str:
    """`name` if it is a known workload, else BadInput with close matches."""
    if name in workload_names():
        return name
    close = difflib.get_close_matches(name, workload_names(), n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise BadInput(f"unknown workload {name!r}{hint} (known: {', '.join(workload_names())})")


def check_precision(name: str) -> str:
    if name in PRECISIONS:
        return name
    raise BadInput(f"unknown precision {name!r} (known: {', '.join(PRECISIONS)})")


def resolve_gpu(name: str):
    """The catalogue row for `name`, else BadInput with close matches."""
    from dlbench import catalog

    spec = catalog.lookup(name)
    if spec is None:
        close = catalog.close_matches(name)
        hint = f"; did you mean {', '.join(close[:3])}?" if close else " (see `dlbench gpus`)"
        raise BadInput(f"unknown GPU {name!r}{hint}")
    return spec


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
    spec = resolve_gpu(gpu)
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
        if r.get("status") != "ok" or not r.get("samples_per_s") or r.get("flavour", "full") != "full":
            continue
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


# --- the model ----------------------------------------------------------------------------------------------

@lru_cache(maxsize=512)
def _spec(name: str):
    from dlbench import catalog

    return catalog.lookup(name)


def _features(spec, precision: str, features: Sequence[str]) -> list[float] | None:
    from dlbench import catalog

    values = []
    for name in features:
        if name == "flops":
            v = catalog.peak_flops_per_s(spec, precision)
        elif name == "bandwidth":
            v = getattr(spec, "memory_bandwidth_bytes_per_s", None)
        elif name == "l2":
            v = getattr(spec, "l2_cache_bytes", None)
        else:
            raise ValueError(f"unknown feature {name}")
        if not v or v <= 0:
            return None
        values.append(math.log(v))
    return values


@dataclass
class Model:
    """A fitted estimator: intercepts per (workload, precision) key, shared slopes."""

    features: tuple[str, ...]
    keys: list[tuple[str, str]]
    family: dict[tuple[str, str], str]
    gpus: dict[tuple[str, str], list[str]]
    coef: list[float]
    residuals: dict[tuple[str, str], dict[str, float]]  # leave-one-GPU-out log(observed / predicted) per GPU

    def predict(self, spec, workload: str, precision: str) -> float | None:
        key = (workload, CALIBRATION_PRECISION.get(precision, precision))
        if key not in self.keys:
            return None
        x = _features(spec, precision, self.features)
        if x is None:
            return None
        return self.predict_features(key, x)

    def predict_features(self, key: tuple[str, str], x: Sequence[float]) -> float:
        """exp(intercept[key] + slopes . x) for log features `x`."""
        i = self.keys.index(key)
        slopes = self.coef[len(self.keys):]
        return math.exp(self.coef[i] + sum(s * v for s, v in zip(slopes, x, strict=True)))

    def band(self, workload: str, precision: str) -> tuple[float, float, str]:
        """(low factor, high factor, how) around a prediction for this key."""
        key = (workload, CALIBRATION_PRECISION.get(precision, precision))
        own = list(self.residuals.get(key, {}).values())
        if len(own) >= MIN_GPUS_FOR_OWN_BAND:
            res = own
            how = f"range of leave-one-GPU-out errors for {key[0]} {key[1]} ({len(own)} GPUs)"
            lo, hi = min(res), max(res)
        else:
            res = [r for v in self.residuals.values() for r in v.values()]
            if not res:
                return 0.5, 2.0, "no held-out errors to size the band: factor 2 either way"
            how = (f"10th-90th percentile of leave-one-GPU-out errors over all workloads ({len(res)} points; "
                   f"only {len(own)} GPU(s) calibrate {key[0]} {key[1]})")
            lo, hi = _quantile(res, 0.10), _quantile(res, 0.90)
        return math.exp(min(lo, 0.0)), math.exp(max(hi, 0.0)), how


def _quantile(values: Sequence[float], q: float) -> float:
    xs = sorted(values)
    if len(xs) == 1:
        return xs[0]
    pos = q * (len(xs) - 1)
    i = int(math.floor(pos))
    frac = pos - i
    return xs[i] if i + 1 >= len(xs) else xs[i] * (1 - frac) + xs[i + 1] * frac


def _group(points: Iterable[Point], features: tuple[str, ...]) -> dict:
    """{(key, family): {gpu: (median samples/s, log features, number of results)}} for single-GPU points."""
    by: dict = defaultdict(lambda: defaultdict(list))
    for p in points:
        if p.num_gpus == 1 and p.precision in PRECISIONS:
            by[((p.workload, p.precision), p.family)][p.gpu].append(p.samples_per_s)
    out: dict = {}
    for kf, gpus in by.items():
        usable = {}
        for g, vals in gpus.items():
            spec = _spec(g)
            x = _features(spec, kf[0][1], features) if spec is not None else None
            if x is not None:
                usable[g] = (statistics.median(vals), x, len(vals))
        if usable:
            out[kf] = usable
    return out


def calibration_set(grouped: dict, exclude: frozenset[str] = frozenset()):
    """({key: {gpu: (median, features)}}, {key: family}): one family per key, the excluded GPUs left out.

    The family is the user's own runs ("measured") when there are any, else the one covering most GPUs.
    """
    chosen: dict = {}
    rank_of: dict = {}
    family: dict = {}
    for (key, fam), gpus in grouped.items():
        usable = {g: v[:2] for g, v in gpus.items() if g not in exclude}
        if not usable:
            continue
        rank = (fam == "measured", len(usable), sum(v[2] for g, v in gpus.items() if g not in exclude))
        if key not in chosen or rank > rank_of[key]:
            chosen[key], rank_of[key], family[key] = usable, rank, fam
    return chosen, family


def _solve_linear(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting for the small (features x features) normal equations."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        piv = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[piv][c]) < 1e-12:
            return None
        m[c], m[piv] = m[piv], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


def _solve(rows: list[tuple[int, list[float], float]], nkeys: int, nfeat: int) -> list[float] | None:
    """Least squares with one intercept per key and shared slopes (fixed-effects form: demean per key)."""
    groups: dict[int, list[tuple[list[float], float]]] = defaultdict(list)
    for k, f, v in rows:
        groups[k].append((f, v))
    means = {k: ([sum(f[j] for f, _ in g) / len(g) for j in range(nfeat)], sum(v for _, v in g) / len(g))
             for k, g in groups.items()}
    xtx = [[0.0] * nfeat for _ in range(nfeat)]
    xty = [0.0] * nfeat
    for k, g in groups.items():
        mx, my = means[k]
        for f, v in g:
            d = [f[j] - mx[j] for j in range(nfeat)]
            for i in range(nfeat):
                xty[i] += d[i] * (v - my)
                for j in range(nfeat):
                    xtx[i][j] += d[i] * d[j]
    slopes = _solve_linear(xtx, xty)
    if slopes is None:
        return None
    intercepts = [0.0] * nkeys
    for k, (mx, my) in means.items():
        intercepts[k] = my - sum(s * x for s, x in zip(slopes, mx, strict=True))
    return intercepts + slopes


def fit(points: Iterable[Point], features: Sequence[str] = DEFAULT_FEATURES,
        exclude: Iterable[str] = (), residuals: bool = True) -> Model | None:
    """Fit the pooled model on `points` minus the GPUs in `exclude`; None if nothing calibrates it."""
    features = tuple(features)
    return _fit_grouped(_group(points, features), features, frozenset(exclude), residuals)


def _fit_grouped(grouped: dict, features: tuple[str, ...], exclude: frozenset[str],
                 residuals: bool) -> Model | None:
    chosen, family = calibration_set(grouped, exclude)
    keys = sorted(chosen)
    rows = [(i, x, math.log(v), g) for i, key in enumerate(keys) for g, (v, x) in chosen[key].items()]
    distinct = {g for *_, g in rows}
    if len(distinct) <= len(features):
        return None
    coef = _solve([(i, x, v) for i, x, v, _ in rows], len(keys), len(features))
    if coef is None:
        return None
    model = Model(features=features, keys=keys, family=family,
                  gpus={k: sorted(chosen[k]) for k in keys}, coef=coef, residuals={})
    if residuals:
        for held in sorted(distinct):
            sub = _fit_grouped(grouped, features, exclude | {held}, residuals=False)
            if sub is None:
                continue
            for key in keys:
                if held in chosen[key] and key in sub.keys:
                    v, x = chosen[key][held]
                    pred = sub.predict_features(key, x)
                    model.residuals.setdefault(key, {})[held] = math.log(v / pred)
    return model


@lru_cache(maxsize=4)
def _published_grouped(features: tuple[str, ...]) -> dict:
    return _group(published_points(), features)


@lru_cache(maxsize=64)
def _published_model(exclude: frozenset[str], features: tuple[str, ...]) -> Model | None:
    return _fit_grouped(_published_grouped(features), features, exclude, residuals=True)


def get_model(extra_points: Sequence[Point] = (), exclude: Iterable[str] = (),
              features: Sequence[str] = DEFAULT_FEATURES) -> Model | None:
    """The model on published points plus `extra_points`, without the GPUs in `exclude` (cached when no extras)."""
    # Leaving out a GPU that calibrates nothing changes nothing: keep the cache small and warm.
    exclude = frozenset(exclude) & (_published_gpus() | {p.gpu for p in extra_points})
    if not extra_points:
        return _published_model(exclude, tuple(features))
    return fit(tuple(published_points()) + tuple(extra_points), features, exclude)


# --- multi-GPU scaling ----------------------------------------------------------------------------------

def _is_geforce(spec) -> bool:
    """GeForce cards are the NVIDIA ones that run FP16 with FP32 accumulation at half rate (catalogue flag)."""
    return bool(getattr(spec, "half_rate_fp32_accumulate", None))


def _factors(triple: tuple[float, float, float], source: str) -> dict:
    lo, mid, hi = triple
    return {"low": lo, "typical": mid, "high": hi, "source": source}


def scaling_factor(spec) -> dict:
    """Per-added-GPU scaling factor for data-parallel training: {low, typical, high, source}.

    The seeds' own GPUs first (RTX 4090, RTX 5090), then by family: other GeForce Ada cards as the RTX 4090
    (P2P disabled too), other GeForce Blackwell as the RTX 5090, pro and data-centre NVIDIA cards with P2P as the
    seeds' pro cards; anything else gets the whole range the seeds report, and says so.
    """
    name = gpu_name(spec).lower()
    arch = (getattr(spec, "architecture", None) or "").lower()
    vendor = (getattr(spec, "vendor", None) or "").lower()
    if _is_geforce(spec):
        if re.search(r"\b4090\b", name):
            return _factors(SCALING_RTX_4090, SCALING_SOURCES["4090"])
        if re.search(r"\b5090\b", name):
            return _factors(SCALING_RTX_5090, SCALING_SOURCES["5090"])
        if "ada" in arch:
            return _factors(SCALING_RTX_4090, "assumed like the RTX 4090 (GeForce Ada, no P2P): "
                            + SCALING_SOURCES["4090"])
        if "blackwell" in arch:
            return _factors(SCALING_RTX_5090, "assumed like the RTX 5090 (GeForce Blackwell): "
                            + SCALING_SOURCES["5090"])
        return _factors(SCALING_UNKNOWN, "no seed figure for this GPU: the band spans every seed figure "
                                         "(0.62-0.97)")
    if vendor == "nvidia" and getattr(spec, "p2p", None):
        return _factors(SCALING_PRO_P2P, SCALING_SOURCES["pro"])
    return _factors(SCALING_UNKNOWN, "no seed figure for this GPU: the band spans every seed figure (0.62-0.97)")


def published_scaling(gpu: str, workload: str, precision: str) -> dict | None:
    """Per-added-GPU factors implied by published multi-GPU rows for this GPU, workload and precision.

    A factor above 1.05 (super-linear: a different batch size or a broken row) is not used.
    """
    ones = _match(None, gpu, workload, precision, 1)
    if not ones:
        return None
    base = statistics.median(p.samples_per_s for p in ones)
    effs = []
    for n in range(2, 65):
        rows = _match(None, gpu, workload, precision, n)
        if rows:
            eff = (statistics.median(p.samples_per_s for p in rows) / base - 1.0) / (n - 1)
            if 0 < eff <= 1.05:
                effs.append((n, eff))
    if not effs:
        return None
    vals = [e for _, e in effs]
    counts = ", ".join(str(n) for n, _ in effs)
    return {"low": min(vals), "typical": statistics.median(vals), "high": max(vals),
            "source": f"published {gpu} {workload} {precision} results on {counts} GPUs vs 1"}


def scaling_for(spec, workload: str, precision: str, spec_only: bool = False) -> dict:
    """The seeds' factor for this GPU, with published scaling for it taking the typical value when there is some.

    The band spans both, since a published factor comes from one system and the seeds' from another.
    """
    seed = scaling_factor(spec)
    found = None if spec_only else published_scaling(gpu_name(spec), workload, precision)
    if not found:
        return seed
    return {"low": min(found["low"], seed["low"]), "typical": found["typical"],
            "high": max(found["high"], seed["high"]),
            "source": f"{found['source']} ({found['typical']:.2f} per added GPU); band with {seed['source']}"}


def scale(samples_per_s: float, num_gpus: int, factor: float) -> float:
    """Throughput of `num_gpus` GPUs when each added GPU adds `factor` of one GPU."""
    return samples_per_s * (1.0 + factor * (num_gpus - 1))


# --- the estimate ---------------------------------------------------------------------------------------

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


def _fmt_gpus(gpus: Sequence[str]) -> str:
    return f"{len(gpus)} GPUs ({', '.join(gpus)})" if len(gpus) <= 6 else f"{len(gpus)} GPUs"


def estimate(gpu: str, workload: str, precision: str, num_gpus: int = 1, spec_only: bool = False,
             extra_points: Sequence[Point] = (), exclude: Iterable[str] = (),
             features: Sequence[str] = DEFAULT_FEATURES) -> Estimate:
    """Training samples/s of `num_gpus` x `gpu` on `workload` at `precision`, with a band and its basis.

    A measured (`extra_points`) or published figure for exactly this GPU and GPU count is the answer unless
    `spec_only`; the model's figure is always computed without that GPU's own results, so the two can be
    compared. `exclude` leaves more GPUs out of the calibration (for accuracy tests).
    """
    spec = resolve_gpu(gpu)
    name = gpu_name(spec)
    check_workload(workload)
    check_precision(precision)
    if num_gpus < 1:
        raise BadInput(f"--gpus must be at least 1, got {num_gpus}")
    notes: list[str] = []
    exclude = frozenset(exclude) | {name}
    extra_points = tuple(extra_points)
    model = get_model(extra_points, exclude, features)

    # The model's single-GPU figure.
    single = lo_f = hi_f = None
    basis = ""
    calib: tuple[str, ...] = ()
    if model is not None:
        single = model.predict(spec, workload, precision)
        if single is not None:
            lo_f, hi_f, how = model.band(workload, precision)
            key = (workload, CALIBRATION_PRECISION.get(precision, precision))
            calib = tuple(model.gpus[key])
            fam = model.family[key]
            basis = (f"model: {'+'.join(features)} fit, {key[0]} {key[1]} intercept from {fam} on "
                     f"{_fmt_gpus(calib)}; band: {how}")
            if key[1] != precision:
                notes.append(f"{precision}: no published rows; calibrated on {key[1]} (same tensor-core rate)")
    if single is None:
        from dlbench import catalog

        if catalog.peak_flops_per_s(spec, precision) is None:
            why = f"the catalogue has no {precision} peak figure for {name} (not supported or unknown)"
        else:
            why = f"no published or measured {workload} {precision} results to calibrate on"
        notes.append(f"cannot estimate from specs: {why}")

    scaling = None
    model_mid = model_lo = model_hi = None
    if single is not None:
        if num_gpus == 1:
            model_mid, model_lo, model_hi = single, single * lo_f, single * hi_f
        else:
            scaling = scaling_for(spec, workload, precision, spec_only)
            model_mid = scale(single, num_gpus, scaling["typical"])
            model_lo = scale(single * lo_f, num_gpus, scaling["low"])
            model_hi = scale(single * hi_f, num_gpus, scaling["high"])

    # Figures for exactly this GPU: the user's own runs first, then published.
    measured = _match(extra_points, name, workload, precision, num_gpus)
    published = _match(None, name, workload, precision, num_gpus)
    pub_mid = statistics.median(p.samples_per_s for p in published) if published else None
    meas_mid = statistics.median(p.samples_per_s for p in measured) if measured else None
    sources = tuple(sorted({p.source for p in published}))

    if num_gpus > 1 and not spec_only and not measured and not published:
        # Scale this GPU's own single-GPU figure when it has one.
        own1 = (_match(extra_points, name, workload, precision, 1)
                or _match(None, name, workload, precision, 1))
        if own1:
            scaling = scaling or scaling_for(spec, workload, precision)
            base = statistics.median(p.samples_per_s for p in own1)
            vals = [p.samples_per_s for p in own1]
            return Estimate(
                gpu=name, workload=workload, precision=precision, num_gpus=num_gpus,
                samples_per_s=scale(base, num_gpus, scaling["typical"]),
                low=scale(min(vals), num_gpus, scaling["low"]), high=scale(max(vals), num_gpus, scaling["high"]),
                kind="estimated",
                basis=f"{own1[0].kind} 1-GPU figure x scaling {scaling['low']:.2f}-{scaling['high']:.2f} per "
                      f"added GPU ({scaling['source']})",
                model_samples_per_s=model_mid, model_low=model_lo, model_high=model_hi,
                measured_samples_per_s=None, calibration_gpus=calib, scaling=scaling, notes=tuple(notes))

    if not spec_only and (measured or published):
        chosen = measured or published
        vals = [p.samples_per_s for p in chosen]
        mid = meas_mid if measured else pub_mid
        if num_gpus > 1:
            one = (_match(extra_points, name, workload, precision, 1) if measured
                   else _match(None, name, workload, precision, 1))
            if one:
                eff = (mid / statistics.median(p.samples_per_s for p in one) - 1) / (num_gpus - 1)
                if eff > 1.05:
                    notes.append(f"this {num_gpus}-GPU figure implies {eff:.2f} per added GPU (super-linear): "
                                 "check the source before relying on it")
        kind = "measured" if measured else "published"
        where = "your runs" if measured else ", ".join(sorted({p.family for p in published}))
        return Estimate(
            gpu=name, workload=workload, precision=precision, num_gpus=num_gpus, samples_per_s=mid,
            low=min(vals), high=max(vals), kind=kind,
            basis=f"{kind}: median of {len(vals)} result(s) for {num_gpus}x {name} ({where})",
            model_samples_per_s=model_mid, model_low=model_lo, model_high=model_hi,
            published_samples_per_s=pub_mid, published_sources=sources, measured_samples_per_s=meas_mid,
            calibration_gpus=calib, scaling=scaling, notes=tuple(notes))

    if model_mid is None:
        return Estimate(gpu=name, workload=workload, precision=precision, num_gpus=num_gpus,
                        samples_per_s=None, low=None, high=None, kind="unknown",
                        basis=notes[-1] if notes else "no estimate", published_samples_per_s=pub_mid,
                        published_sources=sources, measured_samples_per_s=meas_mid, notes=tuple(notes[:-1]))
    if scaling is not None:
        basis += f"; x{num_gpus}: {scaling['low']:.2f}-{scaling['high']:.2f} per added GPU ({scaling['source']})"
    if pub_mid is not None:
        notes.append(f"published figure for this GPU: {pub_mid:,.0f} samples/s (not used: --spec-only)")
    return Estimate(
        gpu=name, workload=workload, precision=precision, num_gpus=num_gpus, samples_per_s=model_mid,
        low=model_lo, high=model_hi, kind="estimated", basis=basis, model_samples_per_s=model_mid,
        model_low=model_lo, model_high=model_hi, published_samples_per_s=pub_mid, published_sources=sources,
        measured_samples_per_s=meas_mid, calibration_gpus=calib, scaling=scaling, notes=tuple(notes))
