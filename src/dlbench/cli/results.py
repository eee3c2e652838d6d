"""`dlbench results list|show|export|import|delete`: the stored runs.

Parsing and printing only; the work is in `dlbench.store`. Values are SI inside and converted here, at the
display edge (ms, GB, TFLOP/s). `--json` output and `results export` columns are a contract.
"""

from __future__ import annotations

import csv
import io
import sys
from enum import Enum
from pathlib import Path

import typer

from dlbench.cli._common import (
    db_option,
    gpu_filter_option,
    json_option,
    parse_since,
    plain,
    print_json,
    since_option,
    table_console,
)
from dlbench.errors import BadInput

RUN_REF_HELP = "Run id, a unique prefix of one (as git does), or 'latest'."


class ExportFormat(str, Enum):
    csv = "csv"
    json = "json"


def _row(table, *cells: str) -> None:
    """Add a row of plain text: names and error messages may contain "[...]", which is not rich markup."""
    from rich.text import Text

    table.add_row(*(Text(plain(cell)) for cell in cells))


def _open(db: str | None):
    from dlbench.store import open_store

    return open_store(db)


def _num(value, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if value is None else f"{value * scale:,.{digits}f}"


def _when(iso: str) -> str:
    """A stored ISO 8601 time as "YYYY-MM-DD HH:MM" in UTC (documents may carry any zone offset)."""
    from dlbench.timestamps import parse_created_at

    return parse_created_at(iso).isoformat(sep=" ", timespec="minutes")[:16]


def _counts(run: dict) -> str:
    """"2/2": configurations ok of those planned; "1/2, cut short": the run stopped part-way (killed,
    interrupted, or a failed rank), keeping what it had measured."""
    text = f"{run['num_ok']}/{run['planned_results']}"
    return text + ", cut short" if run["cut_short"] else text


def _gpu_text(names: list[str], count: int) -> str:
    if not names:
        return "no GPU"
    if len(names) == 1 and count > 1:
        return f"{count} x {names[0]}"
    return ", ".join(names)


def _telemetry_table(doc: dict, width: int | None = None):
    """GPU power, energy, temperature and clock per measured configuration; a data-parallel configuration has a
    row for the group (totals) and one per GPU. None when no result has telemetry.

    Like the results table, nothing is cut in an 80-column terminal (`width`): numbers and throttle reasons stay
    whole, the configuration and the GPU wrap."""
    from rich import box
    from rich.table import Table

    from dlbench.analysis.configuration import config_label
    from dlbench.analysis.energy import (
        gpu_label,
        gpus_of,
        is_throttled,
        rank0_only,
        result_efficiency,
        throttle_kind_shares,
        usable,
    )

    # One space between columns (the box's). In 80 columns the numbers and "throttled" (one kind a line) take
    # about 53; the rest is shared by the configuration (its longest word, "bert-large-squad", whole) and the
    # GPU, which wrap.
    table = Table(title="GPU telemetry (measured steps)", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, show_edge=False, padding=0)
    table.add_column("configuration", min_width=17, overflow="fold")
    narrow = width is not None and width < 100
    table.add_column("GPU", min_width=9, max_width=11 if narrow else None, overflow="fold")
    for header in ("mean W", "energy J", "J/sample", "max C", "SM MHz"):
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    table.add_column("throttled", no_wrap=True)

    def cells(tel: dict, per_sample: float | None) -> list[str]:
        if not usable(tel):
            return ["-", "-", "-", "-", "-", plain(tel.get("reason") or "no telemetry")]
        throttled = is_throttled(tel)
        # What held the clocks down (the reasons `throttled` counts, not idle or application clocks), one a line.
        kinds = "\n".join(f"{kind} {share:.0%}" for kind, share in throttle_kind_shares(tel).items())
        return [_num(tel.get("power_mean_w"), digits=0), _num(tel.get("energy_j"), digits=0),
                _num(per_sample, digits=3), _num(tel.get("temperature_max_c"), digits=0),
                _num(tel.get("sm_clock_mean_mhz"), digits=0),
                "-" if throttled is None else (kinds if throttled else "no")]

    for r in doc["results"]:
        tel = r.get("telemetry")
        if not usable(tel):
            continue
        label = config_label(r, words=True)
        gpus = gpus_of(tel)
        name = (tel.get("gpu") or {}).get("name") or "-"
        if rank0_only(tel, r.get("world_size")):  # an older document: one GPU's readings, not the group's
            name = f"{name} (rank 0 only, of {r['world_size']})"
        per_sample = result_efficiency(r)["energy_per_sample_j"]
        _row(table, label, f"{len(gpus)} GPUs" if gpus else name, *cells(tel, per_sample))
        for g in gpus:
            _row(table, "", gpu_label(g), *cells(g, None))
    return table if table.row_count else None


def _environment_table(doc: dict):
    from rich.table import Table

    env = doc["environment"]
    table = Table(title="Environment", title_justify="left", show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    gpus = env.get("gpus") or []
    for g, gpu in enumerate(gpus):
        memory = "" if gpu.get("memory_bytes") is None else f", {gpu['memory_bytes'] / 1e9:.1f} GB"
        cc = "" if gpu.get("compute_capability") is None else f", compute capability {gpu['compute_capability']}"
        _row(table, f"gpu {g}", f"{gpu['name']}{memory}{cc}")
    if not gpus:
        _row(table, "gpus", "none")
    for key, value in env.items():
        if key == "gpus":
            continue
        if key == "memory_bytes" and value is not None:
            key, value = "memory", f"{value / 1e9:.1f} GB"
        if isinstance(value, dict):  # package_versions: "transformers 5.23.0, triton -", not a Python dict
            value = ", ".join(f"{name} {'-' if v is None else v}" for name, v in value.items())
        _row(table, key, "-" if value is None else str(value))
    return table


def _write_export(rows: list[dict], fmt: ExportFormat, output: Path | None) -> None:
    from dlbench.store.rows import EXPORT_COLUMNS

    if fmt is ExportFormat.json:
        if output is None:
            print_json(rows)
            return
        from dlbench.jsonio import write_json_atomic

        try:
            write_json_atomic(output, rows)
        except OSError as exc:
            raise BadInput(f"{output}: cannot write ({exc.strerror})") from None
    else:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(EXPORT_COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        if output is None:
            sys.stdout.write(buffer.getvalue())
            return
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(buffer.getvalue(), encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"{output}: cannot write ({exc.strerror})") from None
    typer.echo(f"wrote {len(rows)} row(s) to {output}", err=True)


def register(app: typer.Typer) -> None:
    """Add `dlbench results ...` to `app`."""
    results_app = typer.Typer(
        help="Stored runs: list, show, export (CSV/JSON), import and delete.", no_args_is_help=True,
    )
    app.add_typer(results_app, name="results")

    @results_app.command("list")
    def list_cmd(
        gpu: str | None = gpu_filter_option(),
        workload: str | None = typer.Option(None, "--workload", help="Only runs with a workload whose name "
                                               "contains this text, e.g. resnet50 or bert."),
        since: str | None = since_option(),
        as_json: bool = json_option(),
        db: str | None = db_option(),
    ) -> None:
        """List stored runs, newest first."""
        since_dt = parse_since(since)
        with _open(db) as store:
            found = store.list_runs(gpu=gpu, workload=workload, since=since_dt)
            label = store.label
        if as_json:
            print_json(found)
            return
        if not found:
            typer.echo(f"No stored runs match (database: {label}).")
            return
        from rich import box
        from rich.table import Table

        # Run ids and dates stay whole (they are what one copies); names wrap in a narrow terminal.
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
        for header, whole in (("run id", True), ("created (UTC)", True), ("host", False), ("GPU", False),
                              ("ok/planned", True), ("scenario", False), ("workloads", False), ("dlbench", True)):
            table.add_column(header, no_wrap=whole, min_width=16 if header == "created (UTC)" else None,
                             overflow="ellipsis" if whole else "fold")
        for run in found:
            _row(table, run["run_id"][:12], _when(run["created_at"]), run["hostname"] or "-",
                          _gpu_text(run["gpus"], run["gpu_count"]), _counts(run),
                          ", ".join(run.get("scenarios") or ["train"]), ", ".join(run["workloads"]),
                          run["dlbench_version"])
        table_console().print(table)

    @results_app.command("show")
    def show_cmd(
        run: str = typer.Argument(..., metavar="RUN_ID", help=RUN_REF_HELP),
        as_json: bool = typer.Option(False, "--json", help="Print the full result document as JSON, including "
                                     "every raw step time."),
        db: str | None = db_option(),
    ) -> None:
        """Show one run: its environment and a table of its results."""
        with _open(db) as store:
            doc = store.get_run(run)
        if as_json:
            print_json(doc)
            return
        out = table_console()
        from rich.markup import escape

        out.print(f"[bold]Run {doc['run_id']}[/bold]  created {_when(doc['created_at'])} UTC, "
                  f"dlbench {escape(plain(doc['dlbench_version']))}, schema {doc['schema_version']}")
        out.print(_environment_table(doc))
        for note in doc.get("notes") or []:
            out.print(f"note: {plain(str(note))}", markup=False, highlight=False)
        from dlbench.report.results_tables import results_tables
        from dlbench.report.run_table import result_messages

        out.print(results_tables(doc["results"], title="Results", width=out.width, details=True))
        for line in result_messages(doc["results"]):
            out.print(plain(line), markup=False, highlight=False, soft_wrap=not out.is_terminal)
        from dlbench.report.scaling_table import has_scaling, scaling_table

        if has_scaling(doc["results"]):  # as `run --gpus 1,2` printed it
            out.print(scaling_table(doc["results"]))
        telemetry = _telemetry_table(doc, out.width)
        if telemetry is not None:
            out.print(telemetry)
        out.print("Raw step times: dlbench results show --json " + doc["run_id"][:12], highlight=False)

    @results_app.command("export")
    def export_cmd(
        runs: list[str] | None = typer.Argument(None, metavar="[RUN_ID]...", help="Runs to export (ids, "
                                                   "unique prefixes or 'latest'); all runs when none is given."),
        fmt: ExportFormat = typer.Option(ExportFormat.csv, "--format", help="Output format: csv (one row per "
                                         "result) or json (a list of the same rows)."),
        output: Path | None = typer.Option(None, "--output", "-o", help="Write to this file instead of "
                                              "standard output."),
        db: str | None = db_option(),
    ) -> None:
        """Export results as flat rows, one per result, with units in the column names."""
        with _open(db) as store:
            rows = store.export_rows(runs or None)
        _write_export(rows, fmt, output)

    @results_app.command("import")
    def import_cmd(
        sources: list[str] = typer.Argument(..., metavar="PATH...", help="Result documents (JSON) or folders "
                                            "of them."),
        as_json: bool = json_option(),
        db: str | None = db_option(),
    ) -> None:
        """Import result documents; all files are validated first and nothing is imported if one is bad."""
        if any(not source.strip() for source in sources):
            raise BadInput("an empty path was given to import (use . for the current folder)")
        with _open(db) as store:
            summary = store.import_paths([Path(source) for source in sources])
        if as_json:
            print_json(summary)
        elif summary["files"] == 0:
            typer.echo("No JSON documents found; nothing imported.")
        else:
            empty = len(summary["empty_files"])
            typer.echo(f"Imported {summary['imported']} run(s); {summary['skipped']} already stored"
                       + (f"; {empty} with no results left out" if empty else "")
                       + f" (from {summary['files']} file(s)).")

    @results_app.command("delete")
    def delete_cmd(
        run: str = typer.Argument(..., metavar="RUN_ID", help=RUN_REF_HELP),
        yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking for confirmation."),
        db: str | None = db_option(),
    ) -> None:
        """Delete a stored run (database row and its JSON copy in the data directory)."""
        with _open(db) as store:
            run_id = store.resolve(run)
            if not yes:
                doc = store.get_run(run_id)
                names = [g["name"] for g in doc["environment"]["gpus"]]
                question = (f"Delete run {run_id} ({_when(doc['created_at'])}, "
                            f"{_gpu_text(sorted(set(names)), len(names))}, {len(doc['results'])} result(s))?")
                if not typer.confirm(question, default=False, err=True):
                    typer.echo("Nothing deleted.", err=True)
                    raise typer.Exit(1)
            store.delete_run(run_id)
        typer.echo(f"Deleted run {run_id}.")
