"""Two hosts, not one: a two-node torchrun run of `dlbench run` across two network namespaces joined by a veth
pair, so that the rendezvous, gloo's traffic and a lost node cross a real network interface instead of loopback.

Each namespace is a "host" with one address (10.231.0.1 and 10.231.0.2, on the veth pair and nowhere else). Needs
root (`ip netns add`); skipped with `ip`'s own error where namespaces cannot be made (no CAP_SYS_ADMIN, a
container without them, no iproute2).

    PYTHONPATH=src python -m pytest -q tests/test_netns.py
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from _dist_helpers import env, start_listener
from dlbench.runner.launchers.torchrun import tear_down

pytestmark = pytest.mark.slow

SUBNET = "10.231.0"
# A node that never comes fails its rendezvous after this long (torch's default is 600 s).
JOIN_TIMEOUT_S = 45


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


class Host:
    """One network namespace with one end of the veth pair."""

    def __init__(self, ns: str, link: str, addr: str) -> None:
        self.ns, self.link, self.addr = ns, link, addr

    def command(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns, *argv]

    def pids(self) -> list[int]:
        return [int(p) for p in _ip("netns", "pids", self.ns).stdout.split()]

    def link_bytes(self) -> int:
        """Bytes received on this host's end of the veth pair."""
        out = subprocess.run(self.command(["cat", f"/sys/class/net/{self.link}/statistics/rx_bytes"]),
                             capture_output=True, text=True, timeout=30)
        return int(out.stdout)

    def kill_all(self) -> None:
        """SIGKILL every process in the namespace: the host is gone."""
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture(scope="module")
def hosts():
    """Two namespaces joined by a veth pair; deleted afterwards (with anything still running in them)."""
    if shutil.which("ip") is None:
        pytest.skip("netns: the `ip` command (iproute2) is not installed")
    tag = f"dlb{os.getpid()}"
    made: list[Host] = []
    try:
        for side, n in (("a", 1), ("b", 2)):
            ns = f"{tag}{side}"
            added = _ip("netns", "add", ns)
            if added.returncode != 0:
                pytest.skip(f"netns: `ip netns add {ns}` is not permitted here: {added.stderr.strip()}")
            made.append(Host(ns, f"{tag}{side}", f"{SUBNET}.{n}"))
        a, b = made
        steps = [("link", "add", a.link, "type", "veth", "peer", "name", b.link)]
        for host in made:
            steps += [("link", "set", host.link, "netns", host.ns),
                      ("-n", host.ns, "addr", "add", f"{host.addr}/24", "dev", host.link),
                      ("-n", host.ns, "link", "set", host.link, "up"),
                      ("-n", host.ns, "link", "set", "lo", "up")]
        for step in steps:
            done = _ip(*step)
            if done.returncode != 0:
                pytest.skip(f"netns: `ip {' '.join(step)}` failed: {done.stderr.strip()}")
        yield a, b
    finally:
        for host in made:
            host.kill_all()
            time.sleep(0.2)
            _ip("netns", "del", host.ns)  # takes its end of the veth pair, and so the pair, along
        left = [h.ns for h in made if h.ns in _ip("netns", "list").stdout.split()]
        assert not left, f"namespaces left behind: {left}"


def _env(home: Path, host: Host, name: str, **extra: str) -> dict[str, str]:
    tests_dir = str(Path(__file__).resolve().parent)
    # gloo binds the interface named here; by default it resolves the host name, which is 127.0.0.1 in both
    # namespaces and reaches neither peer.
    base = env(DLBENCH_HOME=str(home), DLBENCH_PLUGINS="mg_fault_workloads", DLBENCH_NODE_NAME=name,
               GLOO_SOCKET_IFNAME=host.link, **extra)
    base["PYTHONPATH"] = base["PYTHONPATH"] + os.pathsep + tests_dir
    return base


def _agent(host: Host, rdzv: Host, port: int, run_id: str, run_args: list[str]) -> list[str]:
    """One torchrun agent ("node") in `host`'s namespace; `rdzv` hosts the c10d rendezvous store."""
    conf = f"is_host={str(host is rdzv).lower()},join_timeout={JOIN_TIMEOUT_S}"
    return host.command([sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
                         "--rdzv-backend", "c10d", "--rdzv-endpoint", f"{rdzv.addr}:{port}", "--rdzv-id", run_id,
                         "--rdzv-conf", conf, "--local-addr", host.addr, "--max-restarts", "0",
                         "-m", "dlbench", "run", "--device", "cpu", *run_args])


