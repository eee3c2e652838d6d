"""benchmarks/h100_collect.py on synthetic H100 documents (no GPU, no torch)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from dlbench.catalog import lookup, peak_flops_per_s
from dlbench.reference import median_for
from report_docs import environment, make_document, make_result

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "h100_collect.py"


@pytest.fixture(scope="module")
def collect_module():
    spec = importlib.util.spec_from_file_location("h100_collect", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _docs():
    eager = make_document([
        make_result("resnet50", "tf32", "off", batch_size=256, step_time_s=0.20, seed=1),
        make_result("resnet50", "amp-fp16", "off", batch_size=512, step_time_s=0.25, seed=2),
        make_result("resnet50", "amp-bf16", "off", batch_size=512, step_time_s=0.26, seed=3),
        make_result("bert-large-squad", "tf32", "off", batch_size=64, seq_len=384, status="oom"),
    ], env=environment())
    compiled = make_document([
        make_result("resnet50", "tf32", "default", batch_size=256, step_time_s=0.16, seed=4),
        make_result("resnet50", "amp-fp16", "default", batch_size=512, step_time_s=0.20, seed=5),
    ], env=environment())
    return [eager, compiled]


def test_rows_derive_mfu_speedups_and_published_ratio(collect_module):
    rows = collect_module.collect(_docs())
    assert len(rows) == 5  # the oom result has no throughput row
    by = {(r["precision"], r["compile"]): r for r in rows}
    spec = lookup("NVIDIA H100 80GB HBM3", 85_520_809_984)
    assert spec is not None and all(r["gpu"] == spec.name for r in rows)

    tf32, tf32_c = by[("tf32", "off")], by[("tf32", "default")]
    assert tf32["mfu"] == pytest.approx(tf32["samples_per_s"] * 24.3e9 / peak_flops_per_s(spec, "tf32"))
    fp16 = by[("amp-fp16", "off")]
    assert fp16["mfu"] == pytest.approx(fp16["samples_per_s"] * 24.3e9 / peak_flops_per_s(spec, "amp-fp16"))
    assert tf32_c["compile_speedup"] == pytest.approx(tf32_c["samples_per_s"] / tf32["samples_per_s"])
    assert tf32["compile_speedup"] is None and tf32["amp_speedup"] is None
    assert fp16["amp_speedup"] == pytest.approx(fp16["samples_per_s"] / tf32["samples_per_s"])
    fp16_c = by[("amp-fp16", "default")]
    assert fp16_c["amp_speedup"] == pytest.approx(fp16_c["samples_per_s"] / tf32_c["samples_per_s"])

    published = median_for(spec.name, "resnet50", "amp-fp16", None, 1)
    assert published is not None  # Lambda publishes H100 SXM ResNet-50 AMP
    assert fp16["vs_published"] == pytest.approx(fp16["samples_per_s"] / published)
    bf16 = by[("amp-bf16", "off")]
    if median_for(spec.name, "resnet50", "amp-bf16", None, 1) is None:
        assert bf16["vs_published"] is None


def test_markdown_table_and_cli(collect_module, tmp_path, capsys):
    paths = []
    for i, doc in enumerate(_docs()):
        path = tmp_path / f"step{i}.json"
        path.write_text(json.dumps(doc))
        paths.append(str(path))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert collect_module.main([*paths, str(bad)]) == 0
    out, err = capsys.readouterr()
    assert "bad.json" in err
    lines = [line for line in out.splitlines() if line.startswith("| resnet50")]
    assert len(lines) == 5 and all(line.count("|") == 14 for line in lines)
    assert "MFU" in out.splitlines()[0]
    assert collect_module.main([*paths, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["precision"] for r in rows} == {"tf32", "amp-fp16", "amp-bf16"}


def test_speedup_partners_prefer_the_same_document(collect_module):
    first = make_document([make_result("resnet50", "tf32", "off", batch_size=256, step_time_s=0.20, seed=1),
                           make_result("resnet50", "amp-fp16", "off", batch_size=512, step_time_s=0.25, seed=2)])
    second = make_document([make_result("resnet50", "tf32", "off", batch_size=256, step_time_s=0.30, seed=3),
                            make_result("resnet50", "amp-fp16", "off", batch_size=512, step_time_s=0.35, seed=4)])
    rows = collect_module.collect([first, second], ["a", "b"])
    tf32 = {r["source"]: r["samples_per_s"] for r in rows if r["precision"] == "tf32"}
    for row in (r for r in rows if r["precision"] == "amp-fp16"):
        assert row["amp_speedup"] == pytest.approx(row["samples_per_s"] / tf32[row["source"]])


def test_amp_speedup_uses_the_reports_batch_rule(collect_module):
    """The AMP partner is the one `dlbench report` would pick: tf32 at the same batch where measured."""
    doc = make_document([make_result("resnet50", "tf32", "off", batch_size=256, step_time_s=0.20, seed=1),
                         make_result("resnet50", "tf32", "off", batch_size=512, step_time_s=0.36, seed=2),
                         make_result("resnet50", "amp-fp16", "off", batch_size=512, step_time_s=0.25, seed=3)])
    rows = collect_module.collect([doc])
    tf32_512 = next(r for r in rows if r["precision"] == "tf32" and r["batch_size"] == 512)
    [amp] = [r for r in rows if r["precision"] == "amp-fp16"]
    assert amp["amp_speedup"] == pytest.approx(amp["samples_per_s"] / tf32_512["samples_per_s"])


def test_mfu_of_a_two_gpu_result_is_per_gpu(collect_module):
    """MFU = samples/s x FLOPs per sample / (GPUs x peak): a 2-GPU run at twice the throughput has the same MFU."""
    doc = make_document([make_result("resnet50", "amp-bf16", "off", batch_size=256, step_time_s=0.20, seed=1),
                         make_result("resnet50", "amp-bf16", "off", batch_size=256, world_size=2,
                                     step_time_s=0.20, seed=1)], env=environment(gpu_count=2))
    one, two = sorted(collect_module.collect([doc]), key=lambda r: r["world_size"])
    peak = peak_flops_per_s(lookup("NVIDIA H100 80GB HBM3", 85_520_809_984), "amp-bf16")
    assert two["samples_per_s"] == pytest.approx(2 * one["samples_per_s"])
    assert two["mfu"] == pytest.approx(two["samples_per_s"] * 24.3e9 / (2 * peak))
    assert two["mfu"] == pytest.approx(one["mfu"])
