"""Leave-one-GPU-out accuracy of `dlbench estimate --scenario generate`: `python benchmarks/llm_estimator_accuracy.py [--json]`.

Every published single-GPU decode and prefill figure (llama.cpp's llama-bench tables, gpt-fast's README) is
predicted by `estimate_generate(..., spec_only=True)` at the row's model, precision and context: the row's GPU is
left out of every fit, so the figure is predicted from the GPU's catalogue specs and the other GPUs' rows. The
error is |predicted / published - 1|. Target (issue 14): median <= 15% for decode and for prefill.
No torch, no GPU: it reads the packaged catalogue and reference rows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict

from dlbench.analysis import llm_estimate as llm
from dlbench.reference.inference import inference_for

TARGET_MEDIAN_APE = 0.15
# A row's precision -> the `-p` a user would type for it.
CLI_PRECISION = {"fp16": "fp16", "bf16": "bf16", "int8-weight-only": "int8", "int4-weight-only": "int4",
                 "q8_0": "q8_0", "q4_0": "q4_0", "q4_k_m": "q4_k_m"}


def predictions() -> list[dict]:
    """One dict per published single-GPU batch-1 decode or prefill row: published, predicted, error, basis."""
    out = []
    for row in inference_for(scenario="generate", gpu_count=1):
        if row.metric not in llm.METRICS or row.framework not in llm.SOFTWARE or row.batch_size not in (None, 1):
            continue
        decode = row.metric == "decode_tokens_per_s"
        context = llm._decode_context(row) if decode else (row.prompt_len or 512)
        e = llm.estimate_generate(row.workload, CLI_PRECISION[row.precision], row.gpu, context=max(context, 1),
                                  spec_only=True)
        phase = e.decode if decode else e.prefill
        if phase is None:
            continue
        out.append({"software": row.framework, "workload": row.workload, "precision": row.precision,
                    "metric": row.metric, "gpu": row.gpu, "published": row.value,
                    "predicted": round(phase.tokens_per_s, 2), "low": round(phase.low, 2),
                    "high": round(phase.high, 2), "ape": abs(phase.tokens_per_s / row.value - 1.0),
                    "calibrated_on": phase.calibrated_on})
    return out


def table(preds: list[dict]) -> list[dict]:
    groups: dict = defaultdict(list)
    for p in preds:
        groups[(p["metric"], p["software"], p["workload"], p["precision"])].append(p)
    rows = []
    for (metric, sw, wl, prec), ps in sorted(groups.items()):
        worst = max(ps, key=lambda p: p["ape"])
        rows.append({"metric": metric, "software": sw, "workload": wl, "precision": prec, "gpus": len(ps),
                     "median_ape": statistics.median(p["ape"] for p in ps), "max_ape": worst["ape"],
                     "worst_gpu": worst["gpu"]})
    return rows


def summary(preds: list[dict]) -> dict:
    out = {}
    for metric in llm.METRICS:
        ps = [p for p in preds if p["metric"] == metric]
        if not ps:
            continue
        worst = max(ps, key=lambda p: p["ape"])
        inside = sum(p["low"] <= p["published"] <= p["high"] for p in ps)
        out[metric] = {"rows": len(ps), "median_ape": statistics.median(p["ape"] for p in ps),
                       "max_ape": worst["ape"], "worst": f"{worst['gpu']} {worst['workload']} {worst['precision']}",
                       "inside_band": inside, "meets_target": statistics.median(p["ape"] for p in ps)
                       <= TARGET_MEDIAN_APE}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print every prediction and the tables as JSON")
    args = parser.parse_args(argv)
    preds = predictions()
    rows, summ = table(preds), summary(preds)
    if args.json:
        json.dump({"predictions": preds, "table": rows, "summary": summ}, sys.stdout, indent=1)
        print()
        return 0
    print("| phase | software | model | precision | GPUs | median error | largest error (GPU) |")
    print("|---|---|---|---|---:|---:|---|")
    for r in rows:
        phase = r["metric"].split("_")[0]
        print(f"| {phase} | {r['software']} | {r['workload']} | {r['precision']} | {r['gpus']} | "
              f"{r['median_ape']:.1%} | {r['max_ape']:.1%} ({r['worst_gpu']}) |")
    print()
    for metric, s in summ.items():
        print(f"{metric.split('_')[0]}: {s['rows']} rows, median {s['median_ape']:.1%}, largest {s['max_ape']:.1%} "
              f"({s['worst']}), {s['inside_band']}/{s['rows']} inside the band; target median <= "
              f"{TARGET_MEDIAN_APE:.0%}: {'met' if s['meets_target'] else 'missed'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
