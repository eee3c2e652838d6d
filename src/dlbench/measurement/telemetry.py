"""The telemetry sampler for the device a scenario measures on; telemetry never costs a measurement.

Exercise it with `PYTHONPATH=src python -c "from dlbench.measurement.telemetry import create_sampler;
print(create_sampler('cpu'))"`.

A scenario starts the sampler just before its measured repeats and stops it right after (in a `finally`, so an
OOM mid-measurement still stops its thread); the block it returns goes into the result as `telemetry`.
"""

from __future__ import annotations

from typing import Any


def create_sampler(device: str) -> tuple[Any, str | None]:
    """The telemetry sampler for `device`, or (None, reason) when the telemetry part is unavailable."""
    try:
        from dlbench.telemetry.sampler import create_sampler as factory
    except ImportError:
        return None, "telemetry module not available"
    try:
        return factory(device), None
    except Exception as exc:  # noqa: BLE001 - telemetry must never cost a measurement
        return None, f"telemetry sampler failed: {_one_line(exc)}"


def _one_line(exc: BaseException, limit: int = 300) -> str:
    """`Type: first line of the message`, shortened to `limit` characters (as the worker words errors)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    line = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."
