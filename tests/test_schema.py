"""The result document's schema (`dlbench.schema`, `docs/schema.md`): real version-1 files and a version-1 database
written by dlbench before schema 2 (tests/data/v1) load, upgrade, validate, show, compare and report; the upgrade
gives the same metrics `dlbench run` writes now; malformed documents are refused with one clear line.

Run: `PYTHONPATH=src python -m pytest -q tests/test_schema.py`.
"""

from __future__ import annotations

import copy
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import cli
from dlbench import schema
from dlbench.errors import DataError
from dlbench.schema import metrics

V1 = Path(__file__).parent / "data" / "v1"
V1_FILES = ("run.json", "run_failed.json", "run_scaling.json")
SRC = Path(__file__).resolve().parents[1] / "src"


def _v1(name: str) -> dict:
    return json.loads((V1 / name).read_text())


# -- the version-1 files ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", V1_FILES)
def test_version_1_file_loads_upgraded_and_valid(name):
    raw = _v1(name)
    assert raw["schema_version"] == 1 and all("metrics" not in r for r in raw["results"])
    doc = schema.load_document(V1 / name)
    assert doc["schema_version"] == schema.SCHEMA_VERSION == 2
    assert schema.validate_document(doc) is doc  # already current: nothing more to do
    assert _v1(name) == raw  # the file is never rewritten
    for old, new in zip(raw["results"], doc["results"], strict=True):
        assert {k: new[k] for k in old} == old  # every version-1 key is kept as it was
        assert set(schema.RESULT_KEYS) <= set(new)
        assert new["scenario"] == "train" and new["primary_metric"] == "samples_per_s"
        if old["status"] != "ok":
            assert new["metrics"] == {} and metrics.primary(new) is None and metrics.throughput(new) is None
            continue
        tput = new["metrics"]["samples_per_s"]
        assert tput == {"value": old["samples_per_s"], "unit": "samples/s", "better": "higher",
                        "repeats": old["samples_per_s_repeats"]}
        step = new["metrics"]["step_time_s"]
        raw_steps = [t for rep in old["repeats"] for t in rep["step_times_s"]]
        assert step["value"] == step["p50"] == old["step_time_s"]["median"]
        assert (step["mean"], step["p5"], step["p95"]) == tuple(old["step_time_s"][k] for k in ("mean", "p5", "p95"))
        assert step["raw"] == raw_steps and (step["unit"], step["better"]) == ("s", "lower")
        assert step["p5"] <= step["p50"] <= step["p90"] <= step["p95"] <= step["p99"] <= max(raw_steps)
        assert new["metrics"]["achieved_flops_per_s"]["value"] == old["achieved_flops_per_s"]
        assert "peak_memory_bytes" not in new["metrics"]  # a CPU run has no peak-memory counter: not measured


def test_the_failed_fixture_has_every_failure_status():
    statuses = [r["status"] for r in _v1("run_failed.json")["results"]]
    assert set(statuses) >= {"ok", *schema.FAILED_STATUSES}


def test_percentiles_agree_with_numpy():
    import numpy as np

    steps = [t for r in _v1("run.json")["results"] for rep in r["repeats"] for t in rep["step_times_s"]]
    for q in (5, 50, 90, 95, 99):
        assert metrics.percentile(steps, q) == pytest.approx(float(np.percentile(steps, q)), rel=1e-12)


def test_helpers_read_a_version_1_result_as_its_upgrade():
    """A result without `metrics` (a version-1 result, a hand-made dict) reads through the helpers as it reads
    once upgraded: one rule for both."""
    for name in V1_FILES:
        doc = schema.load_document(V1 / name)
        for old, new in zip(_v1(name)["results"], doc["results"], strict=True):
            for read in (metrics.throughput, metrics.primary, metrics.primary_value, metrics.primary_name,
                         metrics.scenario):
                assert read(old) == read(new)
            for key in ("samples_per_s", "step_time_s", "compile_time_s", "achieved_flops_per_s", "unknown"):
                assert metrics.metric(old, key) == metrics.metric(new, key)
    assert metrics.value({"scenario": "infer", "samples_per_s": 5.0}, "samples_per_s") is None  # not training


