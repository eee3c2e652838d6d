"""`dlbench report`: files written, every chart embedded and saved as PNG and SVG, the CLI."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from dlbench.analysis.speedups import speedups
from dlbench.jsonio import write_json_atomic
from dlbench.report.html import write_report
from dlbench.report.sections.telemetry import telemetry_series
from report_docs import (
    SAMPLE_CHARTS,
    environment,
    make_document,
    make_result,
    run_cli,
    sample_report_in,
    telemetry_block,
)


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    return sample_report_in(tmp_path_factory)


def _images(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<img src="([^"]+)" alt="[^"]*" data-chart="([^"]+)"', html)


def test_every_chart_is_saved_as_png_and_svg(sample_report):
    _, index = sample_report
    charts = index.parent / "charts"
    every = SAMPLE_CHARTS + ("vs_published_narrow",)  # the headline chart's phone-width variant too
    for name in every:
        png, svg = charts / f"{name}.png", charts / f"{name}.svg"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        text = svg.read_text(encoding="utf-8")
        assert "<svg" in text and text.rstrip().endswith("</svg>"), name
    assert {p.stem for p in charts.glob("*.png")} == set(every)
    assert {p.stem for p in charts.glob("*.svg")} == set(every)


def test_html_embeds_every_chart_and_links_its_files(sample_report):
    _, index = sample_report
    html = index.read_text(encoding="utf-8")
    images = _images(html)
    assert sorted(name for _, name in images) == sorted(SAMPLE_CHARTS)
    for src, name in images:
        assert src.startswith("data:image/svg+xml;base64,")
        embedded = base64.b64decode(src.split(",", 1)[1])
        assert embedded == (index.parent / "charts" / f"{name}.svg").read_bytes()
        assert f'href="charts/{name}.png"' in html and f'href="charts/{name}.svg"' in html


def test_html_is_self_contained(sample_report):
    _, index = sample_report
    html = index.read_text(encoding="utf-8")
    assert not re.search(r'<(script|link|img)[^>]+(src|href)="(?!data:)', html)
    assert "http://" not in html and "https://" not in html


def test_html_has_results_environment_and_methodology(sample_report):
    doc, index = sample_report
    html = index.read_text(encoding="utf-8")
    env = doc["environment"]
    for value in (env["driver_version"], env["torch_version"], env["cuda_version"], doc["run_id"]):
        assert value in html
    assert "2\u00d7 H100 SXM5 80GB" in html  # canonical catalogue name, counted
    assert "GPU power limit</th><td>700 W" in html  # from the telemetry block
    assert "30 steps" in html and "3 repeats" in html  # methodology from the document's own numbers
    assert "oom" in html and "simulated oom" in html
    for section in ("results", "ranking", "speedups", "distribution", "scaling", "telemetry", "environment",
                    "methodology"):
        assert f'id="{section}"' in html
    # the vs-published column: the same-GPU median ratio for the 1-GPU results
    assert "of published median" in html


def test_cpu_tiny_run_explains_why_nothing_is_ranked(tmp_path):
    results = [make_result("resnet50", "fp32", "off", 8, device="cpu", flavour="tiny", step_time_s=0.05, seed=1),
               make_result("bert-base-squad", "fp32", "off", 4, seq_len=64, device="cpu", flavour="tiny",
                           step_time_s=0.08, seed=2)]
    index = write_report([make_document(results, env=environment(gpu_name=None))], tmp_path / "out")
    html = index.read_text(encoding="utf-8")
    assert [name for _, name in _images(html)] == ["step_times"]
    assert "Tiny flavour: published results are for the full-size models" in html  # said once, at a glance
    # No empty cards: nothing ranked, no speed-up pair (one precision, eager only).
    for section in ("ranking", "speedups"):
        assert f'id="{section}"' not in html and f'href="#{section}"' not in html
    assert "CPU only (Test CPU, 32 cores)" in html


def test_rewriting_a_report_removes_its_stale_charts(tmp_path):
    out = tmp_path / "out"
    write_report([make_document([make_result(precision="tf32", seed=1), make_result(seed=2)])], out)
    assert (out / "charts" / "speedups.svg").is_file()
    (out / "charts" / "notes.txt").write_text("mine", encoding="utf-8")
    write_report([make_document([make_result(seed=3)])], out)
    assert not (out / "charts" / "speedups.svg").exists()
    assert not (out / "charts" / "ranking_resnet50_tf32_na_1gpu.png").exists()
    assert (out / "charts" / "ranking_resnet50_amp-fp16_na_1gpu.png").is_file()
    assert (out / "charts" / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_two_runs_are_labelled(tmp_path):
    a = make_document([make_result(step_time_s=0.2, seed=1)], created_at="2026-11-20T00:00:00Z")
    b = make_document([make_result(step_time_s=0.19, seed=2)],
                      env=environment(gpu_name="NVIDIA A100-SXM4-80GB"))
    html = write_report([a, b], tmp_path / "out").read_text(encoding="utf-8")
    assert f"run {a['run_id'][:8]}" in html and f"run {b['run_id'][:8]}" in html
    assert "<th>Run</th>" in html
    assert "H100 SXM5 80GB vs 1\u00d7 A100 SXM4 80GB" in html


def test_speedups_pair_only_configs_that_differ_in_one_thing():
    results = [make_result(precision="tf32", step_time_s=0.3, seed=1),
               make_result(precision="amp-fp16", step_time_s=0.15, seed=2),
               make_result(precision="amp-fp16", compile="default", step_time_s=0.12, seed=3),
               make_result(precision="amp-fp16", compile="max-autotune", batch_size=128, step_time_s=0.05, seed=4),
               make_result(precision="fp32", compile="default", step_time_s=0.5, status="oom")]
    by_label = {(e["kind"], e["label"], e["context"]): e for e in speedups(results)}
    assert set(by_label) == {("precision", "amp-fp16 vs tf32", "eager"),
                             ("compile", "compile=default vs eager", "amp-fp16")}
    compiled = by_label[("compile", "compile=default vs eager", "amp-fp16")]
    assert compiled["speedup"] == pytest.approx(results[2]["samples_per_s"] / results[1]["samples_per_s"])


def test_mixed_precision_falls_back_to_fp32_baseline():
    results = [make_result(precision="fp32", step_time_s=0.4, seed=1),
               make_result(precision="amp-bf16", step_time_s=0.1, seed=2)]
    [entry] = speedups(results)
    assert entry["label"] == "amp-bf16 vs fp32"
    assert entry["speedup"] == pytest.approx(results[1]["samples_per_s"] / results[0]["samples_per_s"])


def test_scaling_chart_without_a_one_gpu_baseline(tmp_path):
    results = [make_result(world_size=n, step_time_s=0.1 * (1 + 0.02 * n), seed=n) for n in (2, 4)]
    html = write_report([make_document(results, env=environment(gpu_count=4))], tmp_path / "out").read_text(
        encoding="utf-8")
    assert 'data-chart="scaling"' in html
    assert (tmp_path / "out" / "charts" / "scaling.png").is_file()


def test_telemetry_series_formats():
    block = telemetry_block(seconds=1.0)
    cols = telemetry_series(block)
    assert cols["t_s"][0] == 0.0 and cols["power_w"] == block["series"]["power_w"]
    samples = {"available": True, "samples": [{"t_s": 5.0, "power_w": 100.0}, {"t_s": 5.5, "power_w": 110.0}]}
    assert telemetry_series(samples) == {"t_s": [0.0, 0.5], "power_w": [100.0, 110.0], "temperature_c": [],
                                         "sm_clock_mhz": []}
    assert telemetry_series({"available": False, "reason": "no NVML on a CPU"}) is None
    assert telemetry_series(None) is None


def test_cli_report_from_file(tmp_path, capsys):
    path = tmp_path / "run.json"
    write_json_atomic(path, make_document([make_result(precision="tf32", seed=1)]))
    out_dir = tmp_path / "report"
    code, out, err = run_cli(capsys, "report", str(path), "--output", str(out_dir))
    assert code == 0, err
    assert (out_dir / "index.html").is_file()
    assert (out_dir / "charts" / "step_times.svg").is_file()
    assert "Wrote" in out


def test_cli_report_counts_the_charts_it_wrote_not_the_files_in_the_folder(tmp_path, capsys):
    # A chart folder the user also keeps other pictures in: the line names what this report drew, nothing else.
    from dlbench.report.html import write_report_files

    path = tmp_path / "run.json"
    doc = make_document([make_result(precision="tf32", seed=1), make_result(precision="tf32", compile="default",
                                                                            seed=2)])
    write_json_atomic(path, doc)
    out_dir = tmp_path / "report"
    (out_dir / "charts").mkdir(parents=True)
    (out_dir / "charts" / "team-photo.png").write_bytes(b"\x89PNG not a chart")
    code, out, err = run_cli(capsys, "report", str(path), "--output", str(out_dir))
    assert code == 0, err
    written = write_report_files([doc], tmp_path / "again")
    names = sorted(c.name for c in written.charts)
    assert names and all((out_dir / "charts" / f"{n}.png").is_file() for n in names) and not written.fleet
    assert f"index.html ({len(names)} chart{'s' if len(names) != 1 else ''}, PNG and SVG in " in out
    assert (out_dir / "charts" / "team-photo.png").is_file()  # left alone


def test_cli_report_latest_from_store(tmp_path, capsys):
    from dlbench.store import open_store

    old = make_document([make_result(seed=1)], created_at="2026-11-01T00:00:00Z")
    new = make_document([make_result(seed=2)], created_at="2026-11-22T00:00:00Z")
    store = open_store()
    store.save_run(old)
    store.save_run(new)
    out_dir = tmp_path / "report"
    code, _, err = run_cli(capsys, "report", "--latest", "-o", str(out_dir))
    assert code == 0, err
    html = (out_dir / "index.html").read_text(encoding="utf-8")
    assert new["run_id"] in html and old["run_id"] not in html


def test_cli_report_unwritable_output_is_exit_2(tmp_path, capsys):
    path = tmp_path / "run.json"
    write_json_atomic(path, make_document([make_result(seed=1)]))
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    code, _, err = run_cli(capsys, "report", str(path), "--output", str(blocker / "sub"))
    assert code == 2
    assert "cannot write the report" in err and "Traceback" not in err


@pytest.mark.parametrize("args, message", [
    (["--latest", "abc"], "not both"),
    (["0123456789abcdef"], ""),
])
def test_cli_report_bad_input(tmp_path, capsys, args, message):
    code, _, err = run_cli(capsys, "report", *args, "--output", str(tmp_path / "r"))
    assert code == 2
    assert err.startswith("error:") and message in err and "Traceback" not in err
    assert not Path(tmp_path / "r").exists()


def test_comparison_and_report_never_import_torch(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "run.json"
    write_json_atomic(path, make_document([make_result(seed=1)]))
    code = ("import sys\nfrom dlbench.cli.app import main\n"
            f"for argv in (['compare', {str(path)!r}, {str(path)!r}], ['compare', {str(path)!r}, '--published'],"
            f" ['report', {str(path)!r}, '-o', {str(tmp_path / 'r')!r}], ['reference', 'list', '--json']):\n"
            "    try:\n        main(argv)\n    except SystemExit as exc:\n        assert not exc.code, exc.code\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_mixed_precision_pairs_with_full_precision_at_its_own_default_batch():
    # dlbench run doubles the default batch for AMP on a GPU (tf32 256, amp-fp16 512): the published benchmarks
    # compare each precision at its own batch, and the report must still show the speed-up.
    results = [make_result(precision="tf32", batch_size=256, step_time_s=0.3, seed=1),
               make_result(precision="amp-fp16", batch_size=512, step_time_s=0.34, seed=2)]
    [entry] = speedups(results)
    assert entry["label"] == "amp-fp16 vs tf32"
    assert (entry["batch_size"], entry["baseline_batch_size"]) == (512, 256)
    assert entry["speedup"] == pytest.approx(results[1]["samples_per_s"] / results[0]["samples_per_s"])


def test_mixed_precision_prefers_a_baseline_at_the_same_batch():
    results = [make_result(precision="tf32", batch_size=512, step_time_s=0.6, seed=1),
               make_result(precision="tf32", batch_size=256, step_time_s=0.31, seed=2),
               make_result(precision="amp-fp16", batch_size=256, step_time_s=0.17, seed=3)]
    [entry] = speedups(results)
    assert entry["baseline_batch_size"] == 256
    assert entry["speedup"] == pytest.approx(results[2]["samples_per_s"] / results[1]["samples_per_s"])


def test_ranking_chart_sets_apart_the_published_bar_of_this_runs_gpu(tmp_path):
    from dlbench.report import charts
    from dlbench.report.charts.style import SAME_GPU_COLOUR

    rows = [{"label": "H100 SXM5 80GB", "samples_per_s": 2790.0, "is_this_run": False},
            {"label": "this run", "samples_per_s": 1500.0, "is_this_run": True},
            {"label": "A100 SXM4 80GB", "samples_per_s": 1400.0, "is_this_run": False}]
    plain = charts.ranking_chart(rows, "t", "images", "s", tmp_path / "a", "r").svg.read_text().lower()
    marked = charts.ranking_chart(rows, "t", "images", "s", tmp_path / "b", "r",
                                  same_gpu={"H100 SXM5 80GB"}).svg.read_text().lower()
    assert SAME_GPU_COLOUR.lower() not in plain
    assert SAME_GPU_COLOUR.lower() in marked


def test_tiny_figures_never_print_as_zero():
    from dlbench.report import fmt

    assert fmt.tflops(3e8) == "<0.001"  # a tiny CPU run: 0.0003 TFLOP/s is not 0.000
    assert fmt.tflops(2.5e9) == "0.003"
    assert fmt.tflops(0.0) == "0.000"


def test_results_table_keeps_the_published_near_misses_out_of_the_cell(tmp_path):
    doc = make_document([make_result("bert-base-squad", "amp-fp16", seq_len=128, batch_size=64, seed=3)])
    html = write_report([doc], tmp_path / "out").read_text(encoding="utf-8")
    assert "no published results for bert-base-squad seq 128 amp-fp16 on 1 GPU" in html
    assert html.count("(published: ") == 1  # in the note under the ranking section, not again in the table


def test_each_result_is_set_against_published_results_once(tmp_path, monkeypatch):
    # The results table, the ranking charts and the "nothing comparable" notes read one comparison per result.
    from dlbench.report import html
    from report_docs import sample_document

    calls = []

    def counted(doc, result, published=None):
        calls.append(id(result))
        return real(doc, result, published)

    real = html.vs_published_in
    monkeypatch.setattr(html, "vs_published_in", counted)
    cpu = make_document([make_result(flavour="tiny", device="cpu")], env=environment(gpu_name=None))
    docs = [sample_document(), cpu]
    write_report(docs, tmp_path)
    results = [r for doc in docs for r in doc["results"]]
    assert sorted(calls) == sorted(id(r) for r in results)
    write_report([cpu], tmp_path / "cpu")  # nothing comparable: the notes' reasons come from the same comparison
    assert len(calls) == len(results) + 1


def test_scaling_chart_of_cpu_processes_speaks_of_processes_not_gpus(tmp_path):
    # `dlbench run --device cpu --gpus 1,2` measures processes; the chart said "number of GPUs".
    import html as htmllib

    results = [make_result(world_size=n, step_time_s=0.1 * (1 + 0.02 * n), seed=n, device="cpu") for n in (1, 2)]
    page = htmllib.unescape(write_report([make_document(results)], tmp_path / "out").read_text(encoding="utf-8"))
    assert "Multi-process scaling" in page and "number of processes" in page and "number of GPUs" not in page
    gpu = [make_result(world_size=n, step_time_s=0.1 * (1 + 0.02 * n), seed=n) for n in (1, 2)]
    page = htmllib.unescape(write_report([make_document(gpu)], tmp_path / "gpu").read_text(encoding="utf-8"))
    assert "Multi-GPU scaling" in page and "number of GPUs" in page
