"""Data-parallel measurement inside a torch.distributed group: `torchrun --nproc-per-node 2 -m dlbench run ...`.

dlbench does not bring a launcher of its own. A process started by torchrun / torch.distributed elastic (or by
`dlbench run --gpus N`, which calls torchrun's launcher) finds its rank in the environment variables the launcher
sets; `detect()` reads them. `measure_distributed()` then initialises the process group (NCCL on CUDA, gloo on
the CPU) with a timeout, pins the process to the device of its LOCAL_RANK, wraps the model in
DistributedDataParallel, times the steps with a barrier before the first and after the last measured step of
every repeat, and gathers every rank's step times, environment and GPU telemetry to every rank
(`all_gather_object`, once the measurement is over), so that rank 0 can print and store one result for the
whole group.

Per-device batch stays fixed; samples per step = batch_size x world_size. The slowest rank's step times count for
throughput (see `dlbench.analysis.measured_scaling.slowest_rank_repeats`); each rank's own step times are kept under
`ranks`.

`DLBENCH_NODE_NAME` overrides the host name a rank reports (used by the tests to stand two nodes up on one
machine; also handy where containers all share one host name). Nodes are told apart by (node rank, name).
"""

from __future__ import annotations

import os
import socket
from dataclasses import asdict, dataclass
from typing import Any

from dlbench.errors import BadInput
from dlbench.runner.worker import one_line

# Environment variables torchrun / torch.distributed elastic set for every worker.
LAUNCH_ENV_VARS: tuple[str, ...] = (
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
)

# How long the group may take to assemble, and how long any collective may block, unless told otherwise.
DEFAULT_PG_TIMEOUT_S = 600.0

# DDP options (recorded in each result under `ddp`). gradient_as_bucket_view saves a copy of every gradient;
# find_unused_parameters=False skips a graph walk per step (every parameter of our workloads gets a gradient).
DDP_OPTIONS: dict[str, Any] = {"gradient_as_bucket_view": True, "find_unused_parameters": False}


@dataclass(frozen=True)
class DistEnv:
    """Where this process sits in a torch.distributed launch."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    group_rank: int  # the node rank
    master_addr: str | None
    master_port: int | None
    run_id: str | None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _int(environ: dict[str, str], key: str, default: int | None = None) -> int | None:
    value = environ.get(key)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise BadInput(f"environment variable {key}={value!r} is not an integer (set by the distributed "
                       "launcher?)") from None


def detect(environ: dict[str, str] | None = None) -> DistEnv | None:
    """The launch this process belongs to, or None when it was not started by a torch.distributed launcher.

    RANK and WORLD_SIZE must both be present; the other variables default the way torchrun would set them
    for a single node.
    """
    env = os.environ if environ is None else environ
    rank = _int(env, "RANK")
    world_size = _int(env, "WORLD_SIZE")
    if rank is None or world_size is None:
        return None
    if world_size < 1 or not 0 <= rank < world_size:
        raise BadInput(f"RANK={rank} and WORLD_SIZE={world_size} are inconsistent")
    local_rank = _int(env, "LOCAL_RANK", rank)
    return DistEnv(
        rank=rank,
        world_size=world_size,
        local_rank=local_rank,
        local_world_size=_int(env, "LOCAL_WORLD_SIZE", world_size),
        group_rank=_int(env, "GROUP_RANK", 0),
        master_addr=env.get("MASTER_ADDR"),
        master_port=_int(env, "MASTER_PORT"),
        run_id=env.get("TORCHELASTIC_RUN_ID"),
    )


def node_name() -> str:
    """This node's name: `DLBENCH_NODE_NAME` if set, else the host name."""
    return os.environ.get("DLBENCH_NODE_NAME") or socket.gethostname()


def rank_device(dist_env: DistEnv, device: str) -> str:
    """The device this rank uses: `cuda:<LOCAL_RANK>` for CUDA (`auto` too, where it means a GPU), else the device
    as given. Never the current device: torchrun does not set it, so it is device 0 in every rank."""
    if device == "auto":
        from dlbench.measurement.device import resolve_device

        device = resolve_device(device)
    kind = device.split(":", 1)[0]
    if kind == "cuda":
        return f"cuda:{dist_env.local_rank}"
    if kind == "mps":
        raise BadInput("multi-process runs need CUDA (NCCL) or the CPU (gloo); MPS has no distributed backend")
    return device


