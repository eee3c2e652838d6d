"""Terminal tables for `dlbench compare`, `dlbench reference list` and `dlbench fleet` (rich), rendering only."""

from __future__ import annotations

from typing import Any

from dlbench.analysis.configuration import config_label
from dlbench.analysis.fleet import cause_text
from dlbench.report import fmt


def compare_table(report: dict[str, Any]):
    """A run-vs-run comparison (from `analysis.compare.compare_documents`) as a rich Table.

    Laid out to fit an 80-column terminal: borderless, the configuration wraps at spaces, and one p column shows
    the larger of the two tests' p-values (the one that decides: a change is significant when both are below
    alpha); `--json` has both.
    """
    from rich import box
    from rich.table import Table

    a_id, b_id = (report.get("a_run_id") or "A")[:8], (report.get("b_run_id") or "B")[:8]
    scenarios = {row.get("scenario") or "train" for row in report["rows"]}
    what = "training throughput, samples/s" if scenarios <= {"train"} else "throughput (" + ", ".join(
        f"{name}: {_THROUGHPUT_WORDS.get(name, name)}" for name in sorted(scenarios)) + ")"
    table = Table(title=f"B {b_id} vs A {a_id}: {what}", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("configuration", min_width=16, ratio=1)
    for name in ("A", "B", "B/A", "change", "p"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("significant", min_width=11)
    for row in report["rows"]:
        label = config_label(row, words=True)
        if len(scenarios) > 1:
            label = f"{label} ({row.get('scenario') or 'train'})"
        if row["ratio"] is None:
            table.add_row(label, fmt.throughput(row["a_samples_per_s"]), fmt.throughput(row["b_samples_per_s"]),
                          fmt.DASH, fmt.DASH, fmt.DASH, f"[dim]{row['reason']}[/dim]")
            continue
        if row["significant"]:
            colour = "green" if row["ratio"] > 1 else "red"
            verdict = f"[{colour}]yes, {'faster' if row['ratio'] > 1 else 'slower'}[/{colour}]"
        elif row["significant"] is False:
            verdict = f"[dim]no ({row['reason']})[/dim]" if row["reason"] else "[dim]no[/dim]"
        else:
            verdict = f"[dim]untested: {row['reason']}[/dim]"
        ps = [p for p in (row["welch_p"], row["mannwhitney_p"]) if p is not None]
        table.add_row(label, fmt.throughput(row["a_samples_per_s"]), fmt.throughput(row["b_samples_per_s"]),
                      fmt.ratio(row["ratio"]), fmt.percent(row["change_pct"] / 100, signed=True),
                      fmt.p_value(max(ps)) if ps else fmt.DASH, verdict)
    return table


# What each scenario's throughput is, in the compare table's title.
_THROUGHPUT_WORDS = {"train": "samples/s", "infer": "offline samples/s", "generate": "decode tokens/s"}


def published_table(rows: list[dict[str, Any]], run_id: str | None):
    """A run's results against published results (rows of `vs_published` plus the configuration).

    A row that could not be compared fully points to a numbered note (`published_notes(rows)`, printed once
    under the table), so that a reason shared by every row of a tiny run is not repeated in a narrow column.
    """
    from rich import box
    from rich.table import Table

    notes = published_notes(rows)
    table = Table(title=f"Run {(run_id or '')[:8]} vs published results", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("configuration", min_width=16, ratio=2)
    table.add_column("GPU", min_width=9, ratio=1)
    # An infer or generate row compares its own metric (`vs_published["metric"]`: offline samples/s, decode
    # tokens/s) with published inference figures; the column then says "measured" and the label the metric.
    mixed = any("metric" in row["vs_published"] for row in rows)
    for name in ("measured" if mixed else "samples/s", "published", "ratio", "rank", "note"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in rows:
        vs = row["vs_published"]
        rank = f"{vs['rank']} of {vs['rank_of']}" if vs["rank"] is not None else fmt.DASH
        label = config_label(row, words=True)
        if mixed and vs.get("metric"):
            label = f"{label} ({vs['metric']})"
        median = vs.get("published_median_samples_per_s", vs.get("published_median"))
        table.add_row(label, fmt.plain(vs["gpu"] or row.get("gpu_name")),
                      fmt.throughput(row["samples_per_s"]), fmt.throughput(median),
                      fmt.ratio(vs["ratio"]), rank, f"[{notes.index(vs['reason']) + 1}]" if vs["reason"] else "")
    return table


def published_notes(rows: list[dict[str, Any]]) -> list[str]:
    """The distinct reasons (`vs_published["reason"]`) of `published_table` rows, in order: its numbered notes."""
    return list(dict.fromkeys(row["vs_published"]["reason"] for row in rows if row["vs_published"]["reason"]))


def published_sources(rows: list[dict[str, Any]]) -> list[str]:
    """The sources behind the published figures of `published_table` rows, each once."""
    return sorted({s for row in rows for s in row["vs_published"]["sources"]})


def reference_table(rows: list[dict[str, Any]], sources: list[str]):
    """Published results, one row each, with a numbered source per row (the numbers index `sources`)."""
    from rich import box
    from rich.table import Table

    table = Table(title=f"Published training throughput ({len(rows)} results)", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("GPU", min_width=9, ratio=2)
    table.add_column("GPUs", justify="right", no_wrap=True)
    table.add_column("workload", min_width=16, ratio=2)
    table.add_column("precision", no_wrap=True)
    table.add_column("bs/GPU", justify="right", no_wrap=True)
    table.add_column("samples/s", justify="right", no_wrap=True)
    table.add_column("src", justify="right", no_wrap=True)
    table.add_column("system", max_width=16, overflow="ellipsis", no_wrap=True)  # secondary: may be cut short
    for row in rows:
        workload = f"{row['workload']} seq {row['seq_len']}" if row.get("seq_len") else row["workload"]
        table.add_row(row["gpu"], str(row["num_gpus"]), workload, row["precision"],
                      fmt.plain(row["batch_size_per_gpu"]), fmt.throughput(row["samples_per_s"]),
                      f"[{sources.index(row['source_key']) + 1}]{'' if row.get('comparable', True) else '*'}",
                      fmt.plain(row.get("system")))
    return table


_VERDICT_STYLE = {"slow": "bold red", "failed": "bold red", "within noise": "yellow", "ok": "green",
                  "not judged": "dim"}


_FLEET_UNITS = {"train": "samples/s", "infer": "samples/s", "generate": "tokens/s"}


def fleet_table(group: dict[str, Any]):
    """One configuration of a fleet (a group of `analysis.fleet.fleet_report`), slowest run first.

    A data-parallel run with per-GPU telemetry gets a line under it for each GPU with a cause of its own (or no
    telemetry); `--json` has every GPU. Causes shared by most of the fleet do not tell a node apart: they are left
    out of the rows (the command lists them under the table).
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    median = fmt.throughput(group["median_samples_per_s"])
    nodes = group.get("nodes") or 1
    where = f"{config_label(group, words=True)}{f' over {nodes} nodes' if nodes > 1 else ''} on {group['gpu']}"
    # An infer group compares offline samples/s, a generate group decode tokens/s (each scenario's throughput).
    unit = _FLEET_UNITS.get(group.get("scenario") or "train", "samples/s")
    if group.get("scenario") not in (None, "train"):
        where = f"{where} ({group['scenario']})"
    title = (f"{where}: median {median} {unit} over "
             f"{group['measured']} run{'s' if group['measured'] != 1 else ''}")
    # Text, not markup: names from documents may hold "[...]"
    table = Table(title=Text(title), title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("host", min_width=6, ratio=1)
    table.add_column("GPU", no_wrap=True)
    for name in (unit, "vs median", "CV", "p"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("cause", min_width=16, ratio=2)
    for row in group["rows"]:
        ps = [p for p in (row["welch_p"], row["mannwhitney_p"]) if p is not None]
        verdict = Text(row["verdict"], style=_VERDICT_STYLE.get(row["verdict"], ""))
        table.add_row(Text(row["host"]), Text(device_text(row)), fmt.throughput(row["samples_per_s"]),
                      vs_median(row["vs_median_pct"]),
                      fmt.percent(row["cv"]), fmt.p_value(max(ps)) if ps else fmt.DASH, verdict, _cause_text(row))
        for gpu in row["gpus"]:
            if any(not c["fleet_wide"] for c in gpu["causes"]) or not gpu["available"]:
                table.add_row("", Text(gpu["gpu"]), "", "", "", "", "", _gpu_text(gpu))
    return table


def vs_median(pct: float | None) -> str:
    """A row's distance from the fleet median: `-10.0%`, `0.0%`, `+0.1%`."""
    if pct is None:
        return fmt.DASH
    return "0.0%" if round(pct, 1) == 0 else f"{pct:+.1f}%"


def device_text(row: dict[str, Any]) -> str:
    """What a fleet row measured on its host: `GPU 3`, `4 GPUs`, `cpu`."""
    if row["world_size"] > 1:
        return f"{row['world_size']} GPUs"
    device = str(row.get("device") or fmt.DASH)
    if device.startswith("cuda"):
        return f"GPU {device.split(':', 1)[1]}" if ":" in device else "GPU"
    return device


def cause_parts(row: dict[str, Any], with_gpus: bool = False) -> list[tuple[str, str]]:
    """A fleet row's cause cell as (text, style) pieces: the failure, else the causes that tell it apart (fleet-wide
    ones are listed under the table), a slow row's missing cause and an untested verdict. The GPUs' own causes of a
    data-parallel row are left to their lines unless `with_gpus` (the HTML table has no GPU lines)."""
    if row["verdict"] in ("failed", "skipped") or (row["status"] != "ok" and row.get("error")):
        return [(f"{row['status']}: {row.get('error') or ''}".rstrip(": "), "red")]
    parts: list[tuple[str, str]] = []
    causes = [c for c in row["causes"] if not c["fleet_wide"]]
    named = "; ".join(cause_text(c) for c in causes if with_gpus or not (row["gpus"] and c["gpu"]))
    if named:
        parts.append((named, ""))
    if not causes and row["verdict"] == "slow":
        parts.append(("no cause recorded" if row["telemetry"] else "no telemetry to tell why", "dim"))
    if row["verdict"] == "slow" and row["significant"] is None and row["test_reason"]:
        parts.append((f"{'; ' if parts else ''}untested: {row['test_reason']}", "dim"))
    return parts


def _cause_text(row: dict[str, Any]):
    from rich.text import Text

    text = Text()
    for piece, style in cause_parts(row):
        text.append(piece, style=style)
    return text


def _gpu_text(gpu: dict[str, Any]):
    from rich.text import Text

    if not gpu["available"]:
        return Text(f"no telemetry ({gpu.get('reason') or 'not recorded'})", style="dim")
    text = Text("; ".join(c["short"] for c in gpu["causes"] if not c["fleet_wide"]))
    facts = [f"SM {gpu['sm_clock_mean_mhz']:,.0f} MHz" if gpu.get("sm_clock_mean_mhz") is not None else "",
             f"max {gpu['temperature_max_c']:.0f} C" if gpu.get("temperature_max_c") is not None else "",
             f"throttled {gpu['throttle_share']:.0%}" if gpu.get("throttle_share") else ""]
    facts = ", ".join(f for f in facts if f)
    if facts:
        text.append(f" ({facts})", style="dim")
    return text
