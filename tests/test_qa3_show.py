"""`dlbench results show` as a user reads it: in an 80-column terminal, on a CPU run, after an interrupted run.

Run: `PYTHONPATH=src python -m pytest -q tests/test_qa3_show.py`. Found by the third use-it-as-a-user pass.
"""

from __future__ import annotations

import re

import pytest

import store_docs
from cli_helpers import cli
from dlbench.store import open_store

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _store(doc):
    with open_store() as store:
        store.save_run(doc)
    return doc


def _show_in_terminal(capsys, monkeypatch, width: int, *args: str) -> str:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich treats stdout as a terminal of COLUMNS columns
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = cli(capsys, "results", "show", *args)
    assert code == 0, err
    return ANSI.sub("", out)


def test_show_in_80_columns_cuts_no_number(capsys, monkeypatch):
    # Every number was cut to "87…", "0.…" in an 80-column terminal: 13 boxed columns did not fit.
    doc = _store(store_docs.document())
    text = _show_in_terminal(capsys, monkeypatch, 80, "latest")
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    for r in doc["results"][:2]:
        assert f"{r['samples_per_s']:,.1f}" in text
        assert f"{r['step_time_s']['median'] * 1e3:,.1f}" in text
    assert "oom: simulated oom" in text.replace("\n", " ") or "simulated oom" in text


def test_show_marks_tiny_results_and_small_rates(capsys):
    # A --tiny CPU result read like a full-size ResNet-50, and its 0.009 TFLOP/s printed as "0.00".
    r = store_docs.result(seed=3)
    r.update(flavour="tiny", device="cpu", achieved_flops_per_s=9.1e9)
    _store(store_docs.document(results=[r], env=store_docs.environment(gpu_name=None)))
    code, out, _ = cli(capsys, "results", "show", "latest")
    assert code == 0
    assert "[tiny]" in out
    assert "0.0091" in out


def test_show_prints_notes_and_warnings(capsys):
    # An interrupted run and a noisy result looked complete and clean in `results show`.
    r = store_docs.result(seed=4)
    r["warnings"] = ["unstable: throughput varies 12.0% across repeats (CV > 5%)"]
    doc = store_docs.document(results=[r])
    doc["notes"] = ["interrupted (SIGINT) after 1 of 4 configurations"]
    _store(doc)
    code, out, _ = cli(capsys, "results", "show", "latest")
    assert code == 0
    assert "interrupted (SIGINT) after 1 of 4 configurations" in out
    assert "unstable: throughput varies 12.0%" in out


def test_show_does_not_read_markup_in_result_names(capsys):
    r = store_docs.result(seed=5)
    r["workload"] = "[bold]resnet50"
    _store(store_docs.document(results=[r]))
    code, out, err = cli(capsys, "results", "show", "latest")
    assert code == 0, err
    assert "[bold]resnet50" in out


def test_list_in_80_columns_keeps_run_ids_and_dates_whole(capsys, monkeypatch):
    # The run id, the one thing to copy from the list, was cut to "8128e9311…" and the date split in two.
    docs = [_store(store_docs.document(env=store_docs.environment(gpu_name="NVIDIA A100-SXM4-80GB", gpu_count=8,
                                                                  hostname="gpu-node-017.cluster.example.org")))
            for _ in range(2)]
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli(capsys, "results", "list")
    text = ANSI.sub("", out)
    assert code == 0
    assert max(len(line) for line in text.splitlines()) <= 80
    for doc in docs:
        assert doc["run_id"][:12] in text
    assert "2026-11-22 04:00" in text


def test_advise_in_80_columns_cuts_no_number(capsys, monkeypatch):
    # The throughput band was cut to "(97-1…" and "estimated" to "estima…" in an 80-column terminal.
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = cli(capsys, "advise", "--top", "5", "--no-runs")
    assert code == 0, err
    text = ANSI.sub("", out)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    code, js, _ = cli(capsys, "advise", "--top", "5", "--no-runs", "--json")
    import json

    for option in json.loads(js)["options"][:5]:
        assert f"{option['samples_per_s_low']:,.0f}-{option['samples_per_s_high']:,.0f}" in text
        assert option["throughput_kind"] in text


def test_gpu_list_in_80_columns_cuts_no_name(capsys, monkeypatch):
    # Architectures read "Blackw…", "Lovela…" and the RTX PRO 6000 "RTX PRO Blackwe…" in an 80-column terminal.
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = cli(capsys, "gpus")
    assert code == 0, err
    text = ANSI.sub("", out)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "Blackwell" in text and "Lovelace" in text


