"""Place a result among published results for other GPUs: `dlbench compare RUN --published`.

Only like is compared with like: the same workload variant (`bert-large-squad` is SQuAD fine-tuning at 384
tokens, `bert-large-mlm` is pre-training at 128), the same sequence length, the same precision and the same
number of GPUs. A result on a GPU that has published figures gets the ratio to their median; every comparable
result also gets its rank among the published GPUs (one median per GPU). Where nothing matches, the answer says
why instead of comparing unlike things.

Published rows are `dlbench.reference.PublishedResult` (or any object with the same fields); GPU names are made
canonical through `dlbench.catalog`, so "NVIDIA H100 80GB HBM3" from torch meets "H100 80GB SXM5" from Lambda.
"""

from __future__ import annotations

import statistics
from typing import Any

from dlbench.analysis.inference_ranking import place_among, with_this_run
from dlbench.schema.metrics import scenario, throughput

# Published throughput is for the full-size models; a tiny-flavour result says nothing about them.
_COMPARABLE_FLAVOURS = (None, "full")


def load_published_rows() -> list[Any]:
    """The packaged published results (`dlbench.reference.load_published()`)."""
    from dlbench.reference import load_published

    return list(load_published())


def canonical_gpu(name: str | None, memory_bytes: int | None = None) -> str | None:
    """Canonical catalogue name of a device name, or None when the catalogue does not know it.

    `memory_bytes` tells apart cards that report the same device name (see `catalog.lookup`).
    """
    if not name:
        return None
    from dlbench import catalog

    return catalog.canonical_name(name, memory_bytes)


def result_gpu(document: dict[str, Any], result: dict[str, Any]) -> dict[str, Any] | None:
    """The environment's entry (`name`, `memory_bytes`, ...) for the GPU a result ran on; None on a CPU.

    An MPS result ran on the Apple GPU that the environment lists as "<chip> GPU (MPS)" (the only entry there:
    `telemetry.environment` lists one when torch sees no CUDA device)."""
    device = str(result.get("device") or "")
    gpus = (document.get("environment") or {}).get("gpus") or []
    if device == "mps":
        return next((g for g in gpus if isinstance(g, dict) and str(g.get("name", "")).endswith("(MPS)")), None)
    if not device.startswith("cuda"):
        return None
    index = 0
    if ":" in device:
        try:
            index = int(device.split(":", 1)[1])
        except ValueError:
            return None
    if index >= len(gpus) or not isinstance(gpus[index], dict):
        return None
    return gpus[index]


def result_gpu_name(document: dict[str, Any], result: dict[str, Any]) -> str | None:
    """The device name of the GPU a result ran on, from the document's environment (None on a CPU)."""
    gpu = result_gpu(document, result)
    return gpu.get("name") if gpu else None


def short_source(source: str) -> str:
    """`Lambda deep learning benchmark v2 (NGC 24.10, ...)` -> `Lambda deep learning benchmark v2`."""
    return source.split(" (", 1)[0].strip()


def matching_published(workload: str, precision: str, seq_len: int | None, num_gpus: int,
                       published: list[Any]) -> list[Any]:
    """Published rows with exactly this workload, precision, sequence length and GPU count.

    Rows marked not comparable (NVIDIA's seq-512 BERT figures use sequence binning, which fixed-length
    synthetic data cannot reproduce) are left out.
    """
    return [p for p in published
            if p.workload == workload and p.precision == precision and p.seq_len == seq_len
            and int(p.num_gpus) == int(num_gpus) and getattr(p, "comparable", True)]


def published_medians(workload: str, precision: str, seq_len: int | None, num_gpus: int = 1,
                      published: list[Any] | None = None) -> list[dict[str, Any]]:
    """One entry per published GPU: median samples/s over its rows, row count and sources; fastest first."""
    if published is None:
        published = load_published_rows()
    by_gpu: dict[str, list[Any]] = {}
    for p in matching_published(workload, precision, seq_len, num_gpus, published):
        by_gpu.setdefault(p.gpu, []).append(p)
    out = [{
        "gpu": gpu,
        "samples_per_s": statistics.median(float(r.samples_per_s) for r in rows),
        "count": len(rows),
        "sources": sorted({short_source(r.source) for r in rows}),
    } for gpu, rows in by_gpu.items()]
    return sorted(out, key=lambda e: e["samples_per_s"], reverse=True)


