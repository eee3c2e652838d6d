"""The planning child process: device facts, the environment block and the plan, without torch in the parent.

Exercised by every `dlbench run`; by hand: `python -m dlbench.runner.planning --job OPTIONS.json --result OUT.json`.

The parent of a sweep never imports torch: it would initialise the CUDA driver (and on some systems hold memory
on the GPU) for the whole sweep. Everything that needs torch for planning happens here, once, in a short-lived
child started like any other (`dlbench.runner.launchers`): `DeviceFacts.detect()` (probing the devices),
`environment.collect()` and `plan.build_plan()`. A user mistake found here (unknown workload, `--device cuda`
without CUDA) comes back as `{"bad_input": "..."}` and the parent raises it. ("Planning", not "probe": a probe is
one trial batch size of `--batch-size auto`, see `runner.batch_search`.)
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from dlbench.errors import BadInput
from dlbench.runner.plan import Plan, RunOptions

PLANNING_TIMEOUT_S = 300.0


@dataclass
class Planned:
    """What the planning child found: the plan, the environment block and the devices."""

    plan: Plan
    environment: dict[str, Any]
    devices: dict[str, Any]


def plan_in_child(options: RunOptions, timeout_s: float = PLANNING_TIMEOUT_S) -> Planned:
    """Run planning in a child process; BadInput from there is raised here, Ctrl-C as KeyboardInterrupt."""
    from dlbench.runner.launchers import Job, launch

    outcome = launch(Job("dlbench.runner.planning", options.to_dict(), what="the planning child"), timeout_s)
    if outcome.status == "interrupted":
        raise KeyboardInterrupt(outcome.signal)
    if outcome.status == "timeout":
        raise RuntimeError(f"planning the run took longer than {timeout_s:.0f} s (torch import hung?)")
    if outcome.status != "ok":
        raise RuntimeError(f"planning the run failed: {outcome.error}")
    data = outcome.result
    if "bad_input" in data:
        raise BadInput(data["bad_input"])
    if "error" in data:
        raise RuntimeError(f"planning the run failed: {data['error']}")
    return Planned(plan=Plan.from_dict(data["plan"]), environment=data["environment"], devices=data["devices"])


def main(argv: list[str]) -> int:
    from dlbench.jsonio import write_json_atomic
    from dlbench.runner.plan import DeviceFacts, build_plan
    from dlbench.telemetry.environment import collect

    parser = argparse.ArgumentParser(prog="python -m dlbench.runner.planning", description=__doc__.splitlines()[0])
    parser.add_argument("--job", required=True, help="a JSON file holding the run options")
    parser.add_argument("--result", required=True, help="where to write the plan, environment and devices")
    parser.add_argument("--progress-fd", type=int, default=None, help="unused: planning reports no progress")
    args = parser.parse_args(argv)
    try:
        with open(args.job, encoding="utf-8") as f:
            options = RunOptions.from_dict(json.load(f))
        facts = DeviceFacts.detect()
        plan = build_plan(options, facts)
        data: dict[str, Any] = {"plan": plan.to_dict(), "environment": collect(),
                                "devices": {"cuda": facts.cuda, "mps_available": facts.mps_available,
                                            "hip": facts.hip}}
    except BadInput as exc:
        data = {"bad_input": exc.format_message()}
    except Exception as exc:  # noqa: BLE001 - reported by the parent as one line
        traceback.print_exc()
        data = {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"}
    write_json_atomic(args.result, data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
