"""What the report looks like: charts' contrast, legends clear of the data, consistent colours, honest axes; the
page's tables and sections.

    PYTHONPATH=src:tests python -m pytest -q tests/test_report_visual.py

Chart tests draw from documents like those a real run writes and inspect the matplotlib figure each chart saved
(captured at each chart module's `save`), so they check what a reader sees, not the code that drew it.
"""

from __future__ import annotations

import re

import pytest
from markupsafe import escape as html_escape

from dlbench.report import charts, fmt
from dlbench.report.charts import style
from dlbench.report.html import write_report
from fleet_docs import THERMAL, ddp_result_with_series, node, tel
from report_docs import environment, make_document, make_result, telemetry_block


@pytest.fixture
def figures(monkeypatch):
    """name -> the matplotlib figure of every chart drawn while the test runs."""
    import importlib
    import pkgutil

    drawn = {}
    real = style.save

    def save(fig, out_dir, name, title, caption, alt=""):
        drawn[name] = fig
        return real(fig, out_dir, name, title, caption, alt)

    for info in pkgutil.iter_modules(charts.__path__):  # each chart module saves through its own `save` name
        module = importlib.import_module(f"{charts.__name__}.{info.name}")
        if getattr(module, "save", None) is real:
            monkeypatch.setattr(module, "save", save)
    return drawn


def _texts(fig):
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _hex(colour) -> str:
    from matplotlib.colors import to_hex

    return to_hex(colour).upper()


def h100_run(**result):
    """Both precisions, eager and compiled, ResNet-50 and BERT-large, each with a telemetry series."""
    results = []
    for i, (workload, seq, bs, step) in enumerate((("resnet50", None, 256, 0.2), ("bert-large-squad", 384, 32, 0.25))):
        for j, precision in enumerate(("tf32", "amp-fp16")):
            for k, mode in enumerate(("off", "default")):
                results.append(make_result(workload, precision, mode, bs, seq_len=seq,
                                           step_time_s=step * (0.5 if j else 1) * (0.9 if k else 1),
                                           noise_s=0.002, steps=20, seed=8 * i + 2 * j + k,
                                           telemetry=telemetry_block(), **result))
    return make_document(results)


def test_coloured_text_on_every_chart_is_readable(tmp_path, figures):
    # Labels beside a bar or dot took its colour: Okabe-Ito vermillion (3.9:1 on white) for this run's bars and a
    # flagged host, orange (2.2:1) for a host within noise and a scaling series: below WCAG AA's 4.5:1.
    fleet = [node(f"node{i:02d}", seed=i) for i in range(1, 7)]
    fleet.append(node("node07", 0.1 / 0.85, tel(**THERMAL), seed=7))
    fleet.append(node("node08", 0.1 / 0.965, seed=8))
    ddp = make_document([make_result(step_time_s=0.1, seed=1),
                         ddp_result_with_series(num_gpus=2, step_time_s=0.105, seed=2),
                         make_result("bert-large-squad", seq_len=384, batch_size=32, step_time_s=0.2, seed=3),
                         make_result("bert-large-squad", seq_len=384, batch_size=32, world_size=2, step_time_s=0.21,
                                     seed=4)],
                        env=environment(gpu_count=2))
    write_report([h100_run()], tmp_path / "one")
    write_report(fleet, tmp_path / "fleet")
    write_report([ddp], tmp_path / "ddp")
    assert {"speedups", "step_times", "telemetry", "scaling"} <= set(figures)
    assert any(name.startswith("ranking_") for name in figures) and any(name.startswith("fleet_") for name in figures)
    for name, fig in figures.items():
        for text in _texts(fig):
            colour = _hex(text.get_color())
            assert style.contrast(colour) >= 4.5, (name, text.get_text(), colour)


def test_text_colour_darkens_light_colours_and_keeps_dark_ones():
    for colour in style.OKABE_ITO.values():
        shade = style.text_colour(colour)
        assert style.contrast(shade) >= style.TEXT_CONTRAST
        if style.contrast(colour) >= style.TEXT_CONTRAST:
            assert shade == colour
    orange = style.text_colour(style.OKABE_ITO["orange"])
    assert orange != style.OKABE_ITO["orange"]
    r, g, b = style.hex_rgb(orange)
    assert r > g > b  # still an orange, not a grey


