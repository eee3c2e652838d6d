"""Expand `dlbench run` options into the list of configurations to measure.

Exercised by `dlbench run -w resnet50 -p tf32 -p amp-fp16 -c off -c default` (and `--device`, `--batch-size`...).

Two stages: `validate_options` checks what needs no torch (names, numbers) in the parent process; `build_plan`
resolves the device, fills in defaults and asks the scenario (`scenarios.unsupported_reason`) about each combination. It runs
in the planning child process (`dlbench.runner.planning`) so that the parent never imports torch or touches the GPU.

Defaults, as in the seeds (AIME, Lambda):
- on a GPU: resnet50, bert-base-squad, bert-large-squad x (tf32 on NVIDIA compute capability >= 8.0, else fp32
  (ROCm too); amp-fp16)
  x (compile off, default); 10 warm-up steps, 50 measured steps, 3 repeats; batch size per workload from the
  device memory (`Workload.default_batch_size`).
- on a CPU (or MPS): a quick suite (`QUICK_SUITE`): small batches, fp32, eager, few steps; it says so.
- `--scenario infer` (`scenarios.infer.plan_defaults`): resnet50 and bert-base-squad, bf16 (fp16 before compute
  capability 8.0) x (eager, compile reduce-overhead) on a GPU; fp32, eager on a CPU (the quick suite's workloads).
- `--scenario generate` (`GENERATE_DEFAULTS`): llama-3.2-1b and llama-3.1-8b, batch 1, prompt 512, 128 new
  tokens, bf16 (fp16 before compute capability 8.0) x (eager, compile reduce-overhead) on a GPU; on a CPU
  llama-3.2-1b in fp32, eager, prompt 64 and 16 new tokens (a quick check, it says so).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from dlbench.errors import BadInput
from dlbench.measurement.config import RunConfig, check_compile_mode, check_precision

# Device facts and resolution are shared with every scenario (measurement/); the planner re-exports them.
from dlbench.measurement.device import DeviceFacts, resolve_device  # noqa: F401 - re-exported

GPU_DEFAULT_WORKLOADS: tuple[str, ...] = ("resnet50", "bert-base-squad", "bert-large-squad")
GPU_DEFAULT_COMPILE: tuple[str, ...] = ("off", "default")
GPU_DEFAULT_STEPS = {"warmup": 10, "steps": 50, "repeats": 3}

# The CPU quick suite: one vision and one language workload, small enough that the whole suite (planning,
# one child process per configuration, model build, warm-up and measured steps) finishes within 180 s on a
# 2-core machine. BERT runs as bert-base-mlm (128 tokens, NVIDIA's pre-training phase 1) rather than at 384.
QUICK_SUITE: tuple[dict[str, Any], ...] = (
    {"workload": "resnet50", "batch_size": 2, "seq_len": None},
    {"workload": "bert-base-mlm", "batch_size": 1, "seq_len": None},
)
QUICK_STEPS = {"warmup": 1, "steps": 2, "repeats": 2}
# `--tiny` (smoke test) uses the tiny flavour of each workload with this many steps.
TINY_STEPS = {"warmup": 2, "steps": 5, "repeats": 2}

# `--scenario generate`: the defaults where they differ from training's. One "step" is a whole generation
# (prefill + decode); `--steps` does not apply. pp512 / tg128 are llama-bench's defaults.
GENERATE_DEFAULTS: dict[str, Any] = {
    "gpu_workloads": ("llama-3.2-1b", "llama-3.1-8b"),
    "cpu_workloads": ("llama-3.2-1b",),
    "prompt_len": 512, "new_tokens": 128,
    "cpu_prompt_len": 64, "cpu_new_tokens": 16,  # the CPU quick check (llama-3.2-1b fp32: seconds per token)
    "gpu_compile": ("off", "reduce-overhead"),
    "gpu_steps": {"warmup": 2, "steps": 1, "repeats": 5},
    "cpu_steps": {"warmup": 1, "steps": 1, "repeats": 2},
}

# Per-configuration time limit when `--timeout` is not given: building a full model, compiling it and running
# 60 steps takes well under 10 minutes on any supported GPU; max-autotune benchmarks kernels and takes longer.
DEFAULT_TIMEOUT_S = 600.0
MAX_AUTOTUNE_TIMEOUT_S = 1800.0


@dataclass
class RunOptions:
    """The `dlbench run` options as given (None/empty: use the default)."""

    workloads: list[str] = field(default_factory=list)
    precisions: list[str] = field(default_factory=list)
    compile_modes: list[str] = field(default_factory=list)
    device: str = "auto"
    batch_size: int | str | None = None  # int, "auto" or None (default per workload)
    batch_sizes: list[int] = field(default_factory=list)  # `-b N` given more than once: each, in order
    seq_len: int | None = None
    warmup: int | None = None
    steps: int | None = None
    repeats: int | None = None
    seed: int = 0
    tiny: bool = False
    timeout_s: float | None = None
    gpus: list[int] | str | None = None  # `--gpus 1,2,4` device counts, "all", or None (one device)
    scenario: str = "train"  # `--scenario`: a name in `dlbench.scenarios.SCENARIOS`
    prompt_len: int | None = None  # `--prompt-len` (generate)
    new_tokens: int | None = None  # `--new-tokens` (generate)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunOptions:
        return cls(**data)


@dataclass
class PlannedConfig:
    """One configuration of the plan; `skip_reason` set when the hardware cannot run it."""

    config: RunConfig
    skip_reason: str | None = None
    auto_batch: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    unit: str | None = None  # "images" | "sequences"

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(), "skip_reason": self.skip_reason, "auto_batch": self.auto_batch,
                "timeout_s": self.timeout_s, "unit": self.unit}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlannedConfig:
        return cls(config=RunConfig.from_dict(data["config"]), skip_reason=data.get("skip_reason"),
                   auto_batch=bool(data.get("auto_batch")), timeout_s=float(data["timeout_s"]),
                   unit=data.get("unit"))


@dataclass
class Plan:
    """What `dlbench run` will measure, on which device."""

    device: str
    items: list[PlannedConfig]
    quick_suite: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "items": [item.to_dict() for item in self.items],
                "quick_suite": self.quick_suite, "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        return cls(device=data["device"], items=[PlannedConfig.from_dict(i) for i in data["items"]],
                   quick_suite=bool(data.get("quick_suite")), notes=list(data.get("notes", [])))


# ---------------------------------------------------------------------------------------------- validation


def parse_batch_size(value: str | int | None) -> int | str | None:
    """`--batch-size`: a positive integer or "auto"."""
    if value is None or isinstance(value, int) and not isinstance(value, bool):
        if isinstance(value, int) and value <= 0:
            raise BadInput(f"--batch-size must be a positive integer or 'auto', got {value}")
        return value
    text = str(value).strip().lower()
    if text == "auto":
        return "auto"
    try:
        number = int(text)
    except ValueError:
        raise BadInput(f"--batch-size must be a positive integer or 'auto', got {value!r}") from None
    if number <= 0:
        raise BadInput(f"--batch-size must be a positive integer or 'auto', got {number}")
    return number


MAX_COUNT = 1_000_000


def validate_options(options: RunOptions) -> RunOptions:
    """Check what needs no torch: scenario, precision and compile names, positive numbers. Raises BadInput."""
    from dlbench import scenarios

    options.scenario = scenarios.get(options.scenario).name
    options.precisions = [check_precision(name) for name in options.precisions]  # any case, as workloads
    options.compile_modes = [check_compile_mode(name) for name in options.compile_modes]
    options.batch_size = parse_batch_size(options.batch_size)
    options.batch_sizes = list(dict.fromkeys(parse_batch_size(b) for b in options.batch_sizes))
    if "auto" in options.batch_sizes or (options.batch_sizes and options.batch_size is not None):
        raise BadInput("--batch-size auto (or one --batch-size) cannot be combined with other batch sizes; "
                       "give -b N once per batch size")
    for flag, value in (("--steps", options.steps), ("--repeats", options.repeats),
                        ("--seq-len", options.seq_len), ("--timeout", options.timeout_s),
                        ("--prompt-len", options.prompt_len), ("--new-tokens", options.new_tokens)):
        if value is not None and not 0 < value < math.inf:  # also rejects nan, which compares False
            raise BadInput(f"{flag} must be a positive finite number, got {value}")
    if options.warmup is not None and options.warmup < 0:
        raise BadInput(f"--warmup must be 0 or more, got {options.warmup}")
    # Counts beyond these cannot be a benchmark run, and huge ones overflow torch's index type in the worker.
    for flag, value in (("--steps", options.steps), ("--warmup", options.warmup), ("--repeats", options.repeats),
                        ("--seq-len", options.seq_len), ("--prompt-len", options.prompt_len),
                        ("--new-tokens", options.new_tokens),
                        ("--batch-size", options.batch_size if isinstance(options.batch_size, int) else None),
                        *(("--batch-size", b) for b in options.batch_sizes)):
        if value is not None and value > MAX_COUNT:
            raise BadInput(f"{flag} must be at most {MAX_COUNT:,}, got {value}")
    _check_scenario_options(options)
    from dlbench.runner.distributed import parse_gpus

    options.gpus = parse_gpus(options.gpus)
    if not _device_syntax_ok(options.device):
        raise BadInput(f"unknown device {options.device!r}; use auto, cpu, cuda, cuda:N or mps")
    return options


def _check_scenario_options(options: RunOptions) -> None:
    """Options that belong to one scenario: --prompt-len and --new-tokens to generate, --seq-len and
    --batch-size auto to the others."""
    if options.scenario != "generate":
        for flag, value in (("--prompt-len", options.prompt_len), ("--new-tokens", options.new_tokens)):
            if value is not None:
                raise BadInput(f"{flag} applies to --scenario generate only")
        return
    if options.seq_len is not None:
        raise BadInput("--seq-len does not apply to --scenario generate; use --prompt-len (and --new-tokens)")
    if options.batch_size == "auto":
        raise BadInput("--batch-size auto does not apply to --scenario generate; give batch sizes with -b N")


def check_scenario_workloads(options: RunOptions, workloads: list[str], flavour: str) -> None:
    """BadInput for a workload the scenario does not run (a Llama workload in train, resnet50 in generate) or
    generate lengths that do not fit a model's positions (`scenarios.generate.length_reason`)."""
    from dlbench import scenarios

    scenario = scenarios.get(options.scenario)
    for name in workloads:
        reason = scenario.workload_reason(name)
        if reason:
            raise BadInput(reason)
        if options.scenario == "generate":
            from dlbench.scenarios.generate import length_reason

            config = RunConfig(name, flavour=flavour, prompt_len=options.prompt_len, new_tokens=options.new_tokens)
            reason = length_reason(name, flavour, scenario.settings(config))
            if reason:
                raise BadInput(reason)


