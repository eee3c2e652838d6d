"""Bugs found by a black-box QA pass that used dlbench as its three kinds of users do (an engineer checking a
machine, a researcher choosing hardware, a cluster admin): each test here failed before the fix it names.

Run with `PYTHONPATH=src python -m pytest -q tests/test_qa_pass.py`.
"""

from __future__ import annotations

import json

import pytest

import store_docs
from cli_helpers import cli
from test_hostile_input import assert_bad_input


def _write(tmp_path, name, doc) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize("mutate, key", [
    # `advise` took the logarithm of the stored throughput: "internal error: ValueError: math domain error".
    (lambda r: r.update(samples_per_s=-5.0), "results[0].samples_per_s"),
    # `results show` read these as the shapes `dlbench run` writes: "internal error: AttributeError ...".
    (lambda r: r.update(vs_published="0.9x"), "results[0].vs_published"),
    (lambda r: r.update(vs_published={"ratio": "0.9"}), "results[0].vs_published.ratio"),
    (lambda r: r.update(telemetry={"available": True, "gpu": "H100"}), "results[0].telemetry.gpu"),
    # A finite number beyond any measurement overflowed in statistics and charts: `report` "Axis limits cannot be
    # NaN or Inf", `fleet --json` "Out of range float values are not JSON compliant: inf".
    (lambda r: r.update(samples_per_s=1.7e308), "results[0].samples_per_s"),
    (lambda r: r["repeats"][0]["step_times_s"].__setitem__(0, 1e308), "results[0].repeats[0].step_times_s"),
    (lambda r: r.update(telemetry={"available": True, "power_mean_w": 1e308}), "results[0].telemetry.power_mean_w"),
    # `report` drew the series: "internal error: TypeError: can't multiply sequence by non-int of type 'float'".
    (lambda r: r.update(telemetry={"available": True, "series": {"t_s": [0.0, 0.1], "power_w": "high"}}),
     "results[0].telemetry.series"),
])
def test_a_document_no_run_writes_is_refused_on_import_and_nothing_is_stored(capsys, tmp_path, mutate, key):
    doc = store_docs.document(env=store_docs.environment("NVIDIA GeForce RTX 3090"))
    mutate(doc["results"][0])
    path = _write(tmp_path, "odd.json", doc)
    assert_bad_input(*cli(capsys, "results", "import", path), "odd.json", key)
    code, out, _ = cli(capsys, "results", "list", "--json")
    assert code == 0 and json.loads(out) == []
    for command in (["report", path, "-o", str(tmp_path / "r")], ["doctor", path], ["compare", path, path]):
        assert_bad_input(*cli(capsys, *command), key)


def test_advise_and_estimate_pass_over_a_negative_throughput_already_in_a_database(capsys, tmp_path):
    """A database written before import checked the sign keeps such a row: it is no measurement, so it is left out
    of the calibration instead of failing every `advise` with a math domain error."""
    import sqlalchemy as sa

    from dlbench.store import open_store
    from dlbench.store.schema import results

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    good = store_docs.result(workload="resnet50", precision="amp-fp16", batch_size=256, seed=3)
    store = open_store(url)
    store.save_run(store_docs.document([good], env=store_docs.environment("NVIDIA GeForce RTX 3090")))
    with store.engine.begin() as conn:
        conn.execute(sa.update(results).values(samples_per_s=-5.0))
    store.close()
    code, out, err = cli(capsys, "advise", "--workload", "resnet50", "--precision", "amp-fp16", "--max-gpus", "1",
                         "--json", "--db", url)
    assert code == 0, err
    rtx3090 = next(o for o in json.loads(out)["options"] if o["gpu"] == "RTX 3090")
    assert rtx3090["throughput_kind"] != "measured" and rtx3090["samples_per_s"] > 0
    code, out, err = cli(capsys, "estimate", "--gpu", "RTX 3090", "--workload", "resnet50", "--precision",
                         "amp-fp16", "--json", "--db", url)
    assert code == 0 and json.loads(out)["kind"] != "measured", err


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_run_seed_outside_numpys_range_is_bad_input_before_anything_runs(capsys, seed):
    # It used to run every configuration, each failing in its worker with "error: ValueError: Seed must be between
    # 0 and 2**32 - 1", and exit 1 with a stored run of errors.
    assert_bad_input(*cli(capsys, "run", "--tiny", "-w", "resnet50", "--seed", seed), "--seed", seed)
    code, out, _ = cli(capsys, "results", "list", "--json")
    assert code == 0 and json.loads(out) == []


def test_progress_line_names_the_batch_size_auto_measured():
    # `dlbench run --batch-size auto` printed "resnet50 fp32 compile=off bs=8 tiny: ok 166.2 images/s" for a
    # result measured at bs=4096 (the plan's placeholder batch), under a table and warnings that said 4096.
    from rich.console import Console

    from dlbench.report.progress import RichProgress
    from dlbench.runner.config import RunConfig

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


