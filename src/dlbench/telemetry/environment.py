"""The environment block of a result document: what machine and software produced the numbers.

Exercised by `dlbench run` (collected once per run in the planning child process, see `dlbench.runner.planning`)
and directly by `python -m dlbench.telemetry.environment`, which prints the block as JSON.

Every key is always present; a fact that cannot be read is `None`, never guessed. torch and NVML are imported
inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

ENVIRONMENT_KEYS: tuple[str, ...] = (
    "hostname",
    "os",
    "python_version",
    "torch_version",
    "cuda_version",
    "cudnn_version",
    "nccl_version",
    "driver_version",
    "cpu_model",
    "cpu_count",
    "memory_bytes",
    "gpus",
    "git_commit",
    "package_versions",
    "hip_version",  # ROCm builds of torch: torch.version.hip (cuda_version is None there)
    "miopen_version",  # ROCm: MIOpen, the library torch calls in cuDNN's place
)

# The libraries besides torch whose version changes what is measured: the models (torchvision's ResNet,
# transformers' BERT and its attention code), Inductor's GPU code generator, and the NVML bindings telemetry
# reads through. Read from package metadata, so nothing is imported.
VERSIONED_PACKAGES: tuple[str, ...] = ("torchvision", "transformers", "triton", "nvidia-ml-py")

GPU_KEYS: tuple[str, ...] = ("name", "memory_bytes", "compute_capability", "multiprocessor_count")


def collect() -> dict[str, Any]:
    """The environment block: every key of `ENVIRONMENT_KEYS`, `None` where a fact is unknown."""
    env: dict[str, Any] = {
        # DLBENCH_NODE_NAME names the node where containers share one host name, as it does for the ranks of a
        # multi-node run (runner.distributed.node_name): `dlbench fleet` tells nodes apart by it.
        "hostname": os.environ.get("DLBENCH_NODE_NAME") or _safe(socket.gethostname),
        "os": _safe(platform.platform),
        "python_version": platform.python_version(),
        "cpu_model": _safe(cpu_model),
        "cpu_count": os.cpu_count(),
        "memory_bytes": _safe(memory_bytes),
        "git_commit": _safe(git_commit),
        "driver_version": _safe(nvml_driver_version),
        "package_versions": package_versions(),
    }
    env.update(_torch_facts())
    return {key: env.get(key) for key in ENVIRONMENT_KEYS}


def package_versions(names: tuple[str, ...] = VERSIONED_PACKAGES) -> dict[str, str | None]:
    """{distribution: installed version, or None when it is not installed}."""
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _safe(fn):
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a fact we cannot read is unknown, not fatal
        return None


def _torch_facts() -> dict[str, Any]:
    facts: dict[str, Any] = {k: None for k in ("torch_version", "cuda_version", "cudnn_version", "nccl_version",
                                                "hip_version", "miopen_version")}
    facts["gpus"] = []
    try:
        import torch
    except Exception:  # noqa: BLE001 - no torch: every torch fact is unknown
        return facts
    facts["torch_version"] = torch.__version__
    facts["cuda_version"] = torch.version.cuda  # None on CPU-only and ROCm builds
    facts["hip_version"] = getattr(torch.version, "hip", None)
    if facts["hip_version"]:  # torch.backends.cudnn answers for MIOpen under ROCm
        facts["miopen_version"] = _safe(lambda: format_miopen_version(torch.backends.cudnn.version()))
    else:
        facts["cudnn_version"] = _safe(lambda: format_cudnn_version(torch.backends.cudnn.version()))
    facts["nccl_version"] = _safe(_nccl_version)
    facts["gpus"] = _safe(_gpus) or []
    return facts


def format_cudnn_version(version: int | None) -> str | None:
    """cuDNN's integer version as "major.minor.patch" (cuDNN 9 encodes 9.1.0 as 90100, cuDNN 8 as 8902)."""
    if not version:
        return None
    if version >= 90000:
        return f"{version // 10000}.{version % 10000 // 100}.{version % 100}"
    return f"{version // 1000}.{version % 1000 // 100}.{version % 100}"


def format_miopen_version(version: int | None) -> str | None:
    """MIOpen's integer version as "major.minor.patch": torch encodes it as MAJOR*1000000 + MINOR*1000 + PATCH
    (torch/csrc/cuda/shared/cudnn.cpp, getVersionInt under USE_ROCM), so 3002000 is 3.2.0."""
    if not version:
        return None
    return f"{version // 1000000}.{version % 1000000 // 1000}.{version % 1000}"


def _nccl_version() -> str | None:
    import torch

    if not torch.distributed.is_available() or not hasattr(torch.cuda, "nccl"):
        return None
    version = torch.cuda.nccl.version()
    if isinstance(version, tuple):
        return ".".join(str(part) for part in version)
    return str(version)


def _gpus() -> list[dict[str, Any]]:
    import torch

    gpus: list[dict[str, Any]] = []
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            gpus.append({
                "name": props.name,
                "memory_bytes": int(props.total_memory),
                "compute_capability": f"{props.major}.{props.minor}",
                "multiprocessor_count": int(props.multi_processor_count),
            })
    elif _mps_available():
        # Apple GPUs share memory with the CPU and expose no compute capability or SM count.
        gpus.append({"name": f"{cpu_model() or 'Apple'} GPU (MPS)", "memory_bytes": None,
                     "compute_capability": None, "multiprocessor_count": None})
    return gpus


def _mps_available() -> bool:
    import torch

    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def cpu_model() -> str | None:
    """The CPU's marketing name from /proc/cpuinfo (Linux) or sysctl (macOS)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                return value.strip()
    if sys.platform == "darwin":
        out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True,
                             timeout=5)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    return platform.processor() or None


def memory_bytes() -> int | None:
    """Physical memory of the host in bytes."""
    if hasattr(os, "sysconf"):
        pages = os.sysconf("SC_PHYS_PAGES")
        page_size = os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and page_size > 0:
            return int(pages * page_size)
    return None


def nvml_driver_version() -> str | None:
    """The NVIDIA driver version from NVML, or None without an NVIDIA driver."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver, no NVML
        return None
    try:
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    finally:
        pynvml.nvmlShutdown()


def git_commit() -> str | None:
    """The commit of the dlbench source tree when it runs from a git checkout, else None."""
    package_dir = Path(__file__).resolve().parent.parent
    out = subprocess.run(["git", "-C", str(package_dir), "rev-parse", "--show-toplevel", "HEAD"],
                         capture_output=True, text=True, timeout=5)
    if out.returncode != 0:
        return None
    toplevel, commit = out.stdout.split()
    # Only our own repository counts: a site-packages folder inside some other checkout is not dlbench's commit.
    if (Path(toplevel) / "src" / "dlbench").resolve() != package_dir:
        return None
    return commit


if __name__ == "__main__":
    json.dump(collect(), sys.stdout, indent=2)
    sys.stdout.write("\n")
