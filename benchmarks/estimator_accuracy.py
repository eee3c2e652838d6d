"""Leave-one-GPU-out accuracy of `dlbench estimate`: `python benchmarks/estimator_accuracy.py [--json]`.

For each workload and precision with published single-GPU results, every calibrating GPU is left out in turn,
the model is fitted on the others and the left-out GPU predicted from its specs alone. Printed: the median and
the largest absolute percentage error, per feature set (the default is marked), for the default model (the
log-linear fit averaged with the per-workload roofline time fit, see analysis/perf_model.py) and for the
log-linear fit alone (`roofline=False`, the model before issue 14). A stricter check leaves out every GPU of one
architecture at once (Volta, Ampere, Ada, Hopper, Blackwell), so each is predicted by a fit that never saw its
generation. Targets: median <= 15% per workload (issue 6), <= 10% overall on unseen GPUs (issue 14).
No torch, no GPU: it reads the packaged catalogue and published results.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys

from dlbench.analysis import estimate as est

VARIANTS: tuple[tuple[str, ...], ...] = (
    ("flops",),
    ("bandwidth",),
    ("flops", "bandwidth"),
    ("flops", "bandwidth", "l2"),
)
TARGET_MEDIAN_APE = 0.15


TARGET_UNSEEN_MEDIAN_APE = 0.10


def accuracy(features: tuple[str, ...], roofline: bool = True) -> list[dict]:
    """One row per (workload, precision): n GPUs, median and max absolute percentage error, worst GPU."""
    model = est.fit(est.published_points(), features, roofline=roofline)
    if model is None:
        return []
    rows = []
    for key in model.keys:
        res = model.residuals.get(key, {})
        if not res:
            continue
        ape = {g: abs(math.exp(-r) - 1.0) for g, r in res.items()}  # |predicted / observed - 1|
        worst = max(ape, key=ape.get)
        rows.append({"workload": key[0], "precision": key[1], "family": model.family[key],
                     "gpus": len(ape), "median_ape": statistics.median(ape.values()),
                     "max_ape": ape[worst], "worst_gpu": worst,
                     "errors": {g: round(v, 4) for g, v in sorted(ape.items())}})
    return rows


def architecture_out(roofline: bool = True) -> dict:
    """Every GPU of one architecture left out at once: {overall median, max, per architecture median}."""
    from dlbench import catalog
    from dlbench.analysis.perf_model import _fit_grouped, _group

    features = tuple(est.DEFAULT_FEATURES)
    grouped = _group(est.published_points(), features)
    full = est.fit(est.published_points(), features, roofline=roofline, residuals=False)
    arch = {g: catalog.lookup(g).architecture for k in full.keys for g in full.gpus[k]}
    errors: dict[str, list[float]] = {}
    for a in sorted(set(arch.values())):
        held = frozenset(g for g, ga in arch.items() if ga == a)
        sub = _fit_grouped(grouped, features, held, residuals=False, roofline=roofline)
        if sub is None:
            continue
        for key in full.keys:
            for (k, fam), gpus in grouped.items():
                if k != key or fam != full.family[key]:
                    continue
                for g in held & set(gpus):
                    if key in sub.keys:
                        v, x, _ = gpus[g]
                        errors.setdefault(a, []).append(abs(sub.predict_features(key, x) / v - 1.0))
    every = [e for es in errors.values() for e in es]
    return {"overall_median_ape": statistics.median(every), "max_ape": max(every), "points": len(every),
            "by_architecture": {a: {"points": len(es), "median_ape": statistics.median(es)}
                                for a, es in errors.items()}}


def band_coverage() -> dict:
    """How many published single-GPU figures fall inside `dlbench estimate --spec-only`'s band."""
    model = est.get_model()
    inside, total, misses = 0, 0, []
    for key in model.keys:
        for gpu in model.gpus[key]:
            e = est.estimate(gpu, key[0], key[1], spec_only=True)
            if e.samples_per_s is None or e.published_samples_per_s is None:
                continue
            total += 1
            if e.low <= e.published_samples_per_s <= e.high:
                inside += 1
            else:
                misses.append(f"{gpu} {key[0]} {key[1]}")
    return {"inside": inside, "total": total, "misses": misses}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args(argv)
    out = {}
    for features in VARIANTS:
        rows = accuracy(features)
        all_ape = [v for r in rows for v in r["errors"].values()]
        out["+".join(features)] = {
            "default": features == est.DEFAULT_FEATURES, "rows": rows,
            "overall_median_ape": statistics.median(all_ape) if all_ape else None,
        }
    loglin = accuracy(est.DEFAULT_FEATURES, roofline=False)
    loglin_all = [v for r in loglin for v in r["errors"].values()]
    out["flops+bandwidth, log-linear alone"] = {"default": False, "rows": loglin,
                                                "overall_median_ape": statistics.median(loglin_all)}
    unseen = {"default model": architecture_out(True), "log-linear alone": architecture_out(False)}
    coverage = band_coverage()
    if args.json:
        json.dump({"variants": out, "architecture_out": unseen, "band_coverage": coverage}, sys.stdout, indent=2)
        print()
        return 0
    for name, v in out.items():
        mark = "  (default)" if v["default"] else ""
        overall = v["overall_median_ape"]
        print(f"\nfeatures: {name}{mark}; overall median APE "
              f"{'-' if overall is None else f'{overall:.1%}'}")
        print(f"{'workload':<18} {'precision':<9} {'GPUs':>4} {'median APE':>10} {'max APE':>8}  worst GPU")
        for r in v["rows"]:
            flag = "" if r["median_ape"] <= TARGET_MEDIAN_APE else "  > target"
            print(f"{r['workload']:<18} {r['precision']:<9} {r['gpus']:>4} {r['median_ape']:>10.1%} "
                  f"{r['max_ape']:>8.1%}  {r['worst_gpu']}{flag}")
    for name, u in unseen.items():
        archs = ", ".join(f"{a} {v['median_ape']:.1%} ({v['points']})" for a, v in u["by_architecture"].items())
        print(f"\narchitecture left out ({name}): {u['points']} figures, median APE {u['overall_median_ape']:.1%}, "
              f"largest {u['max_ape']:.1%}; by architecture: {archs}")
    if coverage["total"]:
        print(f"\nband coverage (default model, each GPU predicted without its own results): "
              f"{coverage['inside']}/{coverage['total']} published figures inside "
              f"({coverage['inside'] / coverage['total']:.0%}); outside: {', '.join(coverage['misses'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
