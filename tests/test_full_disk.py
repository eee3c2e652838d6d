"""A full disk under stdout is one `error:` line and exit code 1, not an internal error.

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_full_disk.py`.
"""

from __future__ import annotations

import pytest


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_disk_is_one_error_line_not_an_internal_error(tmp_path):
    import subprocess
    import sys

    from _dist_helpers import env

    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "dlbench", "gpus"], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60, env=env(DLBENCH_HOME=str(tmp_path)))
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: No space left on device"