def test_step_time_whiskers_are_the_p5_p95_the_table_prints(tmp_path, monkeypatch):
    # The chart says "whiskers: 5th-95th percentile", but matplotlib's whis=(5, 95) stops each whisker at the
    # last step inside the percentile: with 10 steps and one slow one, the table's p95 of 1,253 ms was drawn at
    # 341 ms.
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.axes import Axes

    from dlbench.report import charts

    steps = [1.9994, 0.3410, 0.0498, 0.0487, 0.0526, 0.0485, 0.0534, 0.0498, 0.0526, 0.0486]
    import numpy as np

    p5, p95 = (float(v) for v in np.percentile(steps, [5, 95]))
    seen = []
    original = Axes.bxp

    def spy(self, bxpstats, *args, **kwargs):
        seen.extend(bxpstats)
        return original(self, bxpstats, *args, **kwargs)

    monkeypatch.setattr(Axes, "bxp", spy)
    groups = [{"workload": "resnet50", "configs": [
        {"label": "FP32 · eager · bs 8", "step_times_s": steps, "cv": 1.15, "precision": "fp32",
         "p5_s": p5, "p95_s": p95}]}]
    charts.step_time_chart(groups, tmp_path)
    assert len(seen) == 1
    assert seen[0]["whislo"] == pytest.approx(p5 * 1e3)
    assert seen[0]["whishi"] == pytest.approx(p95 * 1e3)
    assert sorted(seen[0]["fliers"]) == pytest.approx([48.5, 1999.4])  # the steps beyond p5 and p95


def test_step_time_whiskers_of_a_document_without_percentiles_come_from_analysis(tmp_path, monkeypatch):
    """A result without stored p5/p95 gets them from analysis.stats (the definition `summarize` records), passed
    to the chart: report/ draws, it does not compute."""
    import report_docs
    from dlbench.analysis.stats import step_time_percentiles
    from dlbench.report import charts
    from dlbench.report.html import write_report

    result = report_docs.make_result(steps=7, repeats=2, noise_s=0.02)
    result["step_time_s"] = {"mean": None, "median": None}  # an older or hand-made document
    pooled = [t for rep in result["repeats"] for t in rep["step_times_s"]]
    seen = []
    original = charts.step_time_chart

    def spy(groups, *args, **kwargs):
        seen.extend(c for g in groups for c in g["configs"])
        return original(groups, *args, **kwargs)

    monkeypatch.setattr(charts, "step_time_chart", spy)
    write_report([report_docs.make_document([result])], tmp_path, published=[])
    (config,) = seen
    assert (config["p5_s"], config["p95_s"]) == pytest.approx(step_time_percentiles(pooled))
    assert config["p5_s"] < config["p95_s"]


def test_report_modules_compute_no_percentiles():
    """STYLE: report/ only renders; percentiles are analysis.stats' (one definition for tables and charts)."""
    import ast
    from pathlib import Path

    import dlbench.report

    called = {}
    for path in Path(dlbench.report.__file__).parent.glob("*.py"):
        names = {node.attr for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Attribute)}
        found = names & {"percentile", "nanpercentile", "quantile", "nanquantile", "quantiles"}
        if found:
            called[path.name] = sorted(found)
    assert called == {}


def test_report_methodology_says_how_each_device_was_timed(tmp_path):
    # The page said "the device is synchronised before every clock read" for every run; on CUDA dlbench records
    # events at each step boundary and synchronises once per repeat (docs/methodology.md, "Clocks"), on a CPU it reads a clock.
    import report_docs
    from dlbench.report.html import write_report

    gpu = report_docs.make_document([report_docs.make_result(steps=5)])
    cpu = report_docs.make_document([report_docs.make_result(steps=2, device="cpu", flavour="tiny")],
                                    env=report_docs.environment(gpu_name=None))
    html = write_report([gpu, cpu], tmp_path, published=[]).read_text(encoding="utf-8")
    assert "synchronised before every clock read" not in html
    assert "CUDA events" in html and "perf_counter" in html
    assert "repeats of 2 or 5 steps" in html


def test_report_prints_an_output_folder_with_brackets_whole(capsys, tmp_path):
    _store(store_docs.document())
    out_dir = tmp_path / "report[1]"
    code, out, err = cli(capsys, "report", "--output", str(out_dir))
    assert code == 0, err
    assert str(out_dir / "index.html") in out


def test_compare_prints_names_from_documents_literally(capsys, tmp_path):
    import json

    a = store_docs.document(env=store_docs.environment(gpu_name="GPU [/x] A"))
    b = store_docs.document(results=[store_docs.result(workload="[bold]w", seed=9)])
    paths = []
    for name, doc in (("a.json", a), ("b.json", b)):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(doc), encoding="utf-8")
    code, out, err = cli(capsys, "compare", str(paths[0]), str(paths[1]))
    assert code == 0, err
    assert "GPU [/x] A" in out and "[bold]w" in out


