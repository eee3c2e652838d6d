"""Upgrading result documents written by an older dlbench: `dlbench results import old.json` runs it.

`UPGRADES[n]` turns a version-n document into a version-(n + 1) one; `upgrade` applies them in turn on a copy,
so that the loader reads every older version (`docs/schema.md`, "Upgrades"). An upgrade adds what the newer
version carries and keeps every key it finds: nothing written by the older dlbench is lost.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from dlbench.errors import DataError
from dlbench.schema import keys
from dlbench.schema.metrics import training_metrics


def v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: every version-1 result measured training. Each result gains `scenario` "train",
    `primary_metric` "samples_per_s" and `metrics` derived from its version-1 fields (`training_metrics`)."""
    for result in doc.get("results") or []:
        if not isinstance(result, dict):
            continue
        result["scenario"] = keys.DEFAULT_SCENARIO
        result["primary_metric"] = keys.PRIMARY_METRICS[keys.DEFAULT_SCENARIO]
        result["metrics"] = training_metrics(result)
    doc["schema_version"] = 2
    return doc


UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: v1_to_v2}


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` at the current `SCHEMA_VERSION`: itself when already there, else an upgraded deep copy (the
    argument is never changed). A version without an upgrade raises `DataError`; the caller checks first that
    the version is an integer no newer than this dlbench reads."""
    if doc.get("schema_version") == keys.SCHEMA_VERSION:
        return doc
    doc = copy.deepcopy(doc)
    while doc["schema_version"] < keys.SCHEMA_VERSION:
        step = UPGRADES.get(doc["schema_version"])
        if step is None:
            raise DataError(f"schema_version {doc['schema_version']}: no upgrade to "
                            f"{doc['schema_version'] + 1} is known")
        doc = step(doc)
    return doc