def _start_pair(hosts, home: Path, tmp_path: Path, run_args: list[str], **extra: str):
    """Both agents started, node-a (which hosts the rendezvous) first: returns ([node-a, node-b], logs)."""
    a, b = hosts
    run_id = uuid.uuid4().hex[:8]
    logs = [tmp_path / "node-a.log", tmp_path / "node-b.log"]
    node_a, port = start_listener(lambda p: _agent(a, a, p, run_id, run_args), logs[0],
                                  _env(home, a, "node-a", **extra))
    with open(logs[1], "wb") as log:
        node_b = subprocess.Popen(_agent(b, a, port, run_id, run_args), stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True, env=_env(home, b, "node-b", **extra))
    return [node_a, node_b], logs


def _wait(agents, seconds: float) -> list[int | None]:
    deadline = time.monotonic() + seconds
    try:
        for agent in agents:
            agent.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    return [a.poll() for a in agents]


def _outputs(logs: list[Path]) -> str:
    return "\n".join(f"--- {log.stem}:\n{log.read_text(errors='replace')[-3000:]}" for log in logs)


def _stored(home: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((home / "results").glob("*.json"))]


def test_two_hosts_make_one_two_node_run(hosts, isolated_home, tmp_path):
    a, b = hosts
    before = [a.link_bytes(), b.link_bytes()]
    agents, logs = _start_pair(hosts, isolated_home, tmp_path, ["--tiny", "-w", "resnet50", "-p", "fp32",
                                                                "--warmup", "1", "--steps", "2", "--repeats", "1",
                                                                "--quiet", "--timeout", "90"])
    try:
        codes = _wait(agents, 240)
    finally:
        for agent in agents:
            tear_down(agent)
    assert codes == [0, 0], _outputs(logs)
    (doc,) = _stored(isolated_home)
    (result,) = doc["results"]
    assert result["status"] == "ok" and result["workload"] == "resnet50"
    assert result["world_size"] == 2 and result["nodes"] == 2
    assert {r["hostname"] for r in result["ranks"]} == {"node-a", "node-b"}
    assert sorted(r["node_rank"] for r in result["ranks"]) == [0, 1]
    # The rendezvous and the gradients went over the veth pair, the only way between the namespaces: both ends
    # received far more than a few packets.
    received = [after - start for after, start in zip([a.link_bytes(), b.link_bytes()], before, strict=True)]
    assert min(received) > 100_000, received


def test_a_lost_host_is_reported_by_the_other(hosts, isolated_home, tmp_path):
    # Rank 1 stops at the third step of the second configuration; then its whole host goes: every process in its
    # namespace SIGKILLed. Rank 0, waiting on it in an all-reduce, sees the connection close and stores the first
    # configuration plus the lost one, blaming the peer, not itself.
    a, b = hosts
    agents, logs = _start_pair(hosts, isolated_home, tmp_path, ["-w", "mg-tiny", "-w", "mg-hang-rank", "--warmup",
                                                                "1", "--steps", "3", "--repeats", "1", "--quiet",
                                                                "--timeout", "120"], DLBENCH_FAULT_RANK="1")
    try:
        deadline = time.monotonic() + 180
        while not any(d["results"] for d in _stored(isolated_home)):
            assert all(p.poll() is None for p in agents) and time.monotonic() < deadline, _outputs(logs)
            time.sleep(0.2)
        time.sleep(2)  # into the second configuration
        # The host that holds rank 1 (c10d decides which node is which).
        lost = next(h for h in (a, b) if any(_has_env(pid, "RANK=1") for pid in h.pids()))
        survivor_index = 0 if lost is b else 1
        lost.kill_all()
        survivor = agents[survivor_index]
        survivor.wait(timeout=90)
    finally:
        for agent in agents:
            tear_down(agent)
    output = _outputs(logs)
    assert survivor.returncode != 0, output
    (doc,) = _stored(isolated_home)
    ok, killed = doc["results"]
    assert ok["status"] == "ok" and ok["nodes"] == 2, output
    assert killed["workload"] == "mg-hang-rank" and killed["status"] == "error", output
    assert killed["error"].startswith("rank 0 lost its connection to another rank"), killed["error"]
    assert lost.addr in killed["error"]  # gloo names the peer it lost: the other host's address, over the veth
    assert any(note.startswith("stopped: rank 0 lost its connection") for note in doc["notes"]), doc["notes"]


def _has_env(pid: int, entry: str) -> bool:
    try:
        return entry.encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
