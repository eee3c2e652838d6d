"""`dlbench fleet`: slow nodes among their peers, their causes, exit codes, JSON, selection, bad input.

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_fleet.py`. Fleets are built from result documents with
known step-time distributions (`fleet_docs`); the CLI tests store them in a real SQLite file in a temp dir.
"""

from __future__ import annotations

import json
import statistics
from datetime import datetime, timedelta, timezone

import pytest

from dlbench.analysis.fleet import DEFAULT_THRESHOLD_PCT, fleet_report, select_documents
from dlbench.analysis.stats import summarize
from dlbench.cli._common import parse_since
from dlbench.errors import BadInput
from fleet_docs import STEP_S, THERMAL, ddp_node, gpu_block, node, readme_fleet, six_nodes, tel
from report_docs import environment, make_document, make_result, run_cli


def rows_by_host(report, group=0):
    return {row["host"]: row for row in report["groups"][group]["rows"]}


def test_the_throttled_node_is_slow_and_the_two_percent_one_is_not():
    docs = six_nodes()
    report = fleet_report(docs)
    (group,) = report["groups"]
    assert group["judged"] and group["gpu"] == "H100 SXM5 80GB" and group["measured"] == 6
    values = [d["results"][0]["samples_per_s"] for d in docs]
    assert group["median_samples_per_s"] == pytest.approx(statistics.median(values))
    rows = rows_by_host(report)
    slow = rows["node04"]
    assert slow["verdict"] == "slow" and slow["flagged"]
    assert slow["vs_median_pct"] == pytest.approx((values[3] / statistics.median(values) - 1) * 100)
    assert -12 < slow["vs_median_pct"] < -8
    assert slow["significant"] is True and slow["mannwhitney_p"] < 1e-6
    assert slow["causes"][0]["cause"] == "thermal_throttling" and not slow["causes"][0]["fleet_wide"]
    assert "91 C" in slow["causes"][0]["message"]
    assert any(c["cause"] == "low_sm_clock" and c["short"] == "SM clock -15%" for c in slow["causes"])
    # every node is power-capped at times: that tells none of them apart
    assert group["fleet_wide_causes"] == [{"cause": "power_throttling", "text": "power throttling", "runs": 6}]
    assert all(c["fleet_wide"] for row in rows.values() for c in row["causes"] if c["cause"] == "power_throttling")
    assert rows["node05"]["verdict"] == "ok" and not rows["node05"]["flagged"]
    assert -3 < rows["node05"]["vs_median_pct"] < -1
    assert rows["node06"]["verdict"] == "ok" and rows["node06"]["causes"][0]["short"] == "PCIe x8"
    assert [row["host"] for row in group["rows"]][:2] == ["node04", "node05"]  # slowest first
    assert [f["host"] for f in report["flagged"]] == ["node04"]
    assert report["exit_code"] == 1
    assert report["summary"] == f"6 nodes, 1 slow: node04 ({slow['vs_median_pct']:+.0f}%, thermal throttling)"


def test_the_peers_step_times_are_pooled_once_per_group(monkeypatch):
    # The peers' pool is gathered once per group, not once per slow node (quadratic in hosts x steps for a large
    # fleet with many slow nodes); every slow node is tested against the same peers, with the same verdicts.
    from dlbench.analysis import compare, fleet

    reads, pools = [], []
    monkeypatch.setattr(fleet, "measured_step_times", lambda r: reads.append(r) or compare.measured_step_times(r))
    monkeypatch.setattr(fleet, "significance", lambda a, b, alpha: pools.append(list(a)) or
                        compare.significance(a, b, alpha))
    docs = [node(f"node{i:02d}", STEP_S / (0.88 if i % 3 == 0 else 1.0), seed=i) for i in range(1, 13)]
    report = fleet_report(docs)
    assert sorted(f["host"] for f in report["flagged"]) == ["node03", "node06", "node09", "node12"]
    healthy = [t for d in docs if d["environment"]["hostname"][-2:] not in ("03", "06", "09", "12")
               for t in compare.measured_step_times(d["results"][0])]
    assert len(pools) == 4 and all(pool == healthy for pool in pools)
    assert len(reads) <= 2 * len(docs)


