"""The terminal table of `dlbench run` results (rendering only: every figure comes from the result document).

Exercised by `dlbench run` (printed on stdout after the sweep). Units are converted here and only here:
step times to ms, memory to GB (10^9 bytes), FLOP/s to TFLOP/s.
"""

from __future__ import annotations

from typing import Any

from dlbench.analysis.configuration import config_label

STATUS_STYLE = {"ok": "green", "skipped": "dim", "oom": "red", "error": "red", "timeout": "yellow"}


def _fmt(value: float | None, fmt: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value * scale, fmt)


def _tflops(flops_per_s: float | None) -> str:
    """Achieved TFLOP/s with two decimals; below 0.01 (a CPU) three significant digits, never a bare "0.00"."""
    if flops_per_s is None:
        return "-"
    value = flops_per_s * 1e-12
    return f"{value:.2f}" if value >= 0.01 or value == 0 else f"{value:.2g}"


def _throughput(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"


def results_table(results: list[dict[str, Any]], title: str | None = None, width: int | None = None):
    """A rich Table with one row per result: step ms is the median step time, mem GB the peak memory
    (10^9 bytes), TFLOP/s the achieved rate (samples/s x FLOPs per sample).

    Numbers are never cut: when the full table is wider than `width` (an 80-column terminal), workload,
    precision and compile mode share one wrapping column."""
    from rich import box
    from rich.table import Table

    columns = list(COLUMNS)
    optional = [column for column in OPTIONAL_COLUMNS if any(column.wanted(r) for r in results)]
    columns += [(column.header, column.justify, False) for column in optional]
    rows = [_row(r) + [column.cell(r) for column in optional] for r in results]
    if width is not None and _full_width(rows, columns) > width:
        columns = [("configuration", "left", True), *columns[3:]]
        rows = [[f"{row[0]}\n[dim]{row[1]}, compile {row[2]}[/dim]", *row[3:]] for row in rows]
    table = Table(title=title, header_style="bold", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  show_edge=False, padding=(0, 1, 0, 0))
    for index, (header, justify, wrap) in enumerate(columns):
        cells = [len(line) for row in rows for line in _plain(row[index]).splitlines()]
        widest = max([len(header), *cells])
        table.add_column(header, justify=justify, no_wrap=not wrap, min_width=None if wrap else widest)
    for row in rows:
        table.add_row(*row)
    return table


def _full_width(rows: list[list[str]], columns: list[tuple[str, str, bool]]) -> int:
    widths = [max([len(header), *(len(_plain(row[i])) for row in rows)]) for i, (header, _, _) in enumerate(columns)]
    return sum(widths) + 2 * (len(widths) - 1)


# (header, justify, may wrap)
COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("workload", "left", True),
    ("precision", "left", True),
    ("compile", "left", True),
    ("batch", "right", False),
    ("samples/s", "right", False),
    ("CV", "right", False),
    ("step ms", "right", False),  # median
    ("mem GB", "right", False),  # peak, 10^9 bytes
    ("TFLOP/s", "right", False),
    ("status", "left", False),
)


def _plain(text: str) -> str:
    from rich.text import Text

    return Text.from_markup(text).plain


def _row(r: dict[str, Any]) -> list[str]:
    status = r.get("status", "?")
    style = STATUS_STYLE.get(status, "")
    workload = r.get("workload", "?")
    if r.get("seq_len"):
        workload = f"{workload} ({r['seq_len']})"
    if r.get("flavour") == "tiny":
        workload += " \\[tiny]"  # escaped: rich would read "[tiny]" as markup and drop it
    batch = str(r.get("batch_size", "-"))
    if r.get("batch_size_search"):
        batch += " (auto)"
    if (r.get("world_size") or 1) > 1:  # data-parallel: per-device batch x devices
        batch += f" x{r['world_size']}"
    step = (r.get("step_time_s") or {}).get("median")
    return [
        workload,
        str(r.get("precision", "?")),
        str(r.get("compile", "?")),
        batch,
        _throughput(r.get("samples_per_s")),
        _fmt(r.get("cv"), ".1%"),
        _fmt(step, ",.1f", 1e3),
        _fmt(r.get("peak_memory_bytes"), ".2f", 1e-9),
        _tflops(r.get("achieved_flops_per_s")),
        f"[{style}]{status}[/{style}]" if style else status,
    ]


def vs_published_cell(vs: dict[str, Any] | None) -> str:
    """`0.92x` (same-GPU published median), `#4 of 10` (rank among published GPUs) or `-` (nothing comparable)."""
    if not vs:
        return "-"
    from dlbench.report.fmt import vs_published_short

    text = vs_published_short(vs)
    return "-" if text == "\u2014" else text


def _efficiency(r: dict[str, Any]) -> dict[str, Any]:
    from dlbench.analysis.energy import result_efficiency

    return result_efficiency(r)


def _per_watt_cell(r: dict[str, Any]) -> str:
    eff = _efficiency(r)
    cell = _fmt(eff.get("samples_per_s_per_w"), ".2f")
    if not eff.get("throttled"):
        return cell
    gpus = eff.get("throttled_gpus") or []
    count = (r.get("telemetry") or {}).get("num_gpus")
    which = f" ({len(gpus)} of {count} GPUs)" if gpus and count else ""  # doctor names them
    return f"{cell} [yellow]throttled{which}[/yellow]"


class _Optional:
    """A column shown only when some result has its data (vs published after ranking; perf/W with telemetry)."""

    def __init__(self, header: str, justify: str, wanted, cell) -> None:
        self.header, self.justify, self.wanted, self.cell = header, justify, wanted, cell


OPTIONAL_COLUMNS: tuple[_Optional, ...] = (
    _Optional("samples/s/W", "right", lambda r: _efficiency(r).get("samples_per_s_per_w") is not None, _per_watt_cell),
    # Only when some result has a ratio or a rank: on a CPU or with --tiny every cell would be "-".
    _Optional("vs published", "right", lambda r: vs_published_cell(r.get("vs_published")) != "-",
              lambda r: vs_published_cell(r.get("vs_published"))),
)


def result_messages(results: list[dict[str, Any]]) -> list[str]:
    """Lines to print under the table: errors of failed configurations and stability warnings."""
    lines: list[str] = []
    for r in results:
        name = config_label(r)
        if r.get("status") not in ("ok", None) and r.get("error"):
            lines.append(f"{name}: {r['status']}: {r['error']}")
        for warning in r.get("warnings") or []:
            lines.append(f"{name}: warning: {warning}")
    return lines