def init_process_group(dist_env: DistEnv, device: str, timeout_s: float = DEFAULT_PG_TIMEOUT_S) -> str:
    """Join the group (NCCL on CUDA, gloo on the CPU) and pin this process to its device; returns the device.

    The group uses the env:// rendezvous that the launcher prepared (MASTER_ADDR/MASTER_PORT or the elastic
    agent's store). When not every rank arrives within `timeout_s`, a one-line `RendezvousTimeout` says so.
    """
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    dev = rank_device(dist_env, device)
    if dist.is_initialized():
        return dev
    kwargs: dict[str, Any] = {}
    if dev.startswith("cuda"):
        if not torch.cuda.is_available():
            raise BadInput("--device cuda was asked for but CUDA is not available on "
                           f"{node_name()} (rank {dist_env.rank})")
        if dist_env.local_rank >= torch.cuda.device_count():
            raise BadInput(f"LOCAL_RANK {dist_env.local_rank} but only {torch.cuda.device_count()} CUDA device(s) "
                           f"visible on {node_name()}: start at most that many processes per node")
        torch.cuda.set_device(dist_env.local_rank)
        backend = "nccl"
        kwargs["device_id"] = torch.device(dev)  # binds the NCCL communicator to this device eagerly
    else:
        backend = "gloo"
    try:
        dist.init_process_group(backend=backend, timeout=timedelta(seconds=timeout_s), **kwargs)
    except Exception as exc:  # noqa: BLE001 - store/connect errors come in many types
        raise RendezvousTimeout(
            f"rank {dist_env.rank} of {dist_env.world_size} could not join the process group at "
            f"{dist_env.master_addr}:{dist_env.master_port} within {timeout_s:g} s "
            f"({one_line(exc)}); check that every node was started and can reach it"
        ) from exc
    return dev


class RendezvousTimeout(RuntimeError):
    """The group did not assemble in time (a node missing, a wrong address or port)."""


def ddp_wrapper(device: str, compile_mode: str = "off"):
    """A `wrap_model` hook for `measure`: DistributedDataParallel with dlbench's options.

    `static_graph=True` lets DDP skip per-step bookkeeping since our training graphs never change; it is only
    used in eager mode, because TorchDynamo's DDPOptimizer (which splits a compiled graph at bucket boundaries
    to overlap communication) does not support static graphs (pytorch/pytorch#109261).
    """
    options = ddp_options(compile_mode)

    def wrap(model):
        from torch.nn.parallel import DistributedDataParallel as DDP

        if device.startswith("cuda"):
            index = int(device.split(":", 1)[1]) if ":" in device else 0
            return DDP(model, device_ids=[index], output_device=index, **options)
        return DDP(model, **options)

    return wrap


def ddp_options(compile_mode: str = "off") -> dict[str, Any]:
    """The keyword arguments given to DistributedDataParallel (recorded in the result)."""
    return {**DDP_OPTIONS, "static_graph": compile_mode == "off"}


def barrier(device: str):
    """A `sync` hook for `measure`: every rank waits for all others (on the rank's own GPU with NCCL)."""

    def sync() -> None:
        import torch.distributed as dist

        if device.startswith("cuda"):
            import torch

            dist.barrier(device_ids=[torch.cuda.current_device()])
            torch.cuda.synchronize()
        else:
            dist.barrier()

    return sync


def rank_environment(dist_env: DistEnv, device: str) -> dict[str, Any]:
    """What each rank reports about itself: node, host, device and GPU model."""
    info: dict[str, Any] = {
        "rank": dist_env.rank,
        "local_rank": dist_env.local_rank,
        "node_rank": dist_env.group_rank,
        "hostname": node_name(),
        "device": device,
        "gpu_name": None,
        "gpu_uuid": None,
    }
    if device.startswith("cuda"):
        import torch

        index = int(device.split(":", 1)[1]) if ":" in device else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        info["gpu_name"] = props.name
        uuid = getattr(props, "uuid", None)
        info["gpu_uuid"] = str(uuid) if uuid is not None else None
        info["gpu_memory_bytes"] = int(props.total_memory)
    return info


