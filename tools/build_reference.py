"""Build the packaged published results from the shared reference CSV.

    PYTHONPATH=src python tools/build_reference.py [--source PATH] [--check]

Reads `published_training_throughput.csv` (Lambda, NVIDIA DeepLearningExamples and AIME rows, each naming
its file and commit), maps each row to dlbench's names and writes `src/dlbench/reference/published.csv`.
Every source column is kept; the listed GPU, workload and precision are kept next to the mapped ones, and a
`mapping` column says why a row's GPU was mapped the way it was when the listing alone does not say.
`--check` rebuilds in memory and exits 1 if the packaged file differs (a test runs it).

Mapping rules:
- workloads: `resnet50` stays; `bert-*-squad384` is `bert-*-squad` at seq 384 (Lambda fine-tunes SQuAD at 384);
  `bert-*-pretrainN` is `bert-*-mlm` at seq N. NVIDIA's seq-512 pre-training figures use sequence binning and
  are marked `comparable=false` (not comparable with fixed-length synthetic data).
- precisions: the source file already labels Lambda's "fp32" column `tf32` on Ampere and later and `fp32` on
  Volta/Turing; this script checks that labelling against the GPU's architecture in the catalogue.
- GPUs: every listed name must resolve to one catalogue GPU, by catalogue lookup or by `GPU_OVERRIDES`.
- batch sizes: `batch_size_per_gpu` is per GPU. Lambda's v1 batch-size CSVs list the global batch (its
  `scripts/compile_results_pytorch_bs.py` multiplies each config's per-GPU batch by `NUM_GPU`: the 2x RTX 4090
  row says 896 where each GPU trains 448, as on the 1x row), so `GLOBAL_BATCH_SOURCES` rows are divided by
  their GPU count.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = Path("/work/shared/reference/published_training_throughput.csv")
OUTPUT = REPO / "src" / "dlbench" / "reference" / "published.csv"

OUTPUT_COLUMNS = (
    "gpu", "num_gpus", "workload", "seq_len", "precision", "batch_size_per_gpu", "samples_per_s", "comparable",
    "gpu_listed", "workload_listed", "precision_listed", "system", "gpu_tdp_w_listed", "system_price_usd_listed",
    "source", "source_ref", "notes", "mapping",
)

# (source prefix, listed GPU) → (catalogue name, why). Listed names that the catalogue cannot resolve alone.
GPU_OVERRIDES: dict[tuple[str, str], tuple[str, str]] = {
    ("Lambda", "V100 16GB"): (
        "V100 SXM2 16GB", "Lambda lists 300 W per GPU: the SXM2 card (the PCIe card is 250 W)"),
    ("NVIDIA/DeepLearningExamples", "V100 16GB"): (
        "V100 SXM2 16GB", "NVIDIA DGX-1 (8x V100 16G) uses SXM2 cards"),
    ("NVIDIA/DeepLearningExamples", "V100 32GB"): (
        "V100 SXM2 32GB", "NVIDIA DGX-1 (8x V100 32G) uses SXM2 cards"),
    ("NVIDIA/DeepLearningExamples", "A100 80GB"): (
        "A100 SXM4 80GB", "NVIDIA DGX A100 (8x A100 80GB) uses SXM4 cards"),
    ("aime-team/pytorch-benchmarks", "A100 80GB"): (
        "A100 PCIe 80GB",
        "assumption: the source does not say SXM or PCIe; AIME's servers take PCIe cards and seed 000's A100 "
        "is the 80 GB PCIe card (1935 GB/s, 300 W)"),
    ("Lambda", "GH200 80GB"): (
        "GH200 96GB",
        "assumption: NVIDIA's GH200 datasheet lists 96 GB HBM3 and 144 GB HBM3e variants only; Lambda's "
        "'GH200 80GB' node measures within 1% of its 'GH200 96GB' nodes"),
}

WORKLOAD_PATTERNS = (
    (re.compile(r"^resnet50$"), lambda m: ("resnet50", None)),
    (re.compile(r"^bert-(base|large)-squad(\d+)$"), lambda m: (f"bert-{m[1]}-squad", int(m[2]))),
    (re.compile(r"^bert-(base|large)-pretrain(\d+)$"), lambda m: (f"bert-{m[1]}-mlm", int(m[2]))),
)

PRE_AMPERE = ("Volta", "Turing")

# Sources whose listed batch size is the global batch over all the row's GPUs (see the module docstring).
GLOBAL_BATCH_SOURCES = ("Lambda deep learning benchmark v1",)


def per_gpu_batch(source: str, listed: str, num_gpus: int) -> str:
    """The row's batch size per GPU, as text ("" when the source lists none)."""
    if not listed or not source.startswith(GLOBAL_BATCH_SOURCES):
        return listed
    total = int(listed)
    if total % num_gpus:
        raise ValueError(f"global batch {total} does not divide over {num_gpus} GPUs")
    return str(total // num_gpus)


def map_workload(listed: str) -> tuple[str, int | None]:
    for pattern, mapping in WORKLOAD_PATTERNS:
        match = pattern.match(listed)
        if match:
            return mapping(match)
    raise ValueError(f"no dlbench workload for {listed!r}")


def map_gpu(source: str, listed: str) -> tuple[str, str]:
    from dlbench.catalog import close_matches, lookup

    for (prefix, name), (canonical, why) in GPU_OVERRIDES.items():
        if source.startswith(prefix) and listed == name:
            if lookup(canonical) is None:
                raise ValueError(f"override target {canonical!r} is not in the catalogue")
            return canonical, why
    spec = lookup(listed)
    if spec is None:
        raise ValueError(f"GPU {listed!r} ({source}) is not in the catalogue; close: {close_matches(listed)}")
    return spec.name, ""


def build_rows(source_path: Path) -> list[dict[str, str]]:
    from dlbench.catalog import lookup
    from dlbench.measurement.config import PRECISIONS

    rows = []
    with source_path.open(newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.DictReader(handle), start=2):
            try:
                gpu, why = map_gpu(row["source"], row["gpu"])
                workload, seq_len = map_workload(row["workload"])
                precision = row["precision"]
                if precision not in PRECISIONS:
                    raise ValueError(f"unknown precision {precision!r}")
                arch = lookup(gpu).architecture
                if precision == "fp32" and row["source"].startswith("Lambda") and arch not in PRE_AMPERE:
                    raise ValueError(f"Lambda 'fp32' on {arch} must be labelled tf32")
                if precision == "tf32" and arch in PRE_AMPERE:
                    raise ValueError(f"tf32 on {arch} ({gpu}) is impossible")
                batch = per_gpu_batch(row["source"], row["batch_size_per_gpu"], int(row["num_gpus"]))
            except ValueError as exc:
                raise SystemExit(f"{source_path}:{number}: {exc}") from None
            comparable = "sequence binning" not in row["notes"]
            rows.append({
                "gpu": gpu,
                "num_gpus": str(int(row["num_gpus"])),
                "workload": workload,
                "seq_len": "" if seq_len is None else str(seq_len),
                "precision": precision,
                "batch_size_per_gpu": batch,
                "samples_per_s": repr(float(row["samples_per_s"])),
                "comparable": "true" if comparable else "false",
                "gpu_listed": row["gpu"],
                "workload_listed": row["workload"],
                "precision_listed": row["precision"],
                "system": row["system"],
                "gpu_tdp_w_listed": row["gpu_tdp_w_listed"],
                "system_price_usd_listed": row["system_price_usd_listed"],
                "source": row["source"],
                "source_ref": row["source_ref"],
                "notes": row["notes"],
                "mapping": why,
            })
    return rows


def render(rows: list[dict[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=OUTPUT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="the shared reference CSV")
    parser.add_argument("--check", action="store_true", help="exit 1 if the packaged file is out of date")
    args = parser.parse_args(argv)
    text = render(build_rows(args.source))
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT} is out of date: run tools/build_reference.py", file=sys.stderr)
            return 1
        print(f"{OUTPUT} is up to date")
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {text.count(chr(10)) - 1} rows to {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
