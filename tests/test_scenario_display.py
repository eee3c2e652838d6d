"""Infer and generate results wherever a user looks: the run table, vs published, exports, doctor, fleet.

Run with `python -m pytest tests/test_scenario_display.py`. The results are built by hand (tests/scenario_docs.py)
as the scenarios store them, so nothing here needs a model or a GPU.
"""

from __future__ import annotations

from rich.console import Console

from dlbench.report.results_tables import results_tables as results_table
from report_docs import make_result
from scenario_docs import document, make_generate_result, make_infer_result


def _render(results, width=200, **kwargs):
    console = Console(width=width, record=True)
    console.print(results_table(results, title="dlbench run on cuda", width=width, **kwargs))
    return console.export_text()


def test_infer_table_shows_offline_throughput_and_latency_percentiles():
    result = make_infer_result(latency_s=0.002)
    text = _render([result])
    for header in ("samples/s", "batch ms", "lat p50 ms", "lat p99 ms", "mem GB"):
        assert header in text
    assert "step ms" not in text and "TFLOP/s" not in text  # training's columns stay with training
    p99 = result["metrics"]["latency_s"]["p99"] * 1e3
    assert f"{p99:.2f}" in text
    assert f"{result['metrics']['samples_per_s']['value']:,.0f}" in text


def test_generate_table_shows_prefill_decode_tpot_bandwidth_and_mfu():
    result = make_generate_result(bandwidth_fraction=0.81, mfu=0.55)
    text = _render([result])
    for header in ("tokens", "prefill tok/s", "TTFT ms", "decode tok/s", "TPOT p50 ms", "TPOT p99 ms", "BW %",
                   "MFU"):
        assert header in text
    assert "512+128" in text and "81%" in text and "55%" in text
    assert f"{result['metrics']['tpot_s']['p99'] * 1e3:.2f}" in text


def test_generate_without_catalogue_bandwidth_leaves_the_column_out():
    text = _render([make_generate_result(bandwidth_fraction=None, mfu=None, device="cpu")])
    assert "BW %" not in text and "MFU" not in text


def test_a_mixed_run_prints_one_table_per_scenario():
    text = _render([make_result(), make_infer_result(), make_generate_result()])
    assert "dlbench run on cuda: train" in text
    assert "dlbench run on cuda: infer" in text
    assert "dlbench run on cuda: generate" in text
    assert text.index(": train") < text.index(": infer") < text.index(": generate")


def test_training_only_table_is_unchanged():
    from dlbench.report import run_table

    results = [make_result(), make_result(precision="tf32", status="oom")]
    for width in (160, 80):
        plain = Console(width=width, record=True)
        plain.print(run_table.results_table(results, title="t", width=width, details=True))
        grouped = Console(width=width, record=True)
        grouped.print(results_table(results, title="t", width=width, details=True))
        assert grouped.export_text() == plain.export_text()


