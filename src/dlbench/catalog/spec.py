"""`GpuSpec`: one row of the packaged GPU catalogue (`gpus.csv`), in SI units.

Exercise it with `dlbench gpus show "RTX 4090"`. The CSV keeps the units people read in datasheets (GB, GB/s,
TFLOPS, MB); this module converts them once, on load, to bytes, bytes/s and FLOP/s. Conversions back happen
only at the display edge (`dlbench.cli.gpus`).

Memory capacity and L2 size are binary units as GPU vendors use them (an "80 GB" H100 has 80 GiB); memory
bandwidth and FLOP/s are decimal (GB/s = 1e9 bytes/s, TFLOPS = 1e12 FLOP/s).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

GIB = 2**30
MIB = 2**20
GB_PER_S = 1e9
TFLOPS = 1e12

# Column order of gpus.csv (a test checks the file against it).
CSV_COLUMNS: tuple[str, ...] = (
    "name", "vendor", "aliases", "architecture", "compute_capability", "launch_date", "suitable_for",
    "memory_gb", "memory_type", "memory_bandwidth_gbs", "shader_cores", "tensor_cores", "l2_cache_mb",
    "fp32_tflops", "tf32_tensor_tflops", "fp16_tensor_tflops", "bf16_tensor_tflops", "fp8_tensor_tflops",
    "fp16_fp16acc_tensor_tflops", "half_rate_fp32_accumulate", "tdp_w", "pcie_gen", "interconnect", "p2p",
    "price_usd", "price_date", "price_kind", "sources", "notes",
)

FORM_FACTORS: tuple[str, ...] = ("workstation", "server")


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model. Every figure is None when no source gives it.

    Tensor-core figures are dense (not 2:4 sparse). `fp16_tensor_flops_per_s` and `bf16_tensor_flops_per_s`
    are the rates with FP32 accumulation, which is what mixed-precision training uses: on GeForce cards
    (`half_rate_fp32_accumulate` True) that is half the FP16-accumulate rate datasheets often quote, which is
    kept separately in `fp16_fp16acc_tensor_flops_per_s`. `fp8_tensor_flops_per_s` follows the same rule.
    """

    name: str
    vendor: str
    aliases: tuple[str, ...]
    architecture: str | None
    compute_capability: str | None  # CUDA compute capability, or the gfx target for AMD
    launch_date: str | None  # "YYYY-MM"
    suitable_for: tuple[str, ...]  # subset of FORM_FACTORS
    memory_bytes: int | None
    memory_type: str | None
    memory_bandwidth_bytes_per_s: float | None
    shader_cores: int | None  # CUDA cores or stream processors
    tensor_cores: int | None  # tensor cores or matrix cores
    l2_cache_bytes: int | None
    fp32_flops_per_s: float | None  # non-tensor FP32
    tf32_tensor_flops_per_s: float | None
    fp16_tensor_flops_per_s: float | None
    bf16_tensor_flops_per_s: float | None
    fp8_tensor_flops_per_s: float | None
    fp16_fp16acc_tensor_flops_per_s: float | None
    half_rate_fp32_accumulate: bool | None
    tdp_w: float | None
    pcie_gen: int | None
    interconnect: str | None  # "none", "NVLink 4 (900 GB/s)", "NVLink bridge (112.5 GB/s)", ...
    p2p: bool | None  # PCIe peer-to-peer between two of these cards
    price_usd: float | None
    price_date: str | None  # "YYYY" or "YYYY-MM"
    price_kind: str | None  # "launch MSRP", "release price per Epoch AI (unverified)", ...
    sources: str
    notes: str | None

    @property
    def nvlink(self) -> bool | None:
        """True when the GPU has NVLink (SXM or a bridge), False when it has none, None when unknown."""
        if self.interconnect is None:
            return None
        return "nvlink" in self.interconnect.lower()

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-ready: tuples become lists), SI units, plus the derived `nvlink` flag."""
        data = asdict(self)
        for key in ("aliases", "suitable_for"):
            data[key] = list(data[key])
        data["nvlink"] = self.nvlink
        return data


def _text(value: str) -> str | None:
    value = value.strip()
    return value or None


def _float(value: str, scale: float = 1.0) -> float | None:
    value = value.strip()
    return float(value) * scale if value else None


def _int(value: str, scale: float = 1.0) -> int | None:
    value = value.strip()
    return int(round(float(value) * scale)) if value else None


def _bool(value: str) -> bool | None:
    value = value.strip().lower()
    if not value:
        return None
    if value in ("true", "yes"):
        return True
    if value in ("false", "no"):
        return False
    raise ValueError(f"expected yes/no/true/false, got {value!r}")


def _list(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(";") if part.strip())


def spec_from_row(row: dict[str, str]) -> GpuSpec:
    """Build a `GpuSpec` from one gpus.csv row (strings in datasheet units)."""
    return GpuSpec(
        name=row["name"].strip(),
        vendor=row["vendor"].strip(),
        aliases=_list(row["aliases"]),
        architecture=_text(row["architecture"]),
        compute_capability=_text(row["compute_capability"]),
        launch_date=_text(row["launch_date"]),
        suitable_for=_list(row["suitable_for"]),
        memory_bytes=_int(row["memory_gb"], GIB),
        memory_type=_text(row["memory_type"]),
        memory_bandwidth_bytes_per_s=_float(row["memory_bandwidth_gbs"], GB_PER_S),
        shader_cores=_int(row["shader_cores"]),
        tensor_cores=_int(row["tensor_cores"]),
        l2_cache_bytes=_int(row["l2_cache_mb"], MIB),
        fp32_flops_per_s=_float(row["fp32_tflops"], TFLOPS),
        tf32_tensor_flops_per_s=_float(row["tf32_tensor_tflops"], TFLOPS),
        fp16_tensor_flops_per_s=_float(row["fp16_tensor_tflops"], TFLOPS),
        bf16_tensor_flops_per_s=_float(row["bf16_tensor_tflops"], TFLOPS),
        fp8_tensor_flops_per_s=_float(row["fp8_tensor_tflops"], TFLOPS),
        fp16_fp16acc_tensor_flops_per_s=_float(row["fp16_fp16acc_tensor_tflops"], TFLOPS),
        half_rate_fp32_accumulate=_bool(row["half_rate_fp32_accumulate"]),
        tdp_w=_float(row["tdp_w"]),
        pcie_gen=_int(row["pcie_gen"]),
        interconnect=_text(row["interconnect"]),
        p2p=_bool(row["p2p"]),
        price_usd=_float(row["price_usd"]),
        price_date=_text(row["price_date"]),
        price_kind=_text(row["price_kind"]),
        sources=row["sources"].strip(),
        notes=_text(row["notes"]),
    )
