"""Published inference and LLM-generation figures (llama.cpp, gpt-fast, MLPerf, NVIDIA) as data, a source per row.

Exercise it with `dlbench reference list --scenario generate`. The packaged `inference.csv` holds one figure per
row, each with the URL (pinned to a commit) it was read from; it is read on first use and cached. How rows were
transcribed and checked: docs/reference-data.md.

Units are SI and named by the metric: `*_per_s` are per second (samples, tokens, bytes), `*_s` are seconds.
`value` is what the row's whole setup delivered (all `gpu_count` GPUs, as the source lists it); `value_per_gpu`
is `value / gpu_count` for throughput metrics (empty for latencies). `comparable_to_dlbench` says whether
dlbench's own harness measures the same thing (PyTorch, same precision semantics, one GPU): a llama.cpp Q4_K_M
or an MLPerf TensorRT figure is context, never a target a dlbench run is ranked against.

    from dlbench.reference.inference import comparable_rows
    comparable_rows("generate", "llama-3.1-8b", "bf16", "decode_tokens_per_s")   # gpt-fast's A100 figure
"""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from dlbench.errors import BadInput

SCENARIOS = ("infer", "generate")

# dlbench workload names the rows map to (issue 13's infer and generate workloads, plus the 70B shapes MLPerf
# and gpt-fast publish). A row naming anything else is a packaging error.
WORKLOADS = {
    "infer": ("resnet50", "bert-base-squad", "bert-large-squad"),
    "generate": ("llama-3.2-1b", "llama-3.1-8b", "llama-2-7b", "llama-2-70b", "llama-3.1-70b"),
}

# dlbench's own precisions first, then the formats of other stacks (kept so a row says what it measured).
DLBENCH_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "int8-weight-only", "int4-weight-only", "fp8")
OTHER_PRECISIONS = ("amp-fp16", "q4_k_m", "q4_0", "q8_0", "tensorrt-quantized")
PRECISIONS = DLBENCH_PRECISIONS + OTHER_PRECISIONS

# metric -> the unit it is in (for messages and the table header); latencies are seconds.
METRICS = {
    "samples_per_s": "samples/s",
    "tokens_per_s": "tokens/s",
    "prefill_tokens_per_s": "tokens/s",
    "decode_tokens_per_s": "tokens/s",
    "bandwidth_bytes_per_s": "B/s",
    "latency_mean_s": "s",
    "latency_p50_s": "s",
    "latency_p90_s": "s",
    "latency_p99_s": "s",
    "ttft_p99_s": "s",
    "tpot_p99_s": "s",
}
THROUGHPUT_METRICS = frozenset(m for m in METRICS if m.endswith("_per_s"))

MODES = {
    "infer": ("offline", "latency", "server"),
    "generate": ("pp512", "tg128", "tg512", "decode_bs1", "offline", "server"),
}

FRAMEWORKS = ("pytorch", "gpt-fast", "llama.cpp", "tensorflow", "mlperf-closed-tensorrt")

# Sanity ranges per metric, wide enough for any GPU of the catalogue: a value outside is a unit slip (ms stored
# as s, GB/s stored as B/s), not a fast card.
_RANGES = {
    "bandwidth_bytes_per_s": (1e10, 2e13),
    "latency_mean_s": (1e-5, 10.0),
    "latency_p50_s": (1e-5, 10.0),
    "latency_p90_s": (1e-5, 10.0),
    "latency_p99_s": (1e-5, 10.0),
    "ttft_p99_s": (1e-4, 10.0),
    "tpot_p99_s": (1e-4, 10.0),
}
_DEFAULT_RANGE = (0.01, 1e7)  # samples or tokens per second


@dataclass(frozen=True)
class InferenceReference:
    """One published inference or generation figure, mapped to dlbench's scenario, workload, GPU and precision."""

    scenario: str
    workload: str
    gpu: str  # catalogue canonical name
    gpu_count: int
    precision: str
    mode: str
    batch_size: int | None
    seq_len: int | None  # encoder input length (BERT)
    prompt_len: int | None  # decoder prompt tokens
    new_tokens: int | None  # decoder generated tokens
    metric: str
    value: float  # SI unit named by `metric`, over all `gpu_count` GPUs
    value_per_gpu: float | None
    framework: str
    comparable: bool  # `comparable_to_dlbench == "yes"`
    gpu_listed: str
    workload_listed: str
    precision_listed: str | None
    system: str | None
    source: str  # URL, pinned to a commit
    note: str | None

    @property
    def unit(self) -> str:
        return METRICS[self.metric]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _opt_int(text: str) -> int | None:
    return int(text) if text else None


