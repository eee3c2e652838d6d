"""Measure one configuration in processes of its own: `run_worker(config, timeout_s)`.

Exercised by every configuration of `dlbench run` (`runner.sweep`) and each `--batch-size auto` probe
(`runner.batch_search`); the process handling itself is `dlbench.runner.launchers`'.

One device: `python -m dlbench.runner.worker`, one child. Several (`config.world_size` > 1, data-parallel): one
rank each through torchrun (`dlbench.runner.rank_worker`). Either way the launcher's `Outcome` becomes the
worker dict the sweep turns into a result: `{"status", "error", "measurement", "telemetry_reason", "signal",
"wall_time_s"}`, plus `extra` (result keys: `nodes`, `ranks`, `ddp`, `failed_rank`) and `warnings` for a group.
A failed configuration never raises; an interrupted one raises `launchers.Interrupted` once the children are gone.
"""

from __future__ import annotations

import signal
from typing import Any

from dlbench.measurement.config import RunConfig
from dlbench.runner.launchers import Interrupted, Job, OnEvent, Outcome, launch


def run_worker(config: RunConfig, timeout_s: float, on_event: OnEvent | None = None) -> dict[str, Any]:
    """Measure `config` in fresh child process(es) and return the worker dict (see the module docstring)."""
    if config.world_size > 1:
        # Collectives may block longer than the configuration's timeout, so that a hung rank is handled by the
        # parent's tear-down (which reports every rank's progress) rather than by one rank's collective error.
        payload = {"kind": "measure", "config": config.to_dict(), "pg_timeout_s": timeout_s + 60}
        job = Job("dlbench.runner.rank_worker", payload, nproc=config.world_size, what="group")
    else:
        job = Job("dlbench.runner.worker", config.to_dict())
    outcome = launch(job, timeout_s, on_event)
    if outcome.status == "interrupted":
        raise Interrupted(outcome.signum or signal.SIGINT)
    worker = group_result(outcome) if job.nproc > 1 else worker_result(outcome)
    worker["wall_time_s"] = outcome.wall_time_s
    return worker


def worker_result(outcome: Outcome) -> dict[str, Any]:
    """The worker dict for a single-process outcome: the worker's own result when it wrote one, else the
    failure (a child killed by a signal is an `error` whose `signal` names it: SIGKILL may be the OOM killer)."""
    if outcome.status in ("ok", "oom", "error") and isinstance(outcome.result, dict):
        worker = dict(outcome.result)
        worker.setdefault("telemetry_reason", None)
        worker.setdefault("signal", None)
        return worker
    status = "error" if outcome.status == "signal" else outcome.status
    return {"status": status, "error": outcome.error, "measurement": None, "telemetry_reason": None,
            "signal": outcome.signal}


def group_result(outcome: Outcome) -> dict[str, Any]:
    """The worker dict for a torchrun group's outcome (rank 0's result split into measurement and result keys)."""
    extra: dict[str, Any] = {"failed_rank": outcome.failed_rank}
    warnings: list[str] = []
    measurement = None
    telemetry_reason = None
    if outcome.status == "ok":
        measurement = dict(outcome.result)
        extra.update({key: measurement.pop(key) for key in ("nodes", "ranks", "ddp") if key in measurement})
        measurement.pop("world_size", None)
        warnings = list(measurement.pop("warnings", None) or [])
        telemetry_reason = measurement.pop("telemetry_reason", None)
    status = "error" if outcome.status == "signal" else outcome.status
    return {"status": status, "error": outcome.error, "measurement": measurement,
            "telemetry_reason": telemetry_reason, "signal": outcome.signal, "extra": extra, "warnings": warnings}
