"""Names from result documents and paths given on the command line are printed literally: `[bold]` or `[1]` in
them is text, never rich markup (`results show`, `compare`, `report`).

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_markup_in_names.py`.
"""

from __future__ import annotations

import store_docs
from cli_helpers import cli, store_doc


def test_show_does_not_read_markup_in_result_names(capsys):
    r = store_docs.result(seed=5)
    r["workload"] = "[bold]resnet50"
    store_doc(store_docs.document(results=[r]))
    code, out, err = cli(capsys, "results", "show", "latest")
    assert code == 0, err
    assert "[bold]resnet50" in out


def test_report_prints_an_output_folder_with_brackets_whole(capsys, tmp_path):
    store_doc(store_docs.document())
    out_dir = tmp_path / "report[1]"
    code, out, err = cli(capsys, "report", "--output", str(out_dir))
    assert code == 0, err
    assert str(out_dir / "index.html") in out


def test_compare_prints_names_from_documents_literally(capsys, tmp_path):
    import json

    a = store_docs.document(env=store_docs.environment(gpu_name="GPU [/x] A"))
    b = store_docs.document(results=[store_docs.result(workload="[bold]w", seed=9)])
    paths = []
    for name, doc in (("a.json", a), ("b.json", b)):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(doc), encoding="utf-8")
    code, out, err = cli(capsys, "compare", str(paths[0]), str(paths[1]))
    assert code == 0, err
    assert "GPU [/x] A" in out and "[bold]w" in out
