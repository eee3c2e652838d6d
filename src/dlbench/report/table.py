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
    """A rich Table with one row per result: step ms is the median step time, mem GB the peak memory
    (10^9 bytes), TFLOP/s the achieved rate (samples/s x FLOPs per sample)."""
    from rich.table import Table

    table = Table(title=title, header_style="bold", title_justify="left")
    table.add_column("workload", no_wrap=True)
    table.add_column("precision", no_wrap=True)
    table.add_column("compile", no_wrap=True)
    table.add_column("batch", justify="right", no_wrap=True)
    table.add_column("samples/s", justify="right", no_wrap=True)
    table.add_column("CV", justify="right", no_wrap=True)
    table.add_column("step ms", justify="right", no_wrap=True)  # median
    table.add_column("mem GB", justify="right", no_wrap=True)  # peak, 10^9 bytes
    table.add_column("TFLOP/s", justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    with_published = any(r.get("vs_published") for r in results)
    if with_published:  # ratio to the same GPU's published median, or rank among published GPUs
        table.add_column("vs published", justify="right", no_wrap=True)
    for r in results:
        status = r.get("status", "?")
        style = STATUS_STYLE.get(status, "")
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
        extra = [vs_published_cell(r.get("vs_published"))] if with_published else []
        table.add_row(
            workload,
            r.get("precision", "?"),
            r.get("compile", "?"),
            batch,
            _throughput(r.get("samples_per_s")),
            _fmt(r.get("cv"), ".1%"),
            _fmt(step, ".1f", 1e3),
            _fmt(r.get("peak_memory_bytes"), ".2f", 1e-9),
            _fmt(r.get("achieved_flops_per_s"), ".2f", 1e-12),
            f"[{style}]{status}[/{style}]" if style else status,
            *extra,
        )
    return table


def vs_published_cell(vs: dict[str, Any] | None) -> str:
    """`0.92x` (same-GPU published median), `#4 of 10` (rank among published GPUs) or `-` (nothing comparable)."""
    if not vs:
        return "-"
    from dlbench.report.fmt import vs_published_short

    text = vs_published_short(vs)
    return "-" if text == "\u2014" else text


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