@pytest.mark.parametrize(("name", "hint"), [
    ("resnet50-tiny", "use -w resnet50 --tiny"),  # the tiny flavour is a flag, not a workload name
    ("bert-base-squad-tiny", "use -w bert-base-squad --tiny"),
    ("resnet5", "did you mean resnet50?"),
    ("bert-large", "did you mean bert-large-mlm, bert-large-squad?"),
])
def test_run_unknown_workload_suggests_the_name_meant(capsys, name, hint):
    code, out, err = cli(capsys, "run", "-w", name)
    assert code == 2 and out == ""
    assert err.startswith(f"error: unknown workload '{name}'") and err.count("\n") == 1
    assert hint in err


def test_report_headline_does_not_call_skipped_configurations_measured(tmp_path):
    # "8 configurations measured, 6 completed": two of the eight were skipped (tf32 on a CPU), never measured.
    import report_docs
    from dlbench.report.html import write_report

    results = [report_docs.make_result(seed=i) for i in range(3)]
    results.append(report_docs.make_result(precision="tf32", status="skipped"))
    results.append(report_docs.make_result(workload="bert-large-squad", seq_len=384, status="oom"))
    html = write_report([report_docs.make_document(results)], tmp_path, published=[]).read_text(encoding="utf-8")
    assert "5 configurations: 3 measured, 1 skipped, 1 failed." in html
    assert "configurations measured" not in html


def test_report_of_a_tiny_cpu_run_drops_the_all_dash_vs_published_column(tmp_path):
    # Every row of a CPU --tiny report repeated "— tiny flavour: published results are for the full-size models"
    # in a narrow column; the "Against published results" section already says it once.
    import report_docs
    from dlbench.report.html import write_report

    results = [report_docs.make_result(seed=i, device="cpu", flavour="tiny") for i in range(3)]
    doc = report_docs.make_document(results, env=report_docs.environment(gpu_name=None))
    html = write_report([doc], tmp_path).read_text(encoding="utf-8")
    assert html.count("published results are for the full-size models") == 1
    assert ">vs published<" not in html
    full = report_docs.make_document([report_docs.make_result()])
    html = write_report([full], tmp_path / "gpu").read_text(encoding="utf-8")
    assert ">vs published<" in html


def test_show_piped_prints_each_warning_on_one_line(capsys):
    # Redirected to a file, a long warning was broken mid-sentence (at 200 columns for show, 130 for run).
    r = store_docs.result(seed=6)
    warning = ("unstable: throughput varies 38.7% across repeats (CV > 5%); check clocks, temperature and other "
               "load on the machine, or use more steps; " + "x" * 150)
    r["warnings"] = [warning]
    _store(store_docs.document(results=[r]))
    code, out, _ = cli(capsys, "results", "show", "latest")
    assert code == 0
    assert any(line.endswith(warning) for line in out.splitlines())


def test_show_telemetry_table_in_80_columns_cuts_nothing(capsys, monkeypatch):
    # The per-GPU telemetry table (added beside this pass) kept rich's boxed default: "configu…", "thrott…",
    # and the throttle reasons cut in an 80-column terminal.
    from dlbench.analysis.energy import combine_ranks
    from test_group_telemetry import two_node_group

    blocks, ranks = two_node_group()
    doc = store_docs.document()
    doc["results"][0].update(workload="bert-large-squad", seq_len=384, world_size=4, compile="max-autotune",
                             telemetry=combine_ranks(blocks, ranks))
    _store(doc)
    text = _show_in_terminal(capsys, monkeypatch, 80, "latest")
    telemetry = text[text.index("GPU telemetry"):]
    assert "…" not in telemetry and max(len(line) for line in telemetry.splitlines()) <= 80
    assert "throttled" in telemetry and "bert-large-squad" in telemetry
    assert "thermal 40%" in telemetry  # GPU 1 on nodeB's reason, whole
    for b in blocks:
        assert f"{b['power_mean_w']:,.0f}" in telemetry and f"{b['temperature_max_c']:.0f}" in telemetry
    assert "GPU 1 on" in telemetry and "nodeB (rank" in telemetry  # the GPU's name wraps at spaces


def test_show_lists_package_versions_as_names_and_versions(capsys, monkeypatch):
    # The environment's package_versions (added with the GPU-path prep) printed as a Python dict repr.
    doc = store_docs.document()
    doc["environment"]["package_versions"] = {"torchvision": "0.26.0", "transformers": "5.17.0", "triton": None}
    _store(doc)
    text = " ".join(_show_in_terminal(capsys, monkeypatch, 120, "latest").replace("\u2502", " ").split())
    assert "package_versions torchvision 0.26.0, transformers 5.17.0, triton -" in text
    assert "{'" not in text
