"""Tables in an 80-column terminal keep every number and name whole: `results list`, `advise`, `gpus`
(`results show` in 80 columns is `test_results_show.py`).

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_narrow_terminal.py`.
"""

from __future__ import annotations

import store_docs
from cli_helpers import ANSI, cli, store_doc


def test_list_in_80_columns_keeps_run_ids_and_dates_whole(capsys, monkeypatch):
    # The run id, the one thing to copy from the list, was cut to "8128e9311…" and the date split in two.
    docs = [store_doc(store_docs.document(env=store_docs.environment(gpu_name="NVIDIA A100-SXM4-80GB", gpu_count=8,
                                                                  hostname="gpu-node-017.cluster.example.org")))
            for _ in range(2)]
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli(capsys, "results", "list")
    text = ANSI.sub("", out)
    assert code == 0
    assert max(len(line) for line in text.splitlines()) <= 80
    for doc in docs:
        assert doc["run_id"][:12] in text
    assert "2026-11-22 04:00" in text


def test_advise_in_80_columns_cuts_no_number(capsys, monkeypatch):
    # The throughput band was cut to "(97-1…" and "estimated" to "estima…" in an 80-column terminal.
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = cli(capsys, "advise", "--top", "5", "--no-runs")
    assert code == 0, err
    text = ANSI.sub("", out)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    code, js, _ = cli(capsys, "advise", "--top", "5", "--no-runs", "--json")
    import json

    for option in json.loads(js)["options"][:5]:
        assert f"{option['samples_per_s_low']:,.0f}-{option['samples_per_s_high']:,.0f}" in text
        assert option["throughput_kind"] in text


def test_gpu_list_in_80_columns_cuts_no_name(capsys, monkeypatch):
    # Architectures read "Blackw…", "Lovela…" and the RTX PRO 6000 "RTX PRO Blackwe…" in an 80-column terminal.
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = cli(capsys, "gpus")
    assert code == 0, err
    text = ANSI.sub("", out)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "Blackwell" in text and "Lovelace" in text