def gather_object(obj: Any) -> list[Any]:
    """Every rank's `obj`, in rank order, on every rank (`all_gather_object`)."""
    import torch.distributed as dist

    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def combine_ranks(per_rank: list[dict[str, Any]], world_size: int) -> dict[str, Any]:
    """One measurement for the group from every rank's `{"env": ..., "measurement": ...}`, rank 0 first.

    The result looks like a one-device measurement (so the runner summarises it the same way) plus
    `world_size`, `nodes` (the number of distinct nodes), `ranks` (each rank's environment, step times and peak
    memory), `warnings` (different GPU models in the group) and `telemetry_reason`. With more than one rank,
    `telemetry` describes the group: `analysis.energy.combine_ranks` of every rank's block (each rank sampled
    its own GPU; `telemetry_reason` in a rank's entry says why it has none), each GPU's series thinned to
    `telemetry.series.series_cap(world_size)` readings.
    """
    from dlbench.analysis.energy import combine_ranks as combine_telemetry
    from dlbench.analysis.energy import usable
    from dlbench.analysis.measured_scaling import mixed_gpu_warning, slowest_rank_repeats
    from dlbench.telemetry.sampler import unavailable
    from dlbench.telemetry.series import series_cap, thin_series

    base = dict(per_rank[0]["measurement"])
    repeats_by_rank = [[rep["step_times_s"] for rep in p["measurement"]["repeats"]] for p in per_rank]
    base["repeats"] = [{"step_times_s": times} for times in slowest_rank_repeats(repeats_by_rank)]
    warmups = [p["measurement"].get("warmup_step_times_s") or [] for p in per_rank]
    base["warmup_step_times_s"] = max(warmups, key=sum) if warmups else []
    for key in ("peak_memory_bytes", "peak_reserved_bytes"):  # the group needs what its fullest GPU needs
        peaks = [p["measurement"].get(key) for p in per_rank]
        base[key] = max(peaks) if all(v is not None for v in peaks) else None
    base["world_size"] = world_size
    nodes = {(p["env"]["node_rank"], p["env"]["hostname"]) for p in per_rank}
    base["nodes"] = len(nodes)
    base["ranks"] = [
        {
            **p["env"],
            "warmup_step_times_s": p["measurement"].get("warmup_step_times_s"),
            "repeats": [{"step_times_s": rep["step_times_s"]} for rep in p["measurement"]["repeats"]],
            "peak_memory_bytes": p["measurement"].get("peak_memory_bytes"),
            "peak_reserved_bytes": p["measurement"].get("peak_reserved_bytes"),
        }
        for p in per_rank
    ]
    blocks = [p["measurement"].get("telemetry")
              or unavailable(p.get("telemetry_reason") or "no telemetry sampler on this rank") for p in per_rank]
    if world_size > 1:  # each GPU's series shares the result's budget, so a result does not grow with its GPUs
        blocks = [thin_series(b, series_cap(world_size)) for b in blocks]
    telemetry = blocks[0] if world_size == 1 else combine_telemetry(blocks, [p["env"] for p in per_rank])
    base["telemetry"] = telemetry
    base["telemetry_reason"] = None if usable(telemetry) else (
        telemetry.get("reason") or per_rank[0].get("telemetry_reason"))
    warning = mixed_gpu_warning(p["env"].get("gpu_name") for p in per_rank)
    if warning:
        base["warnings"] = list(base.get("warnings") or []) + [warning]
    return base


def measure_distributed(config, dist_env: DistEnv, progress=None, sampler=None,
                        timeout_s: float = DEFAULT_PG_TIMEOUT_S, telemetry_reason: str | None = None
                        ) -> dict[str, Any]:
    """Measure `config` as one rank of a data-parallel group; every rank returns the combined measurement.

    `config.batch_size` is per device. The process group is initialised on first use and left up, so a sweep of
    several configurations under one torchrun reuses it. `sampler` samples this rank's own device
    (`rank_sampler`); its block travels with the step times in the one gather after the measurement, never
    inside the timed region. `telemetry_reason` says why this rank has no sampler.
    """
    from dataclasses import replace

    from dlbench.scenarios import measure

    device = init_process_group(dist_env, config.device, timeout_s)
    config = replace(config, device=device, world_size=dist_env.world_size)
    measurement = measure(
        config,
        progress=progress,
        sampler=sampler,
        wrap_model=ddp_wrapper(device, config.compile),
        sync=barrier(device),
    )
    per_rank = gather_object({"env": rank_environment(dist_env, device), "measurement": measurement,
                              "telemetry_reason": telemetry_reason})
    combined = combine_ranks(per_rank, dist_env.world_size)
    combined["ddp"] = ddp_options(config.compile)
    return combined


