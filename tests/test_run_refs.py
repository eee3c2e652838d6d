"""Run references to documents (`cli._runs`): JSON files, folders and stored runs, the store opened once and
always closed (`dlbench compare A B`, `dlbench doctor REF`, `dlbench report REFS`)."""

from __future__ import annotations

import pytest

from dlbench.cli._runs import load_documents, load_run, load_runs
from dlbench.errors import BadInput
from dlbench.jsonio import write_json_atomic
from report_docs import make_document, make_result


@pytest.fixture
def store_opens(monkeypatch):
    """Every store `cli._runs` opens, with whether it was closed."""
    from dlbench.store import runs

    opened: list[dict] = []
    real_open, real_close = runs.Store.open.__func__, runs.Store.close

    def open_(cls, url=None):
        store = real_open(cls, url)
        opened.append({"store": store, "closed": False})
        return store

    def close(self):
        next(o for o in opened if o["store"] is self)["closed"] = True
        real_close(self)

    monkeypatch.setattr(runs.Store, "open", classmethod(open_))
    monkeypatch.setattr(runs.Store, "close", close)
    return opened


def _stored(*step_times: float) -> list[dict]:
    from dlbench.store import open_store

    docs = [make_document([make_result(step_time_s=t, seed=i)], created_at=f"2026-11-2{i}T10:00:00Z")
            for i, t in enumerate(step_times, start=1)]
    with open_store() as store:
        for doc in docs:
            store.save_run(doc)
    return docs


def test_runs_and_files_in_order_with_one_store_closed(tmp_path, store_opens):
    a, b = _stored(0.1, 0.2)
    path = tmp_path / "c.json"
    write_json_atomic(path, make_document([make_result(step_time_s=0.3, seed=9)]))
    store_opens.clear()
    docs = load_runs([a["run_id"][:10], str(path), "latest"])
    assert [d["results"][0]["step_time_s"]["median"] for d in docs] == pytest.approx([0.1, 0.3, 0.2], rel=0.01)
    assert len(store_opens) == 1 and store_opens[0]["closed"]


def test_the_store_is_closed_when_a_reference_is_bad(store_opens):
    _stored(0.1)
    store_opens.clear()
    with pytest.raises(BadInput):
        load_runs(["latest", "deadbeef"])
    with pytest.raises(BadInput):
        load_run("deadbeef")
    assert len(store_opens) == 2 and all(o["closed"] for o in store_opens)


def test_files_alone_open_no_store(tmp_path, store_opens):
    path = tmp_path / "a.json"
    write_json_atomic(path, make_document([make_result()]))
    assert len(load_runs([str(path), str(path)])) == 2
    assert store_opens == []


def test_folders_only_where_asked(tmp_path, store_opens):
    for name in ("a.json", "b.json"):
        write_json_atomic(tmp_path / name, make_document([make_result()]))
    docs, where = load_documents([str(tmp_path)], None, None, None)
    assert len(docs) == 2 and where == "the runs given"
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match="no result files"):
        load_documents([str(tmp_path / "a.json"), str(tmp_path / "empty")], None, None, None)
    with pytest.raises(BadInput, match="empty run reference"):
        load_runs([" "])
    # Without folders (compare, doctor) a folder is no reference to a file; the store says it has no such run.
    with pytest.raises(BadInput):
        load_runs([str(tmp_path)])
    assert all(o["closed"] for o in store_opens)


def test_every_stored_run_when_none_is_named(store_opens):
    a, b = _stored(0.1, 0.2)
    store_opens.clear()
    docs, where = load_documents([], None, None, None)
    assert {d["run_id"] for d in docs} == {a["run_id"], b["run_id"]} and where.startswith("database ")
    assert len(store_opens) == 1 and store_opens[0]["closed"]
