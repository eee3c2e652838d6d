"""The layer rules hold, and breaking one is caught: import-linter over dlbench with pyproject's contracts.

Run with `python -m pytest tests/test_layers.py` (or `make lint`, which runs `lint-imports`). The rules are
written down in docs/architecture.md; the contracts are in pyproject.toml ([tool.importlinter]).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = shutil.which("lint-imports", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                                   os.environ.get("PATH", "")]))
pytestmark = pytest.mark.skipif(LINT_IMPORTS is None, reason="import-linter is not installed (pip install .[test])")


def lint(src: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([LINT_IMPORTS, "--no-cache", "--no-logo", str(ROOT / "pyproject.toml")], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_every_contract_is_kept():
    proc = lint(ROOT / "src", ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


@pytest.fixture
def copy_of_src(tmp_path):
    shutil.copytree(ROOT / "src" / "dlbench", tmp_path / "src" / "dlbench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "src"


def _add_import(src: Path, module: str, line: str) -> None:
    path = src / Path(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    text = path.read_text()
    # inside a function, as dlbench's lazy imports are: those count too
    path.write_text(text + f"\n\ndef _added_by_test():\n    {line}\n")


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("dlbench.analysis.points", "import torch", "analysis imports neither torch, nor the workloads, nor the store"),
    ("dlbench.analysis.fleet", "from dlbench.store import open_store",
     "analysis imports neither torch, nor the workloads, nor the store"),
    ("dlbench.analysis.points", "from dlbench.workloads import registry",
     "analysis imports neither torch, nor the workloads, nor the store"),
    ("dlbench.report.fmt", "from dlbench.runner.sweep import SweepObserver",
     "report renders: it imports neither torch, nor the runner, nor the store"),
    ("dlbench.runner.sweep", "from dlbench.cli.run import EXIT_FAILED",
     "runner imports neither the commands nor the rendering"),
    ("dlbench.runner.launchers.process", "from dlbench.runner.worker import one_line",
     "launchers know nothing of what they start"),
    ("dlbench.catalog.lookup", "from dlbench.analysis import stats", "Layers: a folder imports only the folders"),
    ("dlbench.scenarios.train", "from dlbench.runner.sweep import run_sweep", "Layers: a folder imports only the"),
    # the two circles that were inside runner: plan -> distributed -> measure -> plan (measure is now
    # scenarios/ and measurement/), plan -> batch_search -> sweep -> plan
    ("dlbench.runner.distributed", "from dlbench.runner.plan import build_plan", "No import circles"),
    ("dlbench.measurement.device", "from dlbench.runner.plan import build_plan", "No import circles"),
    ("dlbench.runner.batch_search", "from dlbench.runner.sweep import run_sweep", "No import circles"),
])
def test_a_broken_rule_is_caught(copy_of_src, tmp_path, module, line, contract):
    _add_import(copy_of_src, module, line)
    proc = lint(copy_of_src, tmp_path)
    assert proc.returncode != 0, proc.stdout
    broken = proc.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, proc.stdout
