"""The live progress line of `dlbench run` names the configuration as measured (the batch size `--batch-size auto`
found, not the plan's placeholder).

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_progress_line.py`.
"""

from __future__ import annotations


def test_progress_line_names_the_batch_size_auto_measured():
    # `dlbench run --batch-size auto` printed "resnet50 fp32 compile=off bs=8 tiny: ok 166.2 images/s" for a
    # result measured at bs=4096 (the plan's placeholder batch), under a table and warnings that said 4096.
    from rich.console import Console

    from dlbench.cli.progress import RichProgress
    from dlbench.measurement.config import RunConfig

    console = Console(width=200, record=True)
    config = RunConfig(workload="resnet50", precision="fp32", compile="off", batch_size=8, seq_len=None,
                       device="cpu", warmup_steps=1, steps=1, repeats=1, seed=0, flavour="tiny", world_size=1)
    result = {**config.to_dict(), "batch_size": 4096, "status": "ok", "samples_per_s": 166.2, "unit": "images"}
    with RichProgress(console) as display:
        display.sweep_started(1)
        display.config_started(0, 1, config)
        display.config_finished(0, result)
    text = console.export_text()
    assert "resnet50 fp32 compile=off bs=4096 tiny: ok 166.2 images/s" in text and "bs=8" not in text