def test_the_readme_compare_example_is_what_the_command_prints(capsys, monkeypatch):
    # The manual's example (docs/report.md) still showed an older layout ("A 1cddfcb4  B 33134b93" columns, "p (Welch / MWU)",
    # "compile=off bs=256" labels) that `dlbench compare` no longer prints.
    from pathlib import Path

    from dlbench.store import open_store
    from report_docs import readme_compare, run_cli

    store = open_store()
    for doc in readme_compare():
        store.save_run(doc)
    store.close()
    monkeypatch.setenv("COLUMNS", "110")
    code, out, _ = run_cli(capsys, "compare", "1cddfcb4", "latest")
    assert code == 0
    readme = (Path(__file__).resolve().parent.parent / "docs" / "report.md").read_text(encoding="utf-8")
    block = readme.split("$ dlbench compare 1cddfcb4 latest\n", 1)[1].split("```", 1)[0]
    assert [line.rstrip() for line in out.splitlines() if line.strip()] == block.splitlines()


def test_reference_list_takes_workload_names_in_any_case_and_a_known_one_with_no_rows_is_no_error(capsys):
    # `-w RESNET50` was "error: no published results for workload 'RESNET50'", though run, estimate and advise
    # take any case; `-w bert-base-mlm` (a dlbench workload nobody published) exited 2 as if it were unknown,
    # while a GPU with nothing published lists nothing and exits 0 (docs/report.md: unknown names exit 2).
    code, out, err = cli(capsys, "reference", "list", "-w", "RESNET50", "--gpu", "RTX 4090", "-p", "amp-fp16",
                         "--json")
    assert code == 0, err
    assert {(r["workload"], r["num_gpus"]) for r in json.loads(out)} == {("resnet50", 1), ("resnet50", 2)}
    code, out, err = cli(capsys, "reference", "list", "-w", "bert-base-mlm")
    assert (code, err) == (0, "") and "No published results match these filters." in out
    assert_bad_input(*cli(capsys, "reference", "list", "-w", "resnet"), "unknown workload 'resnet'",
                     "did you mean resnet50?")


def test_a_json_copy_that_cannot_be_written_at_the_end_loses_nothing(tmp_path):
    # `dlbench run --json /sys/x.json` as root passed the up-front check (os.access says yes), measured, and then
    # failed with "internal error: PermissionError" before the final document reached the database: the database
    # kept the "in progress" copy while the results folder had the final one, so importing that folder later
    # refused the whole import ("already stored with different content"). Now the copy is written last, and a
    # failure is one `error:` line (`dlbench run` then exits 2) after the run is saved.
    from dlbench import paths
    from dlbench.cli.run import RunSaver
    from dlbench.jsonio import read_json
    from dlbench.schema import upgrade
    from dlbench.store import open_store

    doc = store_docs.document()
    warnings: list[str] = []
    saver = RunSaver(on_warning=warnings.append)
    saver.save({**doc, "notes": ["in progress: 2 of 3 configurations done"]})
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    written = saver.save(doc, blocker / "x.json")
    saver.close()
    assert saver.json_failed and written == [paths.results_dir() / f"{doc['run_id']}.json"]
    assert len(warnings) == 1 and warnings[0].startswith(f"error: --json {blocker / 'x.json'}: cannot write")
    store = open_store()
    assert store.get_run(doc["run_id"]) == read_json(written[0]) == upgrade(doc)  # stored at the current version
    store.close()



def test_a_refused_json_copy_does_not_claim_the_database_has_the_run_when_it_has_not(tmp_path):
    from dlbench.cli.run import RunSaver

    garbage = tmp_path / "not-a-db.sqlite"
    garbage.write_bytes(b"this is not an SQLite file" * 100)
    warnings: list[str] = []
    saver = RunSaver(db_url=f"sqlite:///{garbage}", on_warning=warnings.append)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    saver.save(store_docs.document(), blocker / "x.json")
    saver.close()
    (copy_error,) = [w for w in warnings if w.startswith("error: --json")]
    assert "results database" not in copy_error and any("database" in w for w in warnings if w != copy_error)

def test_results_show_prints_the_scaling_table_run_printed(capsys):
    # docs/cli/results.md: `results show` prints "the table `dlbench run` prints"; after `run --gpus 1,2,4` run also printed
    # the data-parallel scaling table (ideal samples/s, efficiency), which `results show` left out.
    from dlbench.store import open_store
    from report_docs import make_document, make_result, run_cli

    results = [make_result(world_size=n, step_time_s=0.1 * (1 + 0.05 * n), seed=n) for n in (1, 2, 4)]
    for r in results[1:]:
        r["scaling_efficiency"] = r["samples_per_s"] / (r["world_size"] * results[0]["samples_per_s"])
    store = open_store()
    store.save_run(make_document(results))
    store.close()
    code, out, err = run_cli(capsys, "results", "show", "latest")
    assert code == 0, err
    assert "Data-parallel scaling" in out and "efficiency" in out
    assert f"{results[2]['scaling_efficiency']:.2f}" in out


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_disk_is_one_error_line_not_an_internal_error(tmp_path):
    import subprocess
    import sys

    from _dist_helpers import env

    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "dlbench", "gpus"], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60, env=env(DLBENCH_HOME=str(tmp_path)))
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: No space left on device"
