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


@pytest.fixture(scope="module")
def one_cpu_thread():
    """One intra-op thread for modules that train on the CPU (`pytestmark = pytest.mark.usefixtures(...)`): on a
    shared 2-core machine, torch's spinning OpenMP threads slow steps 10x."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


@pytest.fixture
def register_workload():
    """`register_workload(w)` adds a test workload to the registry for one test and removes it afterwards."""
    from dlbench.workloads import registry

    added = []

    def register(workload):
        added.append(registry.register(workload))
        return added[-1]

    yield register
    for workload in added:
        registry.WORKLOADS.pop(workload.name, None)
