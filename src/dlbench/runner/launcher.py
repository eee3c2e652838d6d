"""torch.distributed's own launcher, tied to the dlbench process that starts it: `python -m
dlbench.runner.launcher --standalone --nproc-per-node 2 ... -m dlbench.runner.rank_worker JOB.json`.

This is `python -m torch.distributed.run` with the same arguments, run after asking the kernel to kill this
process when its parent dies (`worker.die_with_parent`, Linux PR_SET_PDEATHSIG). `dlbench run --gpus N` and
`dlbench comm` start the launcher in a session of its own and tear it down themselves on a timeout, a failure,
Ctrl-C or SIGTERM they handle; when they are killed outright (SIGKILL, the OOM killer, a SIGTERM that `comm`
does not catch) nothing else would stop it. The ranks already die with the launcher, so with this the whole
group goes.
"""

from __future__ import annotations

import runpy

from dlbench.runner.worker import die_with_parent


def main() -> None:
    die_with_parent()  # SIGKILL when dlbench dies, and exit now if it already has
    # sys.argv[1:] are torchrun's arguments; alter_sys sets argv[0] as `python -m torch.distributed.run` would.
    runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
