"""Check the hand-curated GPU catalogue against the reference data it cites.

    PYTHONPATH=src python tools/build_catalog.py [--reference DIR] [--strict]

`src/dlbench/catalog/gpus.csv` is curated by hand (one row per GPU, a `sources` column naming the datasheet,
the reference-file row or the Epoch AI row each figure comes from). This script does not rewrite it; it
1. loads it through `dlbench.catalog` (so every value parses and units convert),
2. cross-checks every row that cites an Epoch AI row ("Epoch AI 'NAME'") against Epoch AI's CSV
   (Epoch AI, "Data on Machine Learning Hardware", CC BY 4.0) and lists the figures that differ by more than
   3%, so that a curator sees each disagreement and records in `notes` which value is right and why.
Exit status 1 with `--strict` when an undocumented disagreement remains (a disagreement counts as documented
when the row's notes or sources mention Epoch AI next to the field's value or say "conflicts"/"lists").
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

DEFAULT_REFERENCE = Path("/work/shared/reference")
TOLERANCE = 0.03

# catalogue GpuSpec field → (Epoch AI column, factor from Epoch's unit to the catalogue's SI unit)
EPOCH_FIELDS = {
    "memory_bandwidth_bytes_per_s": ("Memory bandwidth (byte/s)", 1.0),
    "tdp_w": ("TDP (W)", 1.0),
    "fp32_flops_per_s": ("FP32 (single precision) performance (FLOP/s)", 1.0),
    "tf32_tensor_flops_per_s": ("TF32 (TensorFloat-32) performance (FLOP/s)", 1.0),
    "fp8_tensor_flops_per_s": ("FP8 performance (FLOP/s)", 1.0),
    "tensor_cores": ("Tensor cores", 1.0),
    "price_usd": ("Release price (USD)", 1.0),
}


def _epoch_rows(reference: Path) -> dict[str, dict[str, str]]:
    with (reference / "epoch_ml_hardware.csv").open(newline="", encoding="utf-8") as handle:
        return {row["Hardware name"].strip(): row for row in csv.DictReader(handle)}


def _cited_epoch_rows(sources: str) -> list[str]:
    return re.findall(r"Epoch AI '([^']+)'", sources)


def check(reference: Path) -> list[str]:
    from dlbench.catalog import all_gpus

    epoch = _epoch_rows(reference)
    problems = []
    for spec in all_gpus():
        for cited in _cited_epoch_rows(spec.sources):
            row = epoch.get(cited)
            if row is None:
                problems.append(f"{spec.name}: cites Epoch AI row {cited!r}, which is not in epoch_ml_hardware.csv")
                continue
            for field, (column, factor) in EPOCH_FIELDS.items():
                ours = getattr(spec, field)
                raw = row.get(column, "").strip()
                if ours is None or not raw:
                    continue
                theirs = float(raw) * factor
                if abs(ours - theirs) > TOLERANCE * max(abs(theirs), 1e-9):
                    documented = "Epoch" in (spec.notes or "") or "conflicts" in spec.sources
                    mark = "documented" if documented else "UNDOCUMENTED"
                    problems.append(f"{spec.name}: {field} = {ours:g}, Epoch AI '{cited}' says {theirs:g} [{mark}]")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE, help="folder with epoch_ml_hardware.csv")
    parser.add_argument("--strict", action="store_true", help="exit 1 on an undocumented disagreement")
    args = parser.parse_args(argv)
    from dlbench.catalog import all_gpus

    specs = all_gpus()
    print(f"{len(specs)} GPUs load and convert")
    problems = check(args.reference)
    for line in problems:
        print(line)
    undocumented = [line for line in problems if "UNDOCUMENTED" in line or "not in epoch" in line]
    print(f"{len(problems)} disagreement(s) with Epoch AI, {len(undocumented)} undocumented")
    return 1 if args.strict and undocumented else 0


if __name__ == "__main__":
    sys.exit(main())
