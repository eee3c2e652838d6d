"""The manual's `dlbench compare` example (docs/report.md) is what the command prints for the same two runs.

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_docs_compare_example.py`.
"""

from __future__ import annotations


def test_the_readme_compare_example_is_what_the_command_prints(capsys, monkeypatch):
    # The manual's example (docs/report.md) still showed an older layout ("A 1cddfcb4  B 33134b93" columns, "p (Welch / MWU)",
    # "compile=off bs=256" labels) that `dlbench compare` no longer prints.
    from pathlib import Path

    from dlbench.store import open_store
    from report_docs import readme_compare, run_cli

    store = open_store()
    for doc in readme_compare():
        store.save_run(doc)
    store.close()
    monkeypatch.setenv("COLUMNS", "110")
    code, out, _ = run_cli(capsys, "compare", "1cddfcb4", "latest")
    assert code == 0
    readme = (Path(__file__).resolve().parent.parent / "docs" / "report.md").read_text(encoding="utf-8")
    block = readme.split("$ dlbench compare 1cddfcb4 latest\n", 1)[1].split("```", 1)[0]
    assert [line.rstrip() for line in out.splitlines() if line.strip()] == block.splitlines()
