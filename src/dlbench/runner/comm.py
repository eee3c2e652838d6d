"""Collective-communication benchmark, one rank's side: `dlbench comm --gpus 2 --sizes 1M..1G`.

Every rank runs the same collectives (all-reduce, all-gather) over float32 buffers of each message size:
a few untimed warm-up calls, then a barrier, then `iters` calls timed with the host clock between two device
synchronisations, exactly how nccl-tests times its loop. The time per call is averaged over the ranks (nccl-tests'
default `-a 1`). Bandwidths follow nccl-tests (doc/PERFORMANCE.md, github.com/NVIDIA/nccl-tests):

- algorithm bandwidth `algbw = S / t`, where S is the message size in bytes: the buffer every rank reduces for
  all-reduce, and the *gathered* buffer (n x the per-rank part) for all-gather;
- bus bandwidth `busbw = algbw x 2(n-1)/n` for all-reduce and `algbw x (n-1)/n` for all-gather.

Bus bandwidth is the rate at which data crosses the slowest link of the ring (NVLink, PCIe or the network), so it
can be compared with the hardware's peak link bandwidth whatever the number of ranks.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from dlbench.errors import BadInput

OPS: tuple[str, ...] = ("all_reduce", "all_gather")
ELEMENT_BYTES = 4  # float32, as nccl-tests' default `-d float`

# Plain-language meaning of the bus bandwidth column, printed with the table.
BUSBW_SENTENCE = ("Bus bandwidth (busbw, as nccl-tests defines it) corrects the algorithm bandwidth for the number "
                  "of ranks, so it shows how fast data moves over the slowest link (NVLink, PCIe or network) and "
                  "can be compared with that link's peak speed.")


def bus_factor(op: str, world_size: int) -> float:
    """nccl-tests' correction from algorithm to bus bandwidth (doc/PERFORMANCE.md, "Summary")."""
    n = world_size
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op == "all_gather":
        return (n - 1) / n
    raise BadInput(f"unknown collective {op!r}; choose from {', '.join(OPS)}")


