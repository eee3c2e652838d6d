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
