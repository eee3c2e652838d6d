"""`cli.run.RunSaver`: the database gets the final document first and a `--json` copy that cannot be written
loses nothing, is one `error:` line, and does not claim the database has a run it has not.

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_run_saver.py`.
"""

from __future__ import annotations

import store_docs


def test_a_json_copy_that_cannot_be_written_at_the_end_loses_nothing(tmp_path):
    # `dlbench run --json /sys/x.json` as root passed the up-front check (os.access says yes), measured, and then
    # failed with "internal error: PermissionError" before the final document reached the database: the database
    # kept the "in progress" copy while the results folder had the final one, so importing that folder later
    # refused the whole import ("already stored with different content"). Now the copy is written last, and a
    # failure is one `error:` line (`dlbench run` then exits 2) after the run is saved.
    from dlbench import paths
    from dlbench.cli.run import RunSaver
    from dlbench.jsonio import read_json
    from dlbench.schema import upgrade
    from dlbench.store import open_store

    doc = store_docs.document()
    warnings: list[str] = []
    saver = RunSaver(on_warning=warnings.append)
    saver.save({**doc, "notes": ["in progress: 2 of 3 configurations done"]})
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    written = saver.save(doc, blocker / "x.json")
    saver.close()
    assert saver.json_failed and written == [paths.results_dir() / f"{doc['run_id']}.json"]
    assert len(warnings) == 1 and warnings[0].startswith(f"error: --json {blocker / 'x.json'}: cannot write")
    store = open_store()
    assert store.get_run(doc["run_id"]) == read_json(written[0]) == upgrade(doc)  # stored at the current version
    store.close()


def test_a_refused_json_copy_does_not_claim_the_database_has_the_run_when_it_has_not(tmp_path):
    from dlbench.cli.run import RunSaver

    garbage = tmp_path / "not-a-db.sqlite"
    garbage.write_bytes(b"this is not an SQLite file" * 100)
    warnings: list[str] = []
    saver = RunSaver(db_url=f"sqlite:///{garbage}", on_warning=warnings.append)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    saver.save(store_docs.document(), blocker / "x.json")
    saver.close()
    (copy_error,) = [w for w in warnings if w.startswith("error: --json")]
    assert "results database" not in copy_error and any("database" in w for w in warnings if w != copy_error)
