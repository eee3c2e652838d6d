"""`dlbench results show` as a user reads it: in an 80-column terminal, on a CPU run, after an interrupted run,
piped to a file, with the tables `dlbench run` printed.

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_results_show.py`.
"""

from __future__ import annotations

import store_docs
from cli_helpers import cli, show_in_terminal, store_doc


def test_show_in_80_columns_cuts_no_number(capsys, monkeypatch):
    # Every number was cut to "87…", "0.…" in an 80-column terminal: 13 boxed columns did not fit.
    doc = store_doc(store_docs.document())
    text = show_in_terminal(capsys, monkeypatch, 80, "latest")
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    for r in doc["results"][:2]:
        assert f"{r['samples_per_s']:,.1f}" in text
        assert f"{r['step_time_s']['median'] * 1e3:,.1f}" in text
    assert "oom: simulated oom" in text.replace("\n", " ") or "simulated oom" in text


def test_show_marks_tiny_results_and_small_rates(capsys):
    # A --tiny CPU result read like a full-size ResNet-50, and its 0.009 TFLOP/s printed as "0.00".
    r = store_docs.result(seed=3)
    r.update(flavour="tiny", device="cpu", achieved_flops_per_s=9.1e9)
    store_doc(store_docs.document(results=[r], env=store_docs.environment(gpu_name=None)))
    code, out, _ = cli(capsys, "results", "show", "latest")
    assert code == 0
    assert "[tiny]" in out
    assert "0.0091" in out


def test_show_prints_notes_and_warnings(capsys):
    # An interrupted run and a noisy result looked complete and clean in `results show`.
    r = store_docs.result(seed=4)
    r["warnings"] = ["unstable: throughput varies 12.0% across repeats (CV > 5%)"]
    doc = store_docs.document(results=[r])
    doc["notes"] = ["interrupted (SIGINT) after 1 of 4 configurations"]
    store_doc(doc)
    code, out, _ = cli(capsys, "results", "show", "latest")
    assert code == 0
    assert "interrupted (SIGINT) after 1 of 4 configurations" in out
    assert "unstable: throughput varies 12.0%" in out


def test_show_piped_prints_each_warning_on_one_line(capsys):
    # Redirected to a file, a long warning was broken mid-sentence (at 200 columns for show, 130 for run).
    r = store_docs.result(seed=6)
    warning = ("unstable: throughput varies 38.7% across repeats (CV > 5%); check clocks, temperature and other "
               "load on the machine, or use more steps; " + "x" * 150)
    r["warnings"] = [warning]
    store_doc(store_docs.document(results=[r]))
    code, out, _ = cli(capsys, "results", "show", "latest")
    assert code == 0
    assert any(line.endswith(warning) for line in out.splitlines())


def test_show_telemetry_table_in_80_columns_cuts_nothing(capsys, monkeypatch):
    # The per-GPU telemetry table (added beside this pass) kept rich's boxed default: "configu…", "thrott…",
    # and the throttle reasons cut in an 80-column terminal.
    from dlbench.analysis.energy import combine_ranks
    from test_group_telemetry import two_node_group

    blocks, ranks = two_node_group()
    doc = store_docs.document()
    doc["results"][0].update(workload="bert-large-squad", seq_len=384, world_size=4, compile="max-autotune",
                             telemetry=combine_ranks(blocks, ranks))
    store_doc(doc)
    text = show_in_terminal(capsys, monkeypatch, 80, "latest")
    telemetry = text[text.index("GPU telemetry"):]
    assert "…" not in telemetry and max(len(line) for line in telemetry.splitlines()) <= 80
    assert "throttled" in telemetry and "bert-large-squad" in telemetry
    assert "thermal 40%" in telemetry  # GPU 1 on nodeB's reason, whole
    for b in blocks:
        assert f"{b['power_mean_w']:,.0f}" in telemetry and f"{b['temperature_max_c']:.0f}" in telemetry
    assert "GPU 1 on" in telemetry and "nodeB (rank" in telemetry  # the GPU's name wraps at spaces


def test_show_lists_package_versions_as_names_and_versions(capsys, monkeypatch):
    # The environment's package_versions (added with the GPU-path prep) printed as a Python dict repr.
    doc = store_docs.document()
    doc["environment"]["package_versions"] = {"torchvision": "0.26.0", "transformers": "5.17.0", "triton": None}
    store_doc(doc)
    text = " ".join(show_in_terminal(capsys, monkeypatch, 120, "latest").replace("\u2502", " ").split())
    assert "package_versions torchvision 0.26.0, transformers 5.17.0, triton -" in text
    assert "{'" not in text


def test_results_show_prints_the_scaling_table_run_printed(capsys):
    # docs/cli/results.md: `results show` prints "the table `dlbench run` prints"; after `run --gpus 1,2,4` run also printed
    # the data-parallel scaling table (ideal samples/s, efficiency), which `results show` left out.
    from dlbench.store import open_store
    from report_docs import make_document, make_result, run_cli

    results = [make_result(world_size=n, step_time_s=0.1 * (1 + 0.05 * n), seed=n) for n in (1, 2, 4)]
    for r in results[1:]:
        r["scaling_efficiency"] = r["samples_per_s"] / (r["world_size"] * results[0]["samples_per_s"])
    store = open_store()
    store.save_run(make_document(results))
    store.close()
    code, out, err = run_cli(capsys, "results", "show", "latest")
    assert code == 0, err
    assert "Data-parallel scaling" in out and "efficiency" in out
    assert f"{results[2]['scaling_efficiency']:.2f}" in out
