"""`dlbench reference list` filters: workload names in any case, a known workload nobody published lists nothing
(exit 0), an unknown one is bad input with a hint.

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_reference_list.py`.
"""

from __future__ import annotations

import json

from cli_helpers import cli
from test_hostile_input import assert_bad_input


def test_reference_list_takes_workload_names_in_any_case_and_a_known_one_with_no_rows_is_no_error(capsys):
    # `-w RESNET50` was "error: no published results for workload 'RESNET50'", though run, estimate and advise
    # take any case; `-w bert-base-mlm` (a dlbench workload nobody published) exited 2 as if it were unknown,
    # while a GPU with nothing published lists nothing and exits 0 (docs/report.md: unknown names exit 2).
    code, out, err = cli(capsys, "reference", "list", "-w", "RESNET50", "--gpu", "RTX 4090", "-p", "amp-fp16",
                         "--json")
    assert code == 0, err
    assert {(r["workload"], r["num_gpus"]) for r in json.loads(out)} == {("resnet50", 1), ("resnet50", 2)}
    code, out, err = cli(capsys, "reference", "list", "-w", "bert-base-mlm")
    assert (code, err) == (0, "") and "No published results match these filters." in out
    assert_bad_input(*cli(capsys, "reference", "list", "-w", "resnet"), "unknown workload 'resnet'",
                     "did you mean resnet50?")
