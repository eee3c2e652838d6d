"""Imported documents, fuzzed: `dlbench results import` either imports a mutated result document or refuses it with
exit 2 and one `error:` line, leaving the stored runs unchanged; and a document it imported can be read back by
the commands that read stored runs (show, list, export, fleet, doctor, compare) without a traceback.

    PYTHONPATH=src python -m pytest -q tests/test_fuzz_documents.py

The seeds are a valid schema-2 document (a fleet node's run, upgraded) and the real version-1 files in
tests/data/v1/. Each example applies one to three mutations at random places of the document: a key dropped, a
value replaced by one of the wrong type (strings in number fields, NaN, infinities, huge and negative numbers,
nested garbage), a list emptied, the text cut short. Derandomized and bounded (`EXAMPLES` per seed);
`DLBENCH_FUZZ_EXAMPLES=500` hunts with fresh random examples instead.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db_helpers import fingerprint
from fleet_docs import node
from fuzz_inputs import TEXT, check_outcome, run_cli

EXAMPLES = int(os.environ.get("DLBENCH_FUZZ_EXAMPLES", 40))
HUNT = "DLBENCH_FUZZ_EXAMPLES" in os.environ
V1 = Path(__file__).parent / "data" / "v1"

GARBAGE: st.SearchStrategy[Any] = st.recursive(
    st.one_of(st.none(), st.booleans(), TEXT, st.integers(-(2**70), 2**70),
              st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, 0.0, -0.0, -1, 0, 10**30,
                               "1.5", "NaN", "", "ok", "oom", "2026-13-45T99:99:99Z", "cuda:0", "resnet50"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=6)


def _schema2_seed() -> dict:
    from dlbench.schema import validate_document

    return validate_document(node("fz01", seed=1))


SEEDS = {"schema2": _schema2_seed, **{p.stem: (lambda p=p: json.loads(p.read_text()))
                                      for p in sorted(V1.glob("*.json"))}}


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a document: dict keys and list indexes, as paths from the top."""
    out = []
    if isinstance(doc, dict):
        items = doc.items()
    elif isinstance(doc, list):
        items = enumerate(doc)
    else:
        return out
    for key, value in items:
        out.append((*prefix, key))
        out += _paths(value, (*prefix, key))
    return out


def _parent(doc: Any, path: tuple) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


@st.composite
def mutated(draw, seed: dict) -> tuple[str, str]:
    """A mutated copy of `seed` with a fresh run id, as the text of a file; and what was done (for messages)."""
    doc = json.loads(json.dumps(seed))
    doc["run_id"] = uuid.UUID(int=draw(st.integers(0, 2**128 - 1))).hex
    done = []
    for _ in range(draw(st.integers(1, 3))):
        places = _paths(doc)
        if not places:
            break
        path = draw(st.sampled_from(places))
        parent, key = _parent(doc, path), path[-1]
        action = draw(st.sampled_from(["drop", "replace", "replace", "replace", "empty", "stringify"]))
        if action == "drop":
            del parent[key]
        elif action == "replace":
            parent[key] = draw(GARBAGE)
        elif action == "empty":
            parent[key] = [] if isinstance(parent[key], list) else {} if isinstance(parent[key], dict) else None
        else:  # a number written as text, as a spreadsheet export would
            parent[key] = str(parent[key])
        done.append(f"{action} {'.'.join(map(str, path))}")
    text = json.dumps(doc, allow_nan=True)  # NaN and Infinity as Python writes them, which JSON does not allow
    if draw(st.integers(0, 9)) == 0:
        cut = draw(st.integers(0, len(text) - 1))
        text = text[:cut]
        done.append(f"cut at {cut}")
    return text, "; ".join(done)


@pytest.fixture
def stored_world(tmp_path, monkeypatch):
    """The test's database with two runs stored, and a scratch current folder."""
    from dlbench.store import open_store

    docs = [node(f"fz{i:02d}", seed=i) for i in (2, 3)]
    with open_store() as store:
        for doc in docs:
            store.save_run(doc)
        url = f"sqlite:///{store.label}"
    monkeypatch.chdir(tmp_path)
    return {"db": url, "tmp": tmp_path, "run_ids": [d["run_id"] for d in docs]}


