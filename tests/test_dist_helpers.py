"""The multi-process tests' port helper: a listener is handed over only once it holds its port itself, and a port
taken by another process in between is retried (the race behind a two-node rendezvous that hung 240 s)."""

from __future__ import annotations

import os
import socket
import sys

import pytest

import _dist_helpers
from _dist_helpers import listening_ports, start_listener
from dlbench.runner.launchers.torchrun import tear_down

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

SERVER = ("import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); "
          "time.sleep(120)")


def _server(port: int) -> list[str]:
    return [sys.executable, "-c", SERVER, str(port)]


@pytest.fixture
def held_port():
    """A port another process (here: this one) listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _ports(monkeypatch, *ports: int) -> None:
    queue = list(ports)
    real = _dist_helpers.free_port
    monkeypatch.setattr(_dist_helpers, "free_port", lambda: queue.pop(0) if queue else real())


def test_a_port_taken_before_the_bind_is_retried_on_another(monkeypatch, tmp_path, held_port):
    _ports(monkeypatch, held_port)  # as if another test's process took the port after free_port() chose it
    proc, port = start_listener(_server, tmp_path / "log", _dist_helpers.env())
    try:
        assert port != held_port
        assert listening_ports(proc.pid) == {port}
    finally:
        tear_down(proc)


def test_another_process_on_the_port_is_not_taken_for_ours(monkeypatch, tmp_path, held_port):
    # The port accepts connections, but not from our process: whoever connected now would reach a stranger.
    _ports(monkeypatch, held_port)
    with pytest.raises(AssertionError, match=f"no listener on port {held_port}"):
        start_listener(lambda port: [sys.executable, "-c", "import time; time.sleep(120)"], tmp_path / "log",
                       _dist_helpers.env(), wait_s=3)


def test_a_listener_that_fails_otherwise_is_not_retried(monkeypatch, tmp_path):
    starts = []

    def command(port: int) -> list[str]:
        starts.append(port)
        return [sys.executable, "-c", "raise SystemExit('bad configuration')"]

    with pytest.raises(AssertionError, match="bad configuration"):
        start_listener(command, tmp_path / "log", _dist_helpers.env())
    assert len(starts) == 1


def test_listening_ports_sees_this_process_only(held_port):
    assert held_port in listening_ports(os.getpid())
    assert held_port not in listening_ports(os.getppid())
