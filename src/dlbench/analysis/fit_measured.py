"""Measured beside estimated: the stored generate run closest to a `dlbench fit --task serve` question.

Exercise it with `dlbench fit llama-3.2-1b --task serve` after `dlbench run --scenario generate -w llama-3.2-1b`
stored a full-flavour run. Nothing here imports torch or opens the store: the command hands in the documents.

A generate result (scenarios/generate.py) records what the served model held and used:
- `weight_bytes`: every parameter and buffer as stored after casting or quantizing (a tied embedding once),
  compared with the estimate's weights term;
- `peak_memory_bytes` / `peak_reserved_bytes` (CUDA only: `torch.cuda.max_memory_allocated` and
  `max_memory_reserved` over the measured generations), compared with the estimate's total. torch's counters do not
  see the CUDA context, so the estimate is also given without its fixed per-GPU overhead (`FIXED_OVERHEAD_BYTES`).

A result matches when its workload is the model, its precision the fit precision (`GENERATE_PRECISION`), its
flavour full (a --tiny run is a different, much smaller shape) and its status ok. Of those the closest shape
wins: the same batch and context (prompt_len + new_tokens) if stored, else the nearest on a log scale (batch
first), the newest on ties. The estimate beside a measurement is always recomputed at the measured shape, so the
two describe the same thing even when the question asked about another context or batch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dlbench.analysis.fit import FIXED_OVERHEAD_BYTES, memory_needed
from dlbench.catalog.models import ModelShape

# The generate scenario's name for each serve precision of `dlbench fit` (fp32 has no fit counterpart).
GENERATE_PRECISION: dict[str, str] = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8",
                                      "int8": "int8-weight-only", "int4": "int4-weight-only"}


@dataclass(frozen=True)
class MeasuredServe:
    """One stored generate result set against the serve estimate at its own shape."""

    run_id: str
    created_at: str | None
    gpu: str | None
    device: str | None
    precision: str
    batch: int
    context: int
    prompt_len: int
    new_tokens: int
    same_shape: bool  # batch and context equal the question's
    weight_bytes: float | None
    estimated_weight_bytes: float
    peak_memory_bytes: float | None
    peak_reserved_bytes: float | None
    estimated_total_bytes: float  # at the measured batch and context
    tiny_ignored: int  # --tiny results of the same model and precision left out

    @property
    def estimated_without_context_bytes(self) -> float:
        """The estimate less the fixed per-GPU overhead (CUDA context), which torch's peak counters never see."""
        return self.estimated_total_bytes - FIXED_OVERHEAD_BYTES

    def to_dict(self) -> dict[str, Any]:
        def ratio(measured: float | None, estimated: float) -> float | None:
            return measured / estimated if measured is not None and estimated else None

        return {
            "run_id": self.run_id, "created_at": self.created_at, "gpu": self.gpu, "device": self.device,
            "precision": self.precision, "batch": self.batch, "context": self.context,
            "prompt_len": self.prompt_len, "new_tokens": self.new_tokens, "same_shape": self.same_shape,
            "weight_bytes": self.weight_bytes, "estimated_weight_bytes": self.estimated_weight_bytes,
            "weight_ratio": ratio(self.weight_bytes, self.estimated_weight_bytes),
            "peak_memory_bytes": self.peak_memory_bytes, "peak_reserved_bytes": self.peak_reserved_bytes,
            "estimated_total_bytes": self.estimated_total_bytes,
            "estimated_without_context_bytes": self.estimated_without_context_bytes,
            "peak_ratio": ratio(self.peak_memory_bytes, self.estimated_without_context_bytes),
            "tiny_ignored": self.tiny_ignored,
        }


def _gpu_of(doc: dict[str, Any], result: dict[str, Any]) -> str | None:
    if result.get("device_name"):
        return str(result["device_name"])
    if not str(result.get("device") or "").startswith("cuda"):
        return None
    gpus = (doc.get("environment") or {}).get("gpus") or []
    return gpus[0].get("name") if gpus else None


def _number(value: Any) -> float | None:
    if isinstance(value, dict):  # a metric: {"value": ..., "unit": ...}
        value = value.get("value")
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def generate_results(documents: Iterable[dict[str, Any]], model: str,
                     precision: str) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], int]:
    """(document, result) of every ok, full-flavour generate result of `model` at the fit `precision`, and how
    many --tiny results of the same model and precision were left out."""
    wanted = GENERATE_PRECISION.get(precision)
    found, tiny = [], 0
    for doc in documents:
        for result in doc.get("results") or []:
            if (result.get("scenario") != "generate" or result.get("workload") != model
                    or result.get("precision") != wanted or result.get("status") != "ok"
                    or not result.get("prompt_len") or not result.get("new_tokens")):
                continue
            if result.get("flavour", "full") != "full":
                tiny += 1
                continue
            found.append((doc, result))
    return found, tiny


def closest_measured(documents: Iterable[dict[str, Any]], shape: ModelShape, precision: str, context: int,
                     batch: int) -> MeasuredServe | None:
    """The stored generate result nearest to serving `shape` at `precision`, `context` and `batch`, set against
    the estimate at its own shape (module docstring); None when nothing is stored for the model and precision
    (a MeasuredServe is never made from a --tiny result)."""
    found, tiny = generate_results(documents, shape.name, precision)
    if not found:
        return None

    def distance(item: tuple[dict[str, Any], dict[str, Any]]) -> tuple[float, float]:
        result = item[1]
        run_context = int(result["prompt_len"]) + int(result["new_tokens"])
        return (abs(math.log(int(result.get("batch_size") or 1) / batch)), abs(math.log(run_context / context)))

    found.sort(key=lambda item: str(item[0].get("created_at") or ""), reverse=True)  # newest first on ties
    doc, result = min(found, key=distance)
    run_batch = int(result.get("batch_size") or 1)
    run_context = int(result["prompt_len"]) + int(result["new_tokens"])
    estimate = memory_needed(shape, "serve", precision, context=run_context, batch=run_batch)
    metrics = result.get("metrics") or {}
    peak = _number(result.get("peak_memory_bytes")) or _number(metrics.get("peak_memory_bytes"))
    reserved = _number(result.get("peak_reserved_bytes")) or _number(metrics.get("peak_reserved_bytes"))
    return MeasuredServe(
        run_id=str(doc.get("run_id")), created_at=doc.get("created_at"), gpu=_gpu_of(doc, result),
        device=result.get("device"), precision=str(result.get("precision")), batch=run_batch, context=run_context,
        prompt_len=int(result["prompt_len"]), new_tokens=int(result["new_tokens"]),
        same_shape=(run_batch, run_context) == (batch, context), weight_bytes=_number(result.get("weight_bytes")),
        estimated_weight_bytes=estimate.term("weights").bytes, peak_memory_bytes=peak,
        peak_reserved_bytes=reserved, estimated_total_bytes=estimate.total_bytes, tiny_ignored=tiny)


def tiny_only(documents: Iterable[dict[str, Any]], model: str, precision: str) -> int:
    """How many --tiny generate results of `model` at `precision` are stored (said when no full one is)."""
    return generate_results(documents, model, precision)[1]