def _device_syntax_ok(device: str) -> bool:
    if device in ("auto", "cpu", "cuda", "mps"):
        return True
    prefix, _, index = device.partition(":")
    return prefix == "cuda" and index.isdigit()


def check_workloads(names: list[str]) -> list[str]:
    """The registry's names for `names`, matched regardless of case (`RESNET50` is resnet50).

    An unknown name raises BadInput listing the valid ones, with the name probably meant: `X-tiny` is
    `-w X --tiny`, a prefix or a typo gets its close matches; an empty name says so (`dlbench.names`).
    """
    from dlbench.names import match_workload
    from dlbench.workloads import registry

    known = registry.names()
    matched = []
    for name in names:
        try:
            matched.append(match_workload(name, known))
        except BadInput:
            from dlbench.workloads.llama import catalogue_refusal

            reason = catalogue_refusal(name)  # a Qwen or a mixture of experts of the model catalogue
            if reason:
                raise BadInput(reason) from None
            raise
    return matched

# -------------------------------------------------------------------------------------------------- device


def check_device(device: str, facts: DeviceFacts) -> None:
    """BadInput unless the resolved `--device` exists on this machine."""
    if device == "cpu":
        return
    if device == "mps":
        if not facts.mps_available:
            raise BadInput("--device mps: no Apple MPS device on this machine")
        return
    _, _, index_text = device.partition(":")
    index = int(index_text) if index_text else 0
    if not facts.cuda:
        raise BadInput(f"--device {device}: no CUDA (or ROCm) GPU is available on this machine; "
                       "use --device cpu or auto")
    if index >= len(facts.cuda):
        raise BadInput(f"--device {device}: only {len(facts.cuda)} CUDA device(s) visible "
                       f"(cuda:0..cuda:{len(facts.cuda) - 1})")


