"""`dlbench comm --gpus 2 --sizes 1M..1G`: all-reduce / all-gather time and bandwidth between GPUs.

Starts N processes through torch.distributed's launcher (NCCL on CUDA, gloo on the CPU: `--device cpu --gpus 2`
runs two CPU processes), or joins the group when itself started by torchrun (`torchrun --nnodes 2 ... -m dlbench
comm` measures across nodes; rank 0 prints). Reports time per call, algorithm bandwidth and bus bandwidth as
nccl-tests defines them, and on NVIDIA GPUs the NVML topology (peer-to-peer, NVLink, PCIe links).
"""

from __future__ import annotations

import math
import sys

import typer

from dlbench.cli._common import console, json_option, print_json
from dlbench.errors import BadInput

NCCL_TESTS_REF = "nccl-tests doc/PERFORMANCE.md (github.com/NVIDIA/nccl-tests)"
DEFAULT_SIZES = {"cuda": "1M..1G", "cpu": "1K..1M"}


def _resolve_device(device: str) -> str:
    d = device.strip().lower()
    if d not in ("auto", "cpu", "cuda"):
        raise BadInput(f"--device must be auto, cpu or cuda for dlbench comm, not {device!r}")
    if d == "cpu":
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if d == "cuda":
        raise BadInput("--device cuda was asked for but CUDA is not available on this machine")
    return "cpu"


def _resolve_nproc(gpus: str | None, device: str) -> int:
    if device == "cuda":
        import torch

        visible = torch.cuda.device_count()
    else:
        visible = None
    if gpus is None or gpus.strip().lower() == "all":
        n = visible if visible is not None else 2
    else:
        try:
            n = int(gpus)
        except ValueError:
            raise BadInput(f"--gpus takes a number of processes or 'all', not {gpus!r}") from None
    if n < 2:
        seen = f" ({visible} CUDA device(s) visible)" if visible is not None else ""
        raise BadInput(f"a collective needs at least 2 processes; got --gpus {n}{seen}")
    if visible is not None and n > visible:
        raise BadInput(f"--gpus {n} but only {visible} CUDA device(s) are visible")
    if visible is None:
        from dlbench.runner.distributed import check_cpu_process_count

        check_cpu_process_count(n)
    return n