def rank_sampler(dist_env: DistEnv, device: str):
    """(sampler, reason) for this rank's own device: every rank of a group samples its GPU (never raises)."""
    from dlbench.measurement.telemetry import create_sampler

    return create_sampler(rank_device(dist_env, device))


def destroy_process_group() -> None:
    """Leave the group (no-op when none is initialised)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def parse_gpus(text: str | None) -> list[int] | str | None:
    """`--gpus 1,2,4` -> [1, 2, 4]; `all` -> "all"; None -> None (one device, no DDP). BadInput otherwise."""
    if text is None:
        return None
    if isinstance(text, list):
        text = ",".join(str(v) for v in text)
    value = str(text).strip().lower()
    if value == "all":
        return "all"
    counts: list[int] = []
    for part in value.split(","):
        part = part.strip()
        if not part:
            raise BadInput(f"--gpus takes device counts such as 1,2,4 or 'all', not {text!r} (empty count)")
        try:
            n = int(part)
        except ValueError:
            raise BadInput(f"--gpus takes device counts such as 1,2,4 or 'all', not {text!r}") from None
        if n < 1:
            raise BadInput(f"--gpus counts must be positive, got {n}")
        if n not in counts:
            counts.append(n)
    if not counts:
        raise BadInput(f"--gpus takes device counts such as 1,2,4 or 'all', not {text!r}")
    return sorted(counts)


def resolve_gpu_counts(gpus: list[int] | str | None, device: str, cuda_devices: list[dict[str, Any]]) -> list[int]:
    """The device counts to measure on `device`, checked against the visible CUDA devices."""
    if gpus is None:
        return [1]
    on_cuda = device.startswith("cuda")
    if gpus == "all":
        if not on_cuda:
            raise BadInput("--gpus all needs CUDA GPUs; on the CPU give a number of processes, e.g. --gpus 1,2")
        return [len(cuda_devices)]
    if on_cuda:
        if ":" in device and device != "cuda:0" and max(gpus) > 1:
            raise BadInput(f"--device {device} with --gpus: data-parallel runs use cuda:0..cuda:N-1; choose the GPUs "
                           "with CUDA_VISIBLE_DEVICES instead")
        too_many = [n for n in gpus if n > len(cuda_devices)]
        if too_many:
            raise BadInput(f"--gpus {max(too_many)} but only {len(cuda_devices)} CUDA device(s) are visible")
    elif device == "mps" and any(n > 1 for n in gpus):
        raise BadInput("--gpus above 1 needs CUDA (NCCL) or the CPU (gloo); MPS has no distributed backend")
    else:
        check_cpu_process_count(max(gpus))
    return list(gpus)


def check_cpu_process_count(n: int, option: str = "--gpus") -> None:
    """On the CPU, `--gpus N` starts N processes: refuse more than there are cores (up to 4 are always allowed,
    so that the gloo path, odd and even world sizes, can be exercised on any machine). Past that the ranks only
    time-share the cores, and a typo such as 100000 would fork processes until the machine gives out."""
    limit = max(4, os.cpu_count() or 1)
    if n > limit:
        raise BadInput(f"{option} {n} on the CPU starts {n} processes, but this machine has {os.cpu_count()} "
                       f"cores; use at most {limit}")


def global_batch_note(counts: list[int], device: str) -> str | None:
    """The line `dlbench run --gpus` prints: per-device batch fixed, global batch grows."""
    if all(n == 1 for n in counts):
        return None
    what = "GPUs" if device.startswith("cuda") else "processes"
    return (f"data-parallel on {', '.join(map(str, counts))} {what} (DistributedDataParallel, one process per "
            f"device): --batch-size is per device and stays fixed, so the global batch grows with the count "
            f"(global batch = batch size x number of {what}); scaling efficiency = samples/s at N / "
            f"(N x samples/s at 1).")


def gpu_plan_notes(counts: list[int], device: str, cuda_devices: list[dict[str, Any]]) -> list[str]:
    """Notes `dlbench run --gpus` prints before the run and stores: global batch, mixed GPU models."""
    from dlbench.analysis.measured_scaling import mixed_gpu_warning

    notes = []
    batch = global_batch_note(counts, device)
    if batch:
        notes.append(batch)
    if device.startswith("cuda") and counts and max(counts) > 1:
        warning = mixed_gpu_warning(d.get("name") for d in cuda_devices[: max(counts)])
        if warning:
            notes.append(f"warning: {warning}")
    return notes
