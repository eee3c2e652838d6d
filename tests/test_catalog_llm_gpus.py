"""The GPUs LLM users compare (issue 14): Apple M-series, consumer AMD RDNA 2-4, older and used-market NVIDIA cards.

    python -m pytest tests/test_catalog_llm_gpus.py

Checks that the rows load, cite URLs, carry plausible figures, resolve from the names people type and the names
dlbench records, and that estimate/advise treat their blank tensor columns as unknown (never a fallback).
"""

from __future__ import annotations

import json
import re

import pytest

from cli_helpers import cli
from dlbench.catalog import all_gpus, lookup, peak_flops_per_s, resolve
from dlbench.catalog.spec import GIB

APPLE = ["M1 Max", "M2 Max", "M3 Max", "M4 Max", "M1 Ultra", "M2 Ultra", "M3 Ultra"]
AMD_CONSUMER = ["RX 6800 XT", "RX 6900 XT", "RX 7900 XT", "RX 7900 XTX", "RX 9070 XT"]
NVIDIA_OLDER = ["RTX 3060 12GB", "RTX 3070", "GTX 1080 Ti", "Tesla P40", "TITAN V", "TITAN Xp", "P100 PCIe 16GB"]
# No tensor or matrix rate in any source checked: those columns stay blank.
NO_TENSOR = APPLE + AMD_CONSUMER + ["GTX 1080 Ti", "Tesla P40", "TITAN V", "TITAN Xp", "P100 PCIe 16GB"]
NEW = APPLE + AMD_CONSUMER + NVIDIA_OLDER

# Cards LLM tables use that the catalogue already had before this change: they must still be there.
ALREADY_PRESENT = ["RTX 3080", "RTX 2080 Ti", "RTX A6000", "RTX 6000 Ada", "L40S", "RTX PRO 6000 Blackwell",
                   "H200 SXM 141GB", "B200", "MI300X"]

# (memory GB, bandwidth GB/s) as the cited sources give them: a typo in the CSV shows up here.
FIGURES = {
    "M1 Max": (64, 400), "M2 Max": (96, 400), "M3 Max": (128, 400), "M4 Max": (128, 546),
    "M1 Ultra": (128, 800), "M2 Ultra": (192, 800), "M3 Ultra": (512, 819),
    "RX 6800 XT": (16, 512), "RX 6900 XT": (16, 512), "RX 7900 XT": (20, 800), "RX 7900 XTX": (24, 960),
    "RX 9070 XT": (16, 640), "RTX 3060 12GB": (12, 360), "RTX 3070": (8, 448), "GTX 1080 Ti": (11, 484),
    "Tesla P40": (24, 694.3), "TITAN V": (12, 651), "TITAN Xp": (12, 548), "P100 PCIe 16GB": (16, 732),
}


def _spec(name):
    spec = lookup(name)
    assert spec is not None and spec.name == name, name
    return spec


@pytest.mark.parametrize("name", NEW + ALREADY_PRESENT)
def test_row_is_in_the_catalogue(name):
    _spec(name)


@pytest.mark.parametrize("name", NEW)
def test_every_new_row_cites_urls_and_plausible_figures(name):
    spec = _spec(name)
    assert re.search(r"https?://\S+", spec.sources), name
    memory_gb, bandwidth_gbs = FIGURES[name]
    assert spec.memory_bytes == memory_gb * GIB
    assert spec.memory_bandwidth_bytes_per_s == pytest.approx(bandwidth_gbs * 1e9)
    # Bandwidth per byte of memory: 0.1-60 per second for every GPU here (P40 29, M3 Ultra 1.6, RTX 3070 56).
    assert 0.1 <= spec.memory_bandwidth_bytes_per_s / spec.memory_bytes <= 60
    assert re.fullmatch(r"\d{4}-\d{2}", spec.launch_date)
    if spec.price_usd is not None:
        assert spec.price_kind and spec.price_date
        assert re.search(r"\$?\b" + str(int(spec.price_usd)) + r"\b", spec.sources) or "Epoch AI" in spec.sources


def test_apple_rows_are_the_largest_configuration_and_say_so():
    for name in APPLE:
        spec = _spec(name)
        assert spec.vendor == "Apple" and spec.suitable_for == ("workstation",)
        assert "largest configuration" in spec.notes
        # Apple publishes no TDP, price or matrix rate: left blank, never guessed.
        assert spec.tdp_w is None and spec.price_usd is None
        assert spec.fp16_tensor_flops_per_s is None and spec.bf16_tensor_flops_per_s is None


