"""The fault campaign's scenarios: each runs real `dlbench` processes, injects one fault and counts the results
stored before and after it. `tests/test_faults.py` asserts on what each returns; `benchmarks/fault_campaign.py`
prints them as the reliability table of `benchmarks/README.md`.

Every scenario takes a fresh folder (its DLBENCH_HOME) and returns a `Row`:
- `before`: results in the database when the fault hit (or, for a fault in place from the start, beforehand);
- `after`: results in the database once the command ended (for a database that cannot be written: the JSON
  copies in the results folder, which `dlbench results import` loads later);
- `lost`: results that were finished but are kept nowhere (goal 0);
- `orphans`: processes the scenario started that outlived it (goal 0), found by a marker in their environment
  (a /proc scan, no psutil);
plus what each test checks in `details` (exit code, stderr, statuses, the `results list` line...).

Workloads come from `fault_workloads` and `mg_fault_workloads` (DLBENCH_PLUGINS). Linux only (/proc, signals);
the read-only and full-disk scenarios mount a small tmpfs and need root (`Skip` says so otherwise).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TESTS_DIR = Path(__file__).resolve().parent
SRC_DIR = TESTS_DIR.parent / "src"
# The smallest sweep that still trains: tiny models, one warm-up step, two measured steps, one repeat.
FAST = ["--tiny", "--warmup", "1", "--steps", "2", "--repeats", "1", "-p", "fp32", "--device", "cpu", "--quiet"]
MARKER = "DLBENCH_FAULT_CAMPAIGN"  # in the environment of every process a scenario starts


class Skip(Exception):
    """The scenario cannot run here (the reason says why)."""


@dataclass
class Row:
    fault: str
    before: int
    after: int
    lost: int
    orphans: int
    details: dict[str, Any] = field(default_factory=dict)


def environ(home: Path, marker: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DLBENCH_DB", "DLBENCH_DEBUG", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                        "MASTER_PORT", "TORCHELASTIC_RUN_ID")}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC_DIR), str(TESTS_DIR)])
    env["DLBENCH_PLUGINS"] = "fault_workloads,mg_fault_workloads"
    env["DLBENCH_HOME"] = str(home)
    env["OMP_NUM_THREADS"] = "1"
    env[MARKER] = marker
    env.update(extra)
    return env


def dlbench(home: Path, marker: str, *args: str, **extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dlbench", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=environ(home, marker, **extra))


def finish(proc: subprocess.Popen, timeout: float = 240) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out, err


def live_processes(marker: str) -> list[int]:
    """Live (non-zombie) processes with `MARKER=marker` in their environment, other than this one."""
    needle = f"{MARKER}={marker}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in env and state != b"Z":
            found.append(int(entry))
    return found


def orphans(marker: str, grace_s: float = 10.0) -> int:
    """How many of the scenario's processes are still alive `grace_s` after it ended (the kernel's parent-death
    signal and the launchers' tear-down take a moment)."""
    deadline = time.monotonic() + grace_s
    while (left := live_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:  # the test says so; nothing is left behind on the machine either
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(left)


def db_url(home: Path) -> str:
    return f"sqlite:///{home / 'dlbench.db'}"


def stored(url: str) -> int:
    """Results in the database at `url` (every run's, cut short or not)."""
    from dlbench.store import open_store

    with open_store(url) as store:
        return sum(run["num_results"] for run in store.list_runs())


def listed(home: Path, url: str | None = None) -> list[dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "dlbench", "results", "list", "--json",
                           *(["--db", url] if url else [])], capture_output=True, text=True, timeout=60,
                          env=environ(home, "list"))
    return json.loads(proc.stdout) if proc.returncode == 0 else []


def list_table(home: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "dlbench", "results", "list"], capture_output=True, text=True,
                          timeout=60, env=environ(home, "list", COLUMNS="200"))
    return proc.stdout


def json_copies(home: Path) -> int:
    """Results in the JSON copies of the results folder (what `dlbench results import` would load)."""
    folder = home / "results"
    return sum(len(json.loads(p.read_text())["results"]) for p in folder.glob("*.json")) if folder.is_dir() else 0


