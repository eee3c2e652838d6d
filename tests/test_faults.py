"""The fault campaign (issue 15): real `dlbench` processes, one fault each, the results stored counted before and
after. Goal for every fault: 0 results lost, 0 orphan processes.

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_faults.py` (about 2 minutes on 2 cores; the
scenarios are in `fault_scenarios.py`, and `python benchmarks/fault_campaign.py` prints them as a table).
"""

from __future__ import annotations

import sys

import pytest

import fault_scenarios as fs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals and /proc: Linux only")


def _run(scenario, tmp_path) -> fs.Row:
    home = tmp_path / "home"
    home.mkdir()
    try:
        return scenario(home)
    except fs.Skip as exc:
        pytest.skip(str(exc))


def _results(row: fs.Row) -> list[tuple[str, str]]:
    (run,) = row.details["runs"]
    from dlbench.store import open_store

    with open_store(fs.db_url(row.details["home"])) as store:
        doc = store.get_run(run["run_id"])
    return doc, [(r["workload"], r["status"]) for r in doc["results"]]


def test_sigkill_of_the_parent_keeps_finished_configurations_and_leaves_no_orphan(tmp_path):
    row = _run(fs.parent_sigkill, tmp_path)
    assert row.details["exit_code"] == -9
    assert (row.before, row.after, row.lost, row.orphans) == (1, 1, 0, 0)
    doc, results = _results(row)
    assert results == [("resnet50", "ok")]
    assert doc["planned_results"] == 2
    (run,) = row.details["runs"]
    assert (run["num_results"], run["planned_results"], run["cut_short"]) == (1, 2, True)
    line = next(ln for ln in row.details["table"].splitlines() if run["run_id"][:12] in ln)
    assert "1/2, cut short" in line  # not "1/1"


def test_sigkill_of_a_worker_is_recorded_and_the_sweep_goes_on(tmp_path):
    row = _run(fs.worker_sigkill, tmp_path)
    assert (row.before, row.after, row.lost, row.orphans) == (0, 2, 0, 0)
    assert row.details["exit_code"] == 1 and "Traceback" not in row.details["stderr"]
    doc, results = _results(row)
    assert results == [("fault-hang", "error"), ("fault-oom", "oom")]
    assert "SIGKILL" in doc["results"][0]["error"]
    assert not row.details["runs"][0]["cut_short"]


def test_ctrl_c_stores_the_run_as_interrupted(tmp_path):
    row = _run(fs.ctrl_c, tmp_path)
    assert (row.before, row.after, row.lost, row.orphans) == (1, 1, 0, 0)
    assert row.details["exit_code"] == 130 and "Traceback" not in row.details["stderr"]
    doc, results = _results(row)
    assert results == [("fault-oom", "oom")]
    assert any(note.startswith("interrupted (SIGINT) after 1 of 2") for note in doc["notes"])
    assert row.details["runs"][0]["cut_short"]


def test_a_rank_killed_under_torchrun_is_recorded_with_the_failed_rank(tmp_path):
    row = _run(fs.torchrun_rank_killed, tmp_path)
    assert (row.before, row.after, row.lost, row.orphans) == (0, 2, 0, 0)
    assert row.details["exit_code"] == 1, row.details["stderr"]
    doc, results = _results(row)
    assert results == [("mg-kill-rank", "error"), ("mg-tiny", "ok")]
    killed = doc["results"][0]
    assert killed["failed_rank"] == 1 and "rank 1 failed: killed by SIGKILL" in killed["error"]


@pytest.mark.parametrize("scenario", [fs.read_only_database, fs.full_disk_database], ids=["read-only", "disk-full"])
def test_an_unwritable_database_keeps_the_json_with_one_error_line(tmp_path, scenario):
    row = _run(scenario, tmp_path)
    # The earlier run in the database is intact; the new one is in its JSON copy, importable later.
    assert (row.before, row.after, row.lost, row.orphans) == (2, 2, 0, 0)
    assert row.details["json_results"] == 1 and row.details["db_unchanged"]
    (line,) = row.details["errors"]
    assert line.startswith("error: run not stored in the database: ") and "dlbench results import" in line
    assert "Traceback" not in row.details["stderr"]
    assert row.details["exit_code"] == 0  # the measurement's own verdict (documented in cli/run.py)


