"""Documents no `dlbench run` writes: `results import` refuses them and stores nothing, every command that reads a
file refuses them the same way, and a row already in an older database is passed over, not a math error.

Run with `PYTHONPATH=src:tests python -m pytest -q tests/test_import_validation.py`.
"""

from __future__ import annotations

import json

import pytest

import store_docs
from cli_helpers import cli, write_doc
from test_hostile_input import assert_bad_input


@pytest.mark.parametrize("mutate, key", [
    # `advise` took the logarithm of the stored throughput: "internal error: ValueError: math domain error".
    (lambda r: r.update(samples_per_s=-5.0), "results[0].samples_per_s"),
    # `results show` read these as the shapes `dlbench run` writes: "internal error: AttributeError ...".
    (lambda r: r.update(vs_published="0.9x"), "results[0].vs_published"),
    (lambda r: r.update(vs_published={"ratio": "0.9"}), "results[0].vs_published.ratio"),
    (lambda r: r.update(telemetry={"available": True, "gpu": "H100"}), "results[0].telemetry.gpu"),
    # A finite number beyond any measurement overflowed in statistics and charts: `report` "Axis limits cannot be
    # NaN or Inf", `fleet --json` "Out of range float values are not JSON compliant: inf".
    (lambda r: r.update(samples_per_s=1.7e308), "results[0].samples_per_s"),
    (lambda r: r["repeats"][0]["step_times_s"].__setitem__(0, 1e308), "results[0].repeats[0].step_times_s"),
    (lambda r: r.update(telemetry={"available": True, "power_mean_w": 1e308}), "results[0].telemetry.power_mean_w"),
    # `report` drew the series: "internal error: TypeError: can't multiply sequence by non-int of type 'float'".
    (lambda r: r.update(telemetry={"available": True, "series": {"t_s": [0.0, 0.1], "power_w": "high"}}),
     "results[0].telemetry.series"),
])
def test_a_document_no_run_writes_is_refused_on_import_and_nothing_is_stored(capsys, tmp_path, mutate, key):
    doc = store_docs.document(env=store_docs.environment("NVIDIA GeForce RTX 3090"))
    mutate(doc["results"][0])
    path = write_doc(tmp_path, "odd.json", doc)
    assert_bad_input(*cli(capsys, "results", "import", path), "odd.json", key)
    code, out, _ = cli(capsys, "results", "list", "--json")
    assert code == 0 and json.loads(out) == []
    for command in (["report", path, "-o", str(tmp_path / "r")], ["doctor", path], ["compare", path, path]):
        assert_bad_input(*cli(capsys, *command), key)


def test_advise_and_estimate_pass_over_a_negative_throughput_already_in_a_database(capsys, tmp_path):
    """A database written before import checked the sign keeps such a row: it is no measurement, so it is left out
    of the calibration instead of failing every `advise` with a math domain error."""
    import sqlalchemy as sa

    from dlbench.store import open_store
    from dlbench.store.schema import results

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    good = store_docs.result(workload="resnet50", precision="amp-fp16", batch_size=256, seed=3)
    store = open_store(url)
    store.save_run(store_docs.document([good], env=store_docs.environment("NVIDIA GeForce RTX 3090")))
    with store.engine.begin() as conn:
        conn.execute(sa.update(results).values(samples_per_s=-5.0))
    store.close()
    code, out, err = cli(capsys, "advise", "--workload", "resnet50", "--precision", "amp-fp16", "--max-gpus", "1",
                         "--json", "--db", url)
    assert code == 0, err
    rtx3090 = next(o for o in json.loads(out)["options"] if o["gpu"] == "RTX 3090")
    assert rtx3090["throughput_kind"] != "measured" and rtx3090["samples_per_s"] > 0
    code, out, err = cli(capsys, "estimate", "--gpu", "RTX 3090", "--workload", "resnet50", "--precision",
                         "amp-fp16", "--json", "--db", url)
    assert code == 0 and json.loads(out)["kind"] != "measured", err
