"""Test fixtures shared by every test module.

Every test gets its own dlbench data directory (DLBENCH_HOME) and database, so no test touches the user's
files and tests do not see each other's runs.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    home = tmp_path / "dlbench-home"
    monkeypatch.setenv("DLBENCH_HOME", str(home))
    monkeypatch.delenv("DLBENCH_DB", raising=False)
    return home
