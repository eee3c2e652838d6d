"""Verdicts on the outputs of h100_plan.sh's `setup` step: one line per item, exit code 1 when something failed.

    python3 benchmarks/h100_plan_check.py doctor "$OUT/setup-doctor.json"    # a `fail` check fails
    python3 benchmarks/h100_plan_check.py run "$OUT/setup-smoke.json"        # a configuration not `ok` fails

`run --allow-skipped` accepts `skipped` configurations (the plan's dry run: a CPU has no tf32). A GPU result
without telemetry is printed as a warning, not failed: the numbers are still right.
No torch is imported.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _load(path: str) -> dict[str, Any] | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"FAIL {path}: cannot read it ({exc})")
        return None
    return data if isinstance(data, dict) else None


def check_doctor(path: str) -> int:
    report = _load(path)
    if report is None or not isinstance(report.get("checks"), list):
        print(f"FAIL {path}: not `dlbench doctor --json` output")
        return 1
    for check in report["checks"]:
        print(f"doctor {str(check.get('verdict', '?')):<4} {check.get('title')}: {check.get('message')}")
    failed = [c.get("title") for c in report["checks"] if c.get("verdict") == "fail"]
    if failed:
        print(f"FAIL dlbench doctor: {', '.join(map(str, failed))}")
    return 1 if failed else 0


def check_run(path: str, allow_skipped: bool = False) -> int:
    doc = _load(path)
    if doc is None or not isinstance(doc.get("results"), list):
        print(f"FAIL {path}: not a dlbench result document")
        return 1
    accepted = ("ok", "skipped") if allow_skipped else ("ok",)
    bad = 0
    for result in doc["results"]:
        result = result if isinstance(result, dict) else {}
        label = f"{result.get('workload')} {result.get('precision')} compile={result.get('compile')}"
        status = result.get("status")  # a broken document may have none: printed as "None" and failed
        line = f"run {str(status):<7} {label}"
        if status not in accepted:
            bad += 1
            line += f": {result.get('error')}"
        elif status == "ok" and str(result.get("device", "")).startswith("cuda"):
            telemetry = result.get("telemetry") or {}
            if not telemetry.get("available"):
                line += f" (warning: no telemetry: {telemetry.get('reason') or result.get('telemetry_reason')})"
            if result.get("start_temperature_c") is None:
                line += " (warning: no start temperature)"
        print(line)
    if not doc["results"]:
        print(f"FAIL {path}: no results")
        return 1
    if bad:
        print(f"FAIL dlbench run: {bad} of {len(doc['results'])} configuration(s) not {' or '.join(accepted)}")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("doctor", "run"))
    parser.add_argument("path")
    parser.add_argument("--allow-skipped", action="store_true", help="accept skipped configurations (run)")
    args = parser.parse_args(argv)
    if args.kind == "doctor":
        return check_doctor(args.path)
    return check_run(args.path, args.allow_skipped)


if __name__ == "__main__":
    sys.exit(main())
