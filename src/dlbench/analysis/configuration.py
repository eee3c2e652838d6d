"""What identifies one measured configuration, and how it reads: `dlbench compare A B`, `dlbench run`.

Every display of a configuration (the progress line of `dlbench run`, messages under the results table, the
rows of `dlbench compare` and `dlbench doctor`, scaling series, report charts) builds its name here, so that one
configuration reads the same everywhere and two configurations never read alike:

    config_label(result)              # "bert-base-squad amp-fp16 compile=default bs=64 seq=384 x2 tiny"
    config_label(result, words=True)  # "bert-base-squad amp-fp16 compile default bs 64 seq 384 2 GPUs tiny"

Works on plain dicts (a result, a stored row, `RunConfig.to_dict()`); nothing here imports torch. The precision
and compile-mode names and their checks are here too, so that `analysis/` (estimate, advise) and `runner/`
(the planner, `RunConfig`) share one list without `analysis/` importing `runner/`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlbench.errors import BadInput
from dlbench.schema.keys import DEFAULT_SCENARIO

# The fields that identify one measured configuration; two results are compared only when all agree. The scenario
# first: a training result is never paired with an inference result of the same model and batch size. A generate
# result's prompt length is its `seq_len`; `new_tokens` (absent elsewhere) keeps pp512/tg128 apart from pp512/tg32.
CONFIG_KEYS: tuple[str, ...] = ("scenario", "workload", "precision", "compile", "batch_size", "seq_len",
                                "world_size", "flavour", "new_tokens")

# Numerical precision modes. fp32 is strict (TF32 off for matmul and cuDNN); tf32 needs CUDA CC >= 8.0;
# amp-fp16 is autocast fp16 with a GradScaler; amp-bf16 is autocast bf16 (needs hardware support, CPU allowed).
TRAIN_PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "amp-fp16", "amp-bf16")
# Serving modes (measurement/inference_precision.py): weights cast to fp16/bf16 without autocast, torchao
# weight-only int8/int4 and float8 (CUDA compute capability >= 8.9). The train scenario refuses these.
INFERENCE_PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "fp16", "bf16", "int8-weight-only", "int4-weight-only",
                                         "fp8")
# Every precision name dlbench knows; each scenario measures its own subset (`Scenario.precisions`).
PRECISIONS: tuple[str, ...] = TRAIN_PRECISIONS + tuple(p for p in INFERENCE_PRECISIONS if p not in TRAIN_PRECISIONS)

# torch.compile modes; "off" is eager execution.
COMPILE_MODES: tuple[str, ...] = ("off", "default", "max-autotune", "reduce-overhead")


def check_precision(name: str) -> str:
    """The dlbench precision `name` names, in any case (`AMP-FP16` is `amp-fp16`), else BadInput naming the
    valid ones."""
    canonical = name.strip().lower()
    if canonical not in PRECISIONS:
        raise BadInput(f"unknown precision {name!r}; choose from: {', '.join(PRECISIONS)}")
    return canonical


def check_compile_mode(name: str) -> str:
    """The torch.compile mode dlbench runs that `name` names, in any case, else BadInput naming the valid ones."""
    canonical = name.strip().lower()
    if canonical not in COMPILE_MODES:
        raise BadInput(f"unknown compile mode {name!r}; choose from: {', '.join(COMPILE_MODES)}")
    return canonical


# What a missing field means (older documents and rows leave them out).
_DEFAULTS: dict[str, Any] = {"scenario": DEFAULT_SCENARIO, "flavour": "full", "world_size": 1, "compile": "off"}


def config_key(result: Mapping[str, Any]) -> tuple:
    """The identity of a result's configuration (missing `scenario` means "train", as in every version-1
    result; missing `flavour` means "full", `world_size` 1)."""
    return tuple(result.get(k) if result.get(k) is not None else _DEFAULTS.get(k) for k in CONFIG_KEYS)


def config_fields(result: Mapping[str, Any]) -> dict[str, Any]:
    """The identifying fields of a result as it records them, for a row of output (`dlbench compare --json`); a
    result that names no scenario (version 1) is a training result."""
    fields = {k: result.get(k) for k in CONFIG_KEYS}
    fields["scenario"] = fields["scenario"] or DEFAULT_SCENARIO
    return fields


def config_key_without(result: Mapping[str, Any], *fields: str) -> tuple:
    """`config_key` less `fields`: the identity two results share when they may differ only in those fields
    (scaling pairs on everything but `world_size`; speed-ups on everything but `compile`, or `precision`)."""
    return tuple(v for k, v in zip(CONFIG_KEYS, config_key(result), strict=True) if k not in fields)


def compile_name(mode: str | None) -> str:
    """The compile mode in words: "eager" for off (or unknown), else "compile MODE"."""
    return "eager" if mode in (None, "off") else f"compile {mode}"


def config_parts(config: Mapping[str, Any], *, words: bool = False, workload: bool = True,
                 per_device: bool = False) -> list[str]:
    """The pieces of `config_label`, for a display that joins them its own way (see there for the arguments)."""
    compile_mode = config.get("compile") or "off"
    world_size = config.get("world_size") or 1
    batch = f"{config.get('batch_size')}{'/device' if per_device else ''}"
    parts = [str(config.get("workload"))] if workload else []
    parts.append(str(config.get("precision")))
    if words:
        parts += [compile_name(compile_mode), f"bs {batch}"]
    else:
        parts += [f"compile={compile_mode}", f"bs={batch}"]
    if config.get("new_tokens"):  # generate: prompt and output lengths, as llama-bench's pp512 / tg128
        prompt = config.get("prompt_len") or config.get("seq_len")
        parts += ([f"prompt {prompt}", f"{config['new_tokens']} new tokens"] if words
                  else [f"pp={prompt}", f"tg={config['new_tokens']}"])
    elif config.get("seq_len"):
        parts.append(f"seq {config['seq_len']}" if words else f"seq={config['seq_len']}")
    if world_size > 1 and not per_device:
        parts.append(f"{world_size} GPUs" if words else f"x{world_size}")
    if config.get("flavour") not in (None, "full"):
        parts.append(str(config["flavour"]))
    return parts


def config_label(config: Mapping[str, Any], *, words: bool = False, workload: bool = True,
                 per_device: bool = False) -> str:
    """A configuration's name: workload, precision, compile mode, batch size, then what is not the default.

    The sequence length, the GPU count (above one) and the flavour (other than "full") follow when set.
    `words=False` (default) is the compact form for lines and JSON labels, `resnet50 amp-fp16 compile=default
    bs=256 x2`; `words=True` reads as words and wraps at spaces in a table cell, `resnet50 amp-fp16 compile
    default bs 256 2 GPUs` (eager for compile off). `workload=False` leaves the workload out, for a display that
    already names it. `per_device=True` names a series over GPU counts: the batch size is per device and the GPU
    count is left out.
    """
    return " ".join(config_parts(config, words=words, workload=workload, per_device=per_device))