def test_threshold_decides_what_counts_as_slow():
    report = fleet_report(six_nodes(), threshold_pct=12.0)
    assert report["exit_code"] == 0 and report["flagged"] == []
    assert rows_by_host(report)["node04"]["verdict"] == "ok"
    assert report["summary"] == "6 nodes, none slow (threshold 12% below the fleet median)"
    assert DEFAULT_THRESHOLD_PCT == 5.0
    tight = fleet_report(six_nodes(), threshold_pct=1.0)
    assert {f["host"] for f in tight["flagged"]} == {"node04", "node05"}


def with_step_times(result, repeats):
    """`result` with these measured step times, its throughput figures recomputed as the runner does."""
    stats = summarize(repeats, result["batch_size"], result["world_size"])
    return {**result, "repeats": [{"step_times_s": r} for r in repeats],
            **{k: stats[k] for k in ("samples_per_s", "samples_per_s_repeats", "cv", "step_time_s")}}


def test_a_few_long_steps_are_noise_not_a_fault():
    # node04's steps are node01's, but three of them paused for a second: 10% fewer samples/s on average,
    # yet its typical step is as fast as anyone's. Mann-Whitney sees that; the threshold alone would not.
    docs = [node(f"node0{i}", seed=i) for i in range(1, 6)]
    healthy = [rep["step_times_s"] for rep in docs[0]["results"][0]["repeats"]]
    hiccups = [list(r) for r in healthy]
    for r in hiccups:
        r[10] += 0.55
    docs[3]["results"][0] = with_step_times(docs[3]["results"][0], hiccups)
    report = fleet_report(docs)
    row = rows_by_host(report)["node04"]
    assert row["vs_median_pct"] < -5  # below the threshold ...
    assert row["verdict"] == "within noise" and row["significant"] is False and not row["flagged"]
    assert row["mannwhitney_p"] > 0.05
    assert report["exit_code"] == 0


def test_without_raw_step_times_the_threshold_alone_decides():
    docs = six_nodes()
    docs[3]["results"][0]["repeats"] = []
    row = rows_by_host(fleet_report(docs))["node04"]
    assert row["verdict"] == "slow" and row["flagged"] and row["significant"] is None
    assert "fewer than 2 measured steps" in row["test_reason"]


def test_two_nodes_are_too_few_to_judge():
    report = fleet_report([node("a", seed=1), node("b", STEP_S / 0.8, seed=2)])
    (group,) = report["groups"]
    assert not group["judged"] and "only 2 runs" in group["reason"] and "at least 3" in group["reason"]
    assert {row["verdict"] for row in group["rows"]} == {"not judged"}
    assert report["exit_code"] == 0 and report["flagged"] == []
    assert report["summary"] == "2 nodes: too few runs of every configuration to judge (at least 3 needed)"


def test_like_is_compared_with_like_only():
    # The same hosts measured bert too, and one host has an A100: neither joins the resnet50 H100 group.
    docs = six_nodes()
    for i, doc in enumerate(docs[:3]):
        doc["results"].append(make_result("bert-base-squad", batch_size=32, seq_len=384, step_time_s=0.05,
                                          seed=20 + i, telemetry=tel()))
    a100 = node("node07", STEP_S * 2, seed=7)
    a100["environment"]["gpus"][0].update(name="NVIDIA A100-SXM4-80GB", memory_bytes=85_899_345_920)
    report = fleet_report([*docs, a100])
    labels = [(g["label"], g["gpu"], g["measured"]) for g in report["groups"]]
    assert ("resnet50 amp-fp16 compile=off bs=256", "H100 SXM5 80GB", 6) in labels
    assert ("resnet50 amp-fp16 compile=off bs=256", "A100 SXM4 80GB", 1) in labels
    assert ("bert-base-squad amp-fp16 compile=off bs=32 seq=384", "H100 SXM5 80GB", 3) in labels
    assert [f["host"] for f in report["flagged"]] == ["node04"]  # node07 is not "slow": it is another GPU
    assert report["summary"].startswith("7 nodes, 1 slow: node04")
    assert report["summary"].endswith("; 1 configuration with fewer than 3 runs not judged")


