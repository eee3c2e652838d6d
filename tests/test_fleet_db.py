"""A fleet into one database: 120 nodes, each a separate process, save their runs into one PostgreSQL server and
into one SQLite file at the same moment, through `dlbench run`'s own saver (`cli.run.RunSaver`); every run is
stored once, and `dlbench fleet --since` over the database flags the five planted slow nodes and no others.

    PYTHONPATH=src python -m pytest -q tests/test_fleet_db.py

PostgreSQL is conftest's `pg_url` (pgserver's throwaway server, or DLBENCH_TEST_POSTGRES_URL); without it the
PostgreSQL case is skipped and the SQLite one still runs.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys

import numpy as np
import pytest
import sqlalchemy as sa

from cli_helpers import cli
from db_helpers import drop_dlbench_tables, table_counts
from fleet_docs import STEP_S, node

NODES = 120
SLOW = {"node007", "node031", "node058", "node089", "node116"}  # 10% slower than their peers
FLEET_AT = "2026-11-22T04:00:00Z"
EARLIER_AT = "2026-11-01T04:00:00Z"  # last month's fleet check: left out by --since


def fleet(created_at: str = FLEET_AT, prefix: str = "node", count: int = NODES, slow=SLOW, seed: int = 15):
    """One run per node: healthy nodes spread +-1% around the same speed (boost clock bins, airflow) with 1%
    noise from step to step; the `slow` ones 10% below it."""
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(1, count + 1):
        host = f"{prefix}{i:03d}"
        speed = float(np.clip(rng.normal(1.0, 0.01), 0.975, 1.025)) * (0.90 if host in slow else 1.0)
        docs.append(node(host, STEP_S / speed, seed=seed * 1000 + i, created_at=created_at))
    return docs


def _save_as_node(url: str, doc: dict, home: str, barrier) -> None:
    """One node at the end of `dlbench run`: the saver stores the run after its configuration and again at the end
    (the same document), as a sweep does; any warning (the run not stored) fails the node."""
    os.environ["DLBENCH_HOME"] = home
    from dlbench.cli.run import RunSaver

    warnings: list[str] = []
    saver = RunSaver(url, on_warning=warnings.append)
    barrier.wait(timeout=60)
    try:
        saver.save(doc)
        saver.save(doc)
    finally:
        saver.close()
    if warnings:
        print("\n".join(warnings), file=sys.stderr)
        os._exit(3)
    os._exit(0)


def save_concurrently(url: str, docs: list[dict], tmp_path) -> list[int]:
    """Every document saved by its own process, all released at once; their exit codes."""
    ctx = multiprocessing.get_context("fork")  # the children share the parent's imports: 120 start in seconds
    barrier = ctx.Barrier(len(docs))
    procs = [ctx.Process(target=_save_as_node, args=(url, doc, str(tmp_path / f"home-{i}"), barrier))
             for i, doc in enumerate(docs)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    return [p.exitcode for p in procs]


def stored(url: str) -> tuple[dict[str, int], list[str], list[str]]:
    """Row counts, stored run ids and host names."""
    engine = sa.create_engine(url)
    try:
        counts = table_counts(engine)
        with engine.connect() as conn:
            ids = list(conn.execute(sa.text("SELECT run_id FROM runs")).scalars())
            hosts = list(conn.execute(sa.text("SELECT hostname FROM runs")).scalars())
        return counts, ids, hosts
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def fleet_db(request, tmp_path):
    """An empty database: a new SQLite file, or the test PostgreSQL server's (emptied again afterwards)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fleet.db'}"
        return
    url = request.getfixturevalue("pg_url")
    yield url
    engine = sa.create_engine(url)
    try:
        if "alembic_version" in sa.inspect(engine).get_table_names():
            drop_dlbench_tables(engine)
    finally:
        engine.dispose()


def steps_of(docs: list[dict]) -> int:
    return sum(len(r["warmup_step_times_s"]) + sum(len(x["step_times_s"]) for x in r["repeats"])
               for d in docs for r in d["results"])


