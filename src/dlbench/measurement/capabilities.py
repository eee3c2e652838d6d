"""Which configurations this machine can run, and in one line why not.

Exercise it with `PYTHONPATH=src python -c "from dlbench.measurement.capabilities import unsupported_reason as u;
from dlbench.measurement.config import RunConfig as C; print(u(C('resnet50', precision='tf32', device='cpu')))"`.

The planner records a config with a reason as `skipped`; it never aborts a sweep. Rules:
- device: `auto` and a bare `cuda` are resolved first (`device.resolve_device`); `cuda[:N]` needs a visible CUDA/ROCm GPU with that index; `mps` needs Apple's Metal backend.
- `tf32`: NVIDIA tensor-core TF32, compute capability >= 8.0 (Ampere and newer). Not on ROCm (its xf32 is
  off by default and not comparable), CPUs or MPS.
- `amp-bf16`: bfloat16 in hardware (CUDA compute capability >= 8.0; ROCm: torch.cuda.is_bf16_supported answers
  True for every ROCm device, and the catalogue's AMD GPUs, MI100 and later, all have bf16 matrix units; on MPS
  torch >= 2.6 and macOS >= 14); CPUs are allowed (torch has bf16 CPU kernels; how fast depends on AVX512-BF16/AMX).
- `amp-fp16`: any CUDA GPU, MPS with torch >= 2.8, and CPUs (torch runs fp16 autocast and GradScaler on a CPU;
  fast only on CPUs with AVX512-FP16/AMX-FP16, and the measurement says so by itself).
- `torch.compile`: needs a Python/platform that TorchDynamo supports; on CUDA, Triton (Inductor's GPU code
  generator); on a CPU, a C++ compiler; on MPS, torch >= 2.8. `reduce-overhead` is CUDA graphs and
  `max-autotune` also uses CUDA graphs and Triton autotuning, so on a CPU or MPS they would silently measure
  something else: refused there (on a CPU `default` is the mode to use).

MPS features by torch release (`MPS_MIN_TORCH`; dlbench supports torch >= 2.4), read from torch's own code:
- autocast on "mps": none in 2.4 (no AutocastMPS dispatch key: `torch.autocast("mps")` raises "unsupported
  autocast device_type"); float16 from 2.5 (pytorch/pytorch#99272); bfloat16 from 2.6 and only on macOS 14 or
  newer (#139390). torch 2.5 and 2.6-on-macOS-13 do not fail on bf16: they warn and *disable* autocast, so the
  run would be fp32 under the name amp-bf16.
- GradScaler on "mps" (amp-fp16): 2.8 (#150255 added the MPS unscale kernels). Before it `unscale_` raises
  "Cannot convert a MPS Tensor to float64" (#142397) and a fused optimizer finds no MPS
  `_amp_foreach_non_finite_check_and_unscale_`.
- torch.compile (Inductor) on "mps": no Metal code generator before 2.7 (the scheduler raises "Unsupported
  device type: mps"); 2.7 ships a prototype that its maintainers say fails on end-to-end networks and lacks the
  reductions ResNets need (#150121, which targets 2.8).
"""

from __future__ import annotations

import os
import re
import shutil
from typing import TYPE_CHECKING

from dlbench.analysis.configuration import check_compile_mode, check_precision
from dlbench.errors import BadInput
from dlbench.measurement.device import resolve_device

if TYPE_CHECKING:  # pragma: no cover
    from dlbench.measurement.config import RunConfig
    from dlbench.measurement.device import DeviceFacts

# The first torch release whose MPS backend runs each feature (module docstring: sources).
MPS_MIN_TORCH: dict[str, tuple[int, int]] = {"amp-bf16": (2, 6), "amp-fp16": (2, 8), "compile": (2, 8)}
_MPS_NEEDS = {"amp-bf16": "bfloat16 autocast on MPS", "amp-fp16": "its GradScaler on MPS",
              "compile": "Inductor's Metal backend"}


def _torch_release(version: str) -> tuple[int, int]:
    """(major, minor) of a torch version string ("2.5.1", "2.8.0+cpu", "2.10.0.dev20251001")."""
    match = re.match(r"(\d+)\.(\d+)", str(version))
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def _mps_release_reason(feature: str, what: str) -> str | None:
    """Why this torch cannot run `feature` on MPS (too old), else None."""
    import torch

    needed = MPS_MIN_TORCH[feature]
    if _torch_release(torch.__version__) >= needed:
        return None
    return (f"{what} on MPS needs torch >= {needed[0]}.{needed[1]} ({_MPS_NEEDS[feature]}); "
            f"this is torch {torch.__version__}")


