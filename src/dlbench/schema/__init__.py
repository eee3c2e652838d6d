"""The result document: its version, statuses, keys, validation, upgrades and metrics (`docs/schema.md`).

`dlbench results import run.json` validates with `load_document`; `dlbench run` builds documents with these
keys; `dlbench compare` and `dlbench report` read metrics with `dlbench.schema.metrics`. A leaf: it imports
nothing of dlbench but `errors`, `jsonio` and `timestamps`, and nothing heavy (the standard library only).

- `keys`: `SCHEMA_VERSION`, `STATUSES`, `FAILED_STATUSES`, the required keys, the scenarios' headline metrics,
  `cut_short` (a run with fewer results than it planned).
- `validate`: `validate_document`, `load_document` (and `parse_created_at`, from `dlbench.timestamps`).
- `upgrade`: `UPGRADES` and `upgrade` (version 1 -> 2).
- `metrics`: `metric`, `value`, `primary`, `throughput`, `scenario`, `training_metrics`.
"""

from __future__ import annotations

from dlbench.schema.keys import (
    DEFAULT_SCENARIO,
    DOCUMENT_KEYS,
    FAILED_STATUSES,
    RESULT_KEYS,
    SCHEMA_VERSION,
    STATUSES,
    STEP_TIME_KEYS,
    cut_short,
)
from dlbench.schema.upgrade import UPGRADES, upgrade
from dlbench.schema.validate import load_document, parse_created_at, validate_document

__all__ = [
    "DEFAULT_SCENARIO", "DOCUMENT_KEYS", "FAILED_STATUSES", "RESULT_KEYS", "SCHEMA_VERSION", "STATUSES",
    "STEP_TIME_KEYS", "UPGRADES", "cut_short", "load_document", "parse_created_at", "upgrade", "validate_document",
]
