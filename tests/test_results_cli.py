"""`dlbench results list|show|export|import|delete`, driven through the real CLI entry point.

Run: `PYTHONPATH=src python -m pytest -q tests/test_results_cli.py`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import store_docs
from cli_helpers import cli
from dlbench import paths
from dlbench.schema import upgrade
from dlbench.store import open_store
from dlbench.store.rows import EXPORT_COLUMNS

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture
def two_runs(tmp_path):
    a = store_docs.document(created_at="2026-01-10T12:00:00Z", env=store_docs.environment("NVIDIA A100-SXM4-80GB"))
    b = store_docs.document(created_at="2026-02-20T08:00:00Z")
    with open_store() as store:
        store.save_run(a)
        store.save_run(b)
    return a, b


def test_list_empty_then_table_and_json(capsys, two_runs):
    a, b = two_runs
    code, out, _ = cli(capsys, "results", "list")
    assert code == 0
    assert a["run_id"][:12] in out and b["run_id"][:12] in out and "A100" in out
    assert out.index(b["run_id"][:12]) < out.index(a["run_id"][:12])  # newest first
    code, out, _ = cli(capsys, "results", "list", "--json", "--gpu", "h100")
    assert code == 0
    assert [r["run_id"] for r in json.loads(out)] == [b["run_id"]]
    code, out, _ = cli(capsys, "results", "list", "--json", "--since", "2026-02-01")
    assert [r["run_id"] for r in json.loads(out)] == [b["run_id"]]
    code, out, _ = cli(capsys, "results", "list", "--workload", "no-such-model")
    assert code == 0 and "No stored runs match" in out


def test_list_bad_since_exits_2_with_one_line(capsys):
    code, out, err = cli(capsys, "results", "list", "--since", "last tuesday")
    assert code == 2
    assert err.startswith("error: --since 'last tuesday'") and err.count("\n") == 1


def test_show_table_and_json_with_raw_step_times(capsys, two_runs):
    a, _ = two_runs
    code, out, _ = cli(capsys, "results", "show", a["run_id"][:7])
    assert code == 0
    assert "bert-base-squad" in out and "A100" in out and "oom: simulated oom" in out
    raw = repr(a["results"][0]["repeats"][0]["step_times_s"][0])
    assert raw not in out  # raw step times only in JSON
    code, out, _ = cli(capsys, "results", "show", a["run_id"], "--json")
    assert code == 0 and json.loads(out) == upgrade(a)  # shown at the current schema version


def test_show_prints_brackets_in_errors_literally(capsys):
    doc = store_docs.document(results=[store_docs.result(status="error")])
    doc["results"][0]["error"] = "RuntimeError: shape [8, 3] vs [red]"
    with open_store() as store:
        store.save_run(doc)
    code, out, _ = cli(capsys, "results", "show", "latest")
    assert code == 0 and "shape [8, 3] vs [red]" in out


def test_unknown_and_ambiguous_ids_exit_2_with_candidates(capsys):
    docs = [store_docs.document(run_id=f"beef{i}" + "0" * 27) for i in range(2)]
    with open_store() as store:
        for doc in docs:
            store.save_run(doc)
    code, _, err = cli(capsys, "results", "show", "beef")
    assert code == 2 and "ambiguous" in err and "beef00000000" in err and "beef10000000" in err
    code, _, err = cli(capsys, "results", "show", "cafe")
    assert code == 2 and "no stored run matches 'cafe'" in err


def test_export_csv_has_unit_columns_and_exact_values(capsys, two_runs, tmp_path):
    a, b = two_runs
    code, out, _ = cli(capsys, "results", "export", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == list(EXPORT_COLUMNS)
    for column in ("samples_per_s", "step_time_median_s", "step_time_p95_s", "peak_memory_bytes",
                   "achieved_flops_per_s", "compile_time_s", "gpu_names", "hostname", "created_at"):
        assert column in rows[0]
    assert len(rows) == 6 and rows[0]["run_id"] == a["run_id"]
    assert float(rows[0]["samples_per_s"]) == a["results"][0]["samples_per_s"]
    assert float(rows[0]["step_time_median_s"]) == a["results"][0]["step_time_s"]["median"]
    assert rows[2]["status"] == "oom" and rows[2]["samples_per_s"] == ""
    target = tmp_path / "out" / "b.json"
    code, _, err = cli(capsys, "results", "export", b["run_id"][:9], "--format", "json", "--output", str(target))
    assert code == 0 and "wrote 3 row(s)" in err
    exported = json.loads(target.read_text())
    assert [r["run_id"] for r in exported] == [b["run_id"]] * 3
    assert exported[1]["samples_per_s"] == b["results"][1]["samples_per_s"]


def test_peak_reserved_bytes_flows_to_export_and_show_json(capsys, tmp_path):
    """The optional `peak_reserved_bytes` (allocator reserve): exported in its own column, shown by
    `results show --json`, empty for results that lack it (older documents), refused when not an integer."""
    doc = store_docs.document()
    doc["results"][0]["peak_reserved_bytes"] = 34_359_738_368
    doc["results"][2]["peak_reserved_bytes"] = None
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    code, _, err = cli(capsys, "results", "import", str(path))
    assert code == 0, err
    code, out, _ = cli(capsys, "results", "export", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]).index("peak_reserved_bytes") == list(rows[0]).index("peak_memory_bytes") + 1
    assert [r["peak_reserved_bytes"] for r in rows] == ["34359738368", "", ""]
    code, out, _ = cli(capsys, "results", "export", "--format", "json")
    assert [r["peak_reserved_bytes"] for r in json.loads(out)] == [34_359_738_368, None, None]
    code, out, _ = cli(capsys, "results", "show", doc["run_id"], "--json")
    shown = json.loads(out)
    assert shown == upgrade(doc) and shown["results"][0]["peak_reserved_bytes"] == 34_359_738_368
    assert "peak_reserved_bytes" not in shown["results"][1]  # absent stays absent: nothing is invented

    bad = store_docs.document()
    bad["results"][0]["peak_reserved_bytes"] = "32 GB"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    code, _, err = cli(capsys, "results", "import", str(tmp_path / "bad.json"))
    assert code == 2 and "results[0].peak_reserved_bytes: expected an integer >= 0 or null, got string" in err



def test_import_leaves_out_a_document_with_no_results(capsys, tmp_path):
    # An interrupted run's file with "results": [] became `latest`, though dlbench run never stores one.
    folder = tmp_path / "in"
    folder.mkdir()
    good, empty = store_docs.document(), store_docs.document()
    empty["results"] = []
    empty["created_at"] = "2099-01-01T00:00:00Z"  # newest: it would have become `latest`
    (folder / "good.json").write_text(json.dumps(good))
    (folder / "empty.json").write_text(json.dumps(empty))
    code, out, _ = cli(capsys, "results", "import", str(folder))
    assert code == 0 and "Imported 1 run(s); 0 already stored; 1 with no results left out (from 2 file(s))" in out
    code, out, _ = cli(capsys, "results", "list", "--json")
    assert [run["run_id"] for run in json.loads(out)] == [good["run_id"]]

def test_import_idempotent_then_malformed_folder_imports_nothing(capsys, tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    docs = [store_docs.document(), store_docs.document()]
    for doc in docs:
        (good / f"{doc['run_id']}.json").write_text(json.dumps(doc))
    code, out, _ = cli(capsys, "results", "import", str(good))
    assert code == 0 and "Imported 2 run(s); 0 already stored" in out
    code, out, _ = cli(capsys, "results", "import", str(good / f"{docs[0]['run_id']}.json"))
    assert code == 0 and "Imported 0 run(s); 1 already stored" in out

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "a.json").write_text(json.dumps(store_docs.document()))
    (mixed / "broken.json").write_text('{"schema_version": 1, "run_id": ')
    code, _, err = cli(capsys, "results", "import", str(mixed))
    assert code == 2 and err.count("\n") == 1
    assert "broken.json" in err and "not valid JSON" in err and "nothing was imported" in err
    newer = store_docs.document()
    newer["schema_version"] = 99
    (tmp_path / "newer.json").write_text(json.dumps(newer))
    code, _, err = cli(capsys, "results", "import", str(tmp_path / "newer.json"))
    assert code == 2 and "newer.json" in err and "schema_version 99 is newer" in err
    with open_store() as store:
        assert {r["run_id"] for r in store.list_runs()} == {d["run_id"] for d in docs}


def test_delete_asks_and_yes_skips(capsys, monkeypatch, two_runs):
    a, b = two_runs
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    code, _, err = cli(capsys, "results", "delete", a["run_id"][:8])
    assert code == 1 and "Delete run " + a["run_id"] in err and "Nothing deleted" in err
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    code, out, _ = cli(capsys, "results", "delete", a["run_id"][:8])
    assert code == 0 and f"Deleted run {a['run_id']}" in out
    code, out, _ = cli(capsys, "results", "delete", "latest", "--yes")
    assert code == 0 and b["run_id"] in out
    with open_store() as store:
        assert store.list_runs() == []
    assert list(paths.results_dir().glob("*.json")) == []


def test_db_option_points_elsewhere(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    doc = store_docs.document()
    with open_store(url) as store:
        store.save_run(doc)
    code, out, _ = cli(capsys, "results", "list", "--json", "--db", url)
    assert [r["run_id"] for r in json.loads(out)] == [doc["run_id"]]
    code, out, _ = cli(capsys, "results", "list", "--json")
    assert json.loads(out) == []


def test_corrupt_database_exits_2_naming_it_and_is_left_byte_identical(tmp_path):
    path = tmp_path / "dlbench.db"
    path.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))  # right magic, garbage after it
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    env = {**os.environ, "PYTHONPATH": str(SRC), "DLBENCH_DB": f"sqlite:///{path}"}
    proc = subprocess.run([sys.executable, "-m", "dlbench", "results", "list"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ") and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
