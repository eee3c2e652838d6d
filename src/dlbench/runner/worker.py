"""The child process that measures one configuration.

Started for each configuration of `dlbench run` by the sweep (`dlbench.runner.sweep`) through
`dlbench.runner.launchers` (which also ties its life to the parent's): by hand,
`python -m dlbench.runner.worker --job CONFIG.json --result OUT.json [--progress-fd N]`, where CONFIG.json is a
RunConfig as JSON.

It runs `measure()` in this process and writes its outcome atomically to the result file:
`{"status": "ok"|"oom"|"error", "error": str|None, "measurement": <measure() dict>|None,
"telemetry_reason": str|None}`. Progress events go as JSON lines to the file descriptor `--progress-fd`
(a pipe the parent reads; stdout is left to libraries that print): `{"event": "progress", "phase": "warmup",
"done": 3, "total": 10}`, plus `{"event": "started"}`. A crash, a hang or a kill leaves no result file: the
parent classifies those from the exit status.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import traceback
from typing import Any

from dlbench.measurement.telemetry import create_sampler  # noqa: F401 - the worker's (and ranks') sampler

OOM_HINT = "try a smaller --batch-size or --batch-size auto"


class ProgressPipe:
    """Writes progress events as JSON lines to a non-blocking pipe; drops an event rather than ever blocking
    the measured loop when the parent is slow to read."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        if fd is not None:
            os.set_blocking(fd, False)

    def send(self, event: dict[str, Any]) -> None:
        if self.fd is None:
            return
        line = (json.dumps(event, separators=(",", ":")) + "\n").encode()
        try:
            os.write(self.fd, line)
        except BlockingIOError:
            pass  # pipe full: the display misses one update, the measurement is untouched
        except OSError as exc:
            if exc.errno in (errno.EPIPE, errno.EBADF):
                self.fd = None  # parent gone or closed its end: stop reporting
            else:
                raise

    def progress(self, phase: str, done: int, total: int) -> None:
        self.send({"event": "progress", "phase": phase, "done": int(done), "total": int(total)})




def one_line(exc: BaseException, limit: int = 300) -> str:
    """`Type: first line of the message`, shortened to `limit` characters."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    line = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


# Allocation failures inside CUDA libraries, which torch raises as plain RuntimeErrors (cuBLAS creates its
# handle and workspace on first use, so a batch that fills the GPU can fail there rather than in torch's
# caching allocator). Under ROCm the hipified cuBLAS check reports hipBLAS's status name instead:
# "CUDA error: HIPBLAS_STATUS_ALLOC_FAILED when calling `hipblasCreate(handle)`" (ATen/cuda/Exceptions.h).
LIBRARY_ALLOC_FAILED = ("CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED", "CUSOLVER_STATUS_ALLOC_FAILED",
                        "HIPBLAS_STATUS_ALLOC_FAILED")


# Text of a failure inside a CUDA (or ROCm) library call: what cuBLAS/cuDNN raise when an allocation they make
# fails, often as INTERNAL_ERROR or EXECUTION_FAILED rather than ALLOC_FAILED.
DEVICE_LIBRARY_ERROR = ("CUDA error", "CUBLAS_STATUS_", "CUDNN_STATUS_", "cuDNN error", "CUSOLVER_STATUS_",
                        "HIP error")


def is_oom(exc: BaseException) -> bool:
    """A device out-of-memory error: torch.OutOfMemoryError, a RuntimeError saying "out of memory" (older
    torch, MPS, ROCm, "CUDA error: out of memory") or a CUDA library's allocation failure, raised directly or
    as the cause of another error (torch.compile wraps what happens while it compiles).

    The error being handled when this one was raised (`__context__`) counts only when this one is itself a
    CUDA-library failure: cuBLAS/cuDNN fail that way inside torch's OOM handling (freeing the cache and retrying
    leaves them no workspace). Any other error raised while an OOM was being handled is its own failure.
    """
    try:
        import torch
    except ImportError:  # pragma: no cover - the worker always has torch
        torch = None
    oom_types: tuple[type, ...] = ()
    if torch is not None:
        oom_types = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                      getattr(torch.cuda, "OutOfMemoryError", None)) if t is not None)
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if oom_types and isinstance(current, oom_types):
            return True
        library_error = False
        if isinstance(current, RuntimeError):
            text = str(current)
            if "out of memory" in text.lower() or any(code in text for code in LIBRARY_ALLOC_FAILED):
                return True
            library_error = any(marker in text for marker in DEVICE_LIBRARY_ERROR)
        if current.__cause__ is not None:
            current = current.__cause__
        elif library_error and not current.__suppress_context__:
            current = current.__context__
        else:
            current = None
    return False


def oom_message(config) -> str:
    return (f"out of memory at batch size {config.batch_size} ({config.workload} {config.precision}, "
            f"compile={config.compile}, {config.device}); {OOM_HINT}")


def run_config(config, pipe: ProgressPipe) -> dict[str, Any]:
    """Measure `config` in this process and classify the outcome (never raises for a failed measurement)."""
    from dlbench.scenarios import measure

    sampler, telemetry_reason = create_sampler(config.device)
    pipe.send({"event": "status", "text": "building the model and inputs"})
    try:
        measurement = measure(config, progress=pipe.progress, sampler=sampler)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a status
        traceback.print_exc()
        if type(exc).__name__ == "UnsupportedConfig":  # measure() re-checks capabilities on the device
            return {"status": "skipped", "error": str(exc), "measurement": None,
                    "telemetry_reason": telemetry_reason}
        if is_oom(exc):
            return {"status": "oom", "error": oom_message(config), "measurement": None,
                    "telemetry_reason": telemetry_reason}
        return {"status": "error", "error": one_line(exc), "measurement": None,
                "telemetry_reason": telemetry_reason}
    telemetry = measurement.get("telemetry")
    if telemetry_reason is None and isinstance(telemetry, dict) and telemetry.get("available") is False:
        telemetry_reason = telemetry.get("reason")
    return {"status": "ok", "error": None, "measurement": measurement, "telemetry_reason": telemetry_reason}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dlbench.runner.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--job", required=True, help="a JSON file holding the RunConfig to measure")
    parser.add_argument("--result", required=True, help="where to write the outcome JSON (atomically)")
    parser.add_argument("--progress-fd", type=int, default=None, help="pipe for progress events (JSON lines)")
    args = parser.parse_args(argv)

    from dlbench.jsonio import write_json_atomic
    from dlbench.measurement.config import RunConfig

    pipe = ProgressPipe(args.progress_fd)
    pipe.send({"event": "started", "pid": os.getpid()})
    with open(args.job, encoding="utf-8") as f:
        config = RunConfig.from_dict(json.load(f))
    outcome = run_config(config, pipe)
    write_json_atomic(args.result, outcome)
    pipe.send({"event": "finished", "status": outcome["status"]})
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave at once: a lingering non-daemon thread (a telemetry sampler, a compile pool) must not turn a
    # finished measurement into a timeout. The parent cleans up the process group.
    os._exit(code)
