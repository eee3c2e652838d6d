"""Precision modes for serving a model: weights cast or quantized, never autocast.

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_inference_precision.py`.

The `infer` and `generate` scenarios share this module. A served model holds its weights in the precision it
computes in (that is how inference servers and gpt-fast run them), so unlike training there is no autocast:

| mode | weights | activations | how | needs |
|---|---|---|---|---|
| `fp32` | float32 | float32 | strict fp32 matmuls (TF32 off) | - |
| `tf32` | float32 | float32 | TF32 tensor cores for fp32 matmuls/convolutions | CUDA compute capability >= 8.0 |
| `fp16` | float16 | float16 | `model.to(float16)` | CUDA, MPS or a CPU |
| `bf16` | bfloat16 | bfloat16 | `model.to(bfloat16)` | CUDA >= 8.0, ROCm, a CPU, MPS on macOS 14 |
| `int8-weight-only` | int8, one scale per output channel | bfloat16 | torchao `Int8WeightOnlyConfig` | torchao; CUDA or CPU |
| `int4-weight-only` | int4, groups of 128 (CUDA) / 32 (CPU) | bfloat16 | torchao, see below | torchao; CUDA >= 8.0 or CPU |
| `fp8` | float8 e4m3, per-tensor scale | float8, scaled per call | torchao `Float8DynamicActivationFloat8WeightConfig` | torchao; CUDA >= 8.9 |

int4 on CUDA is `Int4WeightOnlyConfig(group_size=128, int4_packing_format="tile_packed_to_4d")`, the tinygemm
kernel gpt-fast uses. On a CPU torchao's `Int4WeightOnlyConfig` has no working packing (torchao 0.18: "plain"
needs the `mslk` package, the others need CUDA), so the CPU runs `IntxWeightOnlyConfig(weight_dtype=torch.int4,
granularity=PerGroup(32))`, which holds int4 values unpacked in int8 storage: `weight_bytes` reports what is held
(one byte per weight), not four bits. torchao quantizes `nn.Linear` layers only: a convolution network keeps its
convolutions in bfloat16, and a linear layer whose shape the mode's kernel cannot take (`_kernel_fits`) stays in
bfloat16 too (`quantized_modules` of `linear_modules` in the flags says how many were quantized).

torchao is optional (`pip install 'dlbench[quant]'`): nothing here imports it until a quantized mode is applied,
and `inference_unsupported_reason` refuses those modes, with one line, where it is not installed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from typing import TYPE_CHECKING, Any

from dlbench.analysis.configuration import INFERENCE_PRECISIONS, check_precision
from dlbench.measurement.device import resolve_device

if TYPE_CHECKING:  # pragma: no cover
    from dlbench.measurement.device import DeviceFacts

__all__ = ["INFERENCE_PRECISIONS", "QUANTIZED", "TORCHAO_HINT", "apply_inference_precision", "compute_dtype",
           "inference_unsupported_reason", "weight_bytes"]

# Modes that torchao applies (the others are a cast).
QUANTIZED: tuple[str, ...] = ("int8-weight-only", "int4-weight-only", "fp8")
TORCHAO_HINT = "pip install 'dlbench[quant]'"
TORCHAO_MIN = (0, 10)  # pyproject's `quant` extra
# The dtype the model computes in (and its floating-point inputs are cast to); quantized modes run bf16
# activations, as gpt-fast and torchao's own benchmarks do.
_COMPUTE_DTYPE = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16",
                  "int8-weight-only": "bfloat16", "int4-weight-only": "bfloat16", "fp8": "bfloat16"}
# The lowest NVIDIA compute capability for each mode that needs one: bf16 and int4 tinygemm kernels (Ampere),
# fp8 tensor cores (Ada, Hopper).
_MIN_CC: dict[str, tuple[int, int]] = {"tf32": (8, 0), "bf16": (8, 0), "int4-weight-only": (8, 0), "fp8": (8, 9)}


def compute_dtype(precision: str) -> Any:
    """The torch dtype a model served at `precision` computes in (float32, float16 or bfloat16)."""
    import torch

    return getattr(torch, _COMPUTE_DTYPE[check_inference_precision(precision)])


def check_inference_precision(name: str) -> str:
    """The inference precision `name` names (any case), else BadInput listing the inference precisions."""
    from dlbench.errors import BadInput

    canonical = check_precision(name)
    if canonical not in INFERENCE_PRECISIONS:
        raise BadInput(f"precision {canonical} is a training mode; for inference choose from: "
                       f"{', '.join(INFERENCE_PRECISIONS)}")
    return canonical


def torchao_version() -> str | None:
    """The installed torchao's version, or None when it is not installed (found without importing it)."""
    if importlib.util.find_spec("torchao") is None:
        return None
    try:
        return importlib.metadata.version("torchao")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _release(version: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def inference_unsupported_reason(precision: str, device_facts: DeviceFacts | None = None,
                                 device: str = "auto") -> str | None:
    """Why `device` (resolved with `device_facts`, detected when None) cannot serve a model at `precision`, in
    one line, or None when it can.

    Says nothing about whether the device exists or about compile modes: `measurement.capabilities` answers
    those, and a scenario asks it first (`Scenario.unsupported_reason`). Needs no torch when the facts are given
    and the device is a CPU or a CUDA GPU; never imports torchao.
    """
    from dlbench.errors import BadInput

    try:
        precision = check_inference_precision(precision)
    except BadInput as exc:
        return str(exc)
    if device_facts is None and device in ("auto", "cuda"):
        from dlbench.measurement.device import DeviceFacts

        device_facts = DeviceFacts.detect()
    device = resolve_device(device, device_facts)
    kind, _, index = device.partition(":")
    if kind not in ("cpu", "cuda", "mps"):
        return f"unknown device {device!r} (use cpu, cuda, cuda:N or mps)"
    if precision in QUANTIZED:
        version = torchao_version()
        if version is None:
            return f"{precision} needs torchao ({TORCHAO_HINT})"
        if version != "unknown" and _release(version) < TORCHAO_MIN:
            return f"{precision} needs torchao >= {TORCHAO_MIN[0]}.{TORCHAO_MIN[1]}; this is {version} ({TORCHAO_HINT})"
        if kind == "mps":
            return f"{precision} is measured on CUDA GPUs and CPUs only (torchao has no MPS kernels for it)"
    if kind == "cpu":
        if precision in ("tf32", "fp8"):
            need = _MIN_CC[precision]
            return (f"{precision} is an NVIDIA tensor-core mode (CUDA compute capability >= {need[0]}.{need[1]}); "
                    f"not available on cpu")
        return None
    if kind == "mps":
        return _mps_reason(precision)
    return _cuda_reason(precision, index, device_facts)


def _mps_reason(precision: str) -> str | None:
    import torch

    if precision in ("tf32", "fp8"):
        return f"{precision} is an NVIDIA tensor-core mode; not available on mps"
    if precision == "bf16":
        newer = getattr(torch.backends.mps, "is_macos_or_newer", None)
        if newer is None or not newer(14, 0):
            return "bf16 on MPS needs macOS 14 or newer"
    return None


def _cuda_reason(precision: str, index: str, facts: DeviceFacts | None) -> str | None:
    if facts is None:
        from dlbench.measurement.device import DeviceFacts

        facts = DeviceFacts.detect()
    position = int(index) if index.isdigit() else facts.current_cuda
    if position >= len(facts.cuda):
        return f"cuda:{position} is not available: {len(facts.cuda)} CUDA device(s) visible"
    gpu = facts.cuda[position]
    if facts.hip is not None:  # ROCm: bf16/fp16 everywhere (MI100+), torchao's CUDA kernels not
        if precision in ("tf32", "fp8", "int4-weight-only"):
            return f"{precision} is measured on NVIDIA GPUs only; {gpu['name']} runs under ROCm"
        return None
    need = _MIN_CC.get(precision)
    major, minor = gpu.get("compute_capability") or (0, 0)
    if need and (major, minor) < need:
        what = {"tf32": "TF32 tensor cores", "bf16": "bfloat16 in hardware",
                "int4-weight-only": "torchao's int4 tinygemm kernels", "fp8": "float8 tensor cores"}[precision]
        return (f"{precision} needs CUDA compute capability >= {need[0]}.{need[1]} ({what}); "
                f"{gpu['name']} is {major}.{minor}")
    return None


def _torchao_config(precision: str, device_type: str) -> Any:
    import torch
    from torchao.quantization import (
        Float8DynamicActivationFloat8WeightConfig,
        Int4WeightOnlyConfig,
        Int8WeightOnlyConfig,
        IntxWeightOnlyConfig,
    )

    if precision == "int8-weight-only":
        return Int8WeightOnlyConfig()
    if precision == "int4-weight-only":
        if device_type == "cuda":
            return Int4WeightOnlyConfig(group_size=128, int4_packing_format="tile_packed_to_4d")
        from torchao.quantization.granularity import PerGroup

        return IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32))
    return Float8DynamicActivationFloat8WeightConfig()


