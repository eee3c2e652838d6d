"""The result store: documents, save/get/list/delete, prefixes, import, export, transactions, concurrency.

Run: `PYTHONPATH=src python -m pytest -q tests/test_store.py`. Every test uses a real SQLite file in its own
temp data directory (conftest sets DLBENCH_HOME).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa

import store_docs
from dlbench import paths, schema
from dlbench.errors import BadInput, DataError
from dlbench.schema import keys as schema_keys
from dlbench.store import open_store, runs
from dlbench.store.rows import EXPORT_COLUMNS
from dlbench.store.schema import results, step_times

SRC = Path(__file__).resolve().parents[1] / "src"
TESTS = Path(__file__).resolve().parent


@pytest.fixture
def store():
    with open_store() as s:
        yield s


def _count(store, table) -> int:
    with store.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()


# -- documents -------------------------------------------------------------------------------------------

def test_valid_document_passes_unchanged():
    doc = schema.upgrade(store_docs.document())  # a current-version document comes back as it is
    assert schema.validate_document(doc) is doc


def test_older_document_is_upgraded_on_a_copy():
    doc = store_docs.document()
    before = copy.deepcopy(doc)
    upgraded = schema.validate_document(doc)
    assert upgraded is not doc and doc == before
    assert upgraded["schema_version"] == schema.SCHEMA_VERSION


@pytest.mark.parametrize("mutate, reason", [
    (lambda d: d.pop("run_id"), "run_id: missing"),
    (lambda d: d.update(run_id="XYZ"), "run_id: expected 32 lowercase hex"),
    (lambda d: d.update(created_at="yesterday"), "created_at: not an ISO 8601"),
    (lambda d: d["environment"].pop("gpus"), "environment.gpus: missing"),
    (lambda d: d["environment"]["gpus"][0].update(name=None), "environment.gpus[0].name: expected a string"),
    (lambda d: d["results"][1].pop("samples_per_s"), "results[1].samples_per_s: missing"),
    (lambda d: d["results"][1].update(samples_per_s="fast"), "results[1].samples_per_s: expected a finite number"),
    (lambda d: d["results"][0].update(samples_per_s=float("nan")), "results[0].samples_per_s: expected a finite"),
    (lambda d: d["results"][0].update(batch_size=True), "results[0].batch_size: expected an integer >= 1 or "
                                                         "null, got boolean"),
    (lambda d: d["results"][2].update(status="crashed"), "results[2].status: expected one of ok, oom"),
    (lambda d: d["results"][0]["repeats"][1].pop("step_times_s"), "results[0].repeats[1].step_times_s: missing"),
    (lambda d: d["results"][0]["step_time_s"].pop("p95"), "results[0].step_time_s.p95: missing"),
    (lambda d: d["results"][0].update(samples_per_s=None), "results[0].samples_per_s: null although status"),
    (lambda d: d["results"][0].update(unit="frames"), "results[0].unit: expected 'images', 'sequences'"),
    (lambda d: d["results"][0].update(telemetry=[1]), "results[0].telemetry: expected an object or null"),
    (lambda d: d.update(notes=[1]), "notes: expected a string, a list of strings or null"),
    # Of the right type but impossible: each used to be stored and then broke a command that read it.
    (lambda d: d["results"][0].update(samples_per_s=-5.0), "results[0].samples_per_s: expected a finite number "
                                                            ">= 0 or null, got -5.0"),
    (lambda d: d["results"][0]["repeats"][0]["step_times_s"].__setitem__(0, -0.1),
     "results[0].repeats[0].step_times_s: expected a list of finite numbers >= 0"),
    (lambda d: d["results"][0]["step_time_s"].update(median=-1), "results[0].step_time_s.median: expected a"),
    (lambda d: d["results"][0].update(batch_size=0), "results[0].batch_size: expected an integer >= 1 or null, "
                                                     "got 0"),
    (lambda d: d["results"][0].update(vs_published="0.9x"), "results[0].vs_published: expected an object"),
    (lambda d: d["results"][0].update(vs_published={"ratio": "0.9"}), "results[0].vs_published.ratio: expected"),
    (lambda d: d["results"][0].update(telemetry={"available": True, "gpu": "H100"}),
     "results[0].telemetry.gpu: expected an object or null, got string"),
    (lambda d: d["results"][0].update(telemetry={"available": True, "series": {"t_s": [0, 1], "power_w": "x"}}),
     "results[0].telemetry.series: expected an object of lists of numbers or null"),
    (lambda d: d["results"][0].update(telemetry={"available": True, "per_gpu": [{"series": {"t_s": ["0"]}}]}),
     "results[0].telemetry.per_gpu[0].series: expected an object of lists of numbers"),
])
def test_invalid_documents_name_the_key(mutate, reason):
    doc = store_docs.document()
    mutate(doc)
    with pytest.raises(DataError) as err:
        schema.validate_document(doc)
    assert reason in err.value.format_message()


def test_extras_and_unknown_keys_are_kept():
    doc = store_docs.document()
    doc["results"][0].update(telemetry={"available": False, "reason": "no NVML"}, mfu=0.41,
                             vs_published={"ratio": 1.02}, warnings=["CV above 5%"], future_key=[1, 2])
    doc["command"] = ["dlbench", "run"]
    doc["notes"] = ["quick suite", "interrupted"]
    assert schema.validate_document(doc)["results"][0]["future_key"] == [1, 2]


def test_newer_schema_is_rejected_with_file_name(tmp_path):
    doc = store_docs.document()
    doc["schema_version"] = schema.SCHEMA_VERSION + 1
    path = tmp_path / "future.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError) as err:
        schema.load_document(path)
    message = err.value.format_message()
    assert str(path) in message and "newer than this dlbench reads" in message


def test_older_versions_go_through_the_upgrade_chain(monkeypatch):
    """With a (pretend) version 3, a version-1 document is upgraded on a copy through UPGRADES[1], then [2]."""
    def v2_to_v3(doc):
        doc["schema_version"] = 3
        doc["notes"] = "upgraded"
        return doc

    monkeypatch.setattr(schema_keys, "SCHEMA_VERSION", 3)
    original = store_docs.document()
    with pytest.raises(DataError, match="no upgrade to 3"):
        schema.validate_document(original)
    monkeypatch.setitem(schema.UPGRADES, 2, v2_to_v3)
    upgraded = schema.validate_document(original)
    assert upgraded["schema_version"] == 3 and upgraded["notes"] == "upgraded"
    assert upgraded["results"][0]["scenario"] == "train"  # through UPGRADES[1] on the way
    assert original["schema_version"] == 1 and "notes" not in original


# -- save / get / list / delete --------------------------------------------------------------------------

def test_save_get_roundtrip_keeps_raw_step_times_exactly(store):
    doc = store_docs.document()
    expected = schema.upgrade(copy.deepcopy(doc))  # stored at the current schema version
    run_id = store.save_run(doc)
    assert run_id == doc["run_id"]
    back = store.get_run(run_id)
    assert back == expected
    assert back["results"][0]["repeats"][2]["step_times_s"] == expected["results"][0]["repeats"][2]["step_times_s"]
    # The step_times table holds the same values, bit for bit.
    with store.engine.connect() as conn:
        stored = conn.execute(
            sa.select(step_times.c.step_time_s).join(results, results.c.id == step_times.c.result_id)
            .where(results.c.result_index == 0, step_times.c.phase == "measure", step_times.c.repeat_index == 1)
            .order_by(step_times.c.step_index)).scalars().all()
    assert stored == expected["results"][0]["repeats"][1]["step_times_s"]
    # The JSON document is kept in the data directory too.
    assert json.loads((paths.results_dir() / f"{run_id}.json").read_text()) == expected


def test_save_normalizes_like_json_and_rejects_what_json_cannot_hold(store):
    doc = store_docs.document()
    doc["environment"]["nccl_version"] = (2, 27, 3)  # as torch.cuda.nccl.version() returns it
    store.save_run(doc)
    assert store.get_run("latest")["environment"]["nccl_version"] == [2, 27, 3]
    bad = store_docs.document()
    bad["results"][0]["cv"] = float("inf")
    with pytest.raises(DataError, match=r"results\[0\]\.cv: expected a finite number"):
        store.save_run(bad)
    bad["results"][0]["cv"] = 0.01
    bad["results"][0]["some_extra"] = object()
    with pytest.raises(DataError, match="not valid JSON"):
        store.save_run(bad)
    assert len(store.list_runs()) == 1


def test_save_is_idempotent_and_a_changed_document_replaces(store):
    doc = store_docs.document()
    store.save_run(doc)
    store.save_run(copy.deepcopy(doc))
    assert len(store.list_runs()) == 1
    assert _count(store, results) == 3
    doc["results"] = doc["results"][:1]
    store.save_run(doc)
    assert _count(store, results) == 1
    assert store.get_run(doc["run_id"])["results"] == schema.upgrade(doc)["results"]


def test_list_filters_and_order(store):
    old = store_docs.document(created_at="2026-01-05T10:00:00Z",
                              env=store_docs.environment("NVIDIA A100-SXM4-80GB", gpu_count=8))
    new = store_docs.document(created_at="2026-03-01T09:30:00+01:00",
                              results=[store_docs.result("bert-base-mlm", seq_len=128)])
    store.save_run(old)
    store.save_run(new)
    listed = store.list_runs()
    assert [r["run_id"] for r in listed] == [new["run_id"], old["run_id"]]
    assert listed[0]["created_at"] == "2026-03-01T08:30:00+00:00"
    assert listed[1]["gpus"] == ["NVIDIA A100-SXM4-80GB"] and listed[1]["gpu_count"] == 8
    assert listed[1]["num_results"] == 3 and listed[1]["num_ok"] == 2
    assert [r["run_id"] for r in store.list_runs(gpu="a100")] == [old["run_id"]]
    assert [r["run_id"] for r in store.list_runs(workload="mlm")] == [new["run_id"]]
    assert [r["run_id"] for r in store.list_runs(workload="bert")] == [new["run_id"], old["run_id"]]
    since = datetime(2026, 2, 1, tzinfo=timezone.utc)
    assert [r["run_id"] for r in store.list_runs(since=since)] == [new["run_id"]]
    assert store.list_runs(gpu="100%") == []  # LIKE wildcards in user text are literal


def test_delete_removes_rows_and_json(store):
    keep, gone = store_docs.document(), store_docs.document()
    store.save_run(keep)
    store.save_run(gone)
    assert store.delete_run(gone["run_id"][:10]) == gone["run_id"]
    assert [r["run_id"] for r in store.list_runs()] == [keep["run_id"]]
    assert _count(store, results) == 3
    assert _count(store, step_times) == sum(
        len(r["warmup_step_times_s"]) + sum(len(x["step_times_s"]) for x in r["repeats"]) for r in keep["results"])
    assert not (paths.results_dir() / f"{gone['run_id']}.json").exists()
    assert (paths.results_dir() / f"{keep['run_id']}.json").exists()


def test_resolve_full_prefix_latest_unknown_ambiguous(store):
    a = store_docs.document(run_id="abc1" + "0" * 28, created_at="2026-01-01T00:00:00Z")
    b = store_docs.document(run_id="abc2" + "0" * 28, created_at="2026-02-01T00:00:00Z")
    c = store_docs.document(run_id="f" * 32, created_at="2026-01-15T00:00:00Z")
    with pytest.raises(BadInput, match="no runs stored yet"):
        store.resolve("latest")
    for doc in (a, b, c):
        store.save_run(doc)
    assert store.resolve(a["run_id"]) == a["run_id"]
    assert store.resolve("ABC1") == a["run_id"]
    assert store.resolve("f") == c["run_id"]
    assert store.resolve("latest") == b["run_id"]
    with pytest.raises(BadInput) as err:
        store.resolve("abc")
    message = err.value.format_message()
    assert "ambiguous" in message and "abc100000000" in message and "abc200000000" in message
    assert "\n" not in message
    with pytest.raises(BadInput, match="no stored run matches"):
        store.resolve("0123")
    with pytest.raises(BadInput, match="not a run id"):
        store.resolve("abc%")


# -- import / export -------------------------------------------------------------------------------------

def _write_docs(folder: Path, docs: list[dict]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, doc in enumerate(docs):
        path = folder / f"run{i}.json"
        path.write_text(json.dumps(doc))
        out.append(path)
    return out


def test_import_is_idempotent(store, tmp_path):
    docs = [store_docs.document(), store_docs.document()]
    _write_docs(tmp_path / "in", docs)
    first = store.import_paths([tmp_path / "in"])
    assert (first["files"], first["imported"], first["skipped"]) == (2, 2, 0)
    again = store.import_paths([tmp_path / "in"])
    assert (again["imported"], again["skipped"]) == (0, 2)
    assert len(store.list_runs()) == 2
    assert store.get_run(docs[1]["run_id"]) == schema.upgrade(docs[1])
    assert (paths.results_dir() / f"{docs[0]['run_id']}.json").exists()


def test_folder_with_one_malformed_file_imports_nothing(store, tmp_path):
    files = _write_docs(tmp_path / "in", [store_docs.document(), store_docs.document()])
    bad = store_docs.document()
    del bad["results"][1]["cv"]
    (tmp_path / "in" / "zz-bad.json").write_text(json.dumps(bad))
    with pytest.raises(DataError) as err:
        store.import_paths([tmp_path / "in"])
    message = err.value.format_message()
    assert "zz-bad.json" in message and "results[1].cv: missing" in message and "nothing was imported" in message
    assert store.list_runs() == [] and _count(store, results) == 0
    assert list(paths.results_dir().glob("*.json")) == []
    assert len(files) == 2


def test_import_conflicting_content_is_refused_and_writes_nothing(store, tmp_path):
    stored = store_docs.document()
    store.save_run(stored)
    changed = copy.deepcopy(stored)
    changed["results"][0]["samples_per_s"] *= 2
    fresh = store_docs.document()
    _write_docs(tmp_path / "in", [fresh, changed])
    with pytest.raises(DataError, match="already stored with different content"):
        store.import_paths([tmp_path / "in"])
    assert [r["run_id"] for r in store.list_runs()] == [stored["run_id"]]
    assert store.get_run(stored["run_id"]) == schema.upgrade(stored)


def test_refused_import_leaves_the_stored_runs_json_copy_alone(store, tmp_path):
    # The results folder keeps each stored run's JSON (what `results import` can reload): a refused import must
    # neither overwrite a stored run's copy with the conflicting content nor leave copies of runs it never stored.
    stored = store_docs.document()
    _write_docs(tmp_path / "first", [stored])
    store.import_paths([tmp_path / "first"])
    copy_of_stored = paths.results_dir() / f"{stored['run_id']}.json"
    assert json.loads(copy_of_stored.read_text()) == schema.upgrade(stored)
    changed = copy.deepcopy(stored)
    changed["results"][0]["samples_per_s"] *= 2
    fresh = store_docs.document()
    _write_docs(tmp_path / "in", [fresh, changed])
    with pytest.raises(DataError, match="already stored with different content"):
        store.import_paths([tmp_path / "in"])
    assert json.loads(copy_of_stored.read_text()) == schema.upgrade(stored)
    assert sorted(p.name for p in paths.results_dir().glob("*.json")) == [copy_of_stored.name]
    assert store.get_run(stored["run_id"]) == schema.upgrade(stored)
    assert [r["run_id"] for r in store.list_runs()] == [stored["run_id"]]


def test_import_missing_path(store, tmp_path):
    with pytest.raises(BadInput, match="no such file or folder"):
        store.import_paths([tmp_path / "nope.json"])


def test_export_rows_flat_with_units(store):
    doc = store_docs.document()
    other = store_docs.document(created_at="2027-01-01T00:00:00Z")
    store.save_run(doc)
    store.save_run(other)
    rows = store.export_rows([doc["run_id"][:8]])
    assert len(rows) == 3 and list(rows[0]) == list(EXPORT_COLUMNS)
    first, failed = rows[0], rows[2]
    r0 = doc["results"][0]
    assert first["samples_per_s"] == r0["samples_per_s"]
    assert first["step_time_median_s"] == r0["step_time_s"]["median"]
    assert first["peak_memory_bytes"] == r0["peak_memory_bytes"]
    assert first["gpu_names"] == "NVIDIA H100 80GB HBM3" and first["hostname"] == "node1"
    assert first["created_at"] == "2026-11-22T04:00:00+00:00"
    assert failed["status"] == "oom" and failed["samples_per_s"] is None and failed["error"] == "simulated oom"
    assert len(store.export_rows()) == 6
    assert [r["run_id"] for r in store.export_rows()][::3] == [doc["run_id"], other["run_id"]]


# -- transactions, corruption, concurrency ---------------------------------------------------------------

def test_exception_mid_save_leaves_no_partial_run(store, monkeypatch):
    """The second result's step times fail after the run row and the first result were written."""
    calls = []
    original = runs.insert_step_times

    def failing(conn, rows):
        calls.append(len(rows))
        if len(calls) == 2:
            raise RuntimeError("disk pulled out")
        original(conn, rows)

    monkeypatch.setattr(runs, "insert_step_times", failing)
    doc = store_docs.document()
    with pytest.raises(RuntimeError, match="disk pulled out"):
        store.save_run(doc)
    assert len(calls) == 2 and store.list_runs() == []
    assert _count(store, results) == 0 and _count(store, step_times) == 0
    monkeypatch.setattr(runs, "insert_step_times", original)
    store.save_run(doc)
    assert store.get_run(doc["run_id"]) == schema.upgrade(doc)


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS)])}


