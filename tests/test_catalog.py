"""The GPU catalogue: data checks on gpus.csv and name lookup (python -m pytest tests/test_catalog.py)."""

from __future__ import annotations

import csv
import re
from importlib import resources
from pathlib import Path

import pytest

from dlbench.catalog import (
    FORM_FACTORS,
    all_gpus,
    candidates,
    canonical_name,
    close_matches,
    lookup,
    normalize,
    peak_flops_per_s,
    resolve,
)
from dlbench.catalog.spec import CSV_COLUMNS, GIB
from dlbench.errors import BadInput

SEED_000 = sorted(Path("/work/shared/seeds").glob("000_*.txt")) if Path("/work/shared/seeds").is_dir() else []

# GPUs issue 4 names explicitly (seed 000's list and the common others).
REQUIRED = [
    "V100 PCIe 16GB", "RTX 2080 Ti", "RTX 3090", "RTX A5000", "RTX A6000", "MI100", "RTX 4060 Ti 16GB", "RTX 4090",
    "RTX 4500 Ada", "RTX 5000 Ada", "RTX 6000 Ada", "L40S", "RTX 5090", "RTX PRO 6000 Blackwell", "A100 PCIe 40GB",
    "A100 SXM4 80GB", "H100 PCIe 80GB", "H100 NVL", "H200 NVL", "H200 SXM 141GB", "RTX 3080", "RTX 3090 Ti",
    "RTX 4070 Ti", "RTX 4080", "RTX 5080", "A10", "A40", "L4", "T4", "Quadro RTX 8000", "H100 SXM5 80GB",
    "GH200 96GB", "B200", "MI250X", "MI300X",
]

# Strings torch.cuda.get_device_name() reports (CUDA and ROCm builds) → catalogue name.
DEVICE_NAMES = {
    "NVIDIA H100 80GB HBM3": "H100 SXM5 80GB",
    "NVIDIA H100 PCIe": "H100 PCIe 80GB",
    "NVIDIA H100 NVL": "H100 NVL",
    "NVIDIA H200": "H200 SXM 141GB",
    "NVIDIA H200 NVL": "H200 NVL",
    "NVIDIA GH200 480GB": "GH200 96GB",
    "NVIDIA B200": "B200",
    "NVIDIA A100-SXM4-80GB": "A100 SXM4 80GB",
    "NVIDIA A100-SXM4-40GB": "A100 SXM4 40GB",
    "NVIDIA A100-PCIE-40GB": "A100 PCIe 40GB",
    "NVIDIA A100 80GB PCIe": "A100 PCIe 80GB",
    "NVIDIA GeForce RTX 4090": "RTX 4090",
    "NVIDIA GeForce RTX 3090": "RTX 3090",
    "NVIDIA GeForce RTX 2080 Ti": "RTX 2080 Ti",
    "NVIDIA GeForce RTX 5090": "RTX 5090",
    "NVIDIA RTX 6000 Ada Generation": "RTX 6000 Ada",
    "NVIDIA RTX A6000": "RTX A6000",
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "RTX PRO 6000 Blackwell",
    "NVIDIA L40S": "L40S",
    "NVIDIA L4": "L4",
    "NVIDIA A10": "A10",
    "Tesla T4": "T4",
    "Tesla V100-SXM2-16GB": "V100 SXM2 16GB",
    "Tesla V100-PCIE-16GB": "V100 PCIe 16GB",
    "Quadro RTX 8000": "Quadro RTX 8000",
    "AMD Instinct MI300X": "MI300X",
    "AMD Instinct MI100": "MI100",
}


