"""Leave-one-GPU-out accuracy of `dlbench estimate`: `python benchmarks/estimator_accuracy.py [--json]`.

For each workload and precision with published single-GPU results, every calibrating GPU is left out in turn,
the model is fitted on the others and the left-out GPU predicted from its specs alone. Printed: the median and
the largest absolute percentage error, per feature set (the default is marked). Target: median <= 15%.
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


def accuracy(features: tuple[str, ...]) -> list[dict]:
    """One row per (workload, precision): n GPUs, median and max absolute percentage error, worst GPU."""
    model = est.fit(est.published_points(), features)
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
    coverage = band_coverage()
    if args.json:
        json.dump({"variants": out, "band_coverage": coverage}, sys.stdout, indent=2)
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
    if coverage["total"]:
        print(f"\nband coverage (default model, each GPU predicted without its own results): "
              f"{coverage['inside']}/{coverage['total']} published figures inside "
              f"({coverage['inside'] / coverage['total']:.0%}); outside: {', '.join(coverage['misses'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