def _kernel_fits(precision: str, device_type: str) -> Any:
    """Which `nn.Linear` shapes (in_features, out_features) the mode's kernels take; the others stay in the
    compute dtype (counted apart in the flags). tinygemm's int4 packing needs whole groups of 128 along the input
    and a multiple of 8 outputs; float8 tensor-core matmuls need both dimensions in multiples of 16 (a tiny
    model's 64-wide layers, or a 2-output QA head, would otherwise fail or be padded)."""
    if precision == "int4-weight-only" and device_type == "cuda":
        return lambda k, n: k % 128 == 0 and n % 8 == 0
    if precision == "int4-weight-only":
        return lambda k, n: k % 32 == 0
    if precision == "fp8":
        return lambda k, n: k % 16 == 0 and n % 16 == 0
    return lambda k, n: True


def _is_subclass(tensor: Any) -> bool:
    """A tensor subclass that holds its data in inner tensors (torchao's quantized weights, DTensor...)."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return is_traceable_wrapper_subclass(tensor)


def apply_inference_precision(model: Any, precision: str, device: Any) -> tuple[Any, dict[str, Any]]:
    """Move `model` to `device` in `precision` (weights cast, torchao quantization for the quantized modes) and
    set the process-wide matmul flags; returns the model and the flags in force (recorded with the result).

    Call `inference_unsupported_reason` first: this trusts that the device can run the mode. The model should be
    in eval mode; floating-point inputs must be cast to `compute_dtype(precision)` by the caller.
    """
    import torch

    from dlbench.measurement.precision import apply_precision, precision_flags

    precision = check_inference_precision(precision)
    device = torch.device(device)
    # fp32 keeps matmuls strict; every other mode lets the fp32 matmuls left over use TF32, as in training.
    setup = apply_precision(precision, device)
    dtype = compute_dtype(precision)
    model = model.to(device=device, dtype=dtype)
    flags = precision_flags(setup)
    flags.update({"weights_dtype": str(dtype).replace("torch.", ""), "compute_dtype": str(dtype).replace("torch.", ""),
                  "autocast_dtype": None, "quantization": None, "quantized_modules": 0, "torchao_version": None})
    if precision in QUANTIZED:
        import torchao
        from torchao.quantization import quantize_

        config = _torchao_config(precision, device.type)
        fits = _kernel_fits(precision, device.type)
        quantize_(model, config, filter_fn=lambda module, _name: isinstance(module, torch.nn.Linear)
                  and fits(module.in_features, module.out_features))
        linear = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
        quantized = sum(1 for module in linear if _is_subclass(module.weight))
        flags.update({"quantization": type(config).__name__, "quantized_modules": quantized,
                      "linear_modules": len(linear),
                      "torchao_version": torchao.__version__,
                      "weights_dtype": {"int8-weight-only": "int8", "int4-weight-only": "int4",
                                        "fp8": "float8_e4m3fn"}[precision]})
        if precision == "int4-weight-only":
            flags["quantization_group_size"] = 128 if device.type == "cuda" else 32
    flags["weight_bytes"] = weight_bytes(model)
    return model, flags


def _tensor_bytes(tensor: Any) -> int:
    if _is_subclass(tensor):
        names, _ = tensor.__tensor_flatten__()
        return sum(_tensor_bytes(getattr(tensor, name)) for name in names if getattr(tensor, name) is not None)
    return tensor.numel() * tensor.element_size()


def weight_bytes(model: Any) -> int:
    """Bytes held by `model`'s parameters and buffers as stored now: a quantized weight counts its inner tensors
    (int8/int4 data, scales, zero points), a tied weight counts once. This is what one forward pass reads."""
    seen: set[int] = set()
    total = 0
    for tensor in [*model.parameters(), *model.buffers()]:
        if id(tensor) in seen:
            continue
        seen.add(id(tensor))
        total += _tensor_bytes(tensor)
    return total
