"""The terminal table of `dlbench run` results (rendering only: every figure comes from the result document).

Exercised by `dlbench run` (printed on stdout after the sweep). Units are converted here and only here:
step times to ms, memory to GB (10^9 bytes), FLOP/s to TFLOP/s.
"""

from __future__ import annotations

from typing import Any

STATUS_STYLE = {"ok": "green", "skipped": "dim", "oom": "red", "error": "red", "timeout": "yellow"}


def _fmt(value: float | None, fmt: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value * scale, fmt)


def _throughput(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"


def results_table(results: list[dict[str, Any]], title: str | None = None):
    """A rich Table with one row per result."""
    from rich.table import Table

    table = Table(title=title, header_style="bold", title_justify="left")
    table.add_column("workload")
    table.add_column("precision")
    table.add_column("compile")
    table.add_column("batch", justify="right")
    table.add_column("samples/s", justify="right")
    table.add_column("CV", justify="right")
    table.add_column("step ms\n(median)", justify="right")
    table.add_column("peak mem\nGB", justify="right")
    table.add_column("TFLOP/s", justify="right")
    table.add_column("status")
    for r in results:
        status = r.get("status", "?")
        style = STATUS_STYLE.get(status, "")
        unit = r.get("unit")
        workload = r.get("workload", "?")
        if r.get("seq_len"):
            workload = f"{workload} ({r['seq_len']})"
        if r.get("flavour") == "tiny":
            workload += " [tiny]"
        batch = str(r.get("batch_size", "-"))
        if r.get("batch_size_search"):
            batch += " (auto)"
        if (r.get("world_size") or 1) > 1:  # data-parallel: per-device batch x devices
            batch += f" x{r['world_size']}"
        step = (r.get("step_time_s") or {}).get("median")
        table.add_row(
            workload,
            r.get("precision", "?"),
            r.get("compile", "?"),
            batch,
            _throughput(r.get("samples_per_s")) + (f" {unit}" if unit and r.get("samples_per_s") else ""),
            _fmt(r.get("cv"), ".1%"),
            _fmt(step, ".1f", 1e3),
            _fmt(r.get("peak_memory_bytes"), ".2f", 1e-9),
            _fmt(r.get("achieved_flops_per_s"), ".2f", 1e-12),
            f"[{style}]{status}[/{style}]" if style else status,
        )
    return table


def result_messages(results: list[dict[str, Any]]) -> list[str]:
    """Lines to print under the table: errors of failed configurations and stability warnings."""
    lines: list[str] = []
    for r in results:
        name = f"{r.get('workload')} {r.get('precision')} compile={r.get('compile')} bs={r.get('batch_size')}"
        if r.get("status") not in ("ok", None) and r.get("error"):
            lines.append(f"{name}: {r['status']}: {r['error']}")
        for warning in r.get("warnings") or []:
            lines.append(f"{name}: warning: {warning}")
    return lines