def _device_reason(device: str) -> str | None:
    import torch

    kind, _, index = device.partition(":")
    if kind not in ("cpu", "cuda", "mps"):
        return f"unknown device {device!r} (use cpu, cuda, cuda:N or mps)"
    if index and (kind != "cuda" or not index.isdigit()):
        return f"unknown device {device!r} (use cpu, cuda, cuda:N or mps)"
    if kind == "cuda":
        if not torch.cuda.is_available():
            if torch.version.cuda is None and torch.version.hip is None:
                return (
                    f"{device} is not available: this torch build ({torch.__version__}) has no CUDA support"
                )
            return (
                f"{device} is not available: torch sees no GPU (driver missing or CUDA_VISIBLE_DEVICES empty)"
            )
        count = torch.cuda.device_count()
        if index and int(index) >= count:
            return f"{device} is not available: {count} CUDA device(s) visible (cuda:0..cuda:{count - 1})"
    if kind == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_built():
            return f"mps is not available: this torch build ({torch.__version__}) has no MPS support"
        if not mps.is_available():
            return "mps is not available: it needs macOS 12.3 or newer on Apple silicon"
    return None


def _cuda_index(device: str) -> int:
    import torch

    _, _, index = device.partition(":")
    return int(index) if index else torch.cuda.current_device()


def _precision_reason(precision: str, device: str) -> str | None:
    import torch

    kind = device.partition(":")[0]
    if precision == "tf32":
        if kind != "cuda":
            return f"tf32 is an NVIDIA tensor-core mode (CUDA compute capability >= 8.0); not available on {kind}"
        if torch.version.hip is not None:
            return "tf32 is measured on NVIDIA GPUs only; on ROCm use fp32 or amp-bf16/amp-fp16"
        index = _cuda_index(device)
        major, minor = torch.cuda.get_device_capability(index)
        if major < 8:
            name = torch.cuda.get_device_name(index)
            return f"tf32 needs CUDA compute capability >= 8.0; {name} is {major}.{minor}"
    if precision == "amp-bf16":
        if kind == "cuda" and torch.version.hip is None:
            # The configured GPU's own capability: torch.cuda.is_bf16_supported() answers for the current
            # device, which on a machine with mixed GPUs need not be cuda:N. (It is True for every ROCm device.)
            index = _cuda_index(device)
            major, minor = torch.cuda.get_device_capability(index)
            if major < 8:
                name = torch.cuda.get_device_name(index)
                return f"amp-bf16 not supported in hardware on {name} (compute capability {major}.{minor}; needs >= 8.0)"
        if kind == "mps":
            too_old = _mps_release_reason("amp-bf16", "amp-bf16")
            if too_old:
                return too_old
            newer = getattr(torch.backends.mps, "is_macos_or_newer", None)
            if newer is None or not newer(14, 0):
                return "amp-bf16 on MPS needs macOS 14 or newer (torch disables bfloat16 autocast before it)"
    if precision == "amp-fp16" and kind == "mps":
        return _mps_release_reason("amp-fp16", "amp-fp16")
    return None


def _has_cxx_compiler() -> bool:
    candidates = [os.environ.get("CXX"), "g++", "c++", "clang++"]
    return any(c and shutil.which(c) for c in candidates)


def _compile_reason(mode: str, device: str) -> str | None:
    if mode == "off":
        return None
    import sys

    import torch
    import torch._dynamo

    kind = device.partition(":")[0]
    dynamo_supported = getattr(torch._dynamo, "is_dynamo_supported", lambda: True)
    if not dynamo_supported():
        py = f"{sys.version_info.major}.{sys.version_info.minor}"
        return (
            f"torch.compile is not supported with Python {py} on this platform by torch {torch.__version__}"
        )
    if kind in ("cpu", "mps") and mode in ("reduce-overhead", "max-autotune"):
        return f"compile mode {mode} uses CUDA graphs, which need a CUDA GPU; use --compile default on {kind}"
    if kind == "mps":
        too_old = _mps_release_reason("compile", "torch.compile")
        if too_old:
            return f"{too_old}; use --compile off"
    if kind == "cuda":
        from torch.utils._triton import has_triton

        if not has_triton():
            return "torch.compile on a GPU needs Triton, which is not installed with this torch"
    if kind == "cpu" and not _has_cxx_compiler():
        return "torch.compile on a CPU needs a C++ compiler (g++ or clang++, or $CXX); none found"
    return None


def unsupported_reason(config: RunConfig, facts: DeviceFacts | None = None) -> str | None:
    """Why this machine cannot run `config`'s device, precision and compile mode (one line), or None when it can.

    `facts`: the planner's `DeviceFacts` to resolve `auto`/`cuda` with (None: detected here when needed). A
    scenario adds its own rules first (`Scenario.unsupported_reason`).
    """
    try:
        check_precision(config.precision)
        check_compile_mode(config.compile)
    except BadInput as exc:
        return str(exc)
    device = resolve_device(config.device, facts)
    return (
        _device_reason(device)
        or _precision_reason(config.precision, device)
        or _compile_reason(config.compile, device)
    )
