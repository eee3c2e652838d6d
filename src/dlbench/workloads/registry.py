"""The workload registry: a plain dict from name to `Workload`.

Exercise it with `PYTHONPATH=src python -c "from dlbench.workloads import registry; print(registry.names())"`.

The built-in families (`resnet`, `bert`, `llama`) register their models when first needed; so does every module
named in the environment variable `DLBENCH_PLUGINS` (comma-separated importable module names), which is
how users and tests add workloads without touching the package:

    # my_workloads.py, on PYTHONPATH
    from dlbench.workloads.registry import register
    from dlbench.workloads.resnet import ResNetWorkload
    register(ResNetWorkload("resnet18-ish", ...))

    DLBENCH_PLUGINS=my_workloads dlbench run --workload resnet18-ish

Importing this module imports neither torch nor the families.
"""

from __future__ import annotations

import importlib
import os

from dlbench.errors import BadInput
from dlbench.workloads.base import Workload

WORKLOADS: dict[str, Workload] = {}

BUILTIN_MODULES: tuple[str, ...] = ("dlbench.workloads.resnet", "dlbench.workloads.bert", "dlbench.workloads.llama")
PLUGINS_ENV = "DLBENCH_PLUGINS"

_imported: set[str] = set()


def register(workload: Workload) -> Workload:
    """Add `workload` under its name (replacing one of the same name, so a plugin can override)."""
    if not workload.name:
        raise ValueError(f"{workload!r} has no name")
    WORKLOADS[workload.name] = workload
    return workload


def _import(module: str, origin: str) -> None:
    if module in _imported:
        return
    try:
        importlib.import_module(module)
    except Exception as exc:  # any failure in a plugin is the user's to fix: say which and why
        raise BadInput(
            f"{origin}: cannot import workload module {module!r}: {type(exc).__name__}: {exc}"
        ) from exc
    _imported.add(module)


def load() -> dict[str, Workload]:
    """Import the built-in families and any `DLBENCH_PLUGINS` modules not imported yet; return the registry.

    The environment variable is read on every call, so a plugin named after the first access still loads.
    """
    for module in BUILTIN_MODULES:
        _import(module, "dlbench")
    for module in os.environ.get(PLUGINS_ENV, "").split(","):
        if module.strip():
            _import(module.strip(), PLUGINS_ENV)
    return WORKLOADS


def names() -> list[str]:
    """Registered workload names, sorted."""
    return sorted(load())


def get(name: str) -> Workload:
    """The workload called `name`; an unknown name is a `BadInput` that lists the valid ones."""
    workloads = load()
    try:
        return workloads[name]
    except KeyError:
        raise BadInput(f"unknown workload {name!r}; choose from: {', '.join(sorted(workloads))}") from None