def test_a_node_that_failed_where_its_peers_measured_is_flagged():
    docs = six_nodes()[:4]
    docs.append(node("node09", status="oom"))
    docs.append(node("node10", status="skipped"))
    docs.append(node("node11", status="error"))
    report = fleet_report(docs)
    rows = rows_by_host(report)
    assert rows["node09"]["verdict"] == "failed" and rows["node09"]["flagged"]
    assert rows["node10"]["verdict"] == "skipped" and not rows["node10"]["flagged"]
    assert report["groups"][0]["rows"][0]["host"] == "node09"  # failures first
    assert "node09 (failed, out of memory)" in report["summary"] and "1 slow, 2 failed" in report["summary"]
    assert "node11 (failed, simulated error)" in report["summary"]


def test_software_and_power_limit_other_than_the_majority_are_causes():
    docs = six_nodes()
    docs[4] = node("node05", STEP_S / 0.92, seed=5, env={"driver_version": "550.54.15"},
                   telemetry=tel(power_limit_w=600.0, default_power_limit_w=None))
    report = fleet_report(docs)
    group = report["groups"][0]
    assert group["majority"]["driver_version"] == "570.133.20" and group["majority"]["power_limit_w"] == 700.0
    row = rows_by_host(report)["node05"]
    assert row["verdict"] == "slow"
    shorts = [c["short"] for c in row["causes"]]
    assert "driver 550.54.15 (fleet 570.133.20)" in shorts and "power limit 600 W (fleet 700 W)" in shorts
    assert any(f["host"] == "node05" and f["cause"] == "driver 550.54.15 (fleet 570.133.20)"
               for f in report["flagged"])
    # a power limit below the GPU's own default is named as such (diagnose's finding), not twice
    docs[4] = node("node05", STEP_S / 0.92, seed=5, telemetry=tel(power_limit_w=600.0))
    causes = rows_by_host(fleet_report(docs))["node05"]["causes"]
    assert [c["short"] for c in causes if "power limit" in c["short"]] == ["power limit 600 W of 700 W"]


def test_a_model_library_other_than_the_majoritys_is_a_cause():
    # The environment records transformers' version because BERT's code changes with it; fleet ignored it.
    versions = {"torchvision": "0.26.0", "transformers": "5.23.0"}
    docs = [node(f"node0{i}", seed=i, env={"package_versions": versions}) for i in range(1, 5)]
    docs.append(node("node05", STEP_S / 0.9, seed=5, env={"package_versions": {**versions, "transformers": "5.17.0"}}))
    docs.append(node("node06", seed=6))  # written before package_versions: no vote, no cause
    report = fleet_report(docs)
    assert report["groups"][0]["majority"]["package_versions"] == versions
    rows = rows_by_host(report)
    assert rows["node05"]["verdict"] == "slow"
    assert [c["short"] for c in rows["node05"]["causes"]][:1] == ["transformers 5.17.0 (fleet 5.23.0)"]
    assert report["summary"].endswith("(" f"{rows['node05']['vs_median_pct']:+.0f}%, transformers 5.17.0 (fleet 5.23.0))")
    assert not any("differs" in c["cause"] for c in rows["node06"]["causes"])


def test_eight_gpus_over_two_nodes_are_not_judged_against_eight_in_one(capsys):
    # Same configuration key (world_size 8), but one run spans two nodes: its all-reduce crosses the network, so
    # it is slower by design, not a slow node. It forms its own group instead of being flagged "slow".
    docs = [node(f"node0{i}", seed=i, world_size=8) for i in range(1, 5)]
    for doc in docs:
        doc["results"][0]["nodes"] = 1
    two = node("node05", STEP_S / 0.8, seed=5, world_size=8)
    two["results"][0].update(nodes=2, ranks=[{"rank": r, "hostname": "node05" if r < 4 else "node06"}
                                             for r in range(8)])
    report = fleet_report([*docs, two])
    assert [(g["nodes"], g["measured"], g["judged"]) for g in report["groups"]] == [(1, 4, True), (2, 1, False)]
    assert report["flagged"] == [] and report["exit_code"] == 0
    older = json.loads(json.dumps(two))
    del older["results"][0]["nodes"]  # no count: the ranks' host names tell
    assert [g["nodes"] for g in fleet_report([*docs, older])["groups"]] == [1, 2]
    from dlbench.cli.fleet import render

    render(report)
    assert "bs 256 8 GPUs over 2 nodes on H100 SXM5 80GB" in " ".join(capsys.readouterr().out.split())


