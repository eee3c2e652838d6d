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

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from dlbench.analysis.configuration import TRAIN_PRECISIONS
from dlbench.analysis.estimated_scaling import (  # noqa: F401 - re-exported: the estimator's public API
    MAX_GPUS,
    published_scaling,
    scale,
    scaling_factor,
    scaling_for,
)
from dlbench.analysis.perf_model import (  # noqa: F401
    CALIBRATION_PRECISION,
    DEFAULT_FEATURES,
    MIN_GPUS_FOR_OWN_BAND,
    Model,
    fit,
    get_model,
)
from dlbench.analysis.points import (  # noqa: F401
    PRECISIONS,
    WORKLOAD_SEQ_LEN,
    WORKLOAD_UNITS,
    Point,
    _match,
    check_precision,
    check_workload,
    gpu_name,
    measured_point,
    points_from_rows,
    published_points,
    workload_names,
)
from dlbench.errors import BadInput


def _spec_of(name: str):
    from dlbench import catalog

    return catalog.lookup(name)


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
    from dlbench.catalog import resolve

    spec = resolve(gpu)
    name = gpu_name(spec)
    workload = check_workload(workload)
    precision = check_precision(precision)
    if precision not in TRAIN_PRECISIONS:  # the published points and the model are training throughput
        raise BadInput(f"estimates are of training throughput; precision {precision} is an inference mode "
                       f"(choose from: {', '.join(TRAIN_PRECISIONS)})")
    if not 1 <= num_gpus <= MAX_GPUS:
        raise BadInput(f"estimates cover 1 to {MAX_GPUS} GPUs (--gpus; one machine: the published results and "
                       f"the seeds' scaling factors go no further), got {num_gpus}")
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
            if len(calib) < MIN_GPUS_FOR_OWN_BAND:
                notes.append(f"only {len(calib)} GPU(s) calibrate {key[0]} {key[1]}: the estimate leans on the "
                             "slopes fitted on the other workloads and precisions")
            vendor = getattr(spec, "vendor", None)
            if vendor and vendor.lower() != "nvidia" and not any(
                    (getattr(_spec_of(g), "vendor", "") or "").lower() == vendor.lower() for g in calib):
                notes.append(f"calibrated on other vendors' GPUs only: {vendor}'s software stack may reach a "
                             "different share of its peak")
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
