"""Run a module as `python -m MODULE ARGS...`, killed by the kernel when the process that started it dies:
`python -m dlbench.runner.launchers.tied dlbench.runner.worker --job JOB.json --result OUT.json`.

Every child dlbench starts goes through here (`launchers.tied_command`): the single-process worker, the planning
child, torch.distributed's launcher (`torch.distributed.run`) and, under it, each rank. The launchers start a
child in a session of its own and tear it down themselves on a timeout, a failure, Ctrl-C or SIGTERM they
handle; when dlbench is killed outright (SIGKILL, the OOM killer, a SIGTERM that `comm` does not catch) nothing
else would stop it. With Linux's PR_SET_PDEATHSIG each level dies with the one above, so no process outlives a
killed `dlbench run`, and the module run here needs to know nothing of how it was started.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys


def die_with_parent() -> None:
    """Linux: have the kernel kill this process when the parent dies, and exit now if it already has."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except Exception:  # noqa: BLE001 - best effort; the parent still kills the group
        return
    if os.getppid() == 1:  # parent died before prctl took effect
        os._exit(1)


def main() -> None:
    if len(sys.argv) < 2:
        print("usage: python -m dlbench.runner.launchers.tied MODULE [ARGS...]", file=sys.stderr)
        sys.exit(2)
    die_with_parent()  # SIGKILL when the parent dies, and exit now if it already has
    module = sys.argv[1]
    sys.argv = [sys.argv[0], *sys.argv[2:]]  # alter_sys sets argv[0] as `python -m MODULE` would
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
