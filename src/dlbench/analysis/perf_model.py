"""The estimator's model: two fits of training throughput on GPU specs, averaged: `python benchmarks/estimator_accuracy.py`.

log-linear, pooled over every workload and precision (slopes shared, one intercept each):
    log(samples/s) = a[workload, precision] + b x log(dense peak FLOP/s of the precision) + c x log(memory B/s)
roofline time, one per workload and precision with at least `MIN_GPUS_FOR_ROOFLINE` GPUs:
    seconds per sample = f / peak FLOP/s + m / memory B/s + o      (f, m, o >= 0)
    i.e. the time in tensor-core work, the time in memory traffic and a fixed time (kernel launches, input
    pipeline, the CPU) that no spec predicts: what limits ResNet-50 AMP on a B200.
The estimate is the geometric mean of the two where both exist, else the log-linear figure. The log-linear fit
extrapolates smoothly (one shape for all workloads); the roofline fit saturates where a fixed cost dominates; the
mean of the two halved the largest leave-one-GPU-out error (92% to 53%) and brought every workload with enough
GPUs under 10% median (benchmarks/README.md). Both are least squares small enough to solve without numpy.
`Model.residuals` holds the leave-one-GPU-out errors that size the estimate's band. See
`dlbench.analysis.estimate` for the reasoning. Nothing here imports torch.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from dlbench.analysis.points import PRECISIONS, Point, _published_gpus, _spec, published_points

# amp-bf16 runs on the same tensor cores at the same rate as amp-fp16 on every NVIDIA GPU that has it, and no
# published source reports bf16 training: it borrows amp-fp16's calibration (said so in the basis).
CALIBRATION_PRECISION = {"amp-bf16": "amp-fp16"}
DEFAULT_FEATURES: tuple[str, ...] = ("flops", "bandwidth")
MIN_GPUS_FOR_OWN_BAND = 4
MIN_GPUS_FOR_ROOFLINE = 4  # three coefficients: at least one more GPU than that
# Units that keep the roofline fit's normal equations well conditioned: 100 TFLOP/s, 1 TB/s, 1 ms.
_FLOPS_UNIT, _BW_UNIT, _TIME_UNIT = 1e14, 1e12, 1e-3


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
    roofline: dict[tuple[str, str], tuple[float, float, float]] = field(default_factory=dict)  # (f, m, o) per key

    def predict(self, spec, workload: str, precision: str) -> float | None:
        key = (workload, CALIBRATION_PRECISION.get(precision, precision))
        if key not in self.keys:
            return None
        x = _features(spec, precision, self.features)
        if x is None:
            return None
        return self.predict_features(key, x)

    def predict_features(self, key: tuple[str, str], x: Sequence[float]) -> float:
        """exp(intercept[key] + slopes . x) for log features `x`, averaged (geometrically) with the roofline
        time fit's figure when the key has one."""
        i = self.keys.index(key)
        slopes = self.coef[len(self.keys):]
        loglin = math.exp(self.coef[i] + sum(s * v for s, v in zip(slopes, x, strict=True)))
        coef = self.roofline.get(key)
        if coef is None:
            return loglin
        t = _roofline_time(coef, _raw(self.features, x))
        return math.sqrt(loglin / t) if t and t > 0 else loglin

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


def _raw(features: Sequence[str], x: Sequence[float]) -> tuple[float, float] | None:
    """(peak FLOP/s, memory B/s) from log features, or None when the feature set lacks either."""
    if "flops" not in features or "bandwidth" not in features:
        return None
    return math.exp(x[features.index("flops")]), math.exp(x[features.index("bandwidth")])


def _roofline_terms(raw: tuple[float, float]) -> list[float]:
    return [_FLOPS_UNIT / raw[0], _BW_UNIT / raw[1], 1.0]


def _roofline_time(coef: Sequence[float], raw: tuple[float, float] | None) -> float | None:
    if raw is None:
        return None
    return sum(c * t for c, t in zip(coef, _roofline_terms(raw), strict=True)) * _TIME_UNIT


def _fit_roofline(samples: Sequence[tuple[float, tuple[float, float]]]) -> tuple[float, float, float] | None:
    """(f, m, o) >= 0 minimising the squared relative error of seconds per sample, over (samples/s, raw specs);
    non-negative by trying every subset of the three terms and keeping the best fit whose coefficients are all
    >= 0 (seven 3x3 solves at most)."""
    best, best_sse = None, math.inf
    for subset in ((0, 1, 2), (0, 1), (0, 2), (1, 2), (0,), (1,), (2,)):
        a = [[0.0] * len(subset) for _ in subset]
        b = [0.0] * len(subset)
        rows = []
        for v, raw in samples:
            t = 1.0 / v / _TIME_UNIT
            terms = _roofline_terms(raw)
            f = [terms[j] / t for j in subset]
            rows.append(f)
            for i in range(len(subset)):
                b[i] += f[i]
                for j in range(len(subset)):
                    a[i][j] += f[i] * f[j]
        sol = _solve_linear(a, b)
        if sol is None or min(sol) < 0:
            continue
        sse = sum((sum(c * fi for c, fi in zip(sol, f, strict=True)) - 1.0) ** 2 for f in rows)
        if sse < best_sse:
            coef = [0.0, 0.0, 0.0]
            for j, c in zip(subset, sol, strict=True):
                coef[j] = c
            best, best_sse = (coef[0], coef[1], coef[2]), sse
    return best


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
        exclude: Iterable[str] = (), residuals: bool = True, roofline: bool = True) -> Model | None:
    """Fit the model on `points` minus the GPUs in `exclude`; None if nothing calibrates it. `roofline=False`
    gives the log-linear fit alone (as before issue 14, for comparison)."""
    features = tuple(features)
    return _fit_grouped(_group(points, features), features, frozenset(exclude), residuals, roofline)


def _fit_grouped(grouped: dict, features: tuple[str, ...], exclude: frozenset[str],
                 residuals: bool, roofline: bool = True) -> Model | None:
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
    if roofline and "flops" in features and "bandwidth" in features:
        for key in keys:
            if len(chosen[key]) >= MIN_GPUS_FOR_ROOFLINE:
                coef_k = _fit_roofline([(v, _raw(features, x)) for v, x in chosen[key].values()])
                if coef_k is not None:
                    model.roofline[key] = coef_k
    if residuals:
        for held in sorted(distinct):
            sub = _fit_grouped(grouped, features, exclude | {held}, residuals=False, roofline=roofline)
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
    return _model_with_extras(tuple(extra_points), exclude, tuple(features))


@lru_cache(maxsize=64)
def _model_with_extras(extra_points: tuple[Point, ...], exclude: frozenset[str],
                       features: tuple[str, ...]) -> Model | None:
    # `dlbench advise` asks for the same model once per GPU in the catalogue: fit it once (the fit with
    # leave-one-out residuals is what takes the time).
    return fit(tuple(published_points()) + extra_points, features, exclude)