def _device_entry(device: str, facts: DeviceFacts) -> dict[str, Any] | None:
    if device.startswith("cuda"):
        return facts.cuda[int(device.partition(":")[2] or 0)]
    return None


# -------------------------------------------------------------------------------------------------- plan


def _batch_sizes(options: RunOptions, spec: dict[str, Any], workload: Any, memory: int | None, flavour: str,
                 precision: str) -> list[int]:
    """The batch sizes to measure one workload at: every `-b N` given (in order), else the suite's, else the
    workload's default for the device memory (mixed precision halves activation memory: the GPU default doubles,
    methodology table)."""
    if options.batch_sizes:
        return list(options.batch_sizes)
    if isinstance(options.batch_size, int):
        return [options.batch_size]
    if spec["batch_size"] is not None:
        return [spec["batch_size"]]
    return [int(workload.default_batch_size(memory, flavour, precision=precision))]


def build_plan(options: RunOptions, facts: DeviceFacts | None = None) -> Plan:
    """Expand validated options into a `Plan` (imports the workload registry and the scenarios' capabilities)."""
    from dlbench.scenarios import unsupported_reason
    from dlbench.workloads import registry

    validate_options(options)
    options.workloads = check_workloads(options.workloads)
    facts = facts if facts is not None else DeviceFacts.detect()
    device = resolve_device(options.device, facts)
    check_device(device, facts)
    entry = _device_entry(device, facts)
    on_gpu = entry is not None
    flavour = "tiny" if options.tiny else "full"
    notes: list[str] = []

    quick = not options.tiny and not on_gpu and not options.workloads
    generate = options.scenario == "generate"
    if generate:
        steps = GENERATE_DEFAULTS["gpu_steps" if on_gpu else "cpu_steps"]
    elif options.tiny:
        steps = TINY_STEPS
    elif on_gpu:
        steps = GPU_DEFAULT_STEPS
    else:
        steps = QUICK_STEPS
    warmup = options.warmup if options.warmup is not None else steps["warmup"]
    n_steps = options.steps if options.steps is not None else steps["steps"]
    repeats = options.repeats if options.repeats is not None else steps["repeats"]

    if options.precisions:
        precisions = list(dict.fromkeys(options.precisions))
    elif generate and on_gpu:  # served in 16 bits; bf16 from Ampere (compute capability 8.0), and on ROCm
        major = entry["compute_capability"][0] if entry.get("compute_capability") else 0
        precisions = ["bf16" if major >= 8 or facts.hip else "fp16"]
    elif on_gpu:
        # ROCm reports the gfx version as the compute capability (9.0 for an MI250X), and tf32 is NVIDIA's.
        major = entry["compute_capability"][0] if entry.get("compute_capability") else 0
        precisions = ["tf32" if major >= 8 and not facts.hip else "fp32", "amp-fp16"]
    else:
        precisions = ["fp32"]
    if options.compile_modes:
        compile_modes = list(dict.fromkeys(options.compile_modes))
    elif generate and on_gpu:
        compile_modes = list(GENERATE_DEFAULTS["gpu_compile"])
    else:
        compile_modes = list(GPU_DEFAULT_COMPILE) if on_gpu else ["off"]

    prompt_len, new_tokens = options.prompt_len, options.new_tokens
    if options.workloads:
        suite = [{"workload": name, "batch_size": None, "seq_len": None}
                 for name in dict.fromkeys(options.workloads)]
    elif generate:
        suite = [{"workload": name, "batch_size": None, "seq_len": None}
                 for name in GENERATE_DEFAULTS["gpu_workloads" if on_gpu or options.tiny else "cpu_workloads"]]
    elif on_gpu or options.tiny:
        suite = [{"workload": name, "batch_size": None, "seq_len": None} for name in GPU_DEFAULT_WORKLOADS]
    else:
        suite = [dict(item) for item in QUICK_SUITE]
    if options.scenario == "infer":  # serving defaults (scenarios/infer.py, docs/infer.md)
        from dlbench.scenarios.infer import plan_defaults

        precisions, compile_modes, suite = plan_defaults(options, entry, facts.hip, quick, precisions, compile_modes,
                                                         suite)
    if generate:
        if quick:
            prompt_len = prompt_len or GENERATE_DEFAULTS["cpu_prompt_len"]
            new_tokens = new_tokens or GENERATE_DEFAULTS["cpu_new_tokens"]
            notes.append(f"quick check: no CUDA GPU here, so dlbench generates with {suite[0]['workload']} on "
                         f"{device} (fp32, eager, prompt {prompt_len}, {new_tokens} new tokens, {warmup} warm-up + "
                         f"{repeats} measured generations). Not comparable with GPU results.")
        prompt_len = prompt_len or GENERATE_DEFAULTS["prompt_len"]
        new_tokens = new_tokens or GENERATE_DEFAULTS["new_tokens"]
        check_scenario_workloads(replace(options, prompt_len=prompt_len, new_tokens=new_tokens),
                                 [spec["workload"] for spec in suite], flavour)
    else:
        check_scenario_workloads(options, [spec["workload"] for spec in suite], flavour)
    if quick and not generate:
        notes.append(f"quick suite: no CUDA GPU here, so dlbench runs a short suite on {device} "
                     f"({', '.join(item['workload'] for item in suite)}; fp32, eager, small batches, "
                     f"{warmup} warm-up + {n_steps} steps x {repeats} repeats). "
                     "Numbers are not comparable with GPU results; pick workloads with -w for a full run.")

    if options.batch_size == "auto" and device == "mps":
        from dlbench.runner.batch_search import MAX_BATCH_SIZE

        # MPSAllocator's limit is PYTORCH_MPS_HIGH_WATERMARK_RATIO (1.7 by default; torch's MPS environment
        # variables) x Metal's recommendedMaxWorkingSetSize, which on unified memory can exceed the RAM.
        notes.append(f"--batch-size auto on mps: the search doubles up to {MAX_BATCH_SIZE} until the MPS "
                     "allocator reports out of memory, at PYTORCH_MPS_HIGH_WATERMARK_RATIO (1.7 by default) times "
                     "Metal's recommended working set; that limit can exceed the unified memory, so large probes "
                     "may swap (slow, minutes) before one fails. Give --batch-size N to avoid it.")
    elif options.batch_size == "auto" and not on_gpu:
        from dlbench.runner.batch_search import MAX_BATCH_SIZE

        notes.append(f"--batch-size auto on {device}: there is no device-memory limit to find, so the search "
                     f"doubles up to {MAX_BATCH_SIZE} (one fresh process per probe; minutes, and the host's memory "
                     "is the only bound). It is meant for GPUs; give --batch-size N here.")
    memory = entry["memory_bytes"] if entry else None
    items: list[PlannedConfig] = []
    for spec in suite:
        workload = registry.get(spec["workload"])
        # The workload decides the length when none is given (its default, or the tiny flavour's).
        explicit_seq_len = options.seq_len or spec["seq_len"]
        auto_batch = options.batch_size == "auto"
        for precision, batch in [(p, b) for p in precisions
                                 for b in _batch_sizes(options, spec, workload, memory, flavour, p)]:
            for mode in compile_modes:
                config = RunConfig(workload=workload.name, precision=precision, compile=mode, batch_size=batch,
                                   seq_len=explicit_seq_len, device=device, warmup_steps=warmup, steps=n_steps,
                                   repeats=repeats, seed=options.seed, flavour=flavour, world_size=1,
                                   scenario=options.scenario, prompt_len=prompt_len, new_tokens=new_tokens)
                config = replace(config, seq_len=workload.seq_len(config))
                timeout = options.timeout_s or (MAX_AUTOTUNE_TIMEOUT_S if mode == "max-autotune"
                                                else DEFAULT_TIMEOUT_S)
                items.append(PlannedConfig(config=config, skip_reason=unsupported_reason(config, facts),
                                           auto_batch=auto_batch, timeout_s=float(timeout),
                                           unit=getattr(workload, "sample_unit", None)))
    if options.gpus is not None:  # `--gpus 1,2,4`: each configuration at each device count (runner.launchers.torchrun)
        from dlbench.runner.distributed import gpu_plan_notes, resolve_gpu_counts

        counts = resolve_gpu_counts(options.gpus, device, facts.cuda)
        notes.extend(gpu_plan_notes(counts, device, facts.cuda))
        items = [replace(item, config=replace(item.config, world_size=n)) for item in items for n in counts]
    return Plan(device=device, items=items, quick_suite=quick, notes=notes)
