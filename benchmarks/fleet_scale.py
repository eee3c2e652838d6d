"""How long does `dlbench fleet` take for 100, 1,000 and 10,000 nodes? Synthetic fleets, timed as the CLI runs.

    PYTHONPATH=src python benchmarks/fleet_scale.py                 # 100, 1,000 and 10,000 nodes
    PYTHONPATH=src python benchmarks/fleet_scale.py --nodes 100 1000 --json

Each node's run is one result document as `dlbench run` writes it on one H100 (ResNet-50 amp-fp16 bs 256:
5 warm-up and 3 x 50 measured step times, a telemetry block), healthy nodes within +-1% of each other with 1%
step-to-step noise and 1% of them 10% slow. Timed per fleet size, each once (the figures are seconds of one run):

- `import`: `dlbench results import FOLDER` of the N files into a new SQLite database (one transaction).
- `fleet (files)`: `dlbench fleet FOLDER --json`, reading and validating the N files as the CLI does.
- `fleet (db)`: `dlbench fleet --db sqlite:///... --json`, loading every stored run from the database.
- `analysis`: `analysis.fleet.fleet_report` alone on documents already in memory (both CLI paths include it).
- `table`: `dlbench fleet --db ...` printing its table instead of JSON.

Every timed command runs in this process, after one small fleet has loaded the libraries, through the real entry point (`dlbench.cli.app.main`), its output
thrown away; the check at the end is that each path flagged exactly the planted slow nodes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

STEP_S = 0.100


def node_document(host: str, speed: float, rng: random.Random) -> dict:
    """One node's run at the current schema version (validated, as `dlbench run` writes it)."""
    from dlbench.schema import validate_document

    step = STEP_S / speed
    reps = [[max(step * 0.05, rng.gauss(step, step * 0.01)) for _ in range(50)] for _ in range(3)]
    tputs = [256 * len(r) / sum(r) for r in reps]
    flat = sorted(t for r in reps for t in r)
    mean = statistics.fmean(tputs)
    telemetry = {"available": True, "source": "nvml", "sample_interval_s": 0.1, "num_samples": 300,
                 "duration_s": 30.0, "power_mean_w": 690.0, "temperature_max_c": 71.0, "sm_clock_mean_mhz": 1980.0,
                 "gpu_utilization_mean_pct": 99.0, "throttle_reasons": {"sw_power_cap": 0.3}, "throttle_share": 0.3,
                 "power_limit_w": 700.0, "default_power_limit_w": 700.0, "pcie_link_gen_min": 5,
                 "pcie_link_width_min": 16, "pcie_link_gen_max": 5, "pcie_link_width_max": 16, "other_processes": []}
    result = {"workload": "resnet50", "precision": "amp-fp16", "compile": "off", "batch_size": 256, "seq_len": None,
              "device": "cuda:0", "world_size": 1, "status": "ok", "error": None, "flavour": "full", "unit": "images",
              "samples_per_s": mean, "samples_per_s_repeats": tputs, "cv": statistics.pstdev(tputs) / mean,
              "step_time_s": {"mean": statistics.fmean(flat), "median": statistics.median(flat),
                              "p5": flat[int(0.05 * (len(flat) - 1))], "p95": flat[int(0.95 * (len(flat) - 1))]},
              "warmup_step_times_s": [step * 3] + [step] * 4, "repeats": [{"step_times_s": r} for r in reps],
              "compile_time_s": None, "peak_memory_bytes": 30_123_456_789, "flops_per_sample": 24.3e9,
              "achieved_flops_per_s": mean * 24.3e9, "start_temperature_c": 41.0, "telemetry": telemetry}
    env = {"hostname": host, "os": "Linux-6.1-x86_64", "python_version": "3.11.7", "torch_version": "2.14.1",
           "cuda_version": "12.8", "cudnn_version": 91002, "nccl_version": [2, 27, 3],
           "driver_version": "570.133.20", "cpu_model": "Test CPU", "cpu_count": 64, "memory_bytes": 2 * 10**12,
           "gpus": [{"name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85_520_809_984, "compute_capability": "9.0",
                     "multiprocessor_count": 132}], "git_commit": None}
    return validate_document({"schema_version": 1, "run_id": uuid.UUID(int=rng.getrandbits(128)).hex,
                              "created_at": "2026-11-22T04:00:00Z", "dlbench_version": "0.1.0",
                              "environment": env, "results": [result]})


