"""The terminal tables of infer and generate results (rendering only: every figure is a metric of the result).

Exercised by `dlbench run --scenario infer|generate` and `dlbench results show RUN` through
`run_table.results_table`, which keeps training's table as it was and hands every other scenario here, one table
per scenario when a run mixes them. Units are converted here: seconds to ms, bytes to GB, fractions to %.

- infer: offline samples/s and batch time, batch-1 latency p50 / p99 (ms), peak memory, vs published;
- generate: prompt+new tokens, prefill tokens/s, time to first token, decode tokens/s, time per output token
  p50 / p99, decode bandwidth as a share of the card's catalogue bandwidth ("BW %"), prefill MFU, peak memory,
  vs published.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dlbench.schema.metrics import metric, value


def _fmt(number: float | None, fmt: str, scale: float = 1.0) -> str:
    return "-" if number is None else format(number * scale, fmt)


def ms_text(seconds: float | None) -> str:
    """A time in ms with three significant figures at most ("12.3", "0.845", "1,234")."""
    if seconds is None:
        return "-"
    number = seconds * 1e3
    if number >= 100:
        return f"{number:,.0f}"
    return f"{number:.1f}" if number >= 10 else f"{number:.2f}" if number >= 1 else f"{number:.3g}"


def _stat(result: dict[str, Any], name: str, key: str) -> float | None:
    found = metric(result, name)
    if found is None:
        return None
    stat = found.get(key)
    return None if stat is None else float(stat)


def _percent(fraction: float | None) -> str:
    return "-" if fraction is None else f"{fraction * 100:.0f}%" if fraction >= 0.1 else f"{fraction * 100:.2g}%"


def _throughput(number: float | None) -> str:
    from dlbench.report.run_table import throughput_text

    return throughput_text(number)


class Column:
    """A column: header, justify, the cell of a result, and whether it is shown only when some cell has data."""

    def __init__(self, header: str, cell: Callable[[dict[str, Any]], str], justify: str = "right",
                 optional: bool = False) -> None:
        self.header, self.cell, self.justify, self.optional = header, cell, justify, optional


def _vs_published(r: dict[str, Any]) -> str:
    from dlbench.report.run_table import vs_published_cell

    return vs_published_cell(r.get("vs_published"))


def _tokens(r: dict[str, Any]) -> str:
    if r.get("prompt_len") is None or r.get("new_tokens") is None:
        return "-"
    return f"{r['prompt_len']}+{r['new_tokens']}"


def _memory(r: dict[str, Any]) -> str:
    return _fmt(value(r, "peak_memory_bytes"), ".2f", 1e-9)


INFER_COLUMNS: tuple[Column, ...] = (
    Column("samples/s", lambda r: _throughput(value(r, "samples_per_s"))),  # offline, at the batch size
    Column("batch ms", lambda r: ms_text(value(r, "step_time_s"))),  # median offline batch
    Column("lat p50 ms", lambda r: ms_text(_stat(r, "latency_s", "p50"))),  # batch-1 requests
    Column("lat p99 ms", lambda r: ms_text(_stat(r, "latency_s", "p99"))),
    Column("mem GB", _memory, optional=True),
    Column("vs published", _vs_published, optional=True),
)

GENERATE_COLUMNS: tuple[Column, ...] = (
    Column("tokens", _tokens),
    Column("prefill tok/s", lambda r: _throughput(value(r, "prefill_tokens_per_s"))),
    Column("TTFT ms", lambda r: ms_text(value(r, "ttft_s"))),
    Column("decode tok/s", lambda r: _throughput(value(r, "decode_tokens_per_s"))),
    Column("TPOT p50 ms", lambda r: ms_text(_stat(r, "tpot_s", "p50"))),
    Column("TPOT p99 ms", lambda r: ms_text(_stat(r, "tpot_s", "p99"))),
    Column("BW %", lambda r: _percent(value(r, "bandwidth_fraction")), optional=True),
    Column("MFU", lambda r: _percent(value(r, "mfu")), optional=True),
    Column("mem GB", _memory, optional=True),
    Column("vs published", _vs_published, optional=True),
)

SCENARIO_COLUMNS: dict[str, tuple[Column, ...]] = {"infer": INFER_COLUMNS, "generate": GENERATE_COLUMNS}

# What a header means, said under the table when the column is shown.
CAPTIONS: dict[str, str] = {
    "samples/s": "samples/s and batch ms: offline at the batch size",
    "lat p50 ms": "lat: batch-1 requests",
    "tokens": "tokens: prompt+new",
    "TPOT p50 ms": "TPOT: time per output token",
    "BW %": "BW %: decode bandwidth of the card's catalogue figure",
    "MFU": "MFU: prefill",
}


def scenario_table(results: list[dict[str, Any]], scenario: str, title: str | None = None,
                   width: int | None = None):
    """One table of `scenario` results (infer or generate): the configuration, the scenario's columns (an
    optional one only when some result has data for it) and the status. Narrower than `width` like the training
    table: the configuration first shares one wrapping column, then the metric columns split into two tables."""
    from dlbench.report.run_table import STATUS_STYLE, WRAP_MIN, _full_width, _table, _text

    chosen = [c for c in SCENARIO_COLUMNS[scenario]
              if not c.optional or any(c.cell(r) not in ("-", "") for r in results)]
    head = [("workload", "left", True), ("precision", "left", True), ("compile", "left", True),
            ("batch", "right", False)]
    columns = [*head, *((c.header, c.justify, False) for c in chosen), ("status", "left", False)]
    rows = []
    for r in results:
        status = _text(r.get("status", "?"))
        style = STATUS_STYLE.get(status, "")
        workload = _text(r.get("workload", "?"))
        if r.get("seq_len") and scenario != "generate":  # generate's prompt length is in "tokens"
            workload = f"{workload} ({r['seq_len']})"
        if r.get("flavour") == "tiny":
            workload += " \\[tiny]"
        rows.append([workload, _text(r.get("precision", "?")), _text(r.get("compile", "?")),
                     str(r.get("batch_size", "-")), *(c.cell(r) for c in chosen),
                     f"[{style}]{status}[/{style}]" if style else status])
    caption = "; ".join(CAPTIONS[c.header] for c in chosen if c.header in CAPTIONS) or None
    if width is None or _full_width(rows, columns) <= width:
        return _table(title, columns, rows, caption)
    columns = [("configuration", "left", True), *columns[3:]]
    rows = [[f"{row[0]}\n[dim]{row[1]}, compile {row[2]}[/dim]", *row[3:]] for row in rows]
    if _full_width(rows, columns) <= width:
        return _table(title, columns, rows, caption)
    from rich.console import Group

    # Split the metric columns so that each half fits: the configuration (WRAP_MIN) and batch lead both.
    budget = width - WRAP_MIN - 2
    first = 2
    used = len(columns[1][0]) + 2
    while first < len(columns):
        cells = [len(line) for row in rows for line in row[first].splitlines()]
        need = max([len(columns[first][0]), *cells]) + 2
        if used + need > budget:
            break
        used += need
        first += 1
    first = max(first, 3)
    return Group(_table(title, columns[:first], [row[:first] for row in rows], None),
                 _table(None, columns[:2] + columns[first:], [row[:2] + row[first:] for row in rows], caption))