def test_process_killed_mid_save_leaves_store_consistent(tmp_path):
    """SIGKILL while a save is inside its transaction: the run is absent, the store opens and accepts writes."""
    db_url = f"sqlite:///{tmp_path / 'k.db'}"
    script = textwrap.dedent(f"""
        import sys, time
        import store_docs
        from dlbench.store import open_store, runs
        original = runs.insert_step_times
        def slow(conn, rows):
            original(conn, rows)
            print("inside", flush=True)
            time.sleep(60)
        runs.insert_step_times = slow
        store = open_store({db_url!r})
        store.save_run(store_docs.document())
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert proc.stdout.readline().strip() == "inside"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    with open_store(db_url) as store:
        assert store.list_runs() == [] and _count(store, results) == 0 and _count(store, step_times) == 0
        doc = store_docs.document()
        store.save_run(doc)
        assert store.get_run("latest") == schema.upgrade(doc)


def test_two_processes_saving_at_once_lose_nothing(tmp_path):
    """Two real processes open a fresh database (both migrate) and save N runs each at the same moment."""
    n = 12
    db_url = f"sqlite:///{tmp_path / 'shared.db'}"
    go = tmp_path / "go"
    script = textwrap.dedent(f"""
        import os, sys, time
        import store_docs
        from dlbench.store import open_store
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        store = open_store({db_url!r})
        for i in range({n}):
            store.save_run(store_docs.document(env=store_docs.environment(hostname=sys.argv[1])))
        print("done", flush=True)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, f"writer{k}"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env()) for k in range(2)]
    time.sleep(1.0)  # let both import and wait for the start signal
    go.touch()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    with open_store(db_url) as store:
        listed = store.list_runs()
        assert len(listed) == 2 * n
        assert sorted(r["hostname"] for r in listed) == ["writer0"] * n + ["writer1"] * n
        assert all(r["num_results"] == 3 for r in listed)


def test_corrupt_database_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "dlbench.db"
    path.write_bytes(os.urandom(8192))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(DataError) as err:
        open_store(f"sqlite:///{path}")
    assert str(path) in err.value.format_message() and "corrupt" in err.value.format_message()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_foreign_sqlite_database_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(DataError, match="not a dlbench database"):
        open_store(f"sqlite:///{path}")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("url, reason", [
    ("not a url", "not a database URL"),
    ("nosuchdialect://host/db", "cannot use database"),
])
def test_unusable_urls_are_clear_errors(url, reason):
    with pytest.raises(BadInput, match=reason):
        open_store(url)


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="cannot open the database file"):
        open_store(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'x.db'}")