def wait_for(check: Callable[[], bool], proc: subprocess.Popen, what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if proc.poll() is not None:
            raise AssertionError(f"dlbench ended before {what}: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def seed_document(hostname: str = "seed", results: int = 2) -> dict[str, Any]:
    """A schema-valid document of an earlier run (`store_docs`), to show that a fault leaves old runs alone."""
    import store_docs
    from dlbench.schema import upgrade

    doc = store_docs.document(results=[store_docs.result(seed=i) for i in range(results)])
    doc["environment"]["hostname"] = hostname
    return upgrade(doc)


# -------------------------------------------------------------------------------------------- scenarios


def parent_sigkill(home: Path) -> Row:
    """SIGKILL of the `dlbench run` parent while its second configuration runs: the first stays stored, the
    worker dies with the parent, and `results list` shows the run as cut short."""
    marker, pidfile = uuid.uuid4().hex, home / "hang.pid"
    proc = dlbench(home, marker, "run", *FAST, "-w", "resnet50", "-w", "fault-hang",
                   DLBENCH_FAULT_PIDFILE=str(pidfile))
    wait_for(pidfile.exists, proc, "the second configuration started")
    worker = int(pidfile.read_text().split()[0])
    before = stored(db_url(home))
    proc.kill()
    code, _, err = finish(proc)
    left = orphans(marker)
    after = stored(db_url(home))
    runs = listed(home)
    return Row("SIGKILL of the `dlbench run` parent mid-sweep", before, after, max(0, 1 - after), left,
               {"exit_code": code, "worker": worker, "runs": runs, "table": list_table(home), "home": home})


def worker_sigkill(home: Path) -> Row:
    """SIGKILL of the worker measuring the first configuration: recorded (SIGKILL named), the sweep goes on."""
    marker, pidfile = uuid.uuid4().hex, home / "hang.pid"
    proc = dlbench(home, marker, "run", *FAST, "-w", "fault-hang", "-w", "fault-oom",
                   DLBENCH_FAULT_PIDFILE=str(pidfile))
    wait_for(pidfile.exists, proc, "the worker started")
    before = stored(db_url(home))
    os.kill(int(pidfile.read_text().split()[0]), signal.SIGKILL)
    code, _, err = finish(proc)
    left = orphans(marker)
    after = stored(db_url(home))
    runs = listed(home)
    return Row("SIGKILL of a worker", before, after, max(0, 2 - after), left,
               {"exit_code": code, "stderr": err, "runs": runs, "home": home})


def ctrl_c(home: Path) -> Row:
    """SIGINT to the parent (Ctrl-C) during the second configuration: the run is stored as interrupted."""
    marker, pidfile = uuid.uuid4().hex, home / "hang.pid"
    proc = dlbench(home, marker, "run", *FAST, "-w", "fault-oom", "-w", "fault-hang",
                   DLBENCH_FAULT_PIDFILE=str(pidfile))
    wait_for(pidfile.exists, proc, "the second configuration started")
    before = stored(db_url(home))
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc)
    left = orphans(marker)
    after = stored(db_url(home))
    return Row("Ctrl-C (SIGINT to the parent)", before, after, max(0, 1 - after), left,
               {"exit_code": code, "stderr": err, "runs": listed(home), "home": home})


def torchrun_rank_killed(home: Path) -> Row:
    """`--device cpu --gpus 2`: rank 1 SIGKILLs itself at its third step (`mg-kill-rank`); the group is torn
    down and the configuration recorded with the failed rank; the next configuration still runs."""
    marker = uuid.uuid4().hex
    before = stored(db_url(home))
    proc = dlbench(home, marker, "run", *FAST, "--gpus", "2", "-w", "mg-kill-rank", "-w", "mg-tiny")
    code, _, err = finish(proc)
    left = orphans(marker)
    after = stored(db_url(home))
    return Row("a rank SIGKILLed under torchrun (`--gpus 2`)", before, after, max(0, 2 - after), left,
               {"exit_code": code, "stderr": err, "runs": listed(home), "home": home})


def host_oom(home: Path) -> Row:
    """A host allocation failure (a terabyte on the CPU): recorded as out of memory, as on a GPU."""
    marker = uuid.uuid4().hex
    before = stored(db_url(home))
    code, _, err = finish(dlbench(home, marker, "run", *FAST, "-w", "fault-host-oom"))
    left = orphans(marker)
    after = stored(db_url(home))
    return Row("host allocation failure on the CPU (2**40 bytes)", before, after, max(0, 1 - after), left,
               {"exit_code": code, "stderr": err, "runs": listed(home), "home": home})


@contextmanager
def small_tmpfs(where: Path, size: str = "4m"):
    """A tmpfs mounted at `where` for the block (root only: `Skip` otherwise)."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        raise Skip("mounting a tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise Skip(f"cannot mount a tmpfs here: {proc.stderr.strip() or proc.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _seed_database(url: str) -> int:
    from dlbench.store import open_store

    with open_store(url) as store:
        store.save_run(seed_document())
    return stored(url)


def _unwritable_database(home: Path, make_unwritable: Callable[[Path], None], fault: str) -> Row:
    """A run whose database (on a tmpfs of its own, holding an earlier run) cannot be written."""
    mount = home.parent / f"{home.name}-db"
    with small_tmpfs(mount):
        url = f"sqlite:///{mount / 'dlbench.db'}"
        before = _seed_database(url)
        make_unwritable(mount)
        database = _digest(mount / "dlbench.db")  # (SQLite may leave its empty -wal and -shm beside it)
        marker = uuid.uuid4().hex
        code, _, err = finish(dlbench(home, marker, "run", *FAST, "-w", "resnet50", "--db", url))
        left = orphans(marker)
        unchanged = _digest(mount / "dlbench.db") == database
        subprocess.run(["mount", "-o", "remount,rw", str(mount)], capture_output=True)
        for filler in mount.glob("filler*"):
            filler.unlink()
        after = stored(url)  # the earlier run is intact
        copies = json_copies(home)
    return Row(fault, before, after, max(0, 1 - copies), left,
               {"exit_code": code, "stderr": err, "errors": _error_lines(err), "json_results": copies,
                "db_unchanged": unchanged, "home": home})


def read_only_database(home: Path) -> Row:
    """The results database on a file system remounted read-only: the JSON copy kept, one `error:` line, the
    database as it was."""
    def remount(mount: Path) -> None:
        proc = subprocess.run(["mount", "-o", "remount,ro", str(mount)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise Skip(f"cannot remount a tmpfs read-only: {proc.stderr.strip()}")

    return _unwritable_database(home, remount, "results database read-only")


def full_disk_database(home: Path) -> Row:
    """The results database's disk full when the run is saved: the JSON copy kept, one `error:` line."""
    def fill(mount: Path) -> None:
        with open(mount / "filler", "wb") as fh:
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        for n in range(1, 64):  # the last few bytes too, in smaller pieces
            try:
                with open(mount / f"filler{n}", "wb") as fh:
                    fh.write(b"\0" * 512)
            except OSError:
                break

    return _unwritable_database(home, fill, "results database's disk full at save")


def corrupt_database(home: Path) -> Row:
    """A truncated and a garbage SQLite file: `results list`, `results import` and `run` refuse them with one
    `error:` line (or, for `run`, keep the JSON and say so) and never write to them."""
    from dlbench.jsonio import write_json_atomic

    good = home / "good.db"
    before = _seed_database(f"sqlite:///{good}")
    truncated, garbage = home / "truncated.db", home / "garbage.db"
    data = good.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    garbage.write_bytes(bytes(range(256)) * 64)
    doc_file = home / "import.json"
    write_json_atomic(doc_file, seed_document(hostname="imported", results=1))
    outcomes = []
    for path in (truncated, garbage):
        original = path.read_bytes()
        url = f"sqlite:///{path}"
        for args in (["results", "list", "--db", url], ["results", "import", str(doc_file), "--db", url]):
            proc = subprocess.run([sys.executable, "-m", "dlbench", *args], capture_output=True, text=True,
                                  timeout=60, env=environ(home, "corrupt"))
            outcomes.append({"file": path.name, "command": " ".join(args[:2]), "exit_code": proc.returncode,
                             "errors": _error_lines(proc.stderr), "traceback": "Traceback" in proc.stderr,
                             "unchanged": path.read_bytes() == original,
                             "side_files": sorted(p.name for p in home.glob(path.name + "-*"))})
    unchanged = all(o["unchanged"] for o in outcomes)
    return Row("truncated or garbage SQLite file", before, before if unchanged else -1, 0, 0,
               {"outcomes": outcomes, "home": home})


def two_writers(home: Path, writers: int = 2, runs_each: int = 3) -> Row:
    """Two `dlbench results import` into one new database at once (both create and migrate it, then write):
    every run stored, none twice."""
    from dlbench.jsonio import write_json_atomic

    folders = []
    for w in range(writers):
        folder = home / f"writer{w}"
        for r in range(runs_each):
            write_json_atomic(folder / f"run{r}.json", seed_document(hostname=f"writer{w}", results=2))
        folders.append(folder)
    url = db_url(home)
    marker = uuid.uuid4().hex

    def one(folder: Path) -> tuple[int, str]:
        proc = subprocess.run([sys.executable, "-m", "dlbench", "results", "import", str(folder), "--db", url],
                              capture_output=True, text=True, timeout=120, env=environ(home, marker))
        return proc.returncode, proc.stderr

    with ThreadPoolExecutor(writers) as pool:
        codes = list(pool.map(one, folders))
    left = orphans(marker)
    after = stored(url)
    runs = listed(home, url)
    expected = writers * runs_each * 2
    return Row(f"{writers} writers into one new database at once", 0, after, max(0, expected - after), left,
               {"codes": codes, "runs": len(runs), "distinct_runs": len({r["run_id"] for r in runs}),
                "expected": expected, "home": home})


def two_runs(home: Path) -> Row:
    """Two `dlbench run --tiny` at once into one new database: both runs stored."""
    marker = uuid.uuid4().hex
    procs = [dlbench(home, marker, "run", *FAST, "-w", "resnet50") for _ in range(2)]
    codes = [finish(proc)[0] for proc in procs]
    left = orphans(marker)
    after = stored(db_url(home))
    return Row("2 `dlbench run --tiny` into one new database at once", 0, after, max(0, 2 - after), left,
               {"codes": codes, "runs": listed(home), "home": home})


SCENARIOS: dict[str, Callable[[Path], Row]] = {
    "parent_sigkill": parent_sigkill,
    "worker_sigkill": worker_sigkill,
    "ctrl_c": ctrl_c,
    "torchrun_rank_killed": torchrun_rank_killed,
    "read_only_database": read_only_database,
    "full_disk_database": full_disk_database,
    "corrupt_database": corrupt_database,
    "two_writers": two_writers,
    "two_runs": two_runs,
    "host_oom": host_oom,
}