def test_each_gpu_of_a_data_parallel_node_is_named():
    docs = [ddp_node(f"dgx{i}", STEP_S, seed=i) for i in range(1, 5)]
    docs.append(ddp_node("dgx5", STEP_S / 0.88, hot_gpu=2, seed=5))
    docs.append(ddp_node("dgx6", STEP_S, per_gpu=False, seed=6))  # older document: no per-GPU telemetry
    report = fleet_report(docs)
    (group,) = report["groups"]
    assert group["world_size"] == 4 and group["label"].endswith("x4")
    rows = rows_by_host(report)
    slow = rows["dgx5"]
    assert slow["verdict"] == "slow"
    assert [g["gpu"] for g in slow["gpus"]] == ["GPU 0", "GPU 1", "GPU 2", "GPU 3"]
    hot = slow["gpus"][2]
    assert [c["cause"] for c in hot["causes"]][:1] == ["thermal_throttling"]
    assert slow["gpus"][0]["causes"] == [c for c in slow["gpus"][0]["causes"] if c["fleet_wide"]]
    first = next(c for c in slow["causes"] if not c["fleet_wide"])
    assert first["gpu"] == "GPU 2" and first["cause"] == "thermal_throttling"
    assert report["summary"].endswith("dgx5 " f"({slow['vs_median_pct']:+.0f}%, GPU 2: thermal throttling)")
    assert rows["dgx6"]["gpus"] == [] and rows["dgx6"]["verdict"] == "ok"
    assert len(rows["dgx1"]["gpus"]) == 4
    # main's group block (no identity, the sampler's `gpu` entry) names GPUs by their CUDA index
    plain = [{k: v for k, v in b.items() if k not in ("device_index", "hostname")} | {"gpu": {"cuda_index": i}}
             for i, b in enumerate(docs[4]["results"][0]["telemetry"]["per_gpu"])]
    docs[4]["results"][0]["telemetry"]["per_gpu"] = plain
    assert [g["gpu"] for g in rows_by_host(fleet_report(docs))["dgx5"]["gpus"]][2] == "GPU 2"


def test_gpus_of_a_two_node_group_are_named_as_everywhere_else():
    """Fleet rows name a group's GPUs with `analysis.energy.gpu_label` (the one naming `results show` and
    `doctor` use): the second node's GPUs carry their rank, and no host is repeated when the row is the run's."""
    from dlbench.analysis.energy import gpu_label

    blocks = [{**gpu_block(i % 2, "nodeA" if i < 2 else "nodeB"), "rank": i} for i in range(4)]
    doc = make_document([make_result(world_size=4, step_time_s=STEP_S, noise_s=STEP_S * 0.01, seed=1,
                                     telemetry={**tel(), "num_gpus": 4, "per_gpu": blocks})],
                        env=environment(hostname="nodeA", gpu_count=2))
    (row,) = [row for group in fleet_report([doc])["groups"] for row in group["rows"]]
    assert [g["gpu"] for g in row["gpus"]] == ["GPU 0", "GPU 1", "GPU 0 on nodeB (rank 2)",
                                               "GPU 1 on nodeB (rank 3)"]
    assert [g["gpu"] for g in row["gpus"]] == [gpu_label(b, home_host="nodeA") for b in blocks]
    assert gpu_label(blocks[2]) == "GPU 0 on nodeB (rank 2)" and gpu_label(blocks[0]) == "GPU 0 on nodeA"
    assert gpu_label({"rank": None}, position=5) == "rank 5"
    assert gpu_label({"rank": 1, "gpu": {"cuda_index": 1}}) == "GPU 1"


