"""The live progress display of `dlbench run` on stderr: overall configurations and the current one's phase.

Exercised by `dlbench run` (hidden with `--quiet`). It implements the sweep's observer hooks
(`dlbench.runner.sweep.SweepObserver`) with a rich Progress; each finished configuration leaves one line above
the live bars, so the record survives a terminal without live updates (CI logs).
"""

from __future__ import annotations

from typing import Any

from dlbench.runner.sweep import SweepObserver

PHASE_NAMES = {"compile": "compiling", "warmup": "warm-up", "measure": "measuring"}


class RichProgress(SweepObserver):
    """Use as a context manager around `run_sweep`."""

    def __init__(self, console) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = console
        self.bars = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True)
        self.overall = None
        self.current = None
        self.label = ""

    def __enter__(self) -> RichProgress:
        self.bars.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bars.__exit__(*exc)

    def sweep_started(self, total: int) -> None:
        self.overall = self.bars.add_task("configurations", total=total)

    def config_started(self, index: int, total: int, config) -> None:
        self.label = config.label
        if self.current is not None:
            self.bars.remove_task(self.current)
        self.current = self.bars.add_task(f"{self.label}: starting", total=None)

    def status(self, text: str) -> None:
        if self.current is not None:
            self.bars.update(self.current, description=f"{self.label}: {text}", total=None, completed=0)

    def progress(self, phase: str, done: int, total: int) -> None:
        if self.current is not None:
            name = PHASE_NAMES.get(phase, phase)
            self.bars.update(self.current, description=f"{self.label}: {name}", total=total or None,
                                 completed=done)

    def config_finished(self, index: int, result: dict[str, Any]) -> None:
        from rich.markup import escape

        status = result.get("status")
        if status == "ok":
            value = result.get("samples_per_s")
            unit = result.get("unit") or "samples"
            from dlbench.report.run_table import throughput_text

            text = f"[green]ok[/green] {throughput_text(value)} {unit}/s" if value is not None else "[green]ok[/green]"
        else:  # a skipped configuration (the hardware cannot run it) is not a failure: no red
            style = "dim" if status == "skipped" else "red"
            # escaped: an error message is not markup ("[/dev/shm/...]" raised MarkupError mid-sweep)
            text = f"[{style}]{escape(str(status))}[/{style}]: {escape(str(result.get('error') or ''))}"
        label = self.label
        if result.get("workload"):  # the result's own: with --batch-size auto, the batch it measured, not the plan's
            from dlbench.analysis.configuration import config_label

            label = config_label(result)
        # One line per configuration in a log file (piped, redirected): grep finds it whole.
        self.bars.console.print(f"{label}: {text}", highlight=False, soft_wrap=not self.console.is_terminal)
        if self.overall is not None:
            self.bars.advance(self.overall)
