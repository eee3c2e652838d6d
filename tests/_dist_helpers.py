"""Helpers for the multi-process tests: run dlbench in a real subprocess, find free ports, list leftovers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
                        "MASTER_PORT", "TORCHELASTIC_RUN_ID")}
    out["PYTHONPATH"] = SRC + os.pathsep + out.get("PYTHONPATH", "")
    out["OMP_NUM_THREADS"] = "1"
    out.update(extra)
    return out


def dlbench(*args: str, timeout: float = 120, **extra_env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dlbench", *args], capture_output=True, text=True,
                          timeout=timeout, env=env(**extra_env))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def processes_with(marker: str) -> list[int]:
    """PIDs whose command line or environment mentions `marker` (Linux /proc), other than this process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            data = (entry / "environ").read_bytes() + (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in data:
            found.append(int(entry.name))
    return found
