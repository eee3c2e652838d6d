"""Packaged published results: mapping to dlbench names and the lookup helpers
(python -m pytest tests/test_reference_data.py)."""

from __future__ import annotations

import csv
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from dlbench.catalog import lookup
from dlbench.measurement.config import PRECISIONS
from dlbench.reference import load_published, median_for, medians_by_gpu, published_for

REPO = Path(__file__).resolve().parents[1]
SHARED_CSV = Path("/work/shared/reference/published_training_throughput.csv")
# dlbench workloads (issue 2) and their default sequence lengths.
WORKLOADS = {"resnet50", "bert-base-squad", "bert-large-squad", "bert-base-mlm", "bert-large-mlm"}


def test_every_row_maps_to_a_catalogue_gpu_and_dlbench_names():
    results = load_published()
    assert results
    for result in results:
        spec = lookup(result.gpu)
        assert spec is not None and spec.name == result.gpu, result
        assert result.workload in WORKLOADS, result
        assert result.precision in PRECISIONS, result
        assert result.num_gpus >= 1 and result.samples_per_s > 0, result
        assert result.source and result.source_ref, result


def test_listed_gpu_names_resolve_or_carry_a_mapping_note():
    for result in load_published():
        spec = lookup(result.gpu_listed)
        if spec is None or spec.name != result.gpu:
            assert result.mapping_note, result.gpu_listed


def test_sequence_lengths_follow_the_workload_mapping():
    for result in load_published():
        if result.workload == "resnet50":
            assert result.seq_len is None
        elif result.workload.endswith("-squad"):
            assert result.workload_listed.endswith("squad384") and result.seq_len == 384
        else:
            assert result.workload_listed.endswith(f"pretrain{result.seq_len}")


def test_lambda_fp32_column_is_tf32_on_ampere_and_later():
    for result in load_published():
        arch = lookup(result.gpu).architecture
        if result.precision == "tf32":
            assert arch not in ("Volta", "Turing"), result
        if result.precision == "fp32" and result.source.startswith("Lambda"):
            assert arch in ("Volta", "Turing"), result


def test_multi_gpu_and_fleet_rows_kept():
    results = load_published()
    assert {1, 2, 4, 8} <= {r.num_gpus for r in results}
    assert any("fleet" in (r.notes or "") for r in results)


def test_sequence_binned_rows_are_not_comparable():
    binned = [r for r in load_published() if "binning" in (r.notes or "")]
    assert binned and not any(r.comparable for r in binned)


@pytest.mark.skipif(not SHARED_CSV.exists(), reason="shared reference CSV not available")
def test_every_source_row_is_packaged_with_its_source():
    with SHARED_CSV.open(newline="", encoding="utf-8") as handle:
        source = list(csv.DictReader(handle))
    results = load_published()
    assert len(results) == len(source)
    for row, result in zip(source, results, strict=True):
        assert (row["source"], row["source_ref"], row["gpu"]) == (result.source, result.source_ref, result.gpu_listed)
        assert float(row["samples_per_s"]) == result.samples_per_s


@pytest.mark.skipif(not SHARED_CSV.exists(), reason="shared reference CSV not available")
def test_packaged_file_is_up_to_date_with_the_build_script():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "build_reference.py"), "--check",
                           "--source", str(SHARED_CSV)],
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr


def test_filters_accept_any_catalogue_spelling():
    by_torch_name = published_for(gpu="NVIDIA H100 80GB HBM3", workload="resnet50", precision="amp-fp16",
                                  num_gpus=1)
    assert by_torch_name
    assert by_torch_name == published_for(gpu="H100 80GB SXM5", workload="resnet50", precision="amp-fp16",
                                          num_gpus=1)
    assert all(r.gpu == "H100 SXM5 80GB" and r.num_gpus == 1 for r in by_torch_name)
    assert published_for(gpu="H100 PCIe") == []  # a different GPU, with no published rows here
    assert published_for(gpu="no such gpu") == []


def test_median_for_is_the_median_of_matching_comparable_rows():
    rows = published_for("H100 SXM5 80GB", "bert-large-squad", "amp-fp16", 384, 1)
    assert len(rows) > 2
    assert median_for("NVIDIA H100 80GB HBM3", "bert-large-squad", "amp-fp16", 384) == \
        statistics.median(r.samples_per_s for r in rows)
    assert median_for("H100 SXM5 80GB", "bert-large-squad", "amp-fp16", 128) is None
    assert median_for("RTX 3080", "resnet50", "amp-fp16") is None


def test_median_excludes_non_comparable_rows():
    binned = [r for r in load_published() if not r.comparable][0]
    assert median_for(binned.gpu, binned.workload, binned.precision, binned.seq_len, binned.num_gpus) is None


def test_medians_by_gpu_ranks_fastest_first():
    medians = medians_by_gpu("resnet50", "amp-fp16")
    values = list(medians.values())
    assert len(medians) > 3 and values == sorted(values, reverse=True)
    for gpu, value in medians.items():
        assert value == median_for(gpu, "resnet50", "amp-fp16")


def test_batch_sizes_are_per_gpu_whatever_the_gpu_count():
    """Lambda's v1 CSVs list the global batch (per-GPU batch x GPUs); `reference list` showed it under "bs/GPU",
    so that the 2x RTX 4090 row read 896 per GPU where each trained 448, as the 1x row does."""
    by_config: dict = {}
    for r in load_published():
        if r.source.startswith("Lambda deep learning benchmark v1") and r.batch_size_per_gpu:
            by_config.setdefault((r.gpu, r.workload, r.precision), set()).add((r.num_gpus, r.batch_size_per_gpu))
    multi = {k: v for k, v in by_config.items() if len({n for n, _ in v}) > 1}
    assert len(multi) >= 10
    for config, rows in multi.items():
        assert len({batch for _, batch in rows}) == 1, (config, sorted(rows))
    rtx4090 = [r for r in published_for("RTX 4090", workload="resnet50", precision="amp-fp16")
               if r.source.startswith("Lambda deep learning benchmark v1")]
    assert {(r.num_gpus, r.batch_size_per_gpu) for r in rtx4090} == {(1, 448), (2, 448)}
