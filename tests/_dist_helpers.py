"""Helpers for the multi-process tests: run dlbench in a real subprocess, start a rendezvous host on a port no other
process holds, list leftovers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")

# What a process that could not bind its port prints (Python's OSError, torch's DistNetworkError).
PORT_TAKEN = ("address already in use", "eaddrinuse")


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
    """A port that was free a moment ago. Any other process may take it before ours binds it: a test that needs
    the port known in advance starts its listener with `start_listener`, which checks and retries; a lone
    process that hosts a store nobody else joins binds port 0 instead."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process `pid` accepts connections on (Linux /proc: its socket inodes, matched against the
    LISTEN rows of its network namespace's TCP tables)."""
    inodes = set()
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return set()
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        try:
            rows = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()  # sl local_address rem_address st ... inode (field 9); st 0A = LISTEN
            if len(fields) > 9 and fields[3] == "0A" and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def start_listener(command: Callable[[int], list[str]], log: Path, environ: dict[str, str],
                   wait_s: float = 90.0, attempts: int = 2) -> tuple[subprocess.Popen, int]:
    """Start `command(port)` on a free port and return (process, port) once that process itself listens on the
    port, so that whatever connects next reaches it and no other process.

    A port taken between `free_port()` and the bind makes the process fail with "address already in use": then
    it is tried again on another port (`attempts` in all). Any other end, or no listener within `wait_s`, fails
    the test with the process's output (`log`, written in the process's own session; stop it with
    `dlbench.runner.launchers.torchrun.tear_down`)."""
    for attempt in range(1, attempts + 1):
        port = free_port()
        with open(log, "wb") as out:
            proc = subprocess.Popen(command(port), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=environ, start_new_session=True)
        deadline = time.monotonic() + wait_s
        while port not in listening_ports(proc.pid):
            if proc.poll() is not None:
                break
            if time.monotonic() > deadline:
                _stop(proc)
                raise AssertionError(f"no listener on port {port} after {wait_s:g} s:\n{_tail(log)}")
            time.sleep(0.1)
        else:
            return proc, port
        output = _tail(log)
        if attempt < attempts and any(key in output.lower() for key in PORT_TAKEN):
            continue
        raise AssertionError(f"exited with code {proc.returncode} before listening on port {port} "
                             f"(attempt {attempt} of {attempts}):\n{output}")
    raise AssertionError("unreachable")  # pragma: no cover


def _stop(proc: subprocess.Popen) -> None:
    from dlbench.runner.launchers.torchrun import tear_down

    tear_down(proc)


def _tail(path: Path, n_chars: int = 4000) -> str:
    return path.read_bytes()[-n_chars:].decode("utf-8", "replace")


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