def test_one_gpu_runs_on_each_device_name_the_gpu():
    # Each node measured each of its 2 GPUs on its own (the Slurm example's loop); node2's cuda:1 is slow.
    docs = []
    for n in range(1, 4):
        for i in range(2):
            slow = (n, i) == (2, 1)
            r = make_result(step_time_s=STEP_S / (0.85 if slow else 1.0), noise_s=0.001, seed=10 * n + i,
                            device=f"cuda:{i}", telemetry=tel(**(THERMAL if slow else {})))
            docs.append(make_document([r], env=environment(hostname=f"node{n}", gpu_count=2)))
    report = fleet_report(docs)
    (group,) = report["groups"]
    assert group["measured"] == 6 and group["superseded"] == []  # (host, device) is the unit, not the host
    assert [f["node"] for f in report["flagged"]] == ["node2 GPU 1"]
    assert report["summary"].startswith("3 nodes, 1 slow: node2 GPU 1 (-15%, thermal throttling)")


def test_cli_shows_the_gpu_with_a_cause_under_its_node(capsys):
    store([*(ddp_node(f"dgx{i}", STEP_S, seed=i) for i in range(1, 5)), ddp_node("dgx5", STEP_S / 0.88, 2, seed=5)])
    code, out, _ = run_cli(capsys, "fleet")
    lines = [line.strip() for line in out.splitlines()]
    at = next(i for i, line in enumerate(lines) if line.startswith("dgx5"))
    assert code == 1 and "4 GPUs" in lines[at] and "slow" in lines[at]
    assert lines[at + 1].startswith("GPU 2") and "thermal throttling" in lines[at + 1] and "91 C" in lines[at + 1]
    assert sum(line.startswith("GPU ") for line in lines) == 1  # the healthy GPUs get no line of their own


def test_the_newest_run_of_a_host_counts_unless_all_runs():
    docs = six_nodes()
    fixed = node("node04", seed=44, created_at="2026-11-23T04:00:00Z")  # re-run after the fix
    report = fleet_report([*docs, fixed])
    group = report["groups"][0]
    assert group["superseded"] == [docs[3]["run_id"]]
    assert rows_by_host(report)["node04"]["run_id"] == fixed["run_id"] and report["exit_code"] == 0
    every = fleet_report([*docs, fixed], all_runs=True)
    assert len(every["groups"][0]["rows"]) == 7 and every["exit_code"] == 1


def test_cuda_and_cuda_0_on_one_host_are_one_node():
    """Older runs recorded the device as "cuda", newer ones "cuda:0": the same GPU, so one node whose newest run
    counts, named by its host alone."""
    docs = six_nodes()
    old = docs[3]
    old["results"][0]["device"] = "cuda"
    fixed = node("node04", seed=44, created_at="2026-11-23T04:00:00Z")  # device cuda:0, after the fix
    report = fleet_report([*docs, fixed])
    (group,) = report["groups"]
    assert group["superseded"] == [old["run_id"]] and len(group["rows"]) == 6
    assert rows_by_host(report)["node04"]["run_id"] == fixed["run_id"]
    assert {row["node"] for row in group["rows"]} == {f"node0{i}" for i in range(1, 7)}
    assert report["exit_code"] == 0


def test_select_documents_by_time_host_and_gpu():
    docs = [node("node01", created_at="2026-11-20T00:00:00Z"), node("Node02"), node("gpu-a")]
    docs[2]["environment"]["gpus"][0]["name"] = "NVIDIA A100-SXM4-80GB"
    since = datetime(2026, 11, 21, tzinfo=timezone.utc)
    assert [d["environment"]["hostname"] for d in select_documents(docs, since=since)] == ["Node02", "gpu-a"]
    assert [d["environment"]["hostname"] for d in select_documents(docs, hosts=["node0*"])] == ["node01", "Node02"]
    assert [d["environment"]["hostname"] for d in select_documents(docs, hosts=["x", "GPU-?"])] == ["gpu-a"]
    assert [d["environment"]["hostname"] for d in select_documents(docs, gpu="a100")] == ["gpu-a"]
    assert len(select_documents([*docs, docs[0]])) == 3  # a run given twice counts once



