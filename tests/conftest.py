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


@pytest.fixture(scope="session")
def pg_url():
    """A PostgreSQL URL: DLBENCH_TEST_POSTGRES_URL (an empty scratch database), else a throwaway server of
    pgserver's own (a test extra: PostgreSQL binaries in a wheel) started once per session in a temporary folder
    and stopped at the end; skipped when neither is there or the psycopg driver is missing. Tests that use it
    leave the database empty again (`drop_dlbench_tables`)."""
    import os
    import shutil
    import tempfile

    url = os.environ.get("DLBENCH_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    pytest.importorskip("psycopg", reason="no psycopg driver (pip install 'dlbench[postgres]')")
    pgserver = pytest.importorskip("pgserver", reason="DLBENCH_TEST_POSTGRES_URL not set and no pgserver")
    # A short folder: the server's Unix socket lives in it and socket paths are limited to about 100 bytes.
    folder = tempfile.mkdtemp(prefix="dlpg")
    try:
        server = pgserver.get_server(folder, cleanup_mode="stop")
    except Exception as exc:  # noqa: BLE001 - a server that cannot start here is a missing tool, not a failure
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"pgserver could not start PostgreSQL: {exc}")
    try:
        yield f"postgresql+psycopg://postgres@/postgres?host={folder}"
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)