def test_lines_are_never_drawn_in_a_colour_that_vanishes_on_white(tmp_path, figures):
    # The eighth telemetry line was Okabe-Ito yellow (1.3:1 on white): a GPU you could not see.
    doc = make_document([ddp_result_with_series(num_gpus=8, hot_gpu=7)], env=environment(gpu_count=8))
    write_report([doc], tmp_path / "out")
    from matplotlib.lines import Line2D

    lines = [ln for ln in figures["telemetry_1"].findobj(Line2D)
             if ln.get_visible() and len(ln.get_xdata()) > 2]
    assert len({_hex(ln.get_color()) for ln in lines}) >= 7
    for line in lines:
        assert style.contrast(_hex(line.get_color())) >= 2.0, _hex(line.get_color())


def _draw(fig):
    """Lay out and draw `fig` as it was saved; its renderer, for measuring what is where."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    return renderer


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_telemetry_legend_covers_no_data_and_stays_on_the_figure(tmp_path, figures):
    # A dozen one-GPU configurations: their legend sat inside the power panel, two columns wide, over the traces
    # and past the figure's left edge ("esNet-50 v1.5 · TF32 ...").
    write_report([h100_run()], tmp_path / "out")
    fig = figures["telemetry"]
    renderer = _draw(fig)
    legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert len(legends) == 1
    box = legends[0].get_window_extent(renderer)
    page = fig.bbox
    assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1
    for ax in fig.axes:
        assert not _overlaps(box, ax.get_window_extent(renderer))
    assert len(legends[0].get_texts()) == 8


def test_a_precision_has_one_colour_on_every_chart(tmp_path, figures):
    # The scaling chart coloured its panels by position: two AMP FP16 configurations came out blue (TF32's colour
    # in the step-time chart beside it) and orange.
    results = []
    for workload, seq, bs in (("resnet50", None, 256), ("bert-large-squad", 384, 32)):
        for n in (1, 2, 4):
            results.append(make_result(workload, "amp-fp16", "off", bs, seq_len=seq, world_size=n,
                                       step_time_s=0.1 * (1 + 0.03 * n), seed=n))
        results.append(make_result(workload, "tf32", "off", bs, seq_len=seq, step_time_s=0.2, seed=9))
    write_report([make_document(results, env=environment(gpu_count=4))], tmp_path / "out")
    amp = style.OKABE_ITO["orange"]
    boxes = {_hex(patch.get_facecolor()) for ax in figures["step_times"].axes for patch in ax.patches}
    assert amp in boxes and style.OKABE_ITO["blue"] in boxes
    measured = [ln for ax in figures["scaling"].axes for ln in ax.get_lines() if ln.get_label() == "measured"]
    assert len(measured) == 2
    assert {_hex(ln.get_color()) for ln in measured} == {amp}


def test_fleet_percent_axis_labels_say_exactly_where_their_ticks_are(tmp_path, figures):
    # With a host 16% below the median the top axis ticked every 2.5%: "-12%" marked -12.5% and "-8%" -7.5%.
    fleet = [node(f"node{i:02d}", seed=i) for i in range(1, 9) if i != 5] + [node("node05", 0.1 / 0.84, seed=5)]
    write_report(fleet, tmp_path / "out")
    (fig,) = [f for name, f in figures.items() if name.startswith("fleet_")]
    _draw(fig)
    (top,) = [child for ax in fig.axes for child in ax.child_axes]
    ticks = [t for t in top.xaxis.get_major_ticks() if t.label1.get_text()]
    assert len(ticks) >= 4
    for tick in ticks:
        assert tick.get_loc() == pytest.approx(round(tick.get_loc()), abs=1e-6)
        text = tick.label1.get_text()
        assert text == "median" if round(tick.get_loc()) == 0 else text == f"{tick.get_loc():+.0f}%"


def test_a_handful_of_steps_is_drawn_as_dots_not_as_a_box(tmp_path, figures):
    # A CPU quick run measures 2 repeats of 2 steps: its "box plot" drew quartiles and whiskers over four points.
    few = make_result("resnet50", "fp32", "off", 2, device="cpu", step_time_s=0.57, noise_s=0.01, steps=2,
                      repeats=2, seed=1)
    many = make_result("resnet50", "fp32", "off", 4, device="cpu", step_time_s=1.1, noise_s=0.01, steps=10,
                       repeats=2, seed=2)
    index = write_report([make_document([few, many], env=environment(gpu_name=None))], tmp_path / "out")
    (ax,) = figures["step_times"].axes
    assert len(ax.patches) == 1  # the 20-step configuration's box only
    (box,) = ax.patches
    assert 0.5 < box.get_path().get_extents().y0 < 1.5  # the bottom row: the second configuration
    dots = [ln for ln in ax.get_lines() if ln.get_marker() == "o" and ln.get_linestyle() == "None"
            and len(ln.get_xdata()) == 4]
    assert len(dots) == 1 and all(1.5 < y < 2.5 for y in dots[0].get_ydata())  # the first one, on top
    assert sorted(dots[0].get_xdata()) == pytest.approx(sorted(t * 1e3 for rep in few["repeats"]
                                                               for t in rep["step_times_s"]))
    assert "every step is a dot" in index.read_text(encoding="utf-8")


def _results_section(html: str) -> str:
    return re.search(r'<section class="card" id="results">(.*?)</section>', html, re.S).group(1)


def _cells(row_html: str) -> list[str]:
    return re.findall(r"<td[^>]*>", row_html)


def test_a_configuration_that_did_not_run_says_why_across_the_row(tmp_path):
    # A failed row was a run of dashes, its error squeezed into the last column and cut off at the card's edge.
    error = ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: RuntimeError: Triton Error [CUDA]: "
             "an illegal memory access was encountered")
    failed = make_result("bert-base-squad", "amp-fp16", "default", 128, seq_len=384, status="error")
    failed["error"] = error
    results = [make_result(seed=1), failed, make_result("bert-large-squad", "tf32", seq_len=384, batch_size=32,
                                                        status="oom")]
    html = write_report([make_document(results)], tmp_path / "out").read_text(encoding="utf-8")
    table = _results_section(html)
    rows = table.split("<tr")[2:]  # past the header row
    ok, error_row, oom_row = rows
    assert 'class="failed"' in error_row and 'class="failed"' in oom_row and 'class="failed"' not in ok
    # the configuration, then one cell spanning every figure column and the status
    assert len(_cells(error_row)) == 2
    span = int(re.search(r'colspan="(\d+)"', error_row).group(1))
    assert span == len(_cells(ok)) - 1
    assert str(html_escape(error)) in error_row and "\u2014" not in error_row
    assert ">out of memory<" in oom_row and "simulated oom" in oom_row


def test_results_table_leaves_out_a_column_no_result_has(tmp_path):
    # A CPU run has no peak memory: its column was a row of dashes.
    results = [make_result("resnet50", "fp32", "off", 2, device="cpu", steps=4, seed=1),
               make_result("bert-base-mlm", "fp32", "off", 1, seq_len=128, device="cpu", steps=4, seed=2)]
    for r in results:
        r["peak_memory_bytes"] = None
    html = write_report([make_document(results, env=environment(gpu_name=None))], tmp_path / "cpu")
    table = _results_section(html.read_text(encoding="utf-8"))
    assert "Peak memory" not in table and ">TFLOP/s<" in table and ">CV<" in table
    gpu = write_report([make_document([make_result(seed=3)])], tmp_path / "gpu").read_text(encoding="utf-8")
    assert ">Peak memory<" in _results_section(gpu) and "30.0 GB" in _results_section(gpu)


def test_vs_published_cell_is_the_ratio_and_rank_with_the_sentence_as_its_tooltip(tmp_path):
    # "of published median (45 results); #4 of 10 GPUs" under every ratio wrapped to four lines a row.
    html = write_report([make_document([make_result(seed=1)])], tmp_path / "out").read_text(encoding="utf-8")
    cell = re.search(r'<td class="vs"[^>]*>.*?</td>', _results_section(html), re.S).group(0)
    assert re.search(r'title="of published median \(\d+ results\); #\d+ of \d+ GPUs"', cell)
    note = re.search(r'<div class="muted small">(.*?)</div>', cell).group(1)
    assert re.fullmatch(r"#\d+ of \d+ GPUs", note)


def _glance(html: str) -> str:
    return re.search(r'<section class="card" id="glance">(.*?)</section>', html, re.S).group(1)


def _findings(html: str) -> list[tuple[str, str]]:
    """(tone, text without tags) of each finding at a glance."""
    return [(tone, re.sub(r"<[^>]+>", "", re.sub(r'<span class="mark"[^>]*>.*?</span>', "", body))) for tone, body in
            re.findall(r'<li class="finding (\w+)">(.*?)</li>', _glance(html), re.S)]


def test_at_a_glance_says_how_fast_the_machine_is_against_published_and_what_is_wrong(tmp_path, figures):
    # The page opened on a table of twelve rows: how this H100 compares with published H100 results, and why, took
    # six ranking charts and a telemetry chart to piece together.
    hot = make_result(step_time_s=256 / 2000, seed=1, telemetry=tel(**THERMAL))  # 2,000 images/s
    fine = make_result("bert-large-squad", seq_len=384, batch_size=112, step_time_s=112 / 305, seed=2,
                       telemetry=tel())
    oom = make_result("bert-large-squad", "tf32", seq_len=384, batch_size=112, status="oom")
    doc = make_document([hot, fine, oom], run_id="c0ffee12" + "0" * 24)
    html = write_report([doc], tmp_path / "out").read_text(encoding="utf-8")
    assert html.index('id="glance"') < html.index('id="results"')
    findings = _findings(html)
    (tone, text), *_ = findings
    assert tone == "warn" and text.startswith("Warning: 1× H100 SXM5 80GB against published results.")
    # the two ratios of the results table, the slow one named with its ratio
    ratios = re.findall(r'<td class="vs"[^>]*><div class="\w+">([\d.]+×)</div>', html)
    assert len(ratios) == 2 and f"{min(ratios)} to {max(ratios)} the published median for this GPU" in text
    assert f"More than 10% below it: ResNet-50 v1.5 · AMP FP16 · eager · bs 256 ({min(ratios)})" in text
    failed = [t for tone, t in findings if tone == "bad"]
    assert failed == ["Problem: 1 of 3 configurations failed. BERT large (SQuAD) · TF32 · eager · bs 112 · seq 384 "
                      "(out of memory). Details"]
    thermal = [t for tone, t in findings if "Thermal throttling" in t]
    assert thermal and thermal[0].startswith("Warning: Thermal throttling. ResNet-50 v1.5 · AMP FP16 · eager · bs 256: "
                                             "clocks held down by temperature in 60% of the samples, up to 91 C")
    assert "<code>dlbench doctor c0ffee12</code>" in _glance(html)
    # the headline chart: a bar per measured configuration, from 0, with the published median at 1.0
    assert 'data-chart="vs_published"' in _glance(html)
    (ax,) = figures["vs_published"].axes
    (bars,) = ax.containers
    assert len(bars) == 2 and ax.get_xlim()[0] == 0 and all(bar.get_x() == 0 for bar in bars)
    assert any(list(line.get_xdata()) == [1.0, 1.0] for line in ax.get_lines())


def test_at_a_glance_without_anything_wrong_says_so(tmp_path):
    quiet = {"throttle_reasons": {}, "throttle_share": 0.0}
    results = [make_result(step_time_s=256 / 2790, seed=1, telemetry=tel(**quiet)),
               make_result(precision="tf32", step_time_s=256 / 1894, seed=2, telemetry=tel(**quiet))]
    findings = _findings(write_report([make_document(results)], tmp_path / "out").read_text(encoding="utf-8"))
    tones = [tone for tone, _ in findings]
    assert "warn" not in tones and "bad" not in tones
    assert any(text.startswith("Good: Nothing wrong found.") for _, text in findings)
    assert any("All within 10% of it or above." in text for _, text in findings)


def test_at_a_glance_tells_a_first_time_cpu_user_what_the_numbers_are(tmp_path):
    results = [make_result("resnet50", "fp32", "off", 2, device="cpu", steps=2, repeats=2, seed=1)]
    html = write_report([make_document(results, env=environment(gpu_name=None))], tmp_path / "out").read_text(
        encoding="utf-8")
    ((tone, text),) = _findings(html)
    assert tone == "info" and "Not compared with published results. Ran on cpu: published results are for GPUs." in text
    assert "<code>dlbench run</code>" in _glance(html)
    assert "vs_published" not in html and "Nothing wrong found" not in html  # no telemetry: no all-clear either


def test_at_a_glance_of_a_fleet_leads_with_its_verdict(tmp_path, figures):
    fleet = [node(f"node{i:02d}", seed=i) for i in range(1, 8)] + [node("node08", 0.1 / 0.84, tel(**THERMAL), seed=8)]
    html = write_report(fleet, tmp_path / "out").read_text(encoding="utf-8")
    (tone, text), *_ = _findings(html)
    assert tone == "bad" and text.startswith("Problem: Fleet. 8 nodes, 1 slow: node08 (-16%, thermal throttling)")
    assert '<a href="#fleet">Details</a>' in _glance(html)
    assert "vs_published" not in figures  # the fleet chart is the headline of a fleet


def test_sections_run_from_the_headline_to_the_diagnostics(tmp_path):
    # Multi-GPU scaling, a headline of a data-parallel run, came after the step-time box plots.
    from report_docs import write_sample_report

    _, index = write_sample_report(tmp_path / "out")
    html = index.read_text(encoding="utf-8")
    order = ["glance", "results", "ranking", "speedups", "scaling", "telemetry", "distribution", "environment",
             "methodology"]
    assert re.findall(r'<section class="card[^"]*" id="(\w+)"', html) == order
    nav = re.search(r'<nav class="toc".*?</nav>', html, re.S).group(0)
    assert re.findall(r'href="#(\w+)"', nav) == order


def test_every_chart_has_alt_text_that_gives_its_figures(tmp_path):
    # The alt text was the chart's title ("ResNet-50 v1.5 · TF32 · 1 GPU"): a screen reader heard which chart,
    # never what it showed.
    from report_docs import sample_document

    doc = sample_document()
    html = write_report([doc], tmp_path / "out").read_text(encoding="utf-8")
    alts = dict((name, alt) for alt, name in re.findall(r'<img src="[^"]+" alt="([^"]*)" data-chart="([^"]+)"', html))
    kinds = {"vs_published": "Bar chart", "ranking_": "Bar chart", "speedups": "Bar chart", "step_times": "Box plots",
             "scaling": "Line charts", "telemetry": "Line charts"}
    assert len(alts) == 8
    for name, alt in alts.items():
        (kind,) = [k for prefix, k in kinds.items() if name.startswith(prefix)]
        assert alt.startswith(kind), (name, alt)
    ranking = alts["ranking_resnet50_tf32_na_1gpu"]
    tf32_eager = next(r for r in doc["results"] if r["precision"] == "tf32" and r["compile"] == "off")
    assert f"this run: H100 SXM5 80GB · eager {fmt.throughput(tf32_eager['samples_per_s'])}" in ranking
    assert re.search(r"H100 SXM5 80GB [\d,]+", ranking)  # the published bar of the same GPU, with its figure
    assert "1.00×" not in alts["speedups"] and re.search(r"mode default \d\.\d\d×", alts["speedups"])
    assert re.search(r"2 GPUs [\d,]+ images/s \([\d.]+% of linear\)", alts["scaling"])
    assert "median" in alts["step_times"] and " ms" in alts["step_times"]


def test_methodology_counts_agree_with_their_nouns(tmp_path):
    # A CPU quick run read "1 steps per configuration".
    one = make_result("resnet50", "fp32", "off", 2, device="cpu", steps=2, repeats=2, seed=1)
    one["warmup_step_times_s"] = [0.6]
    html = write_report([make_document([one], env=environment(gpu_name=None))], tmp_path / "out").read_text(
        encoding="utf-8")
    assert "<td>1 step per configuration," in html and "<td>2 repeats of 2 steps, timed with" in html
    more = write_report([make_document([make_result(steps=30, seed=2)])], tmp_path / "gpu").read_text(encoding="utf-8")
    assert "<td>5 steps per configuration," in more and "<td>3 repeats of 30 steps," in more


def test_environment_leaves_out_what_no_run_recorded(tmp_path):
    env = environment(gpu_name=None, driver_version=None, nccl_version=None)
    cpu = make_result("resnet50", "fp32", "off", 2, device="cpu", steps=4, seed=1)
    html = write_report([make_document([cpu], env=env)], tmp_path / "cpu").read_text(encoding="utf-8")
    table = re.search(r'<section class="card" id="environment">(.*?)</section>', html, re.S).group(1)
    assert "NVIDIA driver" not in table and "NCCL" not in table and "git commit" not in table
    assert "<th scope=\"row\">PyTorch</th><td>2.11.0+cu128</td>" in table
    gpu = write_report([make_document([make_result(seed=2)])], tmp_path / "gpu").read_text(encoding="utf-8")
    assert "<th scope=\"row\">NVIDIA driver</th><td>570.133.20</td>" in gpu


def test_ranking_legend_names_the_highlighted_bars_of_several_runs(tmp_path, figures):
    # Three runs' bars were all "this run" in the legend.
    a = make_document([make_result(step_time_s=0.1, seed=1)], env=environment(hostname="lab1"))
    b = make_document([make_result(step_time_s=0.2, seed=2)],
                      env=environment(gpu_name="NVIDIA A100-SXM4-80GB", hostname="lab2"))
    html = write_report([a, b], tmp_path / "two").read_text(encoding="utf-8")
    legend = [t.get_text() for t in figures["ranking_resnet50_amp-fp16_na_1gpu"].axes[0].get_legend().get_texts()]
    assert legend[0] == "these runs"
    assert "with the results of these runs highlighted" in html and "this run" not in html.split('id="ranking"')[1].split("</section>")[0]
    write_report([a], tmp_path / "one")
    legend = [t.get_text() for t in figures["ranking_resnet50_amp-fp16_na_1gpu"].axes[0].get_legend().get_texts()]
    assert legend[0] == "this run"


def test_speed_up_bars_take_their_precisions_colour_and_a_slow_down_is_hatched(tmp_path, figures):
    # Every speed-up bar was blue (TF32's colour next door) and a slow-down vermillion: colour meant two things.
    results = [make_result(precision="tf32", step_time_s=0.2, seed=1),
               make_result(precision="tf32", compile="default", step_time_s=0.22, seed=2),  # compile slower
               make_result(precision="amp-fp16", step_time_s=0.1, seed=3),
               make_result(precision="amp-fp16", compile="default", step_time_s=0.09, seed=4)]
    write_report([make_document(results)], tmp_path / "out")
    fig = figures["speedups"]
    compile_ax, precision_ax = fig.axes
    colours = {_hex(p.get_facecolor()) for p in precision_ax.patches}
    assert colours == {style.OKABE_ITO["orange"]}  # AMP FP16 vs TF32: the AMP colour
    by_colour = {_hex(p.get_facecolor()): p for p in compile_ax.patches}
    assert set(by_colour) == {style.OKABE_ITO["blue"], style.OKABE_ITO["orange"]}
    assert by_colour[style.OKABE_ITO["blue"]].get_hatch() == "///"  # TF32 compiled was slower
    assert not by_colour[style.OKABE_ITO["orange"]].get_hatch()
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["TF32", "AMP FP16", "slower"]


def test_at_a_glance_counts_a_fleets_results_as_results_of_runs(tmp_path):
    fleet = [node(f"node{i:02d}", seed=i) for i in range(1, 5)]
    findings = _findings(write_report(fleet, tmp_path / "out").read_text(encoding="utf-8"))
    (text,) = [t for _, t in findings if "against published results" in t]
    assert "the published median for this GPU (4 results from 4 runs)." in text


def test_a_charts_value_labels_share_their_decimals(tmp_path, figures):
    # BERT-large's ranking labelled B200 "523" and V100 "57.0": one chart, two precisions of number.
    write_report([make_document([make_result("bert-large-squad", seq_len=384, batch_size=64, step_time_s=0.23,
                                             seed=1)])], tmp_path / "out")
    (ax,) = figures["ranking_bert-large-squad_amp-fp16_384_1gpu"].axes
    labels = [t.get_text() for t in ax.texts if re.fullmatch(r"[\d,.]+", t.get_text())]
    assert len(labels) > 5 and any(float(x.replace(",", "")) < 100 for x in labels)
    assert all("." not in x for x in labels)
    assert fmt.throughput(57.0, 523.0) == "57" and fmt.throughput(57.0) == "57.0" and fmt.throughput(5.0, 50) == "5.0"