def test_two_different_documents_under_one_run_id_are_refused_not_dropped():
    # A result file copied and edited for another host keeps the run id: fleet would silently judge one of them.
    import copy

    first = node("node01")
    copied = copy.deepcopy(first)
    copied["environment"]["hostname"] = "node02"
    with pytest.raises(BadInput, match=f"share run id {first['run_id']}.*node01.*node02"):
        select_documents([first, copied, node("node03")])
    assert len(select_documents([first, copy.deepcopy(first)])) == 1  # the same run from the store and a file

def test_since_takes_a_duration():
    now = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
    assert parse_since("7d", now) == now - timedelta(days=7)
    assert parse_since("12h", now) == now - timedelta(hours=12)
    assert parse_since("30m", now) == now - timedelta(minutes=30)
    assert parse_since("2w", now) == now - timedelta(weeks=2)
    assert parse_since("2026-11-01") == datetime(2026, 11, 1, tzinfo=timezone.utc)
    for bad in ("7 days", "d", "-1d", "yesterday"):
        with pytest.raises(BadInput, match="--since"):
            parse_since(bad, now)


def test_since_refuses_a_capital_m():
    # "3M" was 3 minutes (case-insensitive units): someone meaning three months got nearly nothing, silently.
    now = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
    with pytest.raises(BadInput, match=r"M could mean minutes or months; write 3m for minutes"):
        parse_since("3M", now)
    assert parse_since("3m", now) == now - timedelta(minutes=3)
    assert parse_since("7D", now) == now - timedelta(days=7)  # the other units are not ambiguous


# --- the command ------------------------------------------------------------------------------------------


def store(docs):
    from dlbench.store import open_store

    with open_store() as s:
        for doc in docs:
            s.save_run(doc)


def test_cli_table_summary_and_exit_code_1(capsys):
    store(six_nodes())
    code, out, err = run_cli(capsys, "fleet")
    assert code == 1, err
    assert "resnet50 amp-fp16 eager bs 256 on H100 SXM5 80GB" in out
    lines = out.splitlines()
    node04 = next(line for line in lines if line.lstrip().startswith("node04"))
    assert "slow" in node04 and "thermal throttling" in node04
    assert out.index("node04") < out.index("node05") < out.index("node01")  # slowest first
    assert lines[-1].startswith("6 nodes, 1 slow: node04 (-") and lines[-1].endswith("thermal throttling)")


def test_cli_json_is_the_report(capsys):
    docs = six_nodes()
    store(docs)
    code, out, _ = run_cli(capsys, "fleet", "--json")
    data = json.loads(out)
    assert code == 1 and data["exit_code"] == 1
    assert data == json.loads(json.dumps(fleet_report(docs), default=str))
    code, out, _ = run_cli(capsys, "fleet", "--json", "--threshold", "15")
    assert code == 0 and json.loads(out)["flagged"] == []


def test_cli_filters_and_too_small_fleet_exit_0(capsys):
    store(six_nodes())
    code, out, _ = run_cli(capsys, "fleet", "--host", "node0[45]")
    assert code == 0
    assert "not judged: only 2 runs measured this configuration" in out
    assert "2 nodes: too few runs" in out.splitlines()[-1]
    code, out, _ = run_cli(capsys, "fleet", "--gpu", "h100", "--since", "2026-11-21", "--json")
    assert code == 1 and len(json.loads(out)["hosts"]) == 6


def test_cli_takes_run_ids_files_and_folders(capsys, tmp_path):
    from dlbench.jsonio import write_json_atomic

    docs = six_nodes()
    store(docs[:2])
    folder = tmp_path / "array"
    folder.mkdir()
    for doc in docs[2:5]:
        write_json_atomic(folder / f"{doc['run_id']}.json", doc)
    extra = tmp_path / "node06.json"
    write_json_atomic(extra, docs[5])
    code, out, err = run_cli(capsys, "fleet", "--json", docs[0]["run_id"][:10], docs[1]["run_id"], str(folder),
                             str(extra))
    assert code == 1, err
    assert json.loads(out)["hosts"] == [f"node0{i}" for i in range(1, 7)]