def host_bytes_needed(size_bytes: int, ops: list[str], local_ranks: int, world_size: int) -> int:
    """Host memory the CPU ranks on this machine hold at once for one message size, at least: an all-reduce
    reduces its buffer of S bytes in place; an all-gather keeps its part (S/n) and the gathered buffer (S)."""
    per_rank = max(size_bytes + (size_bytes // world_size if op == "all_gather" else 0) for op in ops)
    return local_ranks * per_rank


def _check_host_memory(sizes: list[int], ops: list[str], local_ranks: int, world_size: int) -> None:
    """On the CPU every rank's buffers live in host memory: refuse sizes that cannot fit, before the OOM killer
    picks some process of the machine."""
    from dlbench.telemetry.environment import memory_bytes

    total = memory_bytes()
    need = host_bytes_needed(max(sizes), ops, local_ranks, world_size)
    if total is not None and need > total:
        raise BadInput(f"--sizes up to {_fmt_size(max(sizes))} need at least {need / 1e9:.1f} GB of host memory "
                       f"({local_ranks} CPU processes here, each holding its buffers), but this machine has "
                       f"{total / 1e9:.1f} GB; give smaller sizes")


def comm_command(
    gpus: str = typer.Option(None, "--gpus", help="Number of processes, one per GPU, or 'all' (default: every "
                             "visible GPU; 2 processes with --device cpu). Ignored when started by torchrun."),
    device: str = typer.Option("auto", "--device", help="auto, cuda (NCCL) or cpu (gloo)."),
    sizes: str = typer.Option(None, "--sizes", help="Message sizes in bytes with K/M/G = 1024 multiples: a range "
                              "'1M..1G' doubles from first to last; or a list '1M,64M'. Default 1M..1G on GPUs, "
                              "1K..1M on the CPU."),
    ops: str = typer.Option("all", "--ops", help="Collectives: all_reduce, all_gather, or all."),
    iters: int = typer.Option(20, "--iters", help="Timed calls per message size (nccl-tests default 20)."),
    warmup: int = typer.Option(5, "--warmup", help="Untimed calls before timing each size (nccl-tests default 5)."),
    timeout: float = typer.Option(600.0, "--timeout", help="Seconds before the whole group is torn down."),
    as_json: bool = json_option(),
) -> None:
    """Measure all-reduce and all-gather bandwidth between GPUs (or CPU processes), as nccl-tests does."""
    from dlbench.runner.comm import BUSBW_SENTENCE, parse_ops, parse_sizes
    from dlbench.runner.distributed import detect

    if iters < 1:
        raise BadInput(f"--iters must be positive, not {iters}")
    if warmup < 0:
        raise BadInput(f"--warmup must not be negative, not {warmup}")
    if not 0 < timeout < math.inf:  # nan compares False; inf overflows the process group's timedelta
        raise BadInput(f"--timeout must be a positive finite number of seconds, not {timeout:g}")
    op_list = parse_ops(ops)
    dist_env = detect()
    dev = _resolve_device(device)
    size_list = parse_sizes(sizes or DEFAULT_SIZES[dev])

    if dist_env is not None:
        if dev == "cpu":
            _check_host_memory(size_list, op_list, dist_env.local_world_size, dist_env.world_size)
        report = _run_joined(dist_env, dev, size_list, op_list, iters, warmup, timeout)
        if not dist_env.is_main:
            return
    else:
        nproc = _resolve_nproc(gpus, dev)
        if dev == "cpu":
            _check_host_memory(size_list, op_list, nproc, nproc)
        report = _run_launched(nproc, dev, size_list, op_list, iters, warmup, timeout, as_json)

    if dev == "cuda":
        from dlbench.telemetry.topology import collect

        report["topology"] = collect()
    else:
        report["topology"] = {"available": False, "reason": "CPU processes (gloo): no GPU interconnect"}
    report["busbw_meaning"] = BUSBW_SENTENCE
    report["definitions_source"] = NCCL_TESTS_REF
    if as_json:
        print_json(report)
    else:
        _print_table(report)


def _run_joined(dist_env, dev, size_list, op_list, iters, warmup, timeout) -> dict:
    from dlbench.runner.comm import measure_comm
    from dlbench.runner.distributed import RendezvousTimeout, destroy_process_group

    try:
        report = measure_comm(dist_env, dev, size_list, op_list, iters, warmup, pg_timeout_s=timeout)
    except RendezvousTimeout as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(1) from None
    except Exception as exc:  # noqa: BLE001 - one line naming the rank; torchrun stops the others
        from dlbench.runner.worker import one_line

        print(f"error: dlbench comm failed on rank {dist_env.rank}: {one_line(exc)}", file=sys.stderr)
        raise typer.Exit(1) from None
    destroy_process_group()
    return report


def _run_launched(nproc, dev, size_list, op_list, iters, warmup, timeout, quiet) -> dict:
    from dlbench.runner.launchers import Job, launch

    job = {"kind": "comm", "device": dev, "sizes_bytes": size_list, "ops": op_list, "iters": iters,
           "warmup_iters": warmup, "pg_timeout_s": timeout}
    if not quiet:
        console(stderr=True).print(f"dlbench comm: {nproc} processes on {dev} "
                                   f"({'NCCL' if dev == 'cuda' else 'gloo'}), {len(size_list)} sizes x "
                                   f"{len(op_list)} collectives, {iters} iterations each")
    outcome = launch(Job("dlbench.runner.rank_worker", job, nproc=nproc, what="group"), timeout)
    if outcome.status == "interrupted":
        raise KeyboardInterrupt(outcome.signal)
    if outcome.status != "ok":
        print(f"error: dlbench comm failed: {outcome.error}", file=sys.stderr)
        raise typer.Exit(1)
    return outcome.result


def _fmt_size(n: int) -> str:
    for unit, factor in (("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return str(n)


def _print_table(report: dict) -> None:
    from rich.table import Table

    from dlbench.telemetry.topology import summary_lines

    con = console()
    table = Table(title=f"Collectives: {report['world_size']} ranks on {report['nodes']} node(s), "
                        f"{report['backend']}, {report['iters']} iterations", title_justify="left")
    for col in ("op", "size", "count", "time (us)", "algbw (GB/s)", "busbw (GB/s)"):
        table.add_column(col, justify="left" if col == "op" else "right")
    for row in report["results"]:
        # Display edge: nccl-tests prints microseconds and GB/s with GB = 1e9 bytes.
        table.add_row(row["op"], _fmt_size(row["size_bytes"]), str(row["count"]), f"{row['time_s'] * 1e6:.1f}",
                      f"{row['algbw_bytes_per_s'] / 1e9:.3g}", f"{row['busbw_bytes_per_s'] / 1e9:.3g}")
    con.print(table)
    con.print(report["busbw_meaning"])
    con.print(f"Definitions: {report['definitions_source']}: algbw = size / time; busbw = algbw x 2(n-1)/n for "
              "all-reduce, algbw x (n-1)/n for all-gather (size = the gathered buffer).")
    for line in summary_lines(report["topology"]):
        con.print(line)


def register(app: typer.Typer) -> None:
    """Add `dlbench comm` to `app`."""
    app.command("comm")(comm_command)