def test_a_truncated_or_garbage_database_is_refused_and_never_written(tmp_path):
    row = _run(fs.corrupt_database, tmp_path)
    assert (row.before, row.after, row.lost, row.orphans) == (2, 2, 0, 0)
    for outcome in row.details["outcomes"]:
        assert outcome["exit_code"] == 2 and len(outcome["errors"]) == 1, outcome
        assert "corrupt or not a SQLite database" in outcome["errors"][0]
        assert outcome["unchanged"] and not outcome["traceback"] and outcome["side_files"] == [], outcome


def test_two_writers_at_once_both_store_everything(tmp_path):
    row = _run(fs.two_writers, tmp_path)
    assert (row.before, row.after, row.lost, row.orphans) == (0, 12, 0, 0)
    assert [code for code, _ in row.details["codes"]] == [0, 0], row.details["codes"]
    assert row.details["runs"] == row.details["distinct_runs"] == 6


def test_a_host_allocation_failure_is_out_of_memory(tmp_path):
    row = _run(fs.host_oom, tmp_path)
    assert (row.before, row.after, row.lost, row.orphans) == (0, 1, 0, 0)
    doc, results = _results(row)
    assert results == [("fault-host-oom", "oom")]
    assert doc["results"][0]["error"].startswith("out of memory at batch size")


def test_a_rank_that_fails_itself_under_torchrun_names_itself(monkeypatch):
    """`torchrun -m dlbench run`: a rank's own error (not a lost peer) records `failed_rank`, as `--gpus N` does."""
    from dlbench.measurement.config import RunConfig
    from dlbench.runner import distributed, joined
    from dlbench.runner.distributed import DistEnv
    from dlbench.runner.plan import PlannedConfig

    def fail(*args, **kwargs):
        raise ValueError("bad shape")

    monkeypatch.setattr(distributed, "measure_distributed", fail)
    monkeypatch.setattr(distributed, "rank_sampler", lambda env, device: (None, "no GPU"))
    config = RunConfig(workload="resnet50", precision="fp32", compile="off", batch_size=4, device="cpu",
                       flavour="tiny")
    env = DistEnv(rank=1, world_size=2, local_rank=1, local_world_size=2, group_rank=0, master_addr=None,
                  master_port=None, run_id=None)
    with pytest.raises(joined.RankFailed) as failed:
        joined.measure_item(PlannedConfig(config=config, unit="images"), env, lambda *a: None)
    assert failed.value.result["failed_rank"] == 1 and failed.value.result["status"] == "error"


def test_two_runs_at_once_both_store_their_run(tmp_path):
    row = _run(fs.two_runs, tmp_path)
    assert (row.before, row.after, row.lost, row.orphans) == (0, 2, 0, 0)
    assert row.details["codes"] == [0, 0] and len(row.details["runs"]) == 2


def test_the_report_header_says_a_run_was_cut_short():
    import store_docs
    from dlbench.report.sections.header import facts, run_info
    from dlbench.schema import upgrade

    doc = upgrade(store_docs.document(results=[store_docs.result()]))
    doc["planned_results"] = 2
    (card, *_) = facts([run_info(doc, 0, 1)])
    assert card["v"].endswith("cut short: 1 of 2 configurations")
    doc["planned_results"] = 1  # finished: nothing added
    assert "cut short" not in facts([run_info(doc, 0, 1)])[0]["v"]
    many = facts([run_info(doc, i, 4) for i in range(3)] + [run_info({**doc, "planned_results": 3}, 3, 4)])
    assert any(c["k"] == "Cut short" and "1 of 3" in c["v"] for c in many)