def test_blank_tensor_columns_mean_no_source_not_zero():
    for name in NO_TENSOR:
        spec = _spec(name)
        assert "no tensor-core figure" in spec.notes
        for precision in ("tf32", "amp-fp16", "amp-bf16", "fp8"):
            assert peak_flops_per_s(spec, precision) is None, (name, precision)
    # The older GeForce cards' tensor rates are derived from core counts and clocks, and say so.
    for name in ("RTX 3060 12GB", "RTX 3070"):
        spec = _spec(name)
        assert "derived" in spec.sources
        assert spec.half_rate_fp32_accumulate is True
        assert spec.fp16_fp16acc_tensor_flops_per_s == pytest.approx(2 * spec.fp16_tensor_flops_per_s, rel=0.01)


@pytest.mark.parametrize(("typed", "expected"), [
    ("RTX 3070", "RTX 3070"), ("NVIDIA GeForce RTX 3070", "RTX 3070"), ("rtx 3060", "RTX 3060 12GB"),
    ("NVIDIA GeForce RTX 3060", "RTX 3060 12GB"), ("GTX 1080 Ti", "GTX 1080 Ti"),
    ("NVIDIA GeForce GTX 1080 Ti", "GTX 1080 Ti"), ("Tesla P40", "Tesla P40"), ("P40", "Tesla P40"),
    ("RX 6800 XT", "RX 6800 XT"), ("AMD Radeon RX 6800 XT", "RX 6800 XT"), ("rx 6900 xt", "RX 6900 XT"),
    ("RX 7900 XTX", "RX 7900 XTX"), ("AMD Radeon RX 7900 XT", "RX 7900 XT"), ("Radeon RX 9070 XT", "RX 9070 XT"),
    ("M2 Ultra", "M2 Ultra"), ("Apple M2 Max", "M2 Max"), ("apple m4 max", "M4 Max"),
    ("M2 Ultra 76-core GPU", "M2 Ultra"), ("M3 Max 40-core GPU", "M3 Max"),
    # What telemetry.environment records for an Apple GPU: "<cpu model> GPU (MPS)".
    ("Apple M2 Max GPU (MPS)", "M2 Max"), ("Apple M3 Ultra GPU (MPS)", "M3 Ultra"),
    ("Apple M1 Max GPU (MPS)", "M1 Max"), ("NVIDIA TITAN V", "TITAN V"), ("Titan Xp", "TITAN Xp"),
    ("Tesla P100-PCIE-16GB", "P100 PCIe 16GB"),
])
def test_common_spellings_resolve(typed, expected):
    assert resolve(typed).name == expected


def test_similar_new_names_do_not_collide():
    assert lookup("RX 7900 XT").name != lookup("RX 7900 XTX").name
    assert lookup("M2 Max").name != lookup("M2 Ultra").name
    assert lookup("RTX 3060 Ti") is None  # not in the catalogue: no fallback to the RTX 3060
    assert lookup("Apple M2 Pro GPU (MPS)") is None
    assert lookup("M2") is None


def test_every_vendor_is_listed_and_filterable():
    vendors = {spec.vendor for spec in all_gpus()}
    assert vendors == {"NVIDIA", "AMD", "Apple"}


def test_gpus_show_and_list_work_for_the_new_rows(capsys):
    for name in ("RTX 3070", "RX 6800 XT", "M2 Ultra"):
        code, out, _ = cli(capsys, "gpus", "show", name, "--json")
        assert code == 0
        data = json.loads(out)
        assert data["name"] == name and "http" in data["sources"]
    code, out, _ = cli(capsys, "gpus", "--vendor", "apple", "--json")
    assert code == 0
    assert {gpu["name"] for gpu in json.loads(out)} == set(APPLE)


def test_estimate_and_advise_never_use_a_blank_figure():
    from dlbench.analysis.advise import advise
    from dlbench.analysis.estimate import estimate

    for name in ("RX 7900 XTX", "M2 Ultra", "GTX 1080 Ti"):
        e = estimate(name, "resnet50", "amp-fp16")
        assert e.samples_per_s is None and e.kind == "unknown"
        assert "no amp-fp16 peak figure" in e.basis
    advice = advise().to_dict()
    ranked = {option["gpu"] for option in advice["options"]}
    assert not ranked & set(NO_TENSOR)
    excluded = {row["gpu"]: row["reason"] for row in advice["excluded"]}
    assert all(name in excluded for name in APPLE + AMD_CONSUMER)
    assert "no price" in excluded["M2 Ultra"] and "amp-fp16" in excluded["RX 7900 XTX"]


def test_every_csv_row_has_exactly_the_declared_columns():
    # An unquoted comma in a hand-edited `notes` or `sources` cell would silently cut the cell short.
    import csv
    from importlib import resources

    from dlbench.catalog.spec import CSV_COLUMNS

    path = resources.files("dlbench.catalog").joinpath("gpus.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        widths = {tuple(row)[0]: len(row) for row in csv.reader(handle)}
    assert {name: n for name, n in widths.items() if n != len(CSV_COLUMNS)} == {}
