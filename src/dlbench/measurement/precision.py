"""Numerical precision modes: set the global TF32/cuDNN flags, the autocast dtype and the GradScaler.

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_measure.py -k precision`.

| mode | matmul / cuDNN TF32 | float32 matmul precision | autocast | loss scaling |
|---|---|---|---|---|
| `fp32` | off / off | "highest" (also keeps CPU matmuls in full fp32) | - | - |
| `tf32` | on / on (CUDA compute capability >= 8.0) | "high" | - | - |
| `amp-fp16` | on / on | "high" | float16 | `torch.amp.GradScaler` |
| `amp-bf16` | on / on | "high" | bfloat16 | - (bf16 has fp32's exponent range) |

Under AMP, matmuls and convolutions run in 16 bits; TF32 only touches the few fp32 matmuls left over and is
left on, as in NVIDIA's NGC containers and most training scripts. The flags actually in force after set-up
are read back and recorded with the result (`precision_flags`), never assumed.

TF32 is set through the legacy flags (`torch.backends.cuda.matmul.allow_tf32`,
`torch.backends.cudnn.allow_tf32`, `torch.set_float32_matmul_precision`), which every torch since 1.7 has and
which, on torch >= 2.9, also set the newer per-backend strings (`torch.backends.cuda.matmul.fp32_precision` "tf32"/"ieee",
`torch.backends.cudnn.conv.fp32_precision` "tf32"/"none"). torch 2.9 prints a deprecation UserWarning for the
legacy setters (only a warning), but a write through the new API alone leaves the legacy state behind, and
reading a legacy flag then raises "you have used mix of the legacy and new APIs" (a RuntimeError): Inductor
reads the legacy flags while compiling, so new-API-only code breaks `torch.compile` (pytorch/pytorch#189955).
Both views are recorded: the legacy booleans (`cuda_matmul_allow_tf32`, `cudnn_allow_tf32`: what the kernels
use) and, where torch has them, the strings (`cuda_matmul_fp32_precision`, `cudnn_conv_fp32_precision`; "none"
means "inherit", which here is full fp32). `tests/test_gpu_paths.py` pins both behaviours.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from dlbench.analysis.configuration import check_precision

AUTOCAST_DTYPES = {"amp-fp16": "float16", "amp-bf16": "bfloat16"}


@dataclass
class PrecisionSetup:
    """What a training step needs from the precision mode."""

    precision: str
    device_type: str
    autocast_dtype: Any  # torch.dtype or None
    scaler: Any  # torch.amp.GradScaler or None

    def autocast(self) -> Any:
        """A context manager for the forward pass (a no-op for fp32/tf32)."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        import torch

        return torch.autocast(device_type=self.device_type, dtype=self.autocast_dtype)


def apply_precision(precision: str, device: Any) -> PrecisionSetup:
    """Set the process-wide flags for `precision` on `device` and build autocast/GradScaler settings.

    Call `unsupported_reason` first: this function trusts that the device can run the mode.
    """
    import torch

    check_precision(precision)  # the one list of precisions (analysis.configuration.PRECISIONS)
    device_type = torch.device(device).type
    strict = precision == "fp32"
    # Legacy flags (torch >= 1.7) rather than the fp32_precision API of torch >= 2.9: they work on every
    # supported torch and keep both views in step (module docstring: the new API alone breaks torch.compile).
    torch.backends.cuda.matmul.allow_tf32 = not strict
    torch.backends.cudnn.allow_tf32 = not strict
    torch.set_float32_matmul_precision("highest" if strict else "high")
    if device_type == "cuda":
        # Shapes never change between steps, so let cuDNN benchmark its convolution algorithms once.
        torch.backends.cudnn.benchmark = True
    dtype = getattr(torch, AUTOCAST_DTYPES[precision]) if precision in AUTOCAST_DTYPES else None
    scaler = torch.amp.GradScaler(device_type) if precision == "amp-fp16" else None
    return PrecisionSetup(precision=precision, device_type=device_type, autocast_dtype=dtype, scaler=scaler)


def precision_flags(setup: PrecisionSetup) -> dict[str, Any]:
    """The numerics flags in force now, read back from torch (recorded with every result)."""
    import torch

    flags: dict[str, Any] = {
        "precision": setup.precision,
        "autocast_dtype": str(setup.autocast_dtype).replace("torch.", "") if setup.autocast_dtype else None,
        "grad_scaler": setup.scaler is not None,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cuda_matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
    }
    # torch >= 2.9 also exposes the newer per-backend view; record it where it exists.
    matmul_fp32 = getattr(torch.backends.cuda.matmul, "fp32_precision", None)
    conv_fp32 = getattr(getattr(torch.backends.cudnn, "conv", None), "fp32_precision", None)
    if matmul_fp32 is not None:
        flags["cuda_matmul_fp32_precision"] = matmul_fp32
    if conv_fp32 is not None:
        flags["cudnn_conv_fp32_precision"] = conv_fp32
    return flags
