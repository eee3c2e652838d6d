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
