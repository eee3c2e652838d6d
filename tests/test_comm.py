"""`dlbench comm`: message sizes, nccl-tests bandwidth definitions, a real two-process gloo run."""

from __future__ import annotations

import json
import time

import pytest

from _dist_helpers import dlbench
from dlbench.cli.app import main
from dlbench.errors import BadInput
from dlbench.runner.comm import bus_factor, message_elements, parse_ops, parse_sizes


def test_size_range_doubles_from_first_to_last():
    assert parse_sizes("1M..8M") == [2**20, 2**21, 2**22, 2**23]
    assert parse_sizes("64k,1M") == [65536, 2**20]
    assert len(parse_sizes("1M..1G")) == 11


@pytest.mark.parametrize("bad", ["1X..2M", "8M..1M", "abc", "2", "..", "1M.."])
def test_bad_sizes_are_rejected(bad):
    with pytest.raises(BadInput):
        parse_sizes(bad)


def test_bad_ops_rejected_and_all_expands():
    assert parse_ops("all") == ["all_reduce", "all_gather"]
    assert parse_ops("all-gather") == ["all_gather"]
    with pytest.raises(BadInput):
        parse_ops("broadcast")


def test_bus_factors_follow_nccl_tests():
    # nccl-tests doc/PERFORMANCE.md: all-reduce 2(n-1)/n, all-gather (n-1)/n.
    for n in (2, 4, 8):
        assert bus_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
        assert bus_factor("all_gather", n) == pytest.approx((n - 1) / n)
    # All-gather's size is the gathered buffer: each of n ranks contributes S/n.
    assert message_elements("all_gather", 4096, 4) == (256, 4096)


@pytest.mark.parametrize("args", [["--sizes", "1Q"], ["--ops", "alltoall"], ["--iters", "0"],
                                  ["--device", "tpu"], ["--timeout", "nan"], ["--timeout", "inf"]])
def test_cli_bad_input_exits_2(args, capsys):
    argv = ["comm", *args] if "--device" in args else ["comm", "--device", "cpu", *args]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.slow
def test_two_cpu_processes_report_bandwidths():
    proc = dlbench("comm", "--device", "cpu", "--gpus", "2", "--sizes", "4K..16K", "--iters", "3",
                   "--warmup", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["world_size"] == 2 and report["backend"] == "gloo"
    assert {r["op"] for r in report["results"]} == {"all_reduce", "all_gather"}
    assert sorted({r["size_bytes"] for r in report["results"]}) == [4096, 8192, 16384]
    for row in report["results"]:
        assert row["time_s"] > 0 and len(row["time_s_ranks"]) == 2
        assert row["algbw_bytes_per_s"] == pytest.approx(row["size_bytes"] / row["time_s"])
        assert row["busbw_bytes_per_s"] == pytest.approx(row["algbw_bytes_per_s"] * bus_factor(row["op"], 2))
    assert "Bus bandwidth" in report["busbw_meaning"]


def test_missing_rank_times_out_with_clear_message():
    started = time.monotonic()
    # Rank 0 hosts the store and rank 1 never comes, so port 0 (the OS picks a free port at the bind) is enough:
    # a port chosen in advance could be taken by another process before rank 0 binds it.
    proc = dlbench("comm", "--device", "cpu", "--timeout", "2", "--json", RANK="0", WORLD_SIZE="2",
                   LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
    assert proc.returncode != 0
    assert "could not join the process group" in proc.stderr and "1/2" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - started < 30


def test_cpu_sizes_beyond_the_hosts_memory_are_refused(capsys):
    # `--device cpu --sizes 1M..16G` on a 23 GB host: every rank allocates its buffers in host memory, so the
    # 16G all-reduce (2 x 16 GB) and the 8G all-gather (2 x 12 GB) wake the OOM killer, which may take any process
    # of the machine. A size that cannot fit is bad input, refused before any process starts.
    from dlbench.telemetry.environment import memory_bytes

    total = memory_bytes()
    if total is None:
        pytest.skip("this platform does not report its memory")
    gib = -(-total // 1024**3)  # one rank alone needs more than the machine has
    with pytest.raises(SystemExit) as exit_info:
        main(["comm", "--device", "cpu", "--gpus", "2", "--sizes", f"1K,{gib}G"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --sizes") and "memory" in err and err.count("\n") == 1
    # The bound counts what each rank holds: an all-gather keeps its input part and the gathered buffer.
    from dlbench.cli.comm import host_bytes_needed

    assert host_bytes_needed(1024, ["all_reduce"], local_ranks=2, world_size=2) == 2048
    assert host_bytes_needed(1024, ["all_reduce", "all_gather"], local_ranks=2, world_size=4) == 2 * (1024 + 256)