def test_run_writes_what_the_upgrade_of_its_version_1_fields_gives():
    """`make_result` (what `dlbench run` writes) and the version-1 upgrade agree: strip a new result to its
    version-1 keys, upgrade it, and the same result comes back."""
    from dlbench.measurement.config import RunConfig
    from dlbench.runner.document import build_document, make_result

    config = RunConfig(workload="resnet50", precision="fp32", compile="off", batch_size=8, device="cpu",
                       flavour="tiny")
    measurement = {"batch_size": 8, "device": "cpu", "warmup_step_times_s": [0.3, 0.2],
                   "repeats": [{"step_times_s": [0.1, 0.11, 0.09, 0.12]}, {"step_times_s": [0.1, 0.13, 0.1, 0.1]}],
                   "flops_per_sample": 1e8, "peak_memory_bytes": 123_456}
    results = [make_result(config, "ok", measurement=measurement), make_result(config, "oom", "out of memory")]
    doc = build_document(results, _v1("run.json")["environment"])
    assert doc["schema_version"] == 2 and schema.validate_document(doc) is doc
    v1 = copy.deepcopy(doc)
    v1["schema_version"] = 1
    for result in v1["results"]:
        for key in ("scenario", "metrics", "primary_metric"):
            del result[key]
    assert schema.upgrade(v1) == doc
    assert doc["results"][0]["metrics"]["peak_memory_bytes"] == {"value": 123_456, "unit": "bytes",
                                                                 "better": "lower"}


# -- malformed documents -----------------------------------------------------------------------------------

def _current() -> dict:
    return schema.load_document(V1 / "run_failed.json")


@pytest.mark.parametrize("mutate, reason", [
    (lambda d: d["results"][0].pop("scenario"), "results[0].scenario: missing"),
    (lambda d: d["results"][0].update(scenario=""), "results[0].scenario: expected a non-empty string"),
    (lambda d: d["results"][1].update(metrics=[]), "results[1].metrics: expected an object, got list"),
    (lambda d: d["results"][0]["metrics"].update(samples_per_s=3.0),
     "results[0].metrics.samples_per_s: expected an object, got 3.0"),
    (lambda d: d["results"][0]["metrics"]["step_time_s"].pop("unit"), "results[0].metrics.step_time_s.unit: missing"),
    (lambda d: d["results"][0]["metrics"]["step_time_s"].update(better="faster"),
     "results[0].metrics.step_time_s.better: expected one of higher, lower"),
    (lambda d: d["results"][0]["metrics"]["step_time_s"].update(p99="slow"),
     "results[0].metrics.step_time_s.p99: expected a finite number, got string"),
    (lambda d: d["results"][0]["metrics"]["step_time_s"].update(raw=[0.1, None]),
     "results[0].metrics.step_time_s.raw: expected a list of finite numbers"),
    (lambda d: d["results"][0]["metrics"].pop("samples_per_s"),
     "results[0].primary_metric: 'samples_per_s' is not among the result's metrics although status is 'ok'"),
    (lambda d: d["results"][0]["metrics"]["samples_per_s"].update(value=1.0),
     "results[0].metrics.samples_per_s.value: 1.0 differs from samples_per_s"),
    (lambda d: d.update(schema_version=3), "schema_version 3 is newer than this dlbench reads (up to 2)"),
    (lambda d: d.update(schema_version=0), "schema_version: expected a positive integer, got 0"),
])
def test_malformed_documents_name_the_key(mutate, reason):
    doc = _current()
    mutate(doc)
    with pytest.raises(DataError) as err:
        schema.validate_document(doc)
    assert reason in err.value.format_message()


def test_a_result_of_another_scenario_needs_only_its_own_headline_metric():
    """The version-1 training fields may stay null in a result of another scenario; its `primary_metric` is what
    must be there when it finished."""
    doc = _current()
    doc["results"][0].update(scenario="infer", samples_per_s=None, primary_metric="latency_s", metrics={
        "latency_s": {"value": 0.004, "unit": "s", "better": "lower", "p50": 0.004, "p99": 0.006}})
    assert schema.validate_document(doc) is doc
    doc["results"][0]["metrics"] = {}
    with pytest.raises(DataError, match=r"results\[0\]\.primary_metric: 'latency_s' is not among"):
        schema.validate_document(doc)


def test_a_malformed_version_1_file_is_refused_before_its_upgrade():
    doc = _v1("run.json")
    doc["results"][0]["samples_per_s"] = "fast"
    with pytest.raises(DataError, match=r"results\[0\]\.samples_per_s: expected a finite number"):
        schema.validate_document(doc)


