"""The terminal table of `dlbench run` (`dlbench.report.table.results_table`) as a user reads it.

Run with `python -m pytest tests/test_run_table.py`. Found by a second test pass.
"""

from __future__ import annotations

from rich.console import Console

from dlbench.report.table import results_table


def _result(**changes):
    result = {"workload": "bert-base-mlm", "precision": "fp32", "compile": "off", "batch_size": 8, "seq_len": 32,
              "flavour": "tiny", "status": "ok", "samples_per_s": 36.6, "cv": 0.17,
              "step_time_s": {"median": 0.131}, "peak_memory_bytes": None, "achieved_flops_per_s": 4.6e9,
              "world_size": 1,
              "vs_published": {"ratio": None, "rank": None, "text": None, "reason": "ran on cpu"}}
    result.update(changes)
    return result


def _render(results, width):
    console = Console(width=width, record=True)
    console.print(results_table(results, title="dlbench run on cpu", width=width))
    return console.export_text()


def test_small_achieved_rate_is_not_shown_as_zero():
    text = _render([_result()], 140)
    assert "0.0046" in text  # 4.6 GFLOP/s; "0.00" said nothing was computed


def test_cpu_run_in_80_columns_keeps_names_readable():
    # On a CPU every "vs published" cell is "-": the column took 14 of 80 columns and squeezed the
    # configuration to "bert-…" / "amp-b…" / "compi…".
    text = _render([_result(), _result(precision="amp-bf16"), _result(precision="tf32", status="skipped")], 80)
    assert "vs published" not in text
    assert "…" not in text
    assert "bert-base-mlm" in text and "amp-bf16" in text


def test_progress_line_of_a_skipped_configuration_is_not_red():
    # `-p tf32` on a CPU is skipped with a reason; the progress line printed it in red like a failure.
    from dlbench.report.progress import RichProgress
    from dlbench.runner.config import RunConfig

    console = Console(width=200, record=True, force_terminal=True, color_system="standard")
    config = RunConfig(workload="resnet50", precision="tf32", compile="off", batch_size=8, seq_len=None,
                       device="cpu", warmup_steps=1, steps=1, repeats=1, seed=0, flavour="tiny", world_size=1)
    with RichProgress(console) as display:
        display.sweep_started(2)
        for index, status in enumerate(("skipped", "error")):
            display.config_started(index, 2, config)
            display.config_finished(index, {"status": status, "error": "why"})
    lines = [line for line in console.export_text(styles=True).splitlines() if "why" in line]
    assert len(lines) == 2
    assert "\x1b[31m" not in lines[0] and "\x1b[31m" in lines[1]  # red only for the error
