"""Llama-shaped decoder LLMs with random weights, for the `generate` scenario: `llama-3.1-8b`, `llama-3.2-1b`, ...

Exercise it with `PYTHONPATH=src python -m dlbench run --scenario generate -w llama-3.1-8b --tiny --device cpu
--prompt-len 32 --new-tokens 16`.

One workload per Llama-architecture row of the model catalogue (`dlbench.catalog.models`, `models.csv`: every
row of family "llama", each with its source), named after the shape it copies. The model is
`transformers.LlamaForCausalLM(LlamaConfig(**llama_config_kwargs(shape)))` with SDPA attention and random weights:
nothing is downloaded, and speed does not depend on the values of the weights. The tiny flavour
(`catalog.models.tiny`) keeps the shape's proportions (query heads per KV head, MLP/hidden ratio, tied
embeddings) at 2 layers, 16-wide heads and a 512-token vocabulary, so a CPU generates with it in milliseconds.

These workloads are generate-only (`scenarios = ("generate",)`): training a random 8B model is not what a buyer
asks, and the train scenario refuses them with that reason. Mixtures of experts and other families of the
catalogue (Qwen, Mistral, Gemma) are not registered; `catalogue_refusal` says so in one line when asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlbench.catalog.models import ModelShape, all_models, get_model, tiny
from dlbench.workloads.base import Workload
from dlbench.workloads.registry import register

if TYPE_CHECKING:  # pragma: no cover
    from dlbench.measurement.config import RunConfig

# The catalogue families that LlamaForCausalLM builds exactly (same modules, same parameter count).
LLAMA_FAMILIES: tuple[str, ...] = ("llama",)

# pp512 / tg128: llama.cpp's llama-bench defaults, the figures most published tables quote.
DEFAULT_PROMPT_LEN = 512
DEFAULT_NEW_TOKENS = 128


class LlamaWorkload(Workload):
    """A Llama decoder of one catalogue shape (`full`) and its tiny flavour, generating with a static KV cache."""

    sample_unit = "tokens"
    scenarios = ("generate",)
    batch_80gb = 1
    cpu_batch = 1
    tiny_batch = 1
    loss = "cross-entropy"
    optimizer = "adamw"

    def __init__(self, shape: ModelShape) -> None:
        self.name = shape.name
        self.full = shape
        self.tiny = tiny(shape)
        self.default_seq_len = DEFAULT_PROMPT_LEN
        self.description = (f"{shape.name} shape (hidden {shape.hidden}, {shape.layers} layers, {shape.heads} heads, "
                            f"{shape.kv_heads} KV heads, MLP {shape.intermediate}, vocab {shape.vocab}), "
                            "random weights, generate only")

    def shape(self, config: RunConfig) -> ModelShape:
        """The catalogue shape this config builds (the tiny flavour's for `--tiny`)."""
        return self.tiny if config.flavour == "tiny" else self.full

    def default_batch_size(self, device_memory_bytes: int | None, flavour: str, precision: str | None = None) -> int:
        """Batch 1: single-stream decoding, as llama-bench's tg128 and gpt-fast's tables."""
        return 1

    def seq_len(self, config: RunConfig) -> int | None:
        """The prompt length (`RunConfig.prompt_len`, else 512)."""
        return int(getattr(config, "prompt_len", None) or config.seq_len or DEFAULT_PROMPT_LEN)

    def llama_config(self, config: RunConfig) -> Any:
        """The `transformers.LlamaConfig` of this config's shape, SDPA attention."""
        from transformers import LlamaConfig

        from dlbench.catalog.models import llama_config_kwargs

        return LlamaConfig(**llama_config_kwargs(self.shape(config)), attn_implementation="sdpa")

    def build_model(self, config: RunConfig) -> Any:
        """`LlamaForCausalLM` with random weights (on the current default device), in eval mode."""
        from transformers import LlamaForCausalLM

        return LlamaForCausalLM(self.llama_config(config)).eval()

    def make_inputs(self, config: RunConfig, batch_size: int, generator: Any, device: Any = "cpu") -> tuple:
        """The prompt: (batch, prompt length) token ids drawn uniformly from the vocabulary."""
        import torch

        shape = (batch_size, self.seq_len(config))
        if str(device) == "meta":
            return (torch.empty(shape, dtype=torch.long, device="meta"),)
        return (torch.randint(0, self.shape(config).vocab, shape, generator=generator),)


def catalogue_refusal(name: str) -> str | None:
    """Why a catalogue model that is not a Llama workload cannot run (a mixture of experts, another family), or
    None when `name` is no such catalogue model."""
    from dlbench.errors import BadInput

    try:
        shape = get_model(name)
    except BadInput:
        return None
    if shape.family in LLAMA_FAMILIES and not shape.is_moe:
        return None
    kind = f"a mixture of experts ({shape.experts} experts)" if shape.is_moe else f"a {shape.family} model"
    llamas = ", ".join(s.name for s in all_models() if s.family in LLAMA_FAMILIES and not s.is_moe)
    return (f"{shape.name} is {kind}; the generate scenario builds Llama-architecture models only "
            f"(choose from: {llamas})")


for _shape in all_models():
    if _shape.family in LLAMA_FAMILIES and not _shape.is_moe:
        register(LlamaWorkload(_shape))
