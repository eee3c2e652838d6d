"""Turn the H100 plan's result documents into issue 7's table (Markdown, or JSON rows).

Exercise it with `PYTHONPATH=src python benchmarks/h100_collect.py benchmarks/results/h100/*.json`
(`--json` prints the rows instead of the table).

One row per `ok` result (the tiny smoke run and the `auto-*` search steps included, marked by their batch
size). Columns:
- samples/s and CV across repeats, as measured;
- MFU = samples/s x FLOPs per sample / dense peak FLOP/s of the GPU for the precision, from the catalogue
  (`dlbench.catalog.peak_flops_per_s`: TF32 / FP16 / BF16 tensor, non-tensor FP32 for fp32);
- compile speed-up = samples/s of this compiled result / the eager result of the same workload, sequence
  length, precision and batch size (blank for eager rows or without an eager partner);
- AMP speed-up = samples/s of this AMP result / the tf32 result (fp32 where no tf32) of the same workload,
  sequence length and compile mode; batch sizes may differ (AMP's default batch is twice the tf32 one), the
  same batch is preferred where measured, else the largest;
  both pair results as `dlbench report`'s speed-up chart does (`dlbench.analysis.speedups`), looking in the
  same document first, then in every document from the same GPU;
- vs published = samples/s / the median published single-GPU figure for the same GPU, workload, sequence
  length and precision (`dlbench.reference.median_for`; blank where none is published).
No torch is imported; the documents are validated with `dlbench.schema.load_document`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlbench.analysis.speedups import compile_baseline, precision_baseline
from dlbench.catalog import lookup, peak_flops_per_s
from dlbench.reference import median_for
from dlbench.schema.validate import load_document


def _gpu(doc: dict[str, Any]) -> tuple[str | None, Any]:
    """(name torch reported, catalogue spec or None) of the document's first GPU."""
    gpus = (doc.get("environment") or {}).get("gpus") or []
    if not gpus:
        return None, None
    name = gpus[0].get("name")
    return name, lookup(name, gpus[0].get("memory_bytes")) if name else None


def collect(docs: list[dict[str, Any]], sources: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per ok result of `docs`, with MFU, speed-ups and the published ratio (None where unknown).

    `sources` names each document (its file) in the rows' `source`; speed-up partners are looked for in the
    same document first, then in all of them (the plan puts tf32 and AMP compiled runs in separate steps).
    """
    rows: list[dict[str, Any]] = []
    gpus = [_gpu(doc) for doc in docs]
    for number, (doc, (gpu_name, spec)) in enumerate(zip(docs, gpus, strict=True)):
        source = sources[number] if sources else str(number)
        gpu = spec.name if spec is not None else gpu_name
        same_gpu = [r for d, (name, s) in zip(docs, gpus, strict=True)
                    if (s.name if s is not None else name) == gpu for r in d.get("results", [])]
        for result in doc.get("results", []):
            if result.get("status") != "ok" or not result.get("samples_per_s"):
                continue
            precision = result["precision"]
            world = result.get("world_size") or 1
            per_gpu = result["samples_per_s"] / world
            peak = peak_flops_per_s(spec, precision) if spec is not None else None
            flops = result.get("flops_per_sample")
            rows.append({
                "workload": result["workload"] + (" [tiny]" if result.get("flavour") == "tiny" else ""),
                "seq_len": result.get("seq_len"),
                "precision": precision,
                "compile": result["compile"],
                "batch_size": result["batch_size"],
                "world_size": world,
                "samples_per_s": result["samples_per_s"],
                "cv": result.get("cv"),
                "compile_time_s": result.get("compile_time_s"),
                "mfu": per_gpu * flops / peak if peak and flops else None,
                "gpu": gpu,
                "source": source,
                "compile_speedup": _speedup(result, compile_baseline, doc.get("results", []), same_gpu),
                "amp_speedup": _speedup(result, precision_baseline, doc.get("results", []), same_gpu),
                "_canonical": spec.name if spec is not None else None,
                "_tiny": result.get("flavour") == "tiny",
            })
    for row in rows:
        published = None
        if row["_canonical"] and not row["_tiny"]:
            base = row["workload"]
            published = median_for(row["_canonical"], base, row["precision"], row["seq_len"], row["world_size"])
        row["published_samples_per_s"] = published
        row["vs_published"] = row["samples_per_s"] / published if published else None
    for row in rows:
        del row["_canonical"], row["_tiny"]
    return rows


def _speedup(result: dict[str, Any], baseline: Callable[..., dict[str, Any] | None], same_document: list[dict[str, Any]],
             same_gpu: list[dict[str, Any]]) -> float | None:
    """samples/s of `result` / its `baseline` partner's, from the same document if it has one, else any."""
    base = baseline(result, same_document) or baseline(result, same_gpu)
    return result["samples_per_s"] / base["samples_per_s"] if base else None


def _fmt(value: Any, pattern: str) -> str:
    return "" if value is None else pattern.format(value)


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table issue 7 asks for (samples/s, MFU, compile and AMP speed-ups, CV, vs published)."""
    head = ("| workload | seq | precision | compile | batch | samples/s | CV | MFU | compile speed-up | "
            "AMP speed-up | compile time | published | vs published |")
    lines = [head, "|" + "---|" * 13]
    order = sorted(rows, key=lambda r: (r["workload"], r["seq_len"] or 0, r["precision"], r["compile"],
                                        r["batch_size"]))
    for r in order:
        lines.append("| " + " | ".join([
            r["workload"], _fmt(r["seq_len"], "{}"), r["precision"], r["compile"], str(r["batch_size"]),
            f"{r['samples_per_s']:,.1f}", _fmt(r["cv"] * 100 if r["cv"] is not None else None, "{:.1f}%"),
            _fmt(r["mfu"] * 100 if r["mfu"] is not None else None, "{:.1f}%"),
            _fmt(r["compile_speedup"], "{:.2f}x"), _fmt(r["amp_speedup"], "{:.2f}x"),
            _fmt(r["compile_time_s"], "{:.0f} s"), _fmt(r["published_samples_per_s"], "{:,.0f}"),
            _fmt(r["vs_published"], "{:.2f}x"),
        ]) + " |")
    gpus = sorted({r["gpu"] for r in rows if r["gpu"]})
    if gpus:
        lines.append("")
        lines.append(f"GPU: {', '.join(gpus)}. MFU against the catalogue's dense peak for the precision.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="result documents (dlbench run --json) to tabulate")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of Markdown")
    args = parser.parse_args(argv)
    docs, sources = [], []
    for path in args.paths:
        try:
            docs.append(load_document(path))
        except Exception as exc:  # noqa: BLE001 - say which file and go on with the others
            print(f"skipping {path}: {exc}", file=sys.stderr)
            continue
        sources.append(Path(path).stem)
    rows = collect(docs, sources)
    print(json.dumps(rows, indent=2) if args.json else markdown(rows))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
