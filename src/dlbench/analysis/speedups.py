"""Speed-ups within one run, as the report charts them: `dlbench report --latest`.

Speed-ups pair results of one document that differ in exactly one thing: compile mode (vs eager) or precision
(mixed precision vs TF32, or vs FP32 where TF32 was not measured). For precision the batch size may differ too:
`dlbench run` gives AMP twice the full-precision default batch on a GPU, and the published benchmarks likewise
compare each precision at its own batch; a baseline at the same batch size is preferred where one was measured.
Multi-GPU scaling is `analysis.measured_scaling`.
"""

from __future__ import annotations

from typing import Any

from dlbench.analysis.configuration import config_key_without
from dlbench.schema.metrics import throughput

_MIXED = ("amp-fp16", "amp-bf16")
# Baselines for mixed precision, most relevant first: TF32 is what full precision means on Ampere and later.
_FULL_PRECISION = ("tf32", "fp32")


def _ok(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in results if r.get("status") == "ok" and throughput(r)]


def speedups(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Compile-vs-eager and mixed-vs-full-precision speed-ups among the ok results of one run.

    Each entry: `kind` ("compile" or "precision"), `workload`, `label` (what changed, e.g. "default vs eager"),
    `context` (what stayed fixed, e.g. "tf32"), `speedup` (variant samples/s / baseline samples/s),
    `baseline_samples_per_s`, `variant_samples_per_s`, `world_size`, `batch_size`, `baseline_batch_size`,
    `seq_len`.
    """
    ok = _ok(results)
    out: list[dict[str, Any]] = []
    for r in ok:
        base = compile_baseline(r, ok)
        if base is not None:
            out.append(_entry("compile", r, base, f"compile={r['compile']} vs eager", r["precision"]))
    for r in ok:
        base = precision_baseline(r, ok)
        if base is not None:
            context = "eager" if (r.get("compile") or "off") == "off" else f"compile={r['compile']}"
            out.append(_entry("precision", r, base, f"{r['precision']} vs {base['precision']}", context))
    return out


def compile_baseline(result: dict[str, Any], candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The eager result among `candidates` that a compiled `result` is divided by: everything else the same.

    None for an eager `result` or when no such ok result is among `candidates` (the last one wins when several
    are, as a re-run replaces a run).
    """
    if (result.get("compile") or "off") == "off":
        return None
    key = config_key_without(result, "compile")
    found = [c for c in _ok(candidates) if (c.get("compile") or "off") == "off" and config_key_without(c, "compile") == key]
    return found[-1] if found else None


def precision_baseline(result: dict[str, Any], candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The full-precision result among `candidates` that a mixed-precision `result` is divided by.

    TF32 where measured, else FP32; the same everything but precision and batch size, and of those the same
    batch size if measured, else the largest batch. None for a full-precision `result` or without a partner.
    """
    if result.get("precision") not in _MIXED:
        return None
    key = config_key_without(result, "precision", "batch_size")
    same = [c for c in _ok(candidates) if config_key_without(c, "precision", "batch_size") == key]
    for precision in _FULL_PRECISION:
        found = [c for c in same if c.get("precision") == precision]
        if found:
            return _baseline(found, result)
    return None


def _baseline(candidates: list[dict[str, Any]], variant: dict[str, Any]) -> dict[str, Any]:
    """The full-precision result to divide by: the same batch size if measured, else the largest batch."""
    same = [c for c in candidates if c.get("batch_size") == variant.get("batch_size")]
    return (same or sorted(candidates, key=lambda c: c.get("batch_size") or 0))[-1]


def _entry(kind: str, variant: dict[str, Any], base: dict[str, Any], label: str, context: str) -> dict[str, Any]:
    return {
        "kind": kind,
        "workload": variant["workload"],
        "label": label,
        "context": context,
        "speedup": throughput(variant) / throughput(base),
        "baseline_samples_per_s": throughput(base),
        "variant_samples_per_s": throughput(variant),
        "world_size": variant.get("world_size") or 1,
        "batch_size": variant.get("batch_size"),
        "baseline_batch_size": base.get("batch_size"),
        "seq_len": variant.get("seq_len"),
    }