def _read_back(run_id: str, stored_ids: list[str]) -> None:
    """Every command that reads stored runs takes the imported one: works, or one error line."""
    for argv in (["results", "show", run_id], ["results", "show", run_id, "--json"], ["results", "list"],
                 ["results", "export", "--format", "csv"], ["results", "export", run_id, "--format", "json"],
                 ["fleet", run_id, *stored_ids], ["fleet", "--json"], ["doctor", run_id],
                 ["compare", stored_ids[0], run_id], ["compare", run_id, run_id, "--json"]):
        code, out, err = run_cli(argv)
        check_outcome(argv, code, out, err, may_exit_1=argv[0] == "fleet")


@pytest.mark.parametrize("seed_name", list(SEEDS))
def test_an_imported_document_is_stored_or_refused_whole(seed_name, stored_world):
    from dlbench.store import open_store

    seed = SEEDS[seed_name]()
    target = stored_world["tmp"] / "fuzzed.json"
    outcomes = {"imported": 0, "refused": 0}

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=not HUNT, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=mutated(seed))
    def one(case):
        text, done = case
        target.write_text(text)
        before = fingerprint(stored_world["db"])
        argv = ["results", "import", str(target)]
        code, out, err = run_cli(argv)
        check_outcome([*argv, done], code, out, err)
        if code == 2:
            assert fingerprint(stored_world["db"]) == before, f"a refused import ({done}) changed the store"
            outcomes["refused"] += 1
            return
        outcomes["imported"] += 1
        with open_store() as store:
            imported = [r["run_id"] for r in store.list_runs() if r["run_id"] not in stored_world["run_ids"]]
        assert len(imported) <= 1, done
        if imported:
            try:
                _read_back(imported[0], stored_world["run_ids"])
            finally:  # the next example starts from the same store, failing or not
                with open_store() as store:
                    store.delete_run(imported[0])
        assert fingerprint(stored_world["db"]) == before, f"{done}: more than the one run changed"

    one()
    assert outcomes["refused"] > 0  # the mutations do reach the validation


def test_the_seeds_themselves_import(stored_world):
    """Unmutated, every seed imports (so a refusal above is the mutation's doing)."""
    for name, make in SEEDS.items():
        path = stored_world["tmp"] / f"{name}.json"
        path.write_text(json.dumps(make()))
        code, out, err = run_cli(["results", "import", str(path)])
        assert code == 0, (name, err)


def test_a_nan_in_a_free_form_block_is_refused_with_its_key(stored_world):
    """Found by the fuzzing: a NaN where the schema checks no type (`precision_flags`, `telemetry`, `notes`) passed
    validation, then the import failed with an internal error writing strict JSON to the database (and `--json`
    output of a command reading the file would have too). Now every load refuses it, naming the key."""
    doc = json.loads((V1 / "run.json").read_text())
    doc["results"][0]["precision_flags"]["precision"] = [math.nan]
    path = stored_world["tmp"] / "nan.json"
    path.write_text(json.dumps(doc))
    before = fingerprint(stored_world["db"])
    for argv in (["results", "import", str(path)], ["compare", str(path), str(path), "--json"],
                 ["fleet", str(path), "--json"]):
        code, out, err = run_cli(argv)
        assert code == 2 and err.count("error:") == 1, (argv, err)
        assert "results[0].precision_flags.precision[0]: a NaN or infinite number" in err
    assert fingerprint(stored_world["db"]) == before


def test_fleet_takes_versions_of_any_shape(stored_world):
    """Found by the fuzzing: a version where the schema leaves the type free (`package_versions.triton` an object)
    made `dlbench fleet` an internal error (unhashable dict) when it counted the fleet's majority; now such a
    version is compared like any other."""
    for i, triton in ((8, {"build": [3, 0]}), (9, {"build": [3, 0]}), (10, "3.0")):
        doc = node(f"fz{i:02d}", seed=i)
        doc["environment"]["package_versions"] = {"triton": triton}
        path = stored_world["tmp"] / f"odd{i}.json"
        path.write_text(json.dumps(doc))
        code, out, err = run_cli(["results", "import", str(path)])
        assert code == 0, err
    code, out, err = run_cli(["fleet", "--json"])
    assert code in (0, 1) and "error" not in err, err
    row = next(r for g in json.loads(out)["groups"] for r in g["rows"] if r["host"] == "fz10")
    assert "triton_differs" in {c["cause"] for c in row["causes"]}
