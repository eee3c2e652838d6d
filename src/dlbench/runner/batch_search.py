"""`--batch-size auto`: find the largest batch size that trains, one short probe per fresh child process.

Exercised by `dlbench run -w resnet50 --batch-size auto`.

Starting from the workload's default batch size, the search doubles while probes succeed, then bisects between
the largest batch that trained and the smallest that ran out of memory. Each probe is the configuration itself
(same precision and compile mode, since both change memory use) with one warm-up step and two measured steps,
in its own worker process, so that memory left over from one probe cannot decide the next. A probe that runs
out of device memory (status `oom`, or a worker killed by SIGKILL, the host's OOM killer: the probe's `signal`)
means "too big". Any other failure above a size that already trained is also an upper bound (some failures only
large batches reach: a cuDNN CUDNN_STATUS_NOT_SUPPORTED, an int32 indexing limit, a probe past the time limit),
so the search goes on below it and says so in `notes` ("bs 2048 failed: <error>; searched below it"), which the sweep
adds to the result's warnings. A failure of the first probe, with nothing trained yet, stops the search and
becomes the configuration's status. The search is recorded in the result as `batch_size_search`.

Bisection stops once the gap between the largest batch that trained and the smallest that did not is within
`RESOLUTION` of the former (each probe is a fresh process, on a GPU 15-20 s or minutes with a cold compile, and
the last few percent of batch size change throughput by less than the run-to-run noise); from 64 up, bisection
probes multiples of 8, the sizes tensor-core kernels tile best.

On a CPU there is no device-memory error, only the operating system's OOM killer: the search is capped at
`MAX_BATCH_SIZE` and meant for GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from dlbench.measurement.config import RunConfig

MAX_BATCH_SIZE = 4096
RESOLUTION = 1 / 16  # stop bisecting when (smallest failed - largest ok) <= largest ok / 16
ALIGN_FROM, ALIGN = 64, 8
PROBE_WARMUP_STEPS = 1
PROBE_STEPS = 2


@dataclass
class BatchSearch:
    """The outcome: `batch_size` None when no batch trained (then `status`/`error` say why)."""

    start: int
    batch_size: int | None = None
    smallest_failed: int | None = None
    status: str = "ok"
    error: str | None = None
    probes: list[dict[str, Any]] = field(default_factory=list)
    max_batch_size: int = MAX_BATCH_SIZE
    notes: list[str] = field(default_factory=list)  # failures other than memory that bounded the search

    def info(self) -> dict[str, Any]:
        return {"method": "doubling then bisection", "resolution": RESOLUTION, "start": self.start,
                "largest_ok": self.batch_size, "smallest_failed": self.smallest_failed,
                "max_batch_size": self.max_batch_size, "probe_steps": PROBE_STEPS, "probes": list(self.probes),
                "notes": list(self.notes)}


def _too_big(outcome: dict[str, Any]) -> bool:
    """Out of device memory, or killed by SIGKILL without a result (the host's OOM killer): the outcome's
    `signal`, set where the worker's exit is classified (`launchers.process.read_outcome`), never words in its error text."""
    if outcome["status"] == "oom":
        return True
    return outcome["status"] == "error" and outcome.get("signal") == "SIGKILL"


def _first_line(outcome: dict[str, Any]) -> str:
    lines = (outcome.get("error") or "").strip().splitlines()
    return lines[0] if lines else outcome["status"]


def _midpoint(good: int, bad: int) -> int:
    """Halfway between, rounded down to a multiple of ALIGN from ALIGN_FROM up when that still splits the gap."""
    middle = (good + bad) // 2
    aligned = middle - middle % ALIGN
    return aligned if middle >= ALIGN_FROM and aligned > good else middle


def find_batch_size(config: RunConfig, timeout_s: float, observer=None, start: int | None = None,
                    max_batch_size: int = MAX_BATCH_SIZE, run_probe=None) -> BatchSearch:
    """Search the largest batch size in [1, max_batch_size] that trains `config`.

    `run_probe(config, timeout_s) -> outcome` defaults to a real worker process (`isolate.run_worker`).
    """
    if run_probe is None:
        from dlbench.runner.isolate import run_worker

        def run_probe(probe_config: RunConfig, limit: float) -> dict[str, Any]:
            return run_worker(probe_config, limit)

    first = max(1, min(start or config.batch_size, max_batch_size))
    search = BatchSearch(start=first, max_batch_size=max_batch_size)
    good, bad = 0, None
    candidate = first
    while True:
        if observer is not None:
            observer.status(f"batch size search: probing {candidate} (largest ok so far: {good or '-'})")
        probe = replace(config, batch_size=candidate, warmup_steps=PROBE_WARMUP_STEPS, steps=PROBE_STEPS,
                        repeats=1)
        outcome = run_probe(probe, timeout_s)
        record: dict[str, Any] = {"batch_size": candidate, "status": outcome["status"]}
        if outcome.get("error"):
            record["error"] = outcome["error"]
        if outcome.get("signal"):
            record["signal"] = outcome["signal"]
        search.probes.append(record)
        if outcome["status"] == "ok":
            good = candidate
        elif _too_big(outcome):
            bad = candidate
        elif good:
            bad = candidate
            note = f"bs {candidate} failed: {_first_line(outcome)}; searched below it"
            search.notes.append(note)
            if observer is not None:
                observer.status(f"batch size search: {note}")
        else:
            search.status, search.error = outcome["status"], (
                f"batch size search stopped at batch size {candidate}: {outcome.get('error')}")
            break
        if bad is None:
            if good >= max_batch_size:
                break
            candidate = min(good * 2, max_batch_size)
            continue
        if bad - good <= max(1, int(good * RESOLUTION)):
            break
        candidate = _midpoint(good, bad)
    search.smallest_failed = bad
    if search.status == "ok":
        if good:
            search.batch_size = good
        else:
            search.status = "oom"
            search.error = (f"out of memory even at batch size 1 ({config.workload} {config.precision}, "
                            f"compile={config.compile}, {config.device})")
    return search
