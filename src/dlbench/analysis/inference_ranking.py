"""Place an infer or generate result among published inference figures: the "vs published" of `dlbench run
--scenario infer|generate`, `dlbench results show` and the report's tokens/s ranking.

Only rows `dlbench.reference.inference.comparable_rows` accepts take part (PyTorch or gpt-fast, one GPU, the
same workload, precision and metric; a llama.cpp Q4_K_M or an MLPerf TensorRT figure is context, never a
target). What is compared:

- infer: offline `samples_per_s` against the published offline rows at the same batch size;
- generate: `decode_tokens_per_s` against published decode rows at the same batch size (gpt-fast publishes
  batch 1 after a 5-token prompt; at batch 1 decode reads the weights once per token whatever the prompt, so
  the prompt length is named in the text rather than required to match).

The answer has the keys of `analysis.ranking.vs_published` (`ratio`, `rank`, `rank_of`, `text`, `reason`,
`sources`, ...), so the table and the report show both the same way; `metric` names what was compared.
"""

from __future__ import annotations

import statistics
from typing import Any

from dlbench.schema.metrics import scenario, value

# scenario -> (the result's metric, the published metric, the published modes it is set against)
COMPARED: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "infer": ("samples_per_s", "samples_per_s", ("offline",)),
    "generate": ("decode_tokens_per_s", "decode_tokens_per_s", ("decode_bs1", "tg128", "tg512", "offline")),
}
_COMPARABLE_FLAVOURS = (None, "full")


def _rows_default(scenario_name: str, workload: str, precision: str, metric: str,
                  batch_size: int | None) -> list[Any]:
    from dlbench.errors import BadInput
    from dlbench.reference.inference import comparable_rows

    try:
        return comparable_rows(scenario_name, workload, precision, metric, batch_size=batch_size)
    except BadInput:  # a workload or precision no published row names
        return []


def not_comparable_reason(result: dict[str, Any], gpu_name: str | None) -> str | None:
    """Why an infer or generate result cannot be set against published figures at all, else None."""
    name = scenario(result)
    if name not in COMPARED:
        return f"a {name} result: published inference figures are for infer and generate"
    if result.get("status") != "ok":
        return f"status {result.get('status')}: nothing measured"
    if value(result, COMPARED[name][0]) is None:
        return f"no {COMPARED[name][0]} measured"
    if result.get("flavour") not in _COMPARABLE_FLAVOURS:
        return f"{result.get('flavour')} flavour: published figures are for the full-size models"
    if not gpu_name:
        return f"ran on {result.get('device') or 'an unknown device'}: published figures are for GPUs"
    return None


def published_inference_medians(result: dict[str, Any], rows: list[Any] | None = None) -> list[dict[str, Any]]:
    """One entry per published GPU comparable with `result`: `gpu`, `value` (median of its rows), `count`,
    `sources`, `framework`; fastest first. `rows` replaces the packaged figures (tests)."""
    name = scenario(result)
    if name not in COMPARED:
        return []
    _, published_metric, modes = COMPARED[name]
    batch = result.get("batch_size")
    if rows is None:
        rows = _rows_default(name, str(result.get("workload")), str(result.get("precision")), published_metric,
                             int(batch) if batch else None)
    else:
        rows = [r for r in rows if r.scenario == name and r.workload == result.get("workload")
                and r.precision == result.get("precision") and r.metric == published_metric
                and r.gpu_count == 1 and r.comparable
                and (batch is None or r.batch_size is None or r.batch_size == int(batch))]
    by_gpu: dict[str, list[Any]] = {}
    for row in rows:
        if row.mode in modes:
            by_gpu.setdefault(row.gpu, []).append(row)
    out = [{"gpu": gpu, "value": statistics.median(float(r.value) for r in found), "count": len(found),
            "sources": sorted({r.source for r in found}),
            "framework": sorted({r.framework for r in found})} for gpu, found in by_gpu.items()]
    return sorted(out, key=lambda e: -e["value"])


def vs_published_inference(result: dict[str, Any], gpu_name: str | None, rows: list[Any] | None = None,
                           memory_bytes: int | None = None) -> dict[str, Any]:
    """How an infer or generate result compares with comparable published figures (keys as
    `analysis.ranking.vs_published`, plus `metric` and `published_median`)."""
    name = scenario(result)
    metric = COMPARED.get(name, (None,))[0]
    out: dict[str, Any] = {"gpu": None, "ratio": None, "published_median": None, "published_count": 0,
                           "rank": None, "rank_of": None, "sources": [], "text": None, "reason": None,
                           "metric": metric}
    reason = not_comparable_reason(result, gpu_name)
    if reason:
        out["reason"] = reason
        return out
    from dlbench import catalog

    canonical = catalog.canonical_name(gpu_name, memory_bytes) if gpu_name else None
    out["gpu"] = canonical
    medians = published_inference_medians(result, rows)
    what = f"{result.get('workload')} {result.get('precision')} batch {result.get('batch_size')}"
    if not medians:
        out["reason"] = f"no comparable published {name} figures for {what} ({metric})"
        return out
    measured = float(value(result, metric) or 0.0)
    own, out["rank"], out["rank_of"] = place_among(medians, canonical, measured, "value")
    if own is not None:
        out["ratio"] = measured / own["value"]
        out["published_median"] = own["value"]
        out["published_count"] = own["count"]
        out["sources"] = own["sources"]
        n = own["count"]
        out["text"] = f"{out['ratio']:.2f}x published median ({n} figure{'s' if n != 1 else ''}, {metric})"
    else:
        out["sources"] = sorted({s for m in medians for s in m["sources"]})
        out["text"] = f"rank {out['rank']} of {out['rank_of']} published GPUs ({metric})"
        out["reason"] = (f"GPU {gpu_name!r} is not in the catalogue: ranked, but no same-GPU ratio"
                         if canonical is None else f"no published {what} figure for {canonical}")
    return out


def rank_inference(entries: list[dict[str, Any]], result: dict[str, Any],
                   rows: list[Any] | None = None) -> list[dict[str, Any]]:
    """The published GPUs' medians comparable with `result` plus this run's `entries` (each `{"label",
    "value"}`), fastest first: `label`, `value`, `is_this_run`, `count`, `sources`. Empty when nothing
    published compares (the report's tokens/s ranking chart)."""
    return with_this_run(published_inference_medians(result, rows), entries, "value")


def place_among(medians: list[dict[str, Any]], canonical: str | None, measured: float,
                key: str) -> tuple[dict[str, Any] | None, int, int]:
    """Where `measured` stands among the published GPUs' `medians` (each `gpu` and its `key` value): the median of
    this run's own GPU (`canonical`; None when none was published), this run's rank among the others, fastest 1,
    and how many it is ranked among (the others plus this run)."""
    own = next((m for m in medians if canonical is not None and m["gpu"] == canonical), None)
    others = [m for m in medians if m is not own]
    return own, 1 + sum(1 for m in others if m[key] > measured), len(others) + 1


def with_this_run(medians: list[dict[str, Any]], entries: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The published GPUs' `medians` plus this run's `entries` (each `label` and its `key` value; none left out
    unless it has no value), fastest first: `label`, `key`, `is_this_run`, `count`, `sources`. Empty when no
    median was published."""
    if not medians:
        return []
    rows = [{"label": m["gpu"], key: m[key], "is_this_run": False, "count": m["count"],
             "sources": m["sources"]} for m in medians]
    rows += [{"label": e["label"], key: float(e[key]), "is_this_run": True, "count": 1,
              "sources": ["this run"]} for e in entries if e.get(key)]
    return sorted(rows, key=lambda r: r[key], reverse=True)
