"""Bad arguments to `dlbench run` are one `error:` line and exit code 2 before anything runs, with a hint at the
name meant.

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_run_arguments.py`.
"""

from __future__ import annotations

import json

import pytest

from cli_helpers import cli
from test_hostile_input import assert_bad_input


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_run_seed_outside_numpys_range_is_bad_input_before_anything_runs(capsys, seed):
    # It used to run every configuration, each failing in its worker with "error: ValueError: Seed must be between
    # 0 and 2**32 - 1", and exit 1 with a stored run of errors.
    assert_bad_input(*cli(capsys, "run", "--tiny", "-w", "resnet50", "--seed", seed), "--seed", seed)
    code, out, _ = cli(capsys, "results", "list", "--json")
    assert code == 0 and json.loads(out) == []


@pytest.mark.parametrize(("name", "hint"), [
    ("resnet50-tiny", "use -w resnet50 --tiny"),  # the tiny flavour is a flag, not a workload name
    ("bert-base-squad-tiny", "use -w bert-base-squad --tiny"),
    ("resnet5", "did you mean resnet50?"),
    ("bert-large", "did you mean bert-large-mlm, bert-large-squad?"),
])
def test_run_unknown_workload_suggests_the_name_meant(capsys, name, hint):
    code, out, err = cli(capsys, "run", "-w", name)
    assert code == 2 and out == ""
    assert err.startswith(f"error: unknown workload '{name}'") and err.count("\n") == 1
    assert hint in err
