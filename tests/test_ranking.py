"""Ranking against published results (`vs_published`, `rank_among_published`) and `dlbench reference list`."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from dlbench.analysis.ranking import (
    add_vs_published,
    published_medians,
    rank_among_published,
    result_gpu_name,
    vs_published,
    vs_published_in,
)
from dlbench.jsonio import write_json_atomic
from dlbench.reference import load_published, median_for, medians_by_gpu
from report_docs import environment, make_document, make_result, run_cli

H100_TORCH = "NVIDIA H100 80GB HBM3"


@dataclass(frozen=True)
class Row:
    """A published row with only the fields ranking reads (a simple fake, not the packaged data)."""

    gpu: str
    samples_per_s: float
    workload: str = "resnet50"
    precision: str = "amp-fp16"
    seq_len: int | None = None
    num_gpus: int = 1
    source: str = "Test source (details)"
    notes: str | None = None
    comparable: bool = True


def _fake_published():
    return [Row("H100 SXM5 80GB", 100.0), Row("H100 SXM5 80GB", 200.0), Row("H100 SXM5 80GB", 300.0),
            Row("A100 SXM4 80GB", 150.0), Row("B200", 400.0),
            Row("B200", 10_000.0, comparable=False),  # sequence-binned: must never count
            Row("H100 SXM5 80GB", 999.0, precision="tf32"), Row("H100 SXM5 80GB", 999.0, num_gpus=8)]


def test_ratio_to_same_gpu_median_and_rank():
    vs = vs_published(make_result(), H100_TORCH, _fake_published())
    value = make_result()["samples_per_s"]
    assert vs["gpu"] == "H100 SXM5 80GB"
    assert vs["published_median_samples_per_s"] == 200.0
    assert vs["published_count"] == 3
    assert vs["ratio"] == pytest.approx(value / 200.0)
    # this run replaces its own GPU among the others: B200 (400) and A100 (150)
    expected_rank = 1 + sum(1 for v in (400.0, 150.0) if v > value)
    assert (vs["rank"], vs["rank_of"]) == (expected_rank, 3)
    assert vs["sources"] == ["Test source"]
    assert vs["reason"] is None
    assert vs["text"].startswith(f"{vs['ratio']:.2f}x published median")


def test_not_comparable_rows_are_left_out():
    medians = {m["gpu"]: m["samples_per_s"] for m in published_medians("resnet50", "amp-fp16", None, 1,
                                                                          _fake_published())}
    assert medians["B200"] == 400.0


def test_other_gpu_gets_a_rank_and_no_ratio():
    result = make_result(step_time_s=0.5)  # 512 images/s: faster than every fake row
    vs = vs_published(result, "NVIDIA RTX A6000", _fake_published())
    assert vs["ratio"] is None
    assert (vs["rank"], vs["rank_of"]) == (1, 4)
    assert "no published" in vs["reason"] and "RTX A6000" in vs["reason"]
    assert vs["text"] == "rank 1 of 4 published GPUs"


def test_unknown_gpu_is_ranked_and_says_so():
    vs = vs_published(make_result(), "Mystery Accelerator 9000", _fake_published())
    assert vs["gpu"] is None and vs["ratio"] is None and vs["rank"] is not None
    assert "not in the catalogue" in vs["reason"]


@pytest.mark.parametrize("result, reason", [
    (make_result(flavour="tiny"), "tiny flavour"),
    (make_result(status="oom"), "status oom"),
    (make_result(device="cpu"), "ran on cpu"),
])
def test_unlike_results_are_not_compared(result, reason):
    vs = vs_published(result, None if result["device"] == "cpu" else H100_TORCH, _fake_published())
    assert vs["ratio"] is None and vs["rank"] is None
    assert reason in vs["reason"]


def test_like_with_like_precision_seq_len_and_gpu_count():
    real = load_published()
    # bert-large-squad is published at seq 384 only: seq 256 must not borrow those numbers.
    other_seq = make_result("bert-large-squad", seq_len=256, batch_size=32)
    vs = vs_published(other_seq, H100_TORCH, real)
    assert vs["ratio"] is None and vs["rank"] is None
    assert "no published results for bert-large-squad seq 256" in vs["reason"]
    assert "seq 384" in vs["reason"]  # says what is published instead
    # nothing at all is published for amp-bf16
    vs = vs_published(make_result(precision="amp-bf16"), H100_TORCH, real)
    assert vs["rank"] is None and "amp-bf16" in vs["reason"]
    # 8 GPUs compares with 8-GPU rows only
    eight = make_result(world_size=8)
    vs = vs_published(eight, H100_TORCH, real)
    assert vs["published_median_samples_per_s"] == pytest.approx(
        median_for("H100 SXM5 80GB", "resnet50", "amp-fp16", None, 8))


def test_real_published_data_matches_the_reference_module():
    result = make_result("bert-large-squad", "amp-fp16", seq_len=384, batch_size=32, step_time_s=0.1)
    vs = vs_published(result, H100_TORCH, load_published())
    expected_median = median_for(H100_TORCH, "bert-large-squad", "amp-fp16", 384, 1)
    assert expected_median is not None
    assert vs["ratio"] == pytest.approx(result["samples_per_s"] / expected_median)
    others = {g: v for g, v in medians_by_gpu("bert-large-squad", "amp-fp16", 384, 1).items()
              if g != "H100 SXM5 80GB"}
    assert vs["rank"] == 1 + sum(1 for v in others.values() if v > result["samples_per_s"])
    assert vs["rank_of"] == len(others) + 1
    assert any(s.startswith("Lambda") for s in vs["sources"])


def test_rank_among_published_highlights_this_run():
    rows = rank_among_published([{"label": "this run", "samples_per_s": 250.0}], "resnet50", "amp-fp16", None, 1,
                                _fake_published())
    assert [r["label"] for r in rows] == ["B200", "this run", "H100 SXM5 80GB", "A100 SXM4 80GB"]
    assert [r["is_this_run"] for r in rows] == [False, True, False, False]
    values = [r["samples_per_s"] for r in rows]
    assert values == sorted(values, reverse=True)
    assert rank_among_published([{"label": "x", "samples_per_s": 1.0}], "bert-base-mlm", "fp32", 128, 1,
                                _fake_published()) == []


def test_gpu_name_and_memory_come_from_the_result_device():
    env = environment()
    env["gpus"].append({"name": "NVIDIA A100-SXM4-80GB", "memory_bytes": 85_899_345_920,
                        "compute_capability": "8.0", "multiprocessor_count": 108})
    doc = make_document([make_result(device="cuda:1")], env=env)
    assert result_gpu_name(doc, doc["results"][0]) == "NVIDIA A100-SXM4-80GB"
    assert vs_published_in(doc, doc["results"][0], _fake_published())["gpu"] == "A100 SXM4 80GB"
    assert result_gpu_name(doc, make_result(device="cpu")) is None
    assert result_gpu_name(doc, make_result(device="cuda:7")) is None


def test_run_table_gains_a_vs_published_column():
    from rich.console import Console

    from dlbench.report.run_table import results_table

    results = [make_result(), make_result(flavour="tiny", seed=2), make_result(precision="amp-bf16", seed=3)]
    add_vs_published(results, environment(), _fake_published())
    ratio = results[0]["vs_published"]["ratio"]
    assert ratio == pytest.approx(results[0]["samples_per_s"] / 200.0)
    assert "tiny" in results[1]["vs_published"]["reason"]
    console = Console(width=200, record=True)
    console.print(results_table(results))
    text = console.export_text()
    assert "vs published" in text
    assert f"{ratio:.2f}\u00d7" in text
    rows = [line for line in text.splitlines() if line.startswith("resnet50")]
    assert [row.rstrip().endswith("-") for row in rows] == [False, True, True]
    assert "resnet50 [tiny]" in text  # the flavour marker is escaped, not eaten as rich markup


def test_cli_compare_published_json(tmp_path, capsys):
    doc = make_document([make_result(), make_result(flavour="tiny", seed=3)])
    path = tmp_path / "run.json"
    write_json_atomic(path, doc)
    code, out, err = run_cli(capsys, "compare", str(path), "--published", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["run_id"] == doc["run_id"]
    full, tiny = data["rows"]
    assert full["vs_published"]["gpu"] == "H100 SXM5 80GB" and full["vs_published"]["ratio"] > 0
    assert tiny["vs_published"]["ratio"] is None and "tiny" in tiny["vs_published"]["reason"]


def test_cli_compare_published_table(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    path = tmp_path / "run.json"
    write_json_atomic(path, make_document([make_result()]))
    code, out, err = run_cli(capsys, "compare", str(path), "--published")
    assert code == 0, err
    assert "vs published results" in out and "H100 SXM5 80GB" in out and "\u00d7" in out


def test_cli_reference_list_json_filters(capsys):
    code, out, err = run_cli(capsys, "reference", "list", "--gpu", H100_TORCH, "--workload", "resnet50",
                             "--precision", "amp-fp16", "--num-gpus", "1", "--json")
    assert code == 0, err
    rows = json.loads(out)
    expected = [r for r in load_published() if r.gpu == "H100 SXM5 80GB" and r.workload == "resnet50"
                and r.precision == "amp-fp16" and r.num_gpus == 1]
    assert len(rows) == len(expected) > 0
    assert all(r["source"] and r["source_ref"] for r in rows)


def test_cli_reference_list_table_has_a_source_per_row(capsys):
    code, out, err = run_cli(capsys, "reference", "list", "--workload", "bert-large-mlm")
    assert code == 0, err
    assert "Sources:" in out and "[1]" in out and "DeepLearningExamples" in out


@pytest.mark.parametrize("args, message", [
    (["--gpu", "H1OO SXM"], "unknown GPU"),
    (["--precision", "fp4"], "unknown precision"),
    (["--workload", "gpt2"], "unknown workload 'gpt2'"),
    (["--num-gpus", "0"], "--num-gpus"),
])
def test_cli_reference_list_bad_input(capsys, args, message):
    code, _, err = run_cli(capsys, "reference", "list", *args)
    assert code == 2
    assert message in err and "Traceback" not in err


def test_cli_compare_published_fits_80_columns_with_reasons_as_notes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    path = tmp_path / "run.json"
    results = [make_result(flavour="tiny", seed=i) for i in range(3)]
    write_json_atomic(path, make_document(results))
    code, out, err = run_cli(capsys, "compare", str(path), "--published")
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= 80
    assert out.count("tiny flavour: published results are for the full-size models") == 1  # one note, not 3 cells
    assert out.count("[1]") == 4  # three rows point to it, and the note itself