@pytest.mark.parametrize(("args", "message"), [
    (["fleet", "0123abcd"], "error: no stored run matches '0123abcd'"),
    (["fleet", "missing.json"], "error: missing.json: no such result file"),
    (["fleet", "--threshold", "0"], "error: --threshold must be between 0 and 100 percent"),
    (["fleet", "--alpha", "2"], "error: --alpha must be between 0 and 1"),
    (["fleet", "--since", "soon"], "error: --since 'soon'"),
    (["fleet", "--host", "nowhere*"], "error: no runs match --host nowhere* (in database"),
    (["fleet", "--since", "1d"], "error: no runs match --since 1d (in database"),
])
def test_cli_bad_input_is_one_line_and_exit_2(capsys, args, message):
    store(six_nodes(created_at=(datetime.now(timezone.utc) - timedelta(days=3)).isoformat()))
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1


def test_cli_host_names_cannot_drive_the_terminal(capsys):
    docs = six_nodes()
    docs[3]["environment"]["hostname"] = "node04\x1b[2J[bold]"
    for doc in docs:
        doc["environment"]["gpus"][0]["name"] = "Lab GPU [red]X"
    store(docs)
    code, out, _ = run_cli(capsys, "fleet")
    assert code == 1 and "\x1b" not in out
    assert "node04\ufffd[2J[bold]" in out  # shown as text, not as an escape sequence or rich markup
    assert "bs 256 on Lab GPU [red]X: median" in out


def test_cli_with_nothing_stored_exits_2(capsys):
    code, _, err = run_cli(capsys, "fleet")
    assert code == 2 and err.startswith("error: no runs match (in database")


def test_a_real_tiny_run_imported_as_three_nodes(tmp_path, isolated_home, capsys):
    # One real CPU run on a node named by DLBENCH_NODE_NAME, and the same measurement as two more nodes would
    # have written it (a job array's JSON files), imported and judged: a fleet of equals, exit 0.
    import os
    import subprocess
    import sys
    import uuid
    from pathlib import Path

    from dlbench.jsonio import write_json_atomic

    src = Path(__file__).resolve().parent.parent / "src"
    folder = tmp_path / "array"
    folder.mkdir()
    env = {**os.environ, "PYTHONPATH": str(src), "DLBENCH_NODE_NAME": "node-a"}
    proc = subprocess.run([sys.executable, "-m", "dlbench", "run", "--tiny", "--warmup", "1", "--steps", "3",
                           "--repeats", "2", "-w", "resnet50", "--quiet", "--json", str(folder / "node-a.json")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((folder / "node-a.json").read_text())
    assert doc["environment"]["hostname"] == "node-a"
    for name in ("node-b", "node-c"):
        copy = json.loads(json.dumps(doc))
        copy["run_id"] = uuid.uuid4().hex
        copy["environment"]["hostname"] = name
        write_json_atomic(folder / f"{name}.json", copy)
    code, _, err = run_cli(capsys, "results", "import", str(folder))
    assert code == 0, err
    code, out, err = run_cli(capsys, "fleet", "--json", "--host", "node-*")
    assert code == 0, err
    report = json.loads(out)
    (group,) = report["groups"]
    assert group["judged"] and group["flavour"] == "tiny" and group["gpu"].startswith("CPU")
    assert group["median_samples_per_s"] == pytest.approx(doc["results"][0]["samples_per_s"])
    assert [row["verdict"] for row in group["rows"]] == ["ok", "ok", "ok"]
    assert report["summary"] == "3 nodes, none slow (threshold 5% below the fleet median)"
    code, out, _ = run_cli(capsys, "fleet", str(folder))  # the files themselves, as a table
    assert code == 0 and "node-b" in out and out.splitlines()[-1].startswith("3 nodes, none slow")


def test_the_manual_example_is_what_the_command_prints(capsys):
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "docs" / "multi-gpu.md").read_text(encoding="utf-8")
    store(readme_fleet())
    code, out, _ = run_cli(capsys, "fleet")
    assert code == 1
    assert out.splitlines()[-1] == "8 nodes, 2 slow: node04 (-10%, thermal throttling), node07 (-6%, PCIe x8)"
    table = [line.rstrip() for line in out.splitlines() if line.lstrip().startswith("node")]
    assert len(table) == 8 and all(line in readme for line in table)
    assert out.splitlines()[-1] in readme
