"""What the report page says in its sections: how each device was timed (Methodology), how many configurations
ran (At a glance), and the results table's "vs published" column only where a result has one.

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_report_sections.py`.
"""

from __future__ import annotations


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
