"""The planning child process: device facts, the environment block and the plan, without torch in the parent.

Exercised by every `dlbench run`; by hand: `python -m dlbench.runner.probe OPTIONS_JSON OUT_PATH`.

The parent of a sweep never imports torch: it would initialise the CUDA driver (and on some systems hold memory
on the GPU) for the whole sweep. Everything that needs torch for planning happens here, once, in a short-lived
child: `DeviceFacts.detect()`, `environment.collect()` and `plan.build_plan()`. A user mistake found here
(unknown workload, `--device cuda` without CUDA) comes back as `{"bad_input": "..."}` and the parent raises it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlbench.errors import BadInput
from dlbench.runner.plan import Plan, RunOptions

PROBE_TIMEOUT_S = 300.0


@dataclass
class ProbeResult:
    plan: Plan
    environment: dict[str, Any]
    devices: dict[str, Any]


def probe_in_child(options: RunOptions, timeout_s: float = PROBE_TIMEOUT_S) -> ProbeResult:
    """Run planning in a child process; BadInput from there is raised here."""
    with tempfile.TemporaryDirectory(prefix="dlbench-probe-") as tmp:
        out_path = Path(tmp) / "probe.json"
        cmd = [sys.executable, "-m", "dlbench.runner.probe", json.dumps(options.to_dict()), str(out_path)]
        try:
            proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  timeout=timeout_s, env=child_env(), start_new_session=True)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"planning the run took longer than {timeout_s:.0f} s (torch import hung?)") from None
        if not out_path.exists():
            last = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
            raise RuntimeError(f"planning the run failed: {last[0]}")
        data = json.loads(out_path.read_text(encoding="utf-8"))
    if "bad_input" in data:
        raise BadInput(data["bad_input"])
    if "error" in data:
        raise RuntimeError(f"planning the run failed: {data['error']}")
    return ProbeResult(plan=Plan.from_dict(data["plan"]), environment=data["environment"],
                       devices=data["devices"])


def child_env() -> dict[str, str]:
    """The environment for child processes: ours, with `src` importable when running from a checkout."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parent.parent.parent)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    # From a source checkout (`PYTHONPATH=src`) the children need `src` too; an installed package is found anyway.
    if not package_root.endswith("-packages") and package_root not in paths:
        paths.insert(0, package_root)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def main(argv: list[str]) -> int:
    from dlbench.jsonio import write_json_atomic
    from dlbench.runner.plan import DeviceFacts, build_plan
    from dlbench.telemetry.environment import collect

    options_json, out_path = argv
    try:
        facts = DeviceFacts.detect()
        plan = build_plan(RunOptions.from_dict(json.loads(options_json)), facts)
        data: dict[str, Any] = {"plan": plan.to_dict(), "environment": collect(),
                                "devices": {"cuda": facts.cuda, "mps_available": facts.mps_available,
                                            "hip": facts.hip}}
    except BadInput as exc:
        data = {"bad_input": exc.format_message()}
    except Exception as exc:  # noqa: BLE001 - reported by the parent as one line
        traceback.print_exc()
        data = {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"}
    write_json_atomic(out_path, data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