@pytest.mark.parametrize("command", [["results", "import"], ["compare"], ["report", "-o", "out"]])
def test_cli_refuses_a_malformed_document_with_one_line_and_exit_2(capsys, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    doc = _current()
    doc["results"][0]["metrics"]["step_time_s"]["better"] = "faster"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    args = [*command, str(bad)] + ([str(V1 / "run.json")] if command == ["compare"] else [])
    code, out, err = cli(capsys, *args)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "bad.json" in lines[0]
    assert "results[0].metrics.step_time_s.better" in lines[0] and "Traceback" not in err


# -- the commands on version-1 files and the version-1 database -------------------------------------------

def test_import_show_and_compare_version_1_files(capsys):
    code, out, err = cli(capsys, "results", "import", *(str(V1 / name) for name in V1_FILES))
    assert code == 0, err
    for name in V1_FILES:
        run_id = _v1(name)["run_id"]
        code, out, err = cli(capsys, "results", "show", run_id[:12])
        assert code == 0, err
        assert "resnet50" in out and run_id in out
        code, out, err = cli(capsys, "results", "show", run_id, "--json")
        assert code == 0, err
        shown = json.loads(out)
        assert shown == schema.load_document(V1 / name)
    code, out, err = cli(capsys, "results", "show", _v1("run_failed.json")["run_id"])
    assert all(status in out for status in ("oom", "error", "timeout")), out
    code, out, err = cli(capsys, "compare", str(V1 / "run.json"), str(V1 / "run_failed.json"), "--json")
    assert code == 0, err
    compared = json.loads(out)
    assert [row["workload"] for row in compared["rows"]] == ["resnet50"]
    row = compared["rows"][0]
    assert row["a_samples_per_s"] == _v1("run.json")["results"][0]["samples_per_s"]
    assert row["b_samples_per_s"] == _v1("run_failed.json")["results"][0]["samples_per_s"]
    code, out, err = cli(capsys, "compare", _v1("run_scaling.json")["run_id"][:8], str(V1 / "run.json"))
    assert code == 0, err
    assert "resnet50" in out


def test_report_on_version_1_files(capsys, tmp_path):
    code, out, err = cli(capsys, "report", str(V1), "-o", str(tmp_path / "rep"))
    assert code == 0, err
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "ResNet-50" in html and "BERT" in html
    assert all(_v1(name)["run_id"][:8] in html for name in V1_FILES)


def test_version_1_database_lists_shows_compares_and_reports(capsys, tmp_path):
    path = tmp_path / "results.sqlite"
    shutil.copyfile(V1 / "results.sqlite", path)
    url = f"sqlite:///{path}"
    code, out, err = cli(capsys, "results", "list", "--db", url, "--json")
    assert code == 0, err
    listed = json.loads(out)
    assert sorted(run["run_id"] for run in listed) == sorted(_v1(name)["run_id"] for name in V1_FILES)
    with sqlite3.connect(path) as conn:  # opening it migrated it
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == "0003"
    for name in V1_FILES:
        code, out, err = cli(capsys, "results", "show", _v1(name)["run_id"], "--db", url, "--json")
        assert code == 0, err
        assert json.loads(out) == schema.load_document(V1 / name)
    a, b = _v1("run.json")["run_id"], _v1("run_failed.json")["run_id"]
    code, out, err = cli(capsys, "compare", a, b, "--db", url, "--json")
    assert code == 0, err
    assert [row["workload"] for row in json.loads(out)["rows"]] == ["resnet50"]
    code, out, err = cli(capsys, "report", "latest", "--db", url, "-o", str(tmp_path / "rep"))
    assert code == 0, err
    assert (tmp_path / "rep" / "index.html").is_file()
    code, out, err = cli(capsys, "results", "export", "--db", url, "--format", "csv")
    assert code == 0, err
    header = out.splitlines()[0].split(",")
    assert {"scenario", "primary_metric", "primary_value", "primary_unit"} <= set(header)


def test_schema_is_a_leaf_that_imports_nothing_heavy():
    """dlbench.schema imports nothing of dlbench but errors, jsonio and timestamps, and no third-party package."""
    code = ("import sys; import dlbench.schema, dlbench.schema.metrics; "
            "mods = sorted(m for m in sys.modules if m.startswith('dlbench.')); "
            "heavy = [m for m in ('torch', 'numpy', 'sqlalchemy', 'typer', 'rich') if m in sys.modules]; "
            "print(mods, heavy)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(SRC), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    mods, heavy = proc.stdout.rsplit("] [", 1)
    assert heavy.strip() == "]"
    outside = [m for m in eval(mods + "]") if not m.startswith("dlbench.schema")]  # noqa: S307 (our own output)
    assert set(outside) <= {"dlbench.errors", "dlbench.jsonio", "dlbench.timestamps"}


# -- results pair only within one scenario, and are read through the metrics ------------------------------

def _as_scenario(result: dict, name: str, value: float) -> dict:
    """The same configuration as `result`, measured by another scenario whose throughput metric is `value`."""
    return {**result, "scenario": name, "samples_per_s": None, "primary_metric": "samples_per_s",
            "metrics": {"samples_per_s": {"value": value, "unit": "samples/s", "better": "higher"}}}


def test_compare_scaling_fleet_and_ranking_pair_within_one_scenario():
    from dlbench.analysis.compare import compare_documents
    from dlbench.analysis.measured_scaling import add_scaling_efficiency, scaling_series
    from dlbench.analysis.ranking import not_comparable_reason

    a = schema.load_document(V1 / "run.json")
    b = copy.deepcopy(a)
    b["run_id"] = "f" * 32
    b["results"][0] = _as_scenario(b["results"][0], "infer", 1e6)
    compared = compare_documents(a, b)
    assert [row["workload"] for row in compared["rows"]] == ["bert-base-squad"]
    assert compared["only_in_a"] == compared["only_in_b"] == ["resnet50 fp32 compile=off bs=8 tiny"]
    assert all(row["scenario"] == "train" for row in compared["rows"])

    scaling = schema.load_document(V1 / "run_scaling.json")["results"]
    one, two = scaling
    assert add_scaling_efficiency(copy.deepcopy(scaling))[1]["scaling_efficiency"] == pytest.approx(
        two["samples_per_s"] / (2 * one["samples_per_s"]))
    mixed = add_scaling_efficiency([_as_scenario(one, "infer", 10.0), copy.deepcopy(two)])
    assert mixed[1]["scaling_efficiency"] is None  # its one-device baseline measured another scenario
    assert [len(s["points"]) for s in scaling_series([_as_scenario(one, "infer", 10.0), two])] == [1, 1]

    assert "published results are for training" in not_comparable_reason(_as_scenario(one, "infer", 10.0), "H100")


def test_readers_take_the_throughput_from_the_metrics():
    """A version-2 result is read through `metrics`, not through the version-1 field beside it."""
    from dlbench.analysis.compare import compare_results
    from dlbench.analysis.speedups import speedups

    a = schema.load_document(V1 / "run.json")["results"][0]
    b = _as_scenario(a, "train", a["samples_per_s"] * 2)
    row = compare_results(a, b)
    assert row["b_samples_per_s"] == a["samples_per_s"] * 2 and row["ratio"] == pytest.approx(2.0)
    faster = {**b, "compile": "default"}
    found = speedups([a, faster])
    assert found and found[0]["speedup"] == pytest.approx(2.0)


def test_the_document_metrics_agree_with_the_training_scenario():
    """What the document builder writes today (from the version-1 fields) and what the training scenario reports
    (`scenarios.get("train").metrics`, from the raw values) are the same metrics, and its headline is the
    document's `primary_metric`."""
    from dlbench import scenarios
    from dlbench.measurement.config import RunConfig
    from dlbench.runner.document import make_result

    config = RunConfig(workload="resnet50", precision="fp32", compile="default", batch_size=8, device="cpu",
                       flavour="tiny")
    measurement = {"batch_size": 8, "device": "cpu", "warmup_step_times_s": [0.3],
                   "repeats": [{"step_times_s": [0.1, 0.11, 0.09, 0.12, 0.2]}, {"step_times_s": [0.1, 0.13, 0.1]}],
                   "flops_per_sample": 1e8, "peak_memory_bytes": 123_456, "peak_reserved_bytes": 200_000,
                   "compile_time_s": 12.5}
    written = make_result(config, "ok", measurement=measurement)
    train = scenarios.get("train")
    reported = train.metrics(measurement, config)
    assert written["primary_metric"] == train.headline
    assert set(written["metrics"]) == set(reported)
    for name, found in reported.items():
        mine = written["metrics"][name]
        assert set(mine) == set(found), name
        for key, value in found.items():
            assert mine[key] == (pytest.approx(value, rel=1e-12) if not isinstance(value, str) else value), (name, key)
