"""The fault campaign as a table: `PYTHONPATH=src:tests python benchmarks/fault_campaign.py [--json]`.

Runs every scenario of `tests/fault_scenarios.py` (the same ones `tests/test_faults.py` asserts on) with real
`dlbench` processes, each in a fresh temporary folder, and prints one row per fault: the results stored when
the fault hit, after the command ended, those lost (finished but kept nowhere) and the processes left behind.
Goal: 0 lost, 0 orphans. About 2 minutes on 2 CPU cores; the read-only and full-disk rows need root (tmpfs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import fault_scenarios as fs  # noqa: E402 - after the path above


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    parser.add_argument("--only", action="append", choices=sorted(fs.SCENARIOS), help="run only this scenario "
                        "(repeatable)")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="dlbench-faults-") as tmp:
        os.environ["DLBENCH_HOME"] = str(Path(tmp) / "campaign")  # this process's own writes (seeding)
        os.environ.pop("DLBENCH_DB", None)
        for name in args.only or list(fs.SCENARIOS):
            home = Path(tmp) / name
            home.mkdir()
            started = time.monotonic()
            try:
                row = fs.SCENARIOS[name](home)
            except fs.Skip as exc:
                print(f"{name}: skipped ({exc})", file=sys.stderr)
                continue
            rows.append({"scenario": name, "fault": row.fault, "before": row.before, "after": row.after,
                         "lost": row.lost, "orphans": row.orphans, "seconds": round(time.monotonic() - started, 1)})
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print("| fault | results before | after | lost | orphans |")
        print("|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['fault']} | {r['before']} | {r['after']} | {r['lost']} | {r['orphans']} |")
        print(f"\n{len(rows)} faults, {sum(r['lost'] for r in rows)} results lost, "
              f"{sum(r['orphans'] for r in rows)} orphans", file=sys.stderr)
    return 0 if all(r["lost"] == 0 and r["orphans"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