def _row(number: int, row: dict[str, str]) -> InferenceReference:
    """One CSV row, validated; `ValueError` names the row and what is wrong with it."""
    from dlbench.catalog import lookup

    def fail(why: str) -> ValueError:
        return ValueError(f"inference.csv row {number}: {why}")

    scenario = row["scenario"]
    if scenario not in SCENARIOS:
        raise fail(f"unknown scenario {scenario!r} (known: {', '.join(SCENARIOS)})")
    if row["workload"] not in WORKLOADS[scenario]:
        raise fail(f"unknown {scenario} workload {row['workload']!r} (known: {', '.join(WORKLOADS[scenario])})")
    spec = lookup(row["gpu"])
    if spec is None or spec.name != row["gpu"]:
        raise fail(f"GPU {row['gpu']!r} is not a catalogue name")
    if row["precision"] not in PRECISIONS:
        raise fail(f"unknown precision {row['precision']!r}")
    if row["mode"] not in MODES[scenario]:
        raise fail(f"unknown {scenario} mode {row['mode']!r} (known: {', '.join(MODES[scenario])})")
    metric = row["metric"]
    if metric not in METRICS:
        raise fail(f"unknown metric {metric!r} (known: {', '.join(METRICS)})")
    if row["framework"] not in FRAMEWORKS:
        raise fail(f"unknown framework {row['framework']!r}")
    if row["comparable_to_dlbench"] not in ("yes", "no"):
        raise fail(f"comparable_to_dlbench must be yes or no, got {row['comparable_to_dlbench']!r}")
    if not row["source"].startswith("https://"):
        raise fail(f"source must be a URL, got {row['source']!r}")
    gpu_count = int(row["gpu_count"])
    if gpu_count < 1:
        raise fail("gpu_count must be at least 1")
    value = float(row["value"])
    low, high = _RANGES.get(metric, _DEFAULT_RANGE)
    if not low <= value <= high:
        raise fail(f"{metric} = {value:g} is outside {low:g}..{high:g} {METRICS[metric]}: a unit slip?")
    per_gpu = float(row["value_per_gpu"]) if row["value_per_gpu"] else None
    if metric in THROUGHPUT_METRICS:
        if per_gpu is None or abs(per_gpu * gpu_count - value) > 1e-6 * value:
            raise fail(f"value_per_gpu must be value / gpu_count for {metric}")
    elif per_gpu is not None:
        raise fail(f"value_per_gpu is for throughput metrics, not {metric}")
    comparable = row["comparable_to_dlbench"] == "yes"
    if comparable and (row["precision"] not in DLBENCH_PRECISIONS or row["framework"] not in ("pytorch", "gpt-fast")):
        raise fail("only PyTorch rows in one of dlbench's precisions can be comparable_to_dlbench")
    return InferenceReference(
        scenario=scenario, workload=row["workload"], gpu=row["gpu"], gpu_count=gpu_count,
        precision=row["precision"], mode=row["mode"], batch_size=_opt_int(row["batch_size"]),
        seq_len=_opt_int(row["seq_len"]), prompt_len=_opt_int(row["prompt_len"]),
        new_tokens=_opt_int(row["new_tokens"]), metric=metric, value=value, value_per_gpu=per_gpu,
        framework=row["framework"], comparable=comparable, gpu_listed=row["gpu_listed"],
        workload_listed=row["workload_listed"], precision_listed=row["precision_listed"] or None,
        system=row["system"] or None, source=row["source"], note=row["note"] or None,
    )


def parse_rows(lines: Any) -> tuple[InferenceReference, ...]:
    """Validated rows from CSV text lines (the packaged file, or a file a test writes)."""
    return tuple(_row(number, row) for number, row in enumerate(csv.DictReader(lines), start=2))


@lru_cache(maxsize=1)
def _load() -> tuple[InferenceReference, ...]:
    path = resources.files("dlbench.reference").joinpath("inference.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        return parse_rows(handle)


def load_inference() -> list[InferenceReference]:
    """Every packaged inference and generation figure, in source order."""
    return list(_load())


def check_scenario(scenario: str) -> str:
    """`scenario` normalised, or `BadInput` naming the known ones."""
    name = scenario.strip().lower()
    if name not in SCENARIOS:
        raise BadInput(f"unknown scenario {scenario!r} for published inference figures; known: {', '.join(SCENARIOS)} "
                       "(leave --scenario out for the training figures)")
    return name


def inference_for(
    scenario: str | None = None,
    workload: str | None = None,
    gpu: str | None = None,
    precision: str | None = None,
    metric: str | None = None,
    gpu_count: int | None = None,
    comparable_only: bool = False,
) -> list[InferenceReference]:
    """Packaged rows matching every filter given (None = any); an unknown name is `BadInput`, never "no rows".

    `gpu` may be any spelling the catalogue knows (canonical name, alias, torch device name).
    """
    rows = _load()
    if scenario is not None:
        scenario = check_scenario(scenario)
    if workload is not None:
        workload = workload.strip().lower()
        known = WORKLOADS[scenario] if scenario else tuple(w for ws in WORKLOADS.values() for w in ws)
        if workload not in known:
            raise BadInput(f"no published {scenario or 'inference'} figures for workload {workload!r}; "
                           f"known: {', '.join(known)}")
    if precision is not None:
        precision = precision.strip().lower()
        if precision not in PRECISIONS:
            raise BadInput(f"unknown precision {precision!r}; published inference rows use: {', '.join(PRECISIONS)}")
    if metric is not None and metric not in METRICS:
        raise BadInput(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    canonical = None
    if gpu is not None:
        from dlbench.catalog import resolve

        canonical = resolve(gpu).name
    return [
        r for r in rows
        if (scenario is None or r.scenario == scenario)
        and (workload is None or r.workload == workload)
        and (canonical is None or r.gpu == canonical)
        and (precision is None or r.precision == precision)
        and (metric is None or r.metric == metric)
        and (gpu_count is None or r.gpu_count == gpu_count)
        and (r.comparable or not comparable_only)
    ]


def comparable_rows(
    scenario: str,
    workload: str,
    precision: str,
    metric: str,
    gpu: str | None = None,
    batch_size: int | None = None,
) -> list[InferenceReference]:
    """Published rows a dlbench result (scenario, workload, precision, metric) may be ranked against.

    Only rows marked comparable, on one GPU (dlbench measures one), in the same precision and metric; `gpu` and
    `batch_size` narrow further when given. Fastest first for throughputs, lowest first for latencies.
    """
    rows = [r for r in inference_for(scenario, workload, gpu, precision, metric, gpu_count=1, comparable_only=True)
            if batch_size is None or r.batch_size is None or r.batch_size == batch_size]
    return sorted(rows, key=lambda r: -r.value if r.metric in THROUGHPUT_METRICS else r.value)
