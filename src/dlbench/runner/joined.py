"""`dlbench run` started by torchrun: the pieces one rank of the launched group measures with.

Exercised by `torchrun --nproc-per-node 2 -m dlbench run --device cpu --tiny -w resnet50` and the two-node
example in docs/multi-gpu.md (`torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint host:29500
-m dlbench run ...`); the command itself (what rank 0 prints and stores, exit codes) is `cli.run._run_joined`.

The launcher already started one process per device, so there is no child sweep here: every rank builds the same
plan (`joined_plan`), then measures each configuration with DistributedDataParallel
(`distributed.measure_distributed`) on the device of its LOCAL_RANK, sampling that device's telemetry
(`measure_item`). A rank that fails records nothing it cannot vouch for: `measure_item` raises `RankFailed` and the
command leaves the group at once, so torchrun tears it down. A rank that only lost a dead peer, or whose
collective timed out waiting for a hung one, says so rather than taking the blame (`rank_failure`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from dlbench.runner.distributed import DistEnv


class RankFailed(Exception):
    """This rank cannot go on: `result` is the failed configuration's result, `error` one line naming the rank."""

    def __init__(self, result: dict[str, Any], error: str) -> None:
        super().__init__(error)
        self.result = result
        self.error = error


def joined_plan(options, dist_env: DistEnv):
    """(plan, notes) for `options` as one rank of a launched group: the launch, not --gpus, sets the count."""
    from dlbench.errors import BadInput
    from dlbench.runner.distributed import global_batch_note
    from dlbench.runner.plan import DeviceFacts, build_plan

    if options.batch_size == "auto":  # before the plan says a search will run
        raise BadInput("--batch-size auto does not work under torchrun: its search runs each probe in a fresh "
                       "one-device process, and every rank of the group must train the same batch; find the size "
                       "with `dlbench run --batch-size auto` on one GPU, then give it as --batch-size N")
    ignored_gpus = options.gpus is not None
    options = replace(options, gpus=None)  # the launch decides the device count
    plan = build_plan(options, DeviceFacts.detect())
    notes = list(plan.notes)
    notes.append(f"started by torchrun: {dist_env.world_size} processes, rank 0 reports; "
                 + (global_batch_note([dist_env.world_size], plan.device) or "one process"))
    if ignored_gpus:
        notes.append("--gpus ignored: under torchrun the launch (--nproc-per-node, --nnodes) sets the device count")
    return plan, notes


def measure_item(item, dist_env: DistEnv, progress: Callable[[str, int, int], None]) -> dict[str, Any]:
    """The result of one planned configuration measured by the whole group (every rank calls it in step).

    Raises `RankFailed` when this rank cannot go on; BadInput and RendezvousTimeout pass through."""
    from dlbench.errors import BadInput
    from dlbench.runner.distributed import RendezvousTimeout, measure_distributed, rank_sampler
    from dlbench.runner.document import make_result
    from dlbench.runner.plan import DEFAULT_TIMEOUT_S

    config = replace(item.config, world_size=dist_env.world_size)
    extra: dict[str, Any] = {"unit": item.unit}
    if item.skip_reason:
        return make_result(config, "skipped", item.skip_reason, extra=extra)
    timeout_s = item.timeout_s or DEFAULT_TIMEOUT_S
    sampler, telemetry_reason = rank_sampler(dist_env, config.device)  # every rank its own GPU
    try:
        combined = measure_distributed(config, dist_env, progress=progress, sampler=sampler, timeout_s=timeout_s,
                                       telemetry_reason=telemetry_reason)
    except (BadInput, RendezvousTimeout):
        raise
    except Exception as exc:  # noqa: BLE001 - this rank cannot go on; torchrun stops the rest
        status, error = rank_failure(exc, config, dist_env.rank, timeout_s)
        raise RankFailed(make_result(config, status, error, extra=extra), error) from exc
    extra.update({k: combined.pop(k) for k in ("nodes", "ranks", "ddp") if k in combined})
    extra["telemetry_reason"] = combined.pop("telemetry_reason", None)
    group_warnings = combined.pop("warnings", None) or []
    result = make_result(config, "ok", None, combined, extra=extra)
    result["warnings"] = [*result.get("warnings", []), *group_warnings]
    return result


def rank_failure(exc: BaseException, config, rank: int, timeout_s: float) -> tuple[str, str]:
    """(status, error) for the exception that stops this rank of a torchrun group.

    A rank only sees its side of the group: when a peer dies, the others lose their connection to it, and when a
    peer hangs, the others' collectives time out. Those are told as such (the failed rank is named in the
    torchrun output of its own node), not as this rank's own failure; anything else is this rank's own error.
    """
    from dlbench.runner.launchers.torchrun import is_collective_timeout, is_peer_loss
    from dlbench.runner.rank_worker import classify

    status, message = classify(exc, config)
    if status == "error" and is_collective_timeout(message):
        return "timeout", (f"rank {rank} timed out after {timeout_s:g} s waiting for the other ranks in a collective: "
                           f"another rank hung, died or fell behind; the torchrun output of each node names it "
                           f"({message})")
    if status == "error" and is_peer_loss(message):
        return "error", (f"rank {rank} lost its connection to another rank, which failed or was killed; the "
                         f"torchrun output of each node names it ({message})")
    return status, f"rank {rank}: {message}"
