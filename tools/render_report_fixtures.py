"""Render every report output from the test fixtures into one folder, to prove a refactor changed no byte.

    PYTHONPATH=src:tests python tools/render_report_fixtures.py /tmp/report-before   # before the change
    PYTHONPATH=src:tests python tools/render_report_fixtures.py /tmp/report-after    # after it
    diff -r /tmp/report-before /tmp/report-after && echo identical

Writes the HTML report and its charts (PNG, SVG) for eight sets of fixture documents (`tests/report_docs.py`,
`tests/fleet_docs.py`: an H100 run, a CPU --tiny run, the README's compare pair, fleets of 6, 8 and 64 hosts, an
8-GPU data-parallel run, 4-GPU nodes), the `dlbench run` table at three widths, and what `compare`, `fleet`,
`reference list`, `results show` and `report` print. Run ids are fixed, and the report's generation time and the
output folder are masked, so two renders of the same code are identical.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import tempfile
import uuid
from pathlib import Path

_count = [0]


def _run_id() -> uuid.UUID:
    """Fixed run ids in order, in place of random ones: the outputs name runs."""
    _count[0] += 1
    return uuid.UUID(int=(_count[0] * 0x9E3779B97F4A7C15) % (1 << 128))


def _scrub(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "GENERATED", text), encoding="utf-8")


def _fixtures() -> dict[str, list[dict]]:
    import fleet_docs as fd
    import report_docs as rd

    # Built in this order, so that each document gets the same run id on every render.
    sample = rd.sample_document()
    cpu = rd.make_document(
        [rd.make_result(device="cpu", precision="fp32", step_time_s=0.05, steps=4, repeats=2, flavour="tiny"),
         rd.make_result(device="cpu", precision="fp32", world_size=2, step_time_s=0.06, steps=4, repeats=2,
                        flavour="tiny")], env=rd.environment(gpu_name=None))
    compare = list(rd.readme_compare())
    ddp = rd.make_document([fd.ddp_result_with_series(num_gpus=8, hot_gpu=3)],
                           env=rd.environment(hostname="dgx01", gpu_count=8))
    return {"sample": [sample], "cpu": [cpu], "compare": compare, "fleet": fd.readme_fleet(),
            "large_fleet": fd.large_fleet(), "ddp": [ddp],
            "ddp_fleet": [fd.ddp_node(f"n{i}", 0.1 / (0.9 if i == 2 else 1), hot_gpu=1 if i == 2 else None, seed=i)
                          for i in range(4)],
            "six": fd.six_nodes()}


def main(out: Path) -> None:
    os.environ["DLBENCH_HOME"] = tempfile.mkdtemp()
    os.environ.pop("DLBENCH_DB", None)
    os.environ["COLUMNS"] = "200"
    uuid.uuid4 = _run_id  # before any fixture is built
    from rich.console import Console

    from dlbench.cli.app import main as dlbench
    from dlbench.report import html, run_table

    sets = _fixtures()
    for name, docs in sets.items():
        folder = out / "html" / name
        written = html.write_report_files(docs, folder)
        _scrub(folder / "index.html")
        (folder / "written.txt").write_text(repr([(c.name, c.title, c.caption, c.alt) for c in written.charts])
                                            + repr(written.fleet))
        files = out / "json" / name
        files.mkdir(parents=True, exist_ok=True)
        for i, doc in enumerate(docs):
            (files / f"{i:03d}.json").write_text(json.dumps(doc))

    tables = out / "tables"
    tables.mkdir()
    for name, docs in sets.items():
        for i, doc in enumerate(docs[:3]):
            res = doc["results"]
            for width in (None, 80, 120):
                console = Console(width=200, record=True, file=io.StringIO(), force_terminal=False, color_system=None)
                console.print(run_table.results_table(res, title=f"t {name}", width=width))
                (tables / f"results_{name}_{i}_{width}.txt").write_text(console.export_text())
            (tables / f"messages_{name}_{i}.txt").write_text("\n".join(run_table.result_messages(res)))
            (tables / f"tput_{name}_{i}.txt").write_text(
                repr([run_table.throughput_text(r.get("samples_per_s")) for r in res]))

    def cli(name: str, *argv: str) -> None:
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                dlbench(list(argv))
                code = 0
            except SystemExit as exc:
                code = exc.code
        (out / "cli").mkdir(exist_ok=True)
        (out / "cli" / name).write_text(f"{code}\n{stdout.getvalue()}\n---\n{stderr.getvalue()}")

    j = out / "json"
    cli("compare.txt", "compare", str(j / "compare/000.json"), str(j / "compare/001.json"))
    cli("compare_pub.txt", "compare", str(j / "sample/000.json"), "--published")
    cli("compare_cpu.txt", "compare", str(j / "cpu/000.json"), "--published")
    cli("fleet.txt", "fleet", str(j / "fleet"))
    cli("fleet_large.txt", "fleet", str(j / "large_fleet"))
    cli("fleet_ddp.txt", "fleet", str(j / "ddp_fleet"))
    cli("reference.txt", "reference", "list")
    for name in ("sample", "cpu", "ddp"):
        cli(f"store_{name}.txt", "results", "import", str(j / name / "000.json"))
    cli("results_list.txt", "results", "list")
    for name in ("sample", "cpu", "ddp"):
        run_id = sets[name][0]["run_id"]
        cli(f"show_{name}.txt", "results", "show", run_id)
        cli(f"report_cli_{name}.txt", "report", run_id, "--output", str(out / "cli_report" / name))
        _scrub(out / "cli_report" / name / "index.html")
    # The output folder's name is printed: masked, so that two folders compare.
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".txt", ".html", ".json"):
            path.write_text(path.read_text(encoding="utf-8").replace(str(out), "OUT"), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
