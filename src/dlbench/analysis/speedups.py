"""Speed-ups within one run, as the report charts them: `dlbench report --latest`.

Speed-ups pair results of one document that differ in exactly one thing: compile mode (vs eager) or precision
(mixed precision vs TF32, or vs FP32 where TF32 was not measured). For precision the batch size may differ too:
`dlbench run` gives AMP twice the full-precision default batch on a GPU, and the published benchmarks likewise
compare each precision at its own batch; a baseline at the same batch size is preferred where one was measured.
Multi-GPU scaling is `analysis.scaling`.
"""

from __future__ import annotations

from typing import Any

from dlbench.analysis.configuration import CONFIG_KEYS, config_key

_MIXED = ("amp-fp16", "amp-bf16")
# Baselines for mixed precision, most relevant first: TF32 is what full precision means on Ampere and later.
_FULL_PRECISION = ("tf32", "fp32")


def _ok(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in results if r.get("status") == "ok" and r.get("samples_per_s")]


def _key_without(result: dict[str, Any], *fields: str) -> tuple:
    return tuple(v for k, v in zip(CONFIG_KEYS, config_key(result), strict=True) if k not in fields)


def speedups(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Compile-vs-eager and mixed-vs-full-precision speed-ups among the ok results of one run.

    Each entry: `kind` ("compile" or "precision"), `workload`, `label` (what changed, e.g. "default vs eager"),
    `context` (what stayed fixed, e.g. "tf32"), `speedup` (variant samples/s / baseline samples/s),
    `baseline_samples_per_s`, `variant_samples_per_s`, `world_size`, `batch_size`, `baseline_batch_size`,
    `seq_len`.
    """
    ok = _ok(results)
    out: list[dict[str, Any]] = []
    by_no_compile = {}
    for r in ok:
        if (r.get("compile") or "off") == "off":
            by_no_compile[_key_without(r, "compile")] = r
    for r in ok:
        mode = r.get("compile") or "off"
        base = by_no_compile.get(_key_without(r, "compile"))
        if mode != "off" and base is not None:
            out.append(_entry("compile", r, base, f"compile={mode} vs eager", r["precision"]))
    by_no_precision: dict[tuple, dict[str, list[dict[str, Any]]]] = {}
    for r in ok:
        by_no_precision.setdefault(_key_without(r, "precision", "batch_size"), {}).setdefault(
            r["precision"], []).append(r)
    for r in ok:
        if r["precision"] not in _MIXED:
            continue
        group = by_no_precision.get(_key_without(r, "precision", "batch_size"), {})
        base_precision = next((p for p in _FULL_PRECISION if p in group), None)
        if base_precision is not None:
            context = "eager" if (r.get("compile") or "off") == "off" else f"compile={r['compile']}"
            out.append(_entry("precision", r, _baseline(group[base_precision], r), f"{r['precision']} vs "
                              f"{base_precision}", context))
    return out


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
        "speedup": float(variant["samples_per_s"]) / float(base["samples_per_s"]),
        "baseline_samples_per_s": float(base["samples_per_s"]),
        "variant_samples_per_s": float(variant["samples_per_s"]),
        "world_size": variant.get("world_size") or 1,
        "batch_size": variant.get("batch_size"),
        "baseline_batch_size": base.get("batch_size"),
        "seq_len": variant.get("seq_len"),
    }