def message_elements(op: str, size_bytes: int, world_size: int) -> tuple[int, int]:
    """(elements in this rank's input buffer, actual message size S in bytes) for a requested size.

    All-gather splits S into n equal parts, one per rank; the size is rounded down to what divides evenly.
    """
    if op == "all_gather":
        per_rank = max(1, size_bytes // (ELEMENT_BYTES * world_size))
        return per_rank, per_rank * ELEMENT_BYTES * world_size
    count = max(1, size_bytes // ELEMENT_BYTES)
    return count, count * ELEMENT_BYTES


def bandwidths(op: str, size_bytes: int, time_s: float, world_size: int) -> tuple[float, float]:
    """(algbw, busbw) in bytes per second."""
    algbw = size_bytes / time_s
    return algbw, algbw * bus_factor(op, world_size)


def _run_op(op: str, dist, inp, out_list, out_tensor) -> None:
    if op == "all_reduce":
        dist.all_reduce(inp)
    elif out_tensor is not None:
        dist.all_gather_into_tensor(out_tensor, inp)
    else:
        dist.all_gather(out_list, inp)


def measure_comm(dist_env, device: str, sizes_bytes: list[int], ops: list[str], iters: int, warmup_iters: int,
                 pg_timeout_s: float = 600.0,
                 progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Time every (op, size) on this rank; every rank returns the same rank-averaged table."""
    import torch
    import torch.distributed as dist

    from dlbench.runner.distributed import gather_object, init_process_group, node_name, rank_environment

    dev = init_process_group(dist_env, device, pg_timeout_s)
    n = dist_env.world_size
    cuda = dev.startswith("cuda")

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    rows = []
    total = len(ops) * len(sizes_bytes)
    done = 0
    for op in ops:
        for size in sizes_bytes:
            count, actual = message_elements(op, size, n)
            inp = torch.ones(count, dtype=torch.float32, device=dev)
            out_tensor = out_list = None
            if op == "all_gather":
                if cuda:  # NCCL gathers straight into one buffer; gloo needs a list of tensors
                    out_tensor = torch.empty(count * n, dtype=torch.float32, device=dev)
                else:
                    out_list = [torch.empty_like(inp) for _ in range(n)]
            for _ in range(warmup_iters):
                _run_op(op, dist, inp, out_list, out_tensor)
            sync()
            dist.barrier()
            sync()
            start = time.perf_counter()
            for _ in range(iters):
                _run_op(op, dist, inp, out_list, out_tensor)
            sync()
            elapsed = (time.perf_counter() - start) / iters
            rows.append({"op": op, "size_bytes": actual, "count": count, "dtype": "float32", "time_s": elapsed})
            del inp, out_tensor, out_list
            done += 1
            if progress is not None:
                progress("measure", done, total)

    per_rank = gather_object({"env": rank_environment(dist_env, dev), "times_s": [r["time_s"] for r in rows]})
    for i, row in enumerate(rows):
        times = [p["times_s"][i] for p in per_rank]
        row["time_s"] = sum(times) / len(times)
        row["time_s_ranks"] = times
        row["algbw_bytes_per_s"], row["busbw_bytes_per_s"] = bandwidths(row["op"], row["size_bytes"],
                                                                       row["time_s"], n)
    nodes = {(p["env"]["node_rank"], p["env"]["hostname"]) for p in per_rank}
    return {
        "world_size": n,
        "nodes": len(nodes),
        "backend": "nccl" if cuda else "gloo",
        "device": dev.split(":", 1)[0],
        "iters": iters,
        "warmup_iters": warmup_iters,
        "hostname": node_name(),
        "ranks": [p["env"] for p in per_rank],
        "results": rows,
    }


# -- message sizes ---------------------------------------------------------------------------------------------

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.I)


def parse_size(text: str) -> int:
    """'64', '64K', '1M', '1G' (binary multiples, as nccl-tests' -b/-e) -> bytes."""
    m = _SIZE.match(text)
    if not m:
        raise BadInput(f"bad message size {text!r}: use a number with an optional K, M or G (e.g. 64K, 1M, 1G)")
    size = int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    if size < ELEMENT_BYTES:
        raise BadInput(f"message size {text!r} is below {ELEMENT_BYTES} bytes (one float32)")
    return size


def parse_sizes(text: str, max_sizes: int = 64) -> list[int]:
    """'1M..1G' (powers of two from the first to the last), '1M,4M,16M', or one size -> sorted byte counts."""
    text = text.strip()
    if ".." in text:
        lo_text, _, hi_text = text.partition("..")
        lo, hi = parse_size(lo_text), parse_size(hi_text)
        if lo > hi:
            raise BadInput(f"bad size range {text!r}: the first size must not exceed the last")
        sizes = []
        size = lo
        while size <= hi:
            sizes.append(size)
            size *= 2
    else:
        sizes = sorted({parse_size(part) for part in text.split(",") if part.strip()})
    if not sizes:
        raise BadInput(f"no message sizes in {text!r}")
    if len(sizes) > max_sizes:
        raise BadInput(f"{len(sizes)} message sizes in {text!r}; at most {max_sizes}")
    return sizes


def parse_ops(text: str) -> list[str]:
    """'all_reduce,all_gather' or 'all' -> list of collectives (hyphens accepted)."""
    if text.strip().lower() == "all":
        return list(OPS)
    ops = []
    for part in text.split(","):
        op = part.strip().lower().replace("-", "_")
        if not op:
            continue
        if op not in OPS:
            raise BadInput(f"unknown collective {part.strip()!r}; choose from {', '.join(OPS)} or all")
        if op not in ops:
            ops.append(op)
    if not ops:
        raise BadInput("no collective given; choose from all_reduce, all_gather or all")
    return ops
