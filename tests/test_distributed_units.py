"""Distributed helpers without processes: launch detection, --gpus parsing, rank combination, failure reports."""

from __future__ import annotations

import json

import pytest

from dlbench.errors import BadInput
from dlbench.runner.distributed import combine_ranks, detect, parse_gpus, resolve_gpu_counts
from dlbench.runner.launchers.torchrun import _outcome, parse_torchrun_failures

TORCHRUN_SUMMARY = """
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
dlbench.runner.rank_worker FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-22_04:50:11
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 18712)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-22_04:50:11
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 18713)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 18713
============================================================
"""


def test_detect_reads_torchrun_environment():
    assert detect({}) is None
    env = detect({"RANK": "3", "WORLD_SIZE": "16", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "8", "GROUP_RANK": "0",
                  "MASTER_ADDR": "nodeA", "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "bench1"})
    assert (env.rank, env.world_size, env.local_rank, env.group_rank, env.master_port) == (3, 16, 3, 0, 29500)
    assert not env.is_main
    with pytest.raises(BadInput):
        detect({"RANK": "2", "WORLD_SIZE": "2"})


def test_a_rank_uses_its_local_rank_device_even_for_auto(monkeypatch):
    """torchrun sets no current device (it is 0 in every rank): a rank's GPU comes from LOCAL_RANK alone."""
    from dlbench.runner.distributed import rank_device
    from dlbench.runner.plan import DeviceFacts

    gpu = {"name": "GPU", "memory_bytes": 1, "compute_capability": [9, 0], "uuid": None}
    monkeypatch.setattr(DeviceFacts, "detect", staticmethod(lambda: DeviceFacts(cuda=[gpu, gpu], current_cuda=0)))
    rank_1 = detect({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"})
    assert rank_device(rank_1, "auto") == rank_device(rank_1, "cuda") == rank_device(rank_1, "cuda:0") == "cuda:1"
    assert rank_device(rank_1, "cpu") == "cpu"
    monkeypatch.setattr(DeviceFacts, "detect", staticmethod(lambda: DeviceFacts()))
    assert rank_device(rank_1, "auto") == "cpu"


def test_gpus_option_parsing_and_resolution():
    assert parse_gpus("4,1,2,2") == [1, 2, 4]
    assert parse_gpus("all") == "all"
    for bad in ("0", "x", "1,-2", ","):
        with pytest.raises(BadInput):
            parse_gpus(bad)
    two_gpus = [{"name": "NVIDIA H100 80GB HBM3"}] * 2
    assert resolve_gpu_counts("all", "cuda:0", two_gpus) == [2]
    assert resolve_gpu_counts([1, 3], "cpu", []) == [1, 3]  # CPU: N processes
    with pytest.raises(BadInput):
        resolve_gpu_counts([4], "cuda:0", two_gpus)
    with pytest.raises(BadInput):
        resolve_gpu_counts("all", "cpu", [])


def _rank(rank, node_rank, host, times, gpu=None):
    return {"env": {"rank": rank, "local_rank": rank % 2, "node_rank": node_rank, "hostname": host,
                    "device": "cpu", "gpu_name": gpu, "gpu_uuid": None},
            "measurement": {"repeats": [{"step_times_s": times}], "warmup_step_times_s": [0.5],
                            "peak_memory_bytes": None, "batch_size": 4, "device": "cpu"}}


def test_combine_ranks_counts_nodes_and_keeps_every_rank():
    per_rank = [_rank(0, 0, "a", [0.1, 0.1], "GPU X"), _rank(1, 0, "a", [0.1, 0.2], "GPU X"),
                _rank(2, 1, "b", [0.1, 0.1], "GPU Y"), _rank(3, 1, "b", [0.1, 0.1], "GPU Y")]
    combined = combine_ranks(per_rank, 4)
    assert combined["world_size"] == 4 and combined["nodes"] == 2
    assert combined["repeats"] == [{"step_times_s": [0.1, 0.2]}]  # the slowest rank's
    assert [r["repeats"][0]["step_times_s"] for r in combined["ranks"]][1] == [0.1, 0.2]
    assert any("slowest" in w for w in combined["warnings"])  # two GPU models in one group


def test_combine_ranks_takes_the_fullest_gpus_memory_peaks():
    per_rank = [_rank(r, 0, "a", [0.1, 0.1], "GPU X") for r in range(3)]
    for p, (allocated, reserved) in zip(per_rank, [(5, 9), (7, 8), (6, 12)], strict=True):
        p["measurement"].update(peak_memory_bytes=allocated, peak_reserved_bytes=reserved)
    combined = combine_ranks(per_rank, 3)
    assert (combined["peak_memory_bytes"], combined["peak_reserved_bytes"]) == (7, 12)
    assert [r["peak_reserved_bytes"] for r in combined["ranks"]] == [9, 8, 12]
    per_rank[1]["measurement"]["peak_reserved_bytes"] = None  # one rank could not tell: no group figure
    combined = combine_ranks(per_rank, 3)
    assert combined["peak_reserved_bytes"] is None and combined["peak_memory_bytes"] == 7


def test_torchrun_summary_names_the_killed_rank():
    failures, root = parse_torchrun_failures(TORCHRUN_SUMMARY)
    assert root == 1 and failures[1][0] == -9 and failures[0][0] == 1


def _status(tmp_path, rank, **state):
    (tmp_path / f"rank-{rank}.json").write_text(json.dumps({"rank": rank, "pid": 1, **state}))
    return {"rank": rank, "pid": 1, **state}


def test_signal_beats_peer_connection_errors(tmp_path):
    ranks = {0: _status(tmp_path, 0, phase="measure", done=1, total=3, status="error",
                        error="RuntimeError: Connection closed by peer [127.0.0.1]:1234"),
             1: _status(tmp_path, 1, phase="measure", done=1, total=3, status="running")}
    outcome = _outcome(1, False, 60, tmp_path, ranks, TORCHRUN_SUMMARY, 2)
    assert outcome.status == "error" and outcome.failed_rank == 1
    assert outcome.error.startswith("rank 1 failed: killed by SIGKILL") and "measure 1/3" in outcome.error
    assert outcome.signal == "SIGKILL"  # for a reader that must not parse the text (batch_search._too_big)


def test_own_error_beats_everything(tmp_path):
    ranks = {0: _status(tmp_path, 0, phase="measure", status="oom", error="out of memory at batch size 4"),
             1: _status(tmp_path, 1, phase="measure", status="error", error="Connection reset by peer")}
    outcome = _outcome(1, False, 60, tmp_path, ranks, "", 2)
    assert (outcome.status, outcome.failed_rank, outcome.signal) == ("oom", 0, None)


def test_timeout_lists_every_rank(tmp_path):
    ranks = {0: _status(tmp_path, 0, phase="measure", done=5, total=9, status="running"),
             1: _status(tmp_path, 1, phase="warmup", done=1, total=2, status="running")}
    outcome = _outcome(-15, True, 30, tmp_path, ranks, "", 3)
    assert outcome.status == "timeout" and outcome.failed_rank == 2
    assert "rank 0 (measure 5/9)" in outcome.error and "rank 2 (never started)" in outcome.error


def test_hang_names_the_rank_outside_collectives(tmp_path):
    ranks = {0: _status(tmp_path, 0, phase="measure", done=4, total=9, status="running"),
             1: _status(tmp_path, 1, phase="measure", done=4, total=9, status="running")}
    (tmp_path / "stack-0.txt").write_text(
        'Current thread 0x1 (most recent call first):\n'
        '  File "/venv/lib/python3.11/site-packages/torch/autograd/graph.py", line 841 in _engine_run_backward\n'
        '  File "/src/dlbench/runner/measure.py", line 150 in step\n')
    (tmp_path / "stack-1.txt").write_text(
        'Current thread 0x1 (most recent call first):\n'
        '  File "/work/my_model.py", line 12 in forward\n'
        '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1775 in _call_impl\n')
    outcome = _outcome(-15, True, 30, tmp_path, ranks, "", 2)
    assert outcome.failed_rank == 1
    assert "rank 1 was stuck in forward (my_model.py:12)" in outcome.error


def test_a_launcher_killed_by_a_signal_is_named_so(tmp_path):
    # The launcher itself SIGKILLed (the OOM killer, an operator's kill -9) before torchrun could print a summary;
    # the ranks then die with it and report nothing. It read "the launcher exited with code -9 before the group
    # finished: " (a dangling colon, no signal named).
    ranks = {0: _status(tmp_path, 0, phase="measure", done=0, total=300, status="running"),
             1: _status(tmp_path, 1, phase="measure", done=0, total=300, status="running")}
    outcome = _outcome(-9, False, 600, tmp_path, ranks, "", 2)
    assert outcome.status == "error" and outcome.signal == "SIGKILL" and outcome.failed_rank is None
    assert outcome.error.startswith("the launcher was killed by SIGKILL before the group finished")
    assert "rank 0 (measure 0/300)" in outcome.error and not outcome.error.rstrip().endswith(":")
    # An exit code without a summary still quotes the launcher's last line, and only when there is one.
    assert _outcome(1, False, 600, tmp_path, ranks, "", 2).error.rstrip()[-1] != ":"
    assert _outcome(1, False, 600, tmp_path, ranks, "usage: torchrun ...\n", 2).error.endswith("usage: torchrun ...")


def test_a_torchrun_rank_blames_a_lost_peer_or_a_collective_timeout_on_the_group():
    from dlbench.measurement.config import RunConfig
    from dlbench.runner.joined import rank_failure

    config = RunConfig("resnet50", batch_size=8, device="cpu", world_size=2)
    reset = RuntimeError("[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:545] Read error [127.0.0.1]:37515: "
                         "Connection reset by peer. This is typically caused by a remote worker hanging or bugs")
    status, error = rank_failure(reset, config, rank=0, timeout_s=600)
    assert status == "error" and error.startswith("rank 0 lost its connection to another rank")
    assert "Connection reset by peer" in error
    hung = RuntimeError("[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
                        "10000ms for recv operation to complete")
    status, error = rank_failure(hung, config, rank=0, timeout_s=10)
    assert status == "timeout" and error.startswith("rank 0 timed out after 10 s waiting for the other ranks")
    nccl = RuntimeError("[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) "
                        "ran for 600000 milliseconds before timing out.")
    assert rank_failure(nccl, config, rank=3, timeout_s=600)[0] == "timeout"
    assert rank_failure(ValueError("bad shape"), config, rank=1, timeout_s=600) == ("error", "rank 1: ValueError: "
                                                                                      "bad shape")


@pytest.mark.parametrize("value", ["0", "two", "1,,-1"])
def test_run_gpus_bad_input_exits_2(value, capsys):
    from dlbench.cli.app import main

    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--device", "cpu", "--gpus", value])
    assert exit_info.value.code == 2
    assert "--gpus" in capsys.readouterr().err


def test_a_rank_out_of_memory_is_recorded_as_oom_not_error():
    # What a rank writes into its status file, from which the group's result takes its status (see above).
    import torch

    from dlbench.measurement.config import RunConfig
    from dlbench.runner.rank_worker import classify

    config = RunConfig("resnet50", batch_size=512, device="cuda", world_size=2)
    status, error = classify(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), config)
    assert status == "oom" and "batch size 512" in error and "--batch-size auto" in error
    try:  # torch.compile and DDP re-raise what happened inside them
        try:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")
        except torch.OutOfMemoryError as inner:
            raise RuntimeError("backward failed") from inner
    except RuntimeError as outer:
        assert classify(outer, config)[0] == "oom"
    status, error = classify(RuntimeError("NCCL error: unhandled system error"), config)
    assert status == "error" and "NCCL error" in error


def test_one_signal_name_for_a_crashed_worker_and_a_killed_rank(tmp_path):
    """The sweep (Popen return code) and the group launcher (torchrun's exitcode) name a signal with one helper
    that takes the signal number, i.e. -returncode."""
    import signal

    from dlbench.runner.isolate import worker_result
    from dlbench.runner.launchers import signal_name
    from dlbench.runner.launchers.process import read_outcome

    assert signal_name(signal.SIGKILL) == "SIGKILL" and signal_name(250) == "signal 250"
    crashed = worker_result(read_outcome(tmp_path / "no-result.json", -signal.SIGSEGV, tmp_path / "no.log"))
    assert crashed["error"] == "worker crashed (SIGSEGV)"
    summary = TORCHRUN_SUMMARY.replace("exitcode  : -9", "exitcode  : -250")
    ranks = {1: _status(tmp_path, 1, phase="measure", done=1, total=3, status="running")}
    assert "rank 1 failed: killed by signal 250 (" in _outcome(1, False, 60, tmp_path, ranks, summary, 2).error
