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


def throughput_text(value: float | None) -> str:
    """samples/s for the run table and progress lines: one decimal, none from 1,000 up, and two significant
    digits below 1 (a CPU's 0.14 and 0.071 images/s both read "0.1")."""
    if value is None:
        return "-"
    if 0 < value < 1:
        return f"{value:.2g}"
    return f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"


def results_table(results: list[dict[str, Any]], title: str | None = None, width: int | None = None,
                  details: bool = False):
    """A rich renderable with one row per result: step ms is the median step time, mem GB the peak memory
    (10^9 bytes), TFLOP/s the achieved rate (samples/s x FLOPs per sample).

    Numbers are never cut: when the full table is wider than `width` (an 80-column terminal), workload,
    precision and compile mode share one wrapping column, and if that is still too wide the optional columns
    (samples/s/W, vs published, compile s) move to a second table under the first. `details` (`dlbench
    results show`) adds the p5-p95 step-time range under each median and a "compile s" column when something
    was compiled. Infer and generate results have their own columns: `report.results_tables` chooses."""
    columns = list(COLUMNS)
    optional = [column for column in OPTIONAL_COLUMNS if any(column.wanted(r) for r in results)]
    if details:
        optional += [column for column in DETAIL_COLUMNS if any(column.wanted(r) for r in results)]
    columns += [(column.header, column.justify, False) for column in optional]
    rows = [_row(r, details) + [column.cell(r) for column in optional] for r in results]
    caption = "step ms: median, 5th-95th percentile below" if details and any(
        (r.get("step_time_s") or {}).get("p95") is not None for r in results) else None
    if width is None or _full_width(rows, columns) <= width:
        return _table(title, columns, rows, caption)
    columns = [("configuration", "left", True), *columns[3:]]
    rows = [[f"{row[0]}\n[dim]{row[1]}, compile {row[2]}[/dim]", *row[3:]] for row in rows]
    if _full_width(rows, columns) <= width:
        return _table(title, columns, rows, caption)
    from rich.console import Group

    base = len(COLUMNS) - 2  # the merged configuration column and the fixed numeric columns
    return Group(_table(title, columns[:base], [row[:base] for row in rows], caption),
                 _table(None, columns[:1] + columns[base:], [row[:1] + row[base:] for row in rows], None))


# A wrapping column needs at least this many characters: the longest word of a configuration
# ("bert-large-squad", "compile default,").
WRAP_MIN = 17


def _table(title: str | None, columns: list[tuple[str, str, bool]], rows: list[list[str]], caption: str | None):
    from rich import box
    from rich.table import Table

    table = Table(title=title, header_style="bold", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  show_edge=False, padding=(0, 1, 0, 0), caption=caption, caption_justify="left")
    for index, (header, justify, wrap) in enumerate(columns):
        cells = [len(line) for row in rows for line in _plain(row[index]).splitlines()]
        widest = max([len(header), *cells])
        table.add_column(header, justify=justify, no_wrap=not wrap,
                         min_width=min(widest, WRAP_MIN) if wrap else widest)
    for row in rows:
        table.add_row(*row)
    return table


def _full_width(rows: list[list[str]], columns: list[tuple[str, str, bool]]) -> int:
    """Columns needed: names at full width, except a merged configuration column, which may wrap."""
    widths = []
    for i, (header, _, wrap) in enumerate(columns):
        widest = max([len(header), *(len(line) for row in rows for line in _plain(row[i]).splitlines())])
        widths.append(min(widest, WRAP_MIN) if wrap and header == "configuration" else widest)
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


def _text(value: Any) -> str:
    """A name from a result document as literal text inside rich markup (an imported document may hold
    "[bold]" or control characters)."""
    from rich.markup import escape

    return escape("".join(c if c.isprintable() else " " for c in str(value)))


def _row(r: dict[str, Any], details: bool = False) -> list[str]:
    status = _text(r.get("status", "?"))
    style = STATUS_STYLE.get(status, "")
    workload = _text(r.get("workload", "?"))
    if r.get("seq_len"):
        workload = f"{workload} ({r['seq_len']})"
    if r.get("flavour") == "tiny":
        workload += " \\[tiny]"  # escaped: rich would read "[tiny]" as markup and drop it
    batch = str(r.get("batch_size", "-"))
    if r.get("batch_size_search"):
        batch += " (auto)"
    if (r.get("world_size") or 1) > 1:  # data-parallel: per-device batch x devices
        batch += f" x{r['world_size']}"
    step_stats = r.get("step_time_s") or {}
    step = _fmt(step_stats.get("median"), ",.1f", 1e3)
    if details and step_stats.get("p5") is not None and step_stats.get("p95") is not None:
        step += f"\n[dim]{_ms_short(step_stats['p5'])}-{_ms_short(step_stats['p95'])}[/dim]"
    return [
        workload,
        _text(r.get("precision", "?")),
        _text(r.get("compile", "?")),
        batch,
        throughput_text(r.get("samples_per_s")),
        _fmt(r.get("cv"), ".1%"),
        step,
        _fmt(r.get("peak_memory_bytes"), ".2f", 1e-9),
        _tflops(r.get("achieved_flops_per_s")),
        f"[{style}]{status}[/{style}]" if style else status,
    ]


def _ms_short(seconds: float) -> str:
    """A step time in ms in at most about 5 characters, for the p5-p95 range under the median."""
    value = seconds * 1e3
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


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


# `dlbench results show` only: what the run table leaves to the JSON document.
DETAIL_COLUMNS: tuple[_Optional, ...] = (
    _Optional("compile s", "right", lambda r: r.get("compile_time_s") is not None,
              lambda r: _fmt(r.get("compile_time_s"), ",.1f")),
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