def test_scenario_tables_fit_80_columns_and_keep_every_number():
    results = [make_infer_result(), make_generate_result(), make_generate_result(batch_size=8)]
    for r in results:
        r["vs_published"] = {"ratio": 0.9, "rank": 1, "rank_of": 2}
    text = _render(results, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    for header in ("lat p99 ms", "decode tok/s", "TPOT p99 ms", "BW %", "vs published"):
        assert header in text


# -- vs published -------------------------------------------------------------------------------------------

def test_generate_result_is_ranked_against_comparable_published_rows():
    from dlbench.analysis.ranking import annotate_document

    # gpt-fast publishes llama-3.1-8b bf16 batch 1 at 93.89 tokens/s on an A100 SXM4 80GB.
    doc = document([make_generate_result(tpot_s=0.0075)], gpu_name="NVIDIA A100-SXM4-80GB")
    doc["environment"]["gpus"][0]["memory_bytes"] = 85_899_345_920
    (vs,) = annotate_document(doc)
    decode = doc["results"][0]["metrics"]["decode_tokens_per_s"]["value"]
    assert vs["metric"] == "decode_tokens_per_s"
    assert vs["ratio"] is not None and abs(vs["ratio"] - decode / 93.89) < 1e-9
    text = _render([{**doc["results"][0], "vs_published": vs}])
    assert "vs published" in text and f"{decode / 93.89:.2f}" in text


def test_generate_on_another_gpu_gets_a_rank_and_tiny_or_cpu_gets_a_reason():
    from dlbench.analysis.ranking import annotate_document

    (vs,) = annotate_document(document([make_generate_result(tpot_s=0.005)]))  # H100: 200 tokens/s
    assert vs["ratio"] is None and vs["rank"] == 1 and vs["rank_of"] == 2
    (tiny,) = annotate_document(document([make_generate_result(flavour="tiny")]))
    assert "tiny" in tiny["reason"]
    (cpu,) = annotate_document(document([make_generate_result(device="cpu")], gpu_name=None))
    assert "cpu" in cpu["reason"]


def test_infer_result_is_ranked_only_against_offline_rows_of_its_batch():
    from dlbench.analysis.inference_ranking import published_inference_medians

    rows = published_inference_medians(make_infer_result(precision="fp32", batch_size=256))
    assert {r["gpu"] for r in rows} == {"V100 SXM2 16GB", "T4"}
    assert rows[0]["value"] == 1261
    assert published_inference_medians(make_infer_result(precision="fp32", batch_size=32)) == []
    assert published_inference_medians(make_infer_result(precision="bf16")) == []


# -- results list / show / export ---------------------------------------------------------------------------

def _stored_mixed_run():
    from dlbench.store import open_store

    doc = document([make_result(), make_infer_result(), make_generate_result()])
    with open_store() as store:
        store.save_run(doc)
    return doc


def test_results_list_has_a_scenario_column(capsys):
    from cli_helpers import cli

    doc = _stored_mixed_run()
    code, out, _ = cli(capsys, "results", "list")
    assert code == 0 and "scenario" in out and "generate" in out and "infer" in out
    code, out, _ = cli(capsys, "results", "list", "--json")
    import json

    assert json.loads(out)[0]["scenarios"] == ["train", "infer", "generate"]
    assert json.loads(out)[0]["run_id"] == doc["run_id"]


def test_results_show_prints_each_scenario_with_its_columns(capsys):
    from cli_helpers import cli

    _stored_mixed_run()
    code, out, _ = cli(capsys, "results", "show", "latest")
    assert code == 0
    for text in ("Results: train", "Results: infer", "Results: generate", "lat p99 ms", "decode tok/s",
                 "TPOT p99 ms"):
        assert text in out


def test_results_export_has_primary_and_scenario_metric_columns(capsys):
    import csv
    import io
    import json

    from cli_helpers import cli
    from dlbench.store.rows import EXPORT_COLUMNS, SCENARIO_METRIC_COLUMNS

    doc = _stored_mixed_run()
    code, out, _ = cli(capsys, "results", "export", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == list(EXPORT_COLUMNS)
    assert set(SCENARIO_METRIC_COLUMNS) <= set(rows[0])
    train, infer, generate = rows
    assert [r["scenario"] for r in rows] == ["train", "infer", "generate"]
    assert generate["primary_metric"] == "decode_tokens_per_s" and generate["primary_unit"] == "tokens/s"
    metrics = doc["results"][2]["metrics"]
    assert float(generate["decode_tokens_per_s"]) == metrics["decode_tokens_per_s"]["value"]
    assert float(generate["tpot_p99_s"]) == metrics["tpot_s"]["p99"]
    assert float(generate["bandwidth_fraction"]) == 0.8
    assert float(infer["latency_p99_s"]) == doc["results"][1]["metrics"]["latency_s"]["p99"]
    assert train["decode_tokens_per_s"] == "" and infer["ttft_s"] == ""
    code, out, _ = cli(capsys, "results", "export", "--format", "json")
    assert json.loads(out)[2]["mfu"] == 0.5


# -- compare --------------------------------------------------------------------------------------------------

def test_compare_pairs_infer_results_and_names_their_metric():
    from dlbench.analysis.compare import compare_documents
    from dlbench.report.comparison_tables import compare_table

    a = document([make_result(), make_infer_result(step_time_s=0.020, seed=1)])
    b = document([make_result(seed=3), make_infer_result(step_time_s=0.016, seed=2)])
    report = compare_documents(a, b)
    infer = next(row for row in report["rows"] if row["scenario"] == "infer")
    assert infer["metric"] == "samples_per_s" and infer["unit"] == "samples/s"
    assert abs(infer["ratio"] - 1.25) < 0.02 and infer["significant"] is True
    assert len(report["rows"]) == 2  # the train and the infer resnet50 are not paired with each other
    console = Console(width=160, record=True)
    console.print(compare_table(report))
    text = console.export_text()
    assert "infer: offline samples/s" in text and "(infer)" in text and "(train)" in text


def test_compare_published_names_the_inference_metric(capsys):
    from cli_helpers import cli
    from dlbench.store import open_store

    doc = document([make_infer_result(precision="fp32", batch_size=256, step_time_s=0.1)],
                   gpu_name="Tesla T4")
    doc["environment"]["gpus"][0]["memory_bytes"] = 15_843_721_216
    with open_store() as store:
        store.save_run(doc)
    code, out, _ = cli(capsys, "compare", "latest", "--published")
    assert code == 0
    assert "measured" in out and "(samples_per_s)" in out and "T4" in out


# -- doctor ---------------------------------------------------------------------------------------------------

def _causes(entry):
    return {f["cause"]: f for f in entry["findings"]}


def test_doctor_explains_a_slow_decode_by_its_bandwidth_roofline():
    from dlbench.analysis.diagnose import diagnose, likely_causes

    doc = document([make_generate_result(bandwidth_fraction=0.35, compile="off"), make_generate_result(seed=1)])
    report = diagnose(doc)
    slow, fast = report["results"]
    assert slow["compared_with"] == "roofline" and slow["verdict"] == "below" and slow["ratio"] == 0.35
    finding = _causes(slow)["decode_below_roofline"]
    assert "35%" in finding["message"] and "3,350 GB/s" in finding["message"] and "eager" in finding["message"]
    assert "reduce-overhead" in finding["advice"]
    assert fast["verdict"] == "in line" and "decode_roofline" in _causes(fast)
    assert fast["rate_unit"] == "decode tokens/s"
    assert "decode_below_roofline" in likely_causes(report)


def test_doctor_names_a_low_prefill_mfu_and_prefers_a_same_gpu_published_figure():
    from dlbench.analysis.diagnose import diagnose

    doc = document([make_generate_result(mfu=0.1)], gpu_name="NVIDIA A100-SXM4-80GB")
    doc["environment"]["gpus"][0]["memory_bytes"] = 85_899_345_920
    (entry,) = diagnose(doc)["results"]
    assert entry["compared_with"] == "published" and entry["published"]["samples_per_s"] == 93.89
    assert abs(entry["ratio"] - entry["samples_per_s"] / 93.89) < 1e-9
    assert _causes(entry)["prefill_mfu_low"]["severity"] == "warn"


def test_doctor_names_a_long_batch1_latency_tail():
    from dlbench.analysis.diagnose import diagnose

    wide, narrow = diagnose(document([make_infer_result(spread=0.3), make_infer_result(spread=0.02)]))["results"]
    assert _causes(wide)["latency_tail"]["severity"] == "warn"
    assert _causes(narrow)["latency_spread"]["severity"] == "info"
    assert wide["estimate"] is None  # the training estimator says nothing about inference


def test_doctor_cli_prints_the_roofline_line(capsys):
    from cli_helpers import cli
    from dlbench.store import open_store

    with open_store() as store:
        store.save_run(document([make_generate_result(bandwidth_fraction=0.3), make_infer_result(spread=0.3)]))
    code, out, _ = cli(capsys, "doctor", "latest")
    assert code == 0
    flat = " ".join(out.split())
    assert "(decode tokens/s)" in flat and "30% of the card's memory bandwidth" in flat
    assert "below half of the bandwidth roofline" in flat and "a long tail" in flat


# -- fleet ----------------------------------------------------------------------------------------------------

def test_fleet_pairs_within_a_scenario_and_finds_the_slow_decoder():
    from dlbench.analysis.fleet import fleet_report
    from dlbench.report.comparison_tables import fleet_table

    docs = [document([make_infer_result(seed=i), make_generate_result(seed=i, tpot_s=0.0075 * (1.15 if i == 3
                                                                                                 else 1.0))],
                     hostname=f"node0{i + 1}") for i in range(6)]
    report = fleet_report(docs)
    groups = {g["scenario"]: g for g in report["groups"]}
    assert set(groups) == {"infer", "generate"}  # resnet50 infer never meets llama decode
    slow = [r["host"] for r in groups["generate"]["rows"] if r["verdict"] == "slow"]
    assert slow == ["node04"]
    assert all(r["verdict"] != "slow" for r in groups["infer"]["rows"])
    assert abs(groups["generate"]["median_samples_per_s"] - 1 / 0.0075) < 3  # decode tokens/s, the primary
    console = Console(width=160, record=True)
    console.print(fleet_table(groups["generate"]))
    text = console.export_text()
    assert "(generate)" in text and "tokens/s" in text


# -- HTML report ----------------------------------------------------------------------------------------------

def _a100(results):
    doc = document(results, gpu_name="NVIDIA A100-SXM4-80GB")
    doc["environment"]["gpus"][0]["memory_bytes"] = 85_899_345_920
    return doc


def test_report_draws_latency_ranking_and_roofline_charts_for_infer_and_generate(tmp_path):
    from dlbench.report.html import write_report_files

    doc = _a100([make_result(), make_infer_result(), make_generate_result(),
                 make_generate_result(compile="off", bandwidth_fraction=0.4, tpot_s=0.015)])
    written = write_report_files([doc], tmp_path)
    names = [c.name for c in written.charts]
    for name in ("latency_infer", "latency_generate", "tokens_ranking_llama-3.1-8b_bf16_bs1", "roofline"):
        assert name in names
        assert (tmp_path / "charts" / f"{name}.svg").exists()
    html = written.index.read_text()
    for text in ("Latency percentiles", "Against the roofline", "Against published inference figures",
                 "tokens/s", "LLM decode"):
        assert text in html
    roofline = next(c for c in written.charts if c.name == "roofline")
    assert "40%: 1,340 of 3,350 GB/s" in roofline.alt  # achieved against the catalogue figure
    tpot = next(c for c in written.charts if c.name == "latency_generate")
    p99 = doc["results"][2]["metrics"]["tpot_s"]["p99"] * 1e3
    assert f"p99 {p99:.3g}" in tpot.alt


def test_training_report_has_none_of_the_inference_sections(tmp_path):
    from report_docs import write_sample_report

    _, index = write_sample_report(tmp_path)
    html = index.read_text()
    assert "Latency percentiles" not in html and "roofline" not in html.lower()
    assert not list((tmp_path / "charts").glob("latency_*")) and not list((tmp_path / "charts").glob("tokens_*"))


def test_a_cpu_generate_run_gets_latency_but_no_roofline_or_ranking(tmp_path):
    from dlbench.report.html import write_report_files

    doc = document([make_generate_result(device="cpu", flavour="tiny", bandwidth_fraction=None, mfu=None)],
                   gpu_name=None)
    names = [c.name for c in write_report_files([doc], tmp_path).charts]
    assert "latency_generate" in names
    assert "roofline" not in names and not any(n.startswith("tokens_ranking") for n in names)


# -- the H100 plan --------------------------------------------------------------------------------------------

def test_h100_plan_has_the_inference_steps_each_under_ten_minutes():
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "h100_plan.sh"
    listing = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True).stdout
    rows = {line.split()[0]: line for line in listing.splitlines()[3:] if line and line[0] != " "}
    for step in ("infer-eager", "infer-compile-resnet50", "infer-compile-bert-base"):
        assert "--scenario infer" in rows[step] and int(rows[step].split()[1]) < 10
    text = script.read_text()
    assert "infer-compile-bert-base)\n      dlbench_run \"$step\" --scenario infer -w bert-base-squad" in text


def test_compare_tests_generate_on_its_decode_steps():
    from dlbench.analysis.compare import compare_documents

    a = document([make_generate_result(tpot_s=0.0080, seed=1)])
    b = document([make_generate_result(tpot_s=0.0075, seed=2)])
    (row,) = compare_documents(a, b)["rows"]
    assert row["scenario"] == "generate" and row["metric"] == "decode_tokens_per_s" and row["unit"] == "tokens/s"
    assert abs(row["ratio"] - 0.0080 / 0.0075) < 0.02 and row["significant"] is True
    assert row["a_steps"] == 3 * 127  # every decode step of every repeat, raw