def make_fleet(count: int, seed: int = 15) -> tuple[list[dict], set[str]]:
    """`count` nodes, 1% of them (at least one) 10% slow."""
    rng = random.Random(seed)
    width = len(str(count))
    slow = {f"node{i:0{width}d}" for i in rng.sample(range(1, count + 1), max(1, count // 100))}
    docs = []
    for i in range(1, count + 1):
        host = f"node{i:0{width}d}"
        speed = min(1.025, max(0.975, rng.gauss(1.0, 0.01))) * (0.90 if host in slow else 1.0)
        docs.append(node_document(host, speed, rng))
    return docs, slow


def dlbench(*args: str) -> tuple[int, str, float]:
    """`dlbench ARGS` in this process: exit code, stdout, seconds."""
    from dlbench.cli.app import main

    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), time.perf_counter() - start


def measure(count: int, work: Path) -> dict:
    from dlbench.analysis.fleet import fleet_report

    docs, slow = make_fleet(count)
    folder = work / f"fleet-{count}"
    folder.mkdir()
    for doc in docs:
        (folder / f"{doc['run_id']}.json").write_text(json.dumps(doc))
    db = f"sqlite:///{work / f'fleet-{count}.db'}"
    row: dict = {"nodes": count, "slow_planted": len(slow),
                 "json_mb": sum(f.stat().st_size for f in folder.iterdir()) / 1e6}

    code, _, row["import_s"] = dlbench("results", "import", str(folder), "--db", db)
    assert code == 0, "import failed"
    start = time.perf_counter()
    report = fleet_report(docs)
    row["analysis_s"] = time.perf_counter() - start
    flagged = {"analysis": {f["host"] for f in report["flagged"]}}
    for name, args in (("files", (str(folder),)), ("db", ("--db", db))):
        code, out, row[f"fleet_{name}_s"] = dlbench("fleet", *args, "--json")
        assert code == 1, f"fleet ({name}) exited {code}"
        flagged[name] = {f["host"] for f in json.loads(out)["flagged"]}
    code, _, row["table_s"] = dlbench("fleet", "--db", db)
    for name, hosts in flagged.items():
        if hosts != slow:
            raise SystemExit(f"{count} nodes, {name}: flagged {sorted(hosts ^ slow)} wrongly")
    row["flagged_ok"] = True
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="dlfleet") as tmp:
        os.environ["DLBENCH_HOME"] = str(Path(tmp) / "home")  # the import keeps JSON copies there
        os.environ.pop("DLBENCH_DB", None)
        from dlbench.analysis.fleet import fleet_report

        fleet_report(make_fleet(10)[0])  # imports (SciPy's tests) once, outside the timings
        for count in args.nodes:
            work = Path(tmp) / str(count)
            work.mkdir()
            rows.append(measure(count, work))
            print(f"measured {count} nodes", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs; seconds, one run each")
    head = ("nodes", "JSON MB", "import", "fleet (files)", "fleet (db)", "analysis", "table")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---:" for _ in head) + "|")
    for r in rows:
        print(f"| {r['nodes']:,} | {r['json_mb']:.1f} | {r['import_s']:.2f} | {r['fleet_files_s']:.2f} | "
              f"{r['fleet_db_s']:.2f} | {r['analysis_s']:.2f} | {r['table_s']:.2f} |")


if __name__ == "__main__":
    main()
