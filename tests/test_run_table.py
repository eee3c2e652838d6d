"""The terminal table of `dlbench run` (`dlbench.report.run_table.results_table`) as a user reads it.

Run with `python -m pytest tests/test_run_table.py`. Found by a second test pass.
"""

from __future__ import annotations

from rich.console import Console

from dlbench.report.run_table import results_table


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
    from dlbench.cli.progress import RichProgress
    from dlbench.measurement.config import RunConfig

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


def test_gpu_run_with_every_optional_column_in_80_columns_keeps_the_configuration():
    # A GPU run with telemetry (samples/s/W) and published figures (vs published): in 80 columns the merged
    # configuration column was squeezed to nothing, so no row said which configuration it was.
    telemetry = {"available": True, "power_mean_w": 600.0, "throttle_share": 0.0}
    results = [_result(workload="bert-large-squad", seq_len=384, flavour="full", precision=p, compile=c,
                       samples_per_s=412.3, achieved_flops_per_s=3.0e14, peak_memory_bytes=41e9,
                       telemetry=telemetry, compile_time_s=41.5 if c == "default" else None,
                       vs_published={"ratio": 0.93, "rank": 3, "rank_of": 10, "reason": None})
               for p in ("tf32", "amp-fp16") for c in ("off", "default")]
    console = Console(width=80, record=True)
    console.print(results_table(results, title="dlbench run on cuda", width=80, details=True))
    text = console.export_text()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert text.count("bert-large-squad") >= 4  # every row still names its configuration
    for cell in ("412.3", "0.93\u00d7", "0.69", "41.5"):  # throughput, vs published, per W, compile s
        assert cell in text


def test_progress_line_prints_an_error_with_brackets_literally():
    # A failed configuration whose error held "[/dev/shm/...]" raised rich's MarkupError in the progress
    # display: a traceback, and the rest of the sweep was never measured.
    from dlbench.cli.progress import RichProgress
    from dlbench.measurement.config import RunConfig

    console = Console(width=200, record=True)
    config = RunConfig(workload="resnet50", precision="fp32", compile="off", batch_size=8, seq_len=None,
                       device="cpu", warmup_steps=1, steps=1, repeats=1, seed=0, flavour="tiny", world_size=1)
    error = "OSError: cannot open [/dev/shm/torch_123] [red]x"
    with RichProgress(console) as display:
        display.sweep_started(1)
        display.config_started(0, 1, config)
        display.config_finished(0, {"status": "error", "error": error})
    assert error in console.export_text()


def test_throughput_below_one_sample_per_second_keeps_two_significant_digits():
    # The CPU quick suite's full-size ResNet-50 (0.14 images/s) and BERT (0.07 sequences/s) both read "0.1".
    from dlbench.cli.progress import RichProgress
    from dlbench.measurement.config import RunConfig

    text = _render([_result(samples_per_s=0.1406), _result(samples_per_s=0.0712, precision="amp-bf16")], 140)
    assert "0.14" in text and "0.071" in text
    console = Console(width=200, record=True)
    config = RunConfig(workload="resnet50", precision="fp32", compile="off", batch_size=2, seq_len=None,
                       device="cpu", warmup_steps=1, steps=1, repeats=1, seed=0, flavour="full", world_size=1)
    with RichProgress(console) as display:
        display.sweep_started(1)
        display.config_started(0, 1, config)
        display.config_finished(0, {"status": "ok", "samples_per_s": 0.1406, "unit": "images"})
    assert "ok 0.14 images/s" in console.export_text()


def test_scaling_table_in_80_columns_cuts_nothing():
    # The scaling table under `--gpus 1,2` cut its first header to "configurat…" in 80 columns.
    from dlbench.report.scaling_table import scaling_table

    results = [_result(workload="bert-large-squad", seq_len=384, flavour="full", samples_per_s=v, world_size=n,
                       batch_size=32, scaling_efficiency=None if n == 1 else v / (n * 412.3))
               for n, v in ((1, 412.3), (2, 801.9), (4, 15_612.8))]
    console = Console(width=80, record=True)
    console.print(scaling_table(results))
    text = console.export_text()
    assert "…" not in text and "configuration" in text and "15,612.8" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_scaling_table_node_counts_follow_the_flavour():
    """A tiny and a full run of one configuration are different rows: neither shows the other's node count."""
    from dlbench.report.scaling_table import scaling_table

    results = [_result(flavour=flavour, world_size=n, nodes=nodes, samples_per_s=speed * n)
               for flavour, nodes, speed in (("tiny", 1, 30.0), ("full", 2, 10.0)) for n in (1, 4)]
    console = Console(width=120, record=True)
    console.print(scaling_table(results))
    rows = {}
    for line in console.export_text().splitlines():
        cells = line.split()
        if len(cells) > 6 and cells[-6] == "4":  # ... devices nodes global-batch samples/s ideal efficiency
            rows[" ".join(cells[:-6])] = cells[-5]
    assert rows == {"bert-base-mlm fp32 compile=off bs=8/device seq=32 tiny": "1",
                    "bert-base-mlm fp32 compile=off bs=8/device seq=32": "2"}


def test_progress_lines_in_a_log_file_are_not_wrapped():
    # Piped to a file, a skipped configuration's line was broken at 80 columns mid-reason.
    import io

    from dlbench.cli.progress import RichProgress
    from dlbench.measurement.config import RunConfig

    log = io.StringIO()
    console = Console(file=log, width=80)
    config = RunConfig(workload="bert-large-squad", precision="tf32", compile="default", batch_size=8, seq_len=32,
                       device="cpu", warmup_steps=1, steps=1, repeats=1, seed=0, flavour="tiny", world_size=1)
    reason = "tf32 is an NVIDIA tensor-core mode (CUDA compute capability >= 8.0); not available on cpu"
    with RichProgress(console) as display:
        display.sweep_started(1)
        display.config_started(0, 1, config)
        display.config_finished(0, {"status": "skipped", "error": reason})
    lines = [line for line in log.getvalue().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].endswith(reason)


def test_data_parallel_row_shows_the_per_device_batch_times_the_devices():
    # samples/s of a 2-GPU result is the group's; its batch cell says "8 x2" (8 per device), never "16" or "8".
    text = _render([_result(world_size=2, batch_size=8, samples_per_s=73.2)], 140)
    row = next(line for line in text.splitlines() if "bert-base-mlm" in line)
    assert "8 x2" in row and "73.2" in row
    single = next(line for line in _render([_result()], 140).splitlines() if "bert-base-mlm" in line)
    assert "8 x" not in single
