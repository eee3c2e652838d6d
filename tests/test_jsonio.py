import json

import pytest

from dlbench.errors import DataError
from dlbench.jsonio import read_json, write_json_atomic


def test_roundtrip_and_no_temp_left(tmp_path):
    path = write_json_atomic(tmp_path / "sub" / "doc.json", {"a": [1, 2.5, None]})
    assert read_json(path) == {"a": [1, 2.5, None]}
    assert [p.name for p in path.parent.iterdir()] == ["doc.json"]


def test_failed_write_keeps_old_file(tmp_path):
    path = write_json_atomic(tmp_path / "doc.json", {"ok": True})
    with pytest.raises(ValueError):
        write_json_atomic(path, {"bad": float("nan")})
    assert json.loads(path.read_text()) == {"ok": True}
    assert len(list(tmp_path.iterdir())) == 1


def test_malformed_file_names_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DataError, match="bad.json"):
        read_json(bad)
    with pytest.raises(DataError, match="no such file"):
        read_json(tmp_path / "missing.json")


def test_lists_of_numbers_stay_on_one_line_and_read_back_the_same(tmp_path):
    data = {"step_times_s": [0.101, 0.0995, 1e-05, -2, None, True], "empty": [], "nested": [[1, 2], [3]],
            "names": ["a", "b"], "mixed": [1, "two", {"three": [3.5]}],
            "text": "[\n  1,\n  2\n]", "error": "shape [4, 8] vs [\n8]"}
    path = write_json_atomic(tmp_path / "doc.json", data)
    assert read_json(path) == data
    text = path.read_text()
    assert '"step_times_s": [0.101, 0.0995, 1e-05, -2, null, true]' in text
    assert '"three": [3.5]' in text and "[\n" in text  # lists of objects and strings stay indented
    assert json.dumps(data["text"]) in text and json.dumps(data["error"]) in text


def test_an_eight_gpu_sweep_document_stays_a_few_mb(tmp_path):
    """50 configurations x 8 GPUs x 150 telemetry readings (the most an 8-GPU result keeps) and 150 step times:
    indented one number a line it was 15 MB."""
    import random

    from dlbench.telemetry.series import series_cap

    rng = random.Random(0)
    n = series_cap(8)

    def gpu():
        t = [i * 0.1 + rng.random() * 1e-3 for i in range(n)]
        return {"series": {"t_s": t, "power_w": [round(300 + rng.random() * 400, 3) for _ in t],
                           **{k: [rng.randint(40, 1980) for _ in t] for k in (
                               "temperature_c", "sm_clock_mhz", "mem_clock_mhz", "gpu_utilization_pct",
                               "memory_utilization_pct", "clock_event_reasons", "fan_speed_pct", "pcie_link_gen",
                               "pcie_link_width")}}}

    doc = {"results": [{"telemetry": {"per_gpu": [gpu() for _ in range(8)]},
                        "repeats": [{"step_times_s": [0.1 + rng.random() * 1e-3 for _ in range(50)]}] * 3}
                       for _ in range(50)]}
    path = write_json_atomic(tmp_path / "sweep.json", doc)
    assert path.stat().st_size < 5e6
    assert read_json(path) == doc


def test_written_files_get_the_umask_permissions_not_private_ones(tmp_path):
    """A result document is for sharing (a fleet's JSON files in one shared folder): a new file is readable as
    `open(path, "w")` would make it, and a replaced file keeps its permissions."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        path = write_json_atomic(tmp_path / "doc.json", {"a": 1})
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        path.chmod(0o640)
        write_json_atomic(path, {"a": 2})
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
        os.umask(0o077)
        private = write_json_atomic(tmp_path / "private.json", {"a": 3})
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
    finally:
        os.umask(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json", "private.json"]


def test_a_mount_that_refuses_chmod_still_gets_the_file_and_no_temp_is_left(tmp_path, monkeypatch):
    import os

    path = write_json_atomic(tmp_path / "doc.json", {"a": 1})

    def refuse(fd, mode):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fchmod", refuse)
    write_json_atomic(path, {"a": 2})
    assert read_json(path) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["doc.json"]