def test_a_fleet_of_120_nodes_saves_at_once_and_fleet_flags_the_slow_ones(fleet_db, tmp_path, capsys):
    # Last month's check, stored first one after another: its slow node must not be judged with today's.
    earlier = fleet(EARLIER_AT, prefix="old", count=10, slow={"old004"}, seed=7)
    from dlbench.store import open_store

    with open_store(fleet_db) as store:
        for doc in earlier:
            store.save_run(doc)
    before, _, _ = stored(fleet_db)
    assert before == {"runs": 10, "results": 10, "step_times": steps_of(earlier)}

    docs = fleet()
    codes = save_concurrently(fleet_db, docs, tmp_path)
    assert codes == [0] * NODES, f"nodes that failed to save: {[i for i, c in enumerate(codes) if c != 0]}"

    after, ids, hosts = stored(fleet_db)
    assert after == {"runs": 10 + NODES, "results": 10 + NODES, "step_times": steps_of(earlier) + steps_of(docs)}
    assert len(ids) == len(set(ids)) == 10 + NODES  # none lost, none twice
    assert set(ids) == {d["run_id"] for d in earlier + docs}
    assert sorted(h for h in hosts if h.startswith("node")) == [f"node{i:03d}" for i in range(1, NODES + 1)]
    for i in range(NODES):  # every node also kept its JSON copy, as `dlbench run` does
        assert len(list((tmp_path / f"home-{i}" / "results").glob("*.json"))) == 1

    code, out, err = cli(capsys, "fleet", "--since", "2026-11-20", "--db", fleet_db, "--json")
    assert code == 1, err
    report = json.loads(out)
    assert report["runs"] == NODES
    assert {f["host"] for f in report["flagged"]} == SLOW
    assert all(f["verdict"] == "slow" and -12.5 < f["vs_median_pct"] < -7.5 for f in report["flagged"])

    # Without --since last month's slow node is judged too (a configuration of its own hosts' runs, so the
    # filter is what kept it out).
    code, out, _ = cli(capsys, "fleet", "--db", fleet_db, "--json")
    assert code == 1
    assert {f["host"] for f in json.loads(out)["flagged"]} == SLOW | {"old004"}
    assert stored(fleet_db)[0] == after  # reading changed nothing


def test_get_runs_reads_many_runs_at_once_in_the_order_asked():
    """`dlbench fleet` loads every stored run in a few queries (`Store.get_runs`), as `get_run` would one by one."""
    from dlbench.errors import BadInput
    from dlbench.store import open_store

    docs = fleet(count=12)
    with open_store() as store:
        for doc in docs:
            store.save_run(doc)
        ids = [d["run_id"] for d in reversed(docs)]
        assert store.get_runs(ids) == [store.get_run(i) for i in ids]
        assert store.get_runs([]) == []
        with pytest.raises(BadInput, match="no stored run"):
            store.get_runs([ids[0], "f" * 32])


def test_the_pooled_reference_gives_scipys_p_values():
    """`compare.Reference` (a fleet's pooled step times, sorted once) gives the p-values of SciPy's own tests on
    the two lists, ties and constant samples included; small samples go to SciPy itself (its exact test)."""
    from dlbench.analysis.compare import Reference, significance

    rng = np.random.default_rng(15)
    for trial in range(120):
        na, nb = int(rng.integers(3, 400)), int(rng.integers(3, 200))
        a = rng.normal(0.1, 0.001, na)
        b = rng.normal(0.1 + rng.normal(0, 0.0005), 0.001, nb)
        if trial % 3 == 0:  # step times read from a coarse clock tie
            a, b = np.round(a, 4), np.round(b, 4)
        if trial % 7 == 0:
            b = np.full(nb, a[0])
        fast = significance(Reference(a), b.tolist())
        slow = significance(a.tolist(), b.tolist())
        assert fast["significant"] == slow["significant"] and fast["reason"] == slow["reason"], trial
        for key in ("welch_p", "mannwhitney_p"):
            assert (fast[key] is None) == (slow[key] is None), (trial, key)
            if slow[key] is not None:
                assert fast[key] == pytest.approx(slow[key], rel=1e-9, abs=1e-300), (trial, key)