def _rows() -> list[dict[str, str]]:
    path = resources.files("dlbench.catalog").joinpath("gpus.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_file_has_the_declared_columns_and_at_least_45_gpus():
    path = resources.files("dlbench.catalog").joinpath("gpus.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    assert tuple(header) == CSV_COLUMNS
    assert len(all_gpus()) >= 45


def test_required_gpus_present():
    names = {spec.name for spec in all_gpus()}
    assert not [name for name in REQUIRED if name not in names]


def test_names_unique_and_every_row_sourced():
    specs = all_gpus()
    assert len({spec.name for spec in specs}) == len(specs)
    for spec in specs:
        assert spec.sources, spec.name
        assert spec.vendor in ("NVIDIA", "AMD", "Apple"), spec.name
        assert spec.suitable_for and set(spec.suitable_for) <= set(FORM_FACTORS), spec.name


def test_epoch_ai_is_credited_where_used():
    # Every row that uses Epoch AI's data names it.
    used = [row for row in _rows() if "epoch" in row["sources"].lower()]
    assert used
    assert all("Epoch AI" in row["sources"] for row in used)


def _no_tensor_figure(spec) -> bool:
    """A GPU whose tensor/matrix columns are blank because no source gives them (Pascal, RDNA 2-4 consumer cards,
    Apple): its notes say so."""
    return "no tensor-core figure" in (spec.notes or "")


def test_figures_in_plausible_ranges_and_units():
    for spec in all_gpus():
        where = spec.name
        # Apple's unified memory reaches 512 GB (M3 Ultra); every discrete card stays under 300 GB.
        top = 512 * GIB if spec.vendor == "Apple" else 300 * GIB
        assert spec.memory_bytes is not None and 8 * GIB <= spec.memory_bytes <= top, where
        assert spec.memory_bandwidth_bytes_per_s is not None and 250e9 <= spec.memory_bandwidth_bytes_per_s <= 10e12, where
        if spec.fp32_flops_per_s is None:  # only Apple chips whose vendor publishes no rate
            assert spec.vendor == "Apple" and "FP32 left blank" in (spec.notes or ""), where
        else:
            assert 5e12 <= spec.fp32_flops_per_s <= 200e12, where
        if _no_tensor_figure(spec):
            assert spec.fp16_tensor_flops_per_s is None and spec.bf16_tensor_flops_per_s is None, where
            assert spec.tf32_tensor_flops_per_s is None and spec.fp8_tensor_flops_per_s is None, where
        else:
            assert spec.fp16_tensor_flops_per_s is not None, where
        if spec.fp16_tensor_flops_per_s is not None:
            # Dense figures only: the largest dense FP16 figure of any GPU here is B200's 2.25 PFLOPS.
            assert spec.fp16_tensor_flops_per_s <= 2.5e15, where
            assert spec.fp16_tensor_flops_per_s >= spec.fp32_flops_per_s, where
        if spec.tf32_tensor_flops_per_s is not None:
            assert spec.tf32_tensor_flops_per_s <= spec.fp16_tensor_flops_per_s, where
        if spec.bf16_tensor_flops_per_s is not None:
            assert spec.bf16_tensor_flops_per_s <= spec.fp16_tensor_flops_per_s, where
        if spec.fp8_tensor_flops_per_s is not None:
            assert spec.fp8_tensor_flops_per_s >= spec.fp16_tensor_flops_per_s, where
        if spec.tdp_w is not None:
            assert 50 <= spec.tdp_w <= 1200, where
        if spec.l2_cache_bytes is not None:
            assert 2**20 <= spec.l2_cache_bytes <= 256 * 2**20, where
        if spec.price_usd is not None:
            assert 100 <= spec.price_usd <= 100_000, where
            assert spec.price_date and spec.price_kind, where
        assert spec.launch_date and re.fullmatch(r"\d{4}-\d{2}", spec.launch_date), where
        if spec.price_date:
            assert re.fullmatch(r"\d{4}(-\d{2})?", spec.price_date), where
        if spec.pcie_gen is not None:
            assert 3 <= spec.pcie_gen <= 6, where


def test_geforce_half_rate_accumulate_is_consistent():
    for spec in all_gpus():
        fp16, fp16acc = spec.fp16_tensor_flops_per_s, spec.fp16_fp16acc_tensor_flops_per_s
        if fp16 is None:  # no tensor figure, so no accumulate rule to state
            assert _no_tensor_figure(spec) and fp16acc is None, spec.name
            continue
        assert spec.half_rate_fp32_accumulate is not None, spec.name
        if spec.half_rate_fp32_accumulate:
            assert "GeForce" in " ".join(spec.aliases), spec.name
            assert fp16acc == pytest.approx(2 * fp16, rel=0.01), spec.name
        else:
            assert fp16acc == pytest.approx(fp16, rel=0.01), spec.name


def test_derived_figures_say_so():
    # Rows whose tensor figures come from "AI TOPS" marketing numbers must say they were derived.
    for row in _rows():
        if "AI TOPS" in row["sources"] and row["fp16_tensor_tflops"]:
            assert "derived" in row["sources"], row["name"]


@pytest.mark.parametrize("device_name,expected", sorted(DEVICE_NAMES.items()))
def test_torch_device_names_resolve(device_name, expected):
    assert canonical_name(device_name) == expected


def test_h100_sxm_and_pcie_are_different_gpus():
    sxm = lookup("NVIDIA H100 80GB HBM3")
    assert sxm is not None and lookup("H100 80GB SXM5") is sxm and lookup("H100 SXM5 80GB") is sxm
    pcie = lookup("H100 PCIe")
    assert pcie is not None and pcie is not sxm
    assert sxm.memory_bandwidth_bytes_per_s > pcie.memory_bandwidth_bytes_per_s
    assert sxm.tdp_w > pcie.tdp_w


def test_a100_form_factors_are_different_gpus():
    assert canonical_name("A100-SXM4-40GB") == "A100 SXM4 40GB"
    assert canonical_name("A100 40GB PCIe") == "A100 PCIe 40GB"
    assert canonical_name("A100 80GB SXM4") == "A100 SXM4 80GB"
    # "A100 80GB" alone could be either card: no guess.
    assert lookup("A100 80GB") is None
    assert {"A100 PCIe 80GB", "A100 SXM4 80GB"} <= set(close_matches("A100 80GB"))


@pytest.mark.parametrize("spelling", ["rtx 4090", "  GeForce RTX   4090 ", "NVIDIA-GeForce-RTX-4090", "RTX4090"])
def test_case_spacing_and_vendor_prefixes_tolerated(spelling):
    if spelling == "RTX4090":
        assert lookup(spelling) is None  # words must be separated: "rtx4090" is not guessed
    else:
        assert canonical_name(spelling) == "RTX 4090"


def test_similar_names_do_not_collide():
    assert canonical_name("RTX 3090 Ti") == "RTX 3090 Ti"
    assert canonical_name("RTX 3090") == "RTX 3090"
    assert canonical_name("Quadro RTX 6000") == "Quadro RTX 6000"
    assert canonical_name("RTX 6000 Ada") == "RTX 6000 Ada"
    assert canonical_name("H200 NVL") != canonical_name("H200 SXM")


def test_every_alias_resolves_to_its_gpu_or_is_knowingly_shared():
    for spec in all_gpus():
        assert lookup(spec.name) is spec
        for alias in spec.aliases:
            found = candidates(alias)
            assert spec in found, (spec.name, alias)
            if len(found) == 1:
                assert lookup(alias) is spec
                continue
            # A device name shared by several cards: memory tells them apart, or the name stays ambiguous.
            assert lookup(alias) is None, alias
            memories = [other.memory_bytes for other in found]
            if memories.count(spec.memory_bytes) == 1:
                assert lookup(alias, memory_bytes=spec.memory_bytes) is spec


def test_shared_device_name_needs_memory():
    name = "NVIDIA GeForce RTX 4060 Ti"
    assert lookup(name) is None
    # total_memory as torch reports it is a little under the nominal size.
    assert canonical_name(name, memory_bytes=16 * GIB - 500 * 2**20) == "RTX 4060 Ti 16GB"
    assert canonical_name(name, memory_bytes=8 * GIB - 300 * 2**20) == "RTX 4060 Ti 8GB"
    assert lookup(name, memory_bytes=12 * GIB) is None


def test_unknown_names_give_none_and_close_matches():
    assert lookup("NVIDIA Fancy GPU 9000") is None
    assert lookup("") is None
    assert canonical_name("H100") is None
    assert {"H100 PCIe 80GB", "H100 SXM5 80GB", "H100 NVL"} <= set(close_matches("H100"))
    assert "RTX 4090" in close_matches("rtx 4900")


H100S = ["H100 PCIe 80GB", "H100 SXM5 80GB", "H100 NVL"]
A100S = ["A100 PCIe 40GB", "A100 SXM4 40GB", "A100 PCIe 80GB", "A100 SXM4 80GB"]


@pytest.mark.parametrize(("typed", "first"), [
    ("H1OO", H100S),  # letter O for zero
    ("h1oo", H100S),
    ("a1000", A100S),  # one digit too many
    ("A1OO", A100S),
    ("V1OO", ["V100 PCIe 16GB", "V100 SXM2 16GB"]),
    ("rtx 4900", ["RTX 4090"]),  # swapped digits: the swap ranks above other one-digit differences
    ("RTX 4091", ["RTX 4090"]),
    ("h100", H100S + ["H200 SXM 141GB"]),  # then the same family (H200) before another letter (V100)
])
def test_typos_get_close_matches_best_first(typed, first):
    assert lookup(typed) is None
    assert close_matches(typed)[:len(first)] == first


@pytest.mark.parametrize(("typed", "only"), [
    ("rtx4090", ["RTX 4090"]), ("GeForce RTX-4090 ", ["RTX 4090"]), ("B2OO", ["B200"]), ("MI3OOX", ["MI300X"]),
    ("rtx pro 6ooo", ["RTX PRO 6000 Blackwell"]), ("RTX 4O60 Ti", ["RTX 4060 Ti 8GB", "RTX 4060 Ti 16GB"]),
])
def test_a_name_equal_but_for_spelling_is_the_only_suggestion(typed, only):
    assert close_matches(typed) == only


def test_resolve_typos_suggest_and_exact_or_ambiguous_names_still_behave():
    with pytest.raises(BadInput, match=r"^unknown GPU 'H1OO'; close matches: H100 PCIe 80GB, H100 SXM5 80GB, H100 NVL"):
        resolve("H1OO")
    with pytest.raises(BadInput, match=r"^unknown GPU 'a1000'; close matches: A100 PCIe 40GB, A100 SXM4 40GB"):
        resolve("a1000")
    with pytest.raises(BadInput, match=r"^unknown GPU 'rtx4090'; close matches: RTX 4090$"):
        resolve("rtx4090")
    assert resolve("rtx-4090").name == "RTX 4090" and resolve("h100 sxm").name == "H100 SXM5 80GB"
    assert resolve("NVIDIA A100-SXM4-80GB").name == "A100 SXM4 80GB"
    with pytest.raises(BadInput, match=r"'rtx 4060 ti' matches several GPUs: RTX 4060 Ti 8GB, RTX 4060 Ti 16GB"):
        resolve("rtx 4060 ti")
    assert close_matches("xyzzy") == [] and close_matches("  ") == []


def test_normalize_ignores_order_and_vendor_words():
    assert normalize("NVIDIA A100-SXM4-80GB") == normalize("A100 80 GB SXM4")
    assert normalize("H100 PCIe") != normalize("H100 SXM5")


def test_peak_flops_per_precision():
    h100 = lookup("NVIDIA H100 80GB HBM3")
    assert peak_flops_per_s(h100, "amp-bf16") == h100.bf16_tensor_flops_per_s
    assert peak_flops_per_s(h100, "tf32") == h100.tf32_tensor_flops_per_s
    assert peak_flops_per_s(h100, "fp32") == h100.fp32_flops_per_s
    # GeForce: the FP32-accumulate rate (what AMP uses), half the FP16-accumulate datasheet figure.
    rtx = lookup("NVIDIA GeForce RTX 4090")
    assert peak_flops_per_s(rtx, "amp-fp16") == pytest.approx(rtx.fp16_fp16acc_tensor_flops_per_s / 2, rel=0.01)
    # Formats a GPU lacks give None, never a fallback.
    assert peak_flops_per_s("Tesla V100-SXM2-16GB", "tf32") is None
    assert peak_flops_per_s("Tesla T4", "amp-bf16") is None
    assert peak_flops_per_s("no such gpu", "fp32") is None
    with pytest.raises(BadInput):
        peak_flops_per_s(h100, "int4")


def test_to_dict_is_json_ready():
    import json

    data = lookup("L40S").to_dict()
    assert data["name"] == "L40S" and data["nvlink"] is False
    json.dumps(data)


def test_nothing_loaded_on_import():
    import subprocess
    import sys

    code = ("import sys, dlbench.catalog, dlbench.reference\n"
            "from dlbench.catalog import lookup as _l\n"
            "assert _l.__module__ == 'dlbench.catalog.lookup'\n"
            "m = sys.modules['dlbench.catalog.lookup']\n"
            "assert m._catalogue.cache_info().currsize == 0\n"
            "import dlbench.reference.published as p\n"
            "assert p._load.cache_info().currsize == 0\n"
            "assert 'torch' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


# Seed 000 (AIME's benchmark page) figures: seed GPU → (catalogue name, memory GB, bandwidth GB/s, TDP W).
SEED_FIGURES = {
    "Tesla V100": ("V100 PCIe 16GB", 16, 900, 250),
    "Geforce RTX 2080 TI": ("RTX 2080 Ti", 11, 616, 260),
    "Geforce RTX 3090": ("RTX 3090", 24, 936, 350),
    "RTX A5000": ("RTX A5000", 24, 768, 230),
    "RTX A6000": ("RTX A6000", 48, 768, 300),
    "AMD Instinct MI100": ("MI100", 32, 1200, 250),
    "Geforce RTX 4060 TI": ("RTX 4060 Ti 16GB", 16, 288, 165),
    "Geforce RTX 4090": ("RTX 4090", 24, 1008, 450),
    "RTX 4500 Ada": ("RTX 4500 Ada", 23, 432, 210),
    "RTX 5000 Ada": ("RTX 5000 Ada", 32, 576, 250),
    "RTX 6000 Ada": ("RTX 6000 Ada", 48, 960, 300),
    "NVIDIA L40S": ("L40S", 48, 864, 300),
    "Geforce RTX 5090": ("RTX 5090", 32, 1800, 575),
    "RTX PRO 6000 Blackwell Workstation Edition": ("RTX PRO 6000 Blackwell", 96, 1792, 600),
    "A100": ("A100 PCIe 80GB", 80, 1935, 300),
    "H100 80GB": ("H100 PCIe 80GB", 80, 2000, 350),
    "H100 NVL": ("H100 NVL", 94, 3900, 400),
    "H200 NVL": ("H200 NVL", 141, 4800, 600),
    "H200 SXM": ("H200 SXM 141GB", 141, 4800, 700),
}
# Where seed 000 is wrong (or names a variant), the catalogue differs and its notes say so.
SEED_ERRATA = {("RTX 2080 Ti", "tdp"), ("MI100", "tdp"), ("RTX 4500 Ada", "memory"), ("L40S", "tdp")}


@pytest.mark.parametrize("seed_name", sorted(SEED_FIGURES))
def test_seed_000_gpus_carry_the_seed_figures(seed_name):
    name, memory_gb, bandwidth_gbs, tdp_w = SEED_FIGURES[seed_name]
    spec = lookup(name)
    assert spec is not None and spec.name == name
    assert "seed 000" in spec.sources
    checks = {
        "memory": (spec.memory_bytes / GIB, memory_gb, f"{memory_gb} GB"),
        "tdp": (spec.tdp_w, tdp_w, f"{tdp_w} W"),
    }
    for field, (ours, seeds, text) in checks.items():
        if (name, field) in SEED_ERRATA:
            assert ours != seeds and text in (spec.notes or ""), (name, field)
        else:
            assert ours == seeds, (name, field)
    # Seed bandwidths are rounded (1.2 TB/s, 1800, 3900): within 3%.
    assert spec.memory_bandwidth_bytes_per_s / 1e9 == pytest.approx(bandwidth_gbs, rel=0.03)


@pytest.mark.skipif(not SEED_000, reason="seed 000 not available")
def test_seed_figures_table_matches_seed_file():
    text = SEED_000[0].read_text(encoding="utf-8")
    blocks = re.split(r"\n(?=Suitable for:)", text)
    parsed = {}
    for before, block in zip(blocks, blocks[1:], strict=False):
        title = before.strip().splitlines()[-1].strip()
        memory = re.search(r"VRAM Memory \(GB\): ([\d/]+)", block)
        power = re.search(r"Power Consumption \(Watt\): (\d+)", block)
        bandwidth = re.search(r"Memory Bandwidth \((GB|TB)/s\): ([\d.]+)", block)
        scale = 1000 if bandwidth and bandwidth[1] == "TB" else 1
        parsed[title] = (memory[1].split("/")[-1] if memory else None, float(bandwidth[2]) * scale, int(power[1]))
    for seed_name, (_, memory_gb, bandwidth_gbs, tdp_w) in SEED_FIGURES.items():
        assert seed_name in parsed, seed_name
        memory, bandwidth, power = parsed[seed_name]
        assert (int(memory), bandwidth, power) == (memory_gb, bandwidth_gbs, tdp_w)


@pytest.mark.skipif(not Path("/work/shared/reference/epoch_ml_hardware.csv").exists(),
                    reason="Epoch AI reference CSV not available")
def test_disagreements_with_cited_epoch_rows_are_documented():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tools" / "build_catalog.py"
    spec = importlib.util.spec_from_file_location("build_catalog", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    problems = module.check(Path("/work/shared/reference"))
    assert not [line for line in problems if "UNDOCUMENTED" in line or "not in epoch" in line], problems


@pytest.mark.gpu
@pytest.mark.skipif(not Path("/proc/driver/nvidia").exists() and not Path("/dev/kfd").exists(),
                    reason="no GPU driver (checked before importing torch, which is slow)")
def test_this_machines_gpu_is_in_the_catalogue():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    name = torch.cuda.get_device_name(0)
    memory = torch.cuda.get_device_properties(0).total_memory
    spec = lookup(name, memory_bytes=memory)
    assert spec is not None, f"{name!r} not in the catalogue; close: {close_matches(name)}"
    # The catalogue's nominal memory is within a few percent of what the driver reports.
    assert abs(spec.memory_bytes - memory) <= 0.1 * spec.memory_bytes


def test_resolve_returns_the_row_or_says_why_not():
    assert resolve("NVIDIA H100 80GB HBM3") is lookup("H100 SXM5 80GB")
    with pytest.raises(BadInput, match=r"^unknown GPU 'RTX4090'; close matches: RTX 4090$"):
        resolve("RTX4090")
    with pytest.raises(BadInput, match=r"^unknown GPU 'H100'; close matches: .*H100 SXM5 80GB"):
        resolve("H100")
    with pytest.raises(BadInput, match=r"^unknown GPU 'xyzzy'; `dlbench gpus` lists every GPU$"):
        resolve("xyzzy")
    # Two cards report this name and no memory size tells them apart: both are named, not "unknown".
    with pytest.raises(BadInput, match=r"matches several GPUs: .*RTX 4060 Ti 8GB.*; name one of them"):
        resolve("NVIDIA GeForce RTX 4060 Ti")