def vs_published(result: dict[str, Any], gpu_name: str | None, published: list[Any] | None = None,
                 memory_bytes: int | None = None) -> dict[str, Any]:
    """How one result compares with published results.

    Returns `gpu` (canonical or None), `ratio` (this / published median for the same GPU, or None),
    `published_median_samples_per_s`, `published_count`, `rank` and `rank_of` (among published GPUs with the
    same workload, precision, seq_len and GPU count, this result counted in place of its own GPU), `sources`,
    `text` (a short display string) and `reason` (why nothing could be compared, else None). An infer or
    generate result is set against the published inference figures instead (`analysis.inference_ranking`).
    """
    out: dict[str, Any] = {"gpu": None, "ratio": None, "published_median_samples_per_s": None,
                           "published_count": 0, "rank": None, "rank_of": None, "sources": [], "text": None,
                           "reason": None}
    if scenario(result) != "train":  # infer, generate: against the published inference figures
        from dlbench.analysis.inference_ranking import vs_published_inference

        return vs_published_inference(result, gpu_name, memory_bytes=memory_bytes)
    reason = not_comparable_reason(result, gpu_name)
    if reason:
        out["reason"] = reason
        return out
    if published is None:
        published = load_published_rows()
    canonical = canonical_gpu(gpu_name, memory_bytes)
    out["gpu"] = canonical
    workload, precision, seq_len = result["workload"], result["precision"], result.get("seq_len")
    num_gpus = int(result.get("world_size") or 1)
    medians = published_medians(workload, precision, seq_len, num_gpus, published)
    if not medians:
        out["reason"] = (f"no published results for {_describe(workload, precision, seq_len, num_gpus)}"
                         f"{_near_misses(workload, precision, seq_len, num_gpus, published)}")
        return out
    value = throughput(result)
    own, out["rank"], out["rank_of"] = place_among(medians, canonical, value, "samples_per_s")
    if own is not None:
        out["ratio"] = value / own["samples_per_s"]
        out["published_median_samples_per_s"] = own["samples_per_s"]
        out["published_count"] = own["count"]
        out["sources"] = own["sources"]
        n = own["count"]
        out["text"] = f"{out['ratio']:.2f}x published median ({n} result{'s' if n != 1 else ''})"
    else:
        out["sources"] = sorted({s for m in medians for s in m["sources"]})
        out["text"] = f"rank {out['rank']} of {out['rank_of']} published GPUs"
        if canonical is None:
            out["reason"] = f"GPU {gpu_name!r} {_catalogue_miss(gpu_name)}: ranked, but no same-GPU ratio"
        else:
            out["reason"] = f"no published {_describe(workload, precision, seq_len, num_gpus)} for {canonical}"
    return out


def rank_among_published(entries: list[dict[str, Any]], workload: str, precision: str, seq_len: int | None,
                         num_gpus: int = 1, published: list[Any] | None = None) -> list[dict[str, Any]]:
    """The published GPUs' medians plus this run's `entries` (each `{"label", "samples_per_s"}`), fastest first.

    Each row: `label`, `samples_per_s`, `is_this_run`, `count` (published rows behind a median), `sources`.
    Used by the report's ranking bar chart; empty when nothing published matches.
    """
    return with_this_run(published_medians(workload, precision, seq_len, num_gpus, published), entries,
                         "samples_per_s")


def add_vs_published(results: list[dict[str, Any]], environment: dict[str, Any],
                     published: list[Any] | None = None) -> list[dict[str, Any]]:
    """Set `vs_published` on every result (in place; returns `results`): what `dlbench run` stores and shows.

    `environment` is the document's environment block (it names the GPUs the results ran on).
    """
    if published is None:
        published = load_published_rows()
    document = {"environment": environment}
    for result in results:
        result["vs_published"] = vs_published_in(document, result, published)
    return results


def annotate_document(document: dict[str, Any], published: list[Any] | None = None) -> list[dict[str, Any]]:
    """`vs_published` for every result of a document, in order (the "vs published" column)."""
    if published is None:
        published = load_published_rows()
    return [vs_published_in(document, r, published) for r in document.get("results") or []]


def vs_published_in(document: dict[str, Any], result: dict[str, Any], published: list[Any] | None = None):
    """`vs_published` for a result of `document`, with the GPU name and memory from its environment."""
    gpu = result_gpu(document, result) or {}
    return vs_published(result, gpu.get("name"), published, gpu.get("memory_bytes"))


def not_comparable_reason(result: dict[str, Any], gpu_name: str | None) -> str | None:
    """Why a result cannot be set against published results at all (failed, tiny, not on a GPU), else None."""
    if result.get("status") != "ok":
        return f"status {result.get('status')}: nothing measured"
    if scenario(result) != "train":
        return f"a {scenario(result)} result: published results are for training"
    if throughput(result) is None:
        return "no throughput measured"
    if result.get("flavour") not in _COMPARABLE_FLAVOURS:
        return f"{result.get('flavour')} flavour: published results are for the full-size models"
    if not gpu_name:
        return f"ran on {result.get('device') or 'an unknown device'}: published results are for GPUs"
    return None


def _catalogue_miss(name: str | None) -> str:
    """Why the catalogue gives no row for a device name: unknown, or shared by several rows (one GCD of an
    MI250 or an MI250X reports "AMD Instinct MI250X/MI250" under ROCm, and both cards have the same memory)."""
    from dlbench import catalog

    rows = catalog.candidates(name) if name else []
    if len(rows) > 1:
        return f"matches several catalogue GPUs ({', '.join(spec.name for spec in rows)})"
    return "is not in the catalogue"


def _describe(workload: str, precision: str, seq_len: int | None, num_gpus: int) -> str:
    seq = f" seq {seq_len}" if seq_len else ""
    return f"{workload}{seq} {precision} on {num_gpus} GPU{'s' if num_gpus != 1 else ''}"


def _near_misses(workload: str, precision: str, seq_len: int | None, num_gpus: int, published: list[Any]) -> str:
    """A hint naming what is published for this workload, so the user sees what would be comparable."""
    same = [p for p in published if p.workload == workload]
    if not same:
        return " (nothing is published for this workload)"
    options = sorted({(p.precision, p.seq_len, int(p.num_gpus)) for p in same},
                     key=lambda t: (t[0], t[1] or 0, t[2]))
    shown = ", ".join(f"{prec}{f' seq {s}' if s else ''} x{n}" for prec, s, n in options[:6])
    more = ", ..." if len(options) > 6 else ""
    return f" (published: {shown}{more})"
