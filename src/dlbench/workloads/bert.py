"""BERT cased (vocab 28996): SQuAD-style fine-tuning (`*-squad`, seq 384) and MLM pre-training (`*-mlm`, seq 128).

Exercise it with `PYTHONPATH=src python -m dlbench run --workload bert-base-squad --device cpu --batch-size 1`.

Models are transformers' `BertForQuestionAnswering` and `BertForMaskedLM` built from a `BertConfig` (random
weights, nothing downloaded) with SDPA attention; they return logits, and training (the `train` scenario) adds
the loss the workload names and AdamW (weight decay 0.01).
Attention is transformers' own SDPA function registered under `ATTENTION` ("sdpa_no_mask"), a name that has no
mask builder: transformers then never builds an attention mask. Sequences are full length, so the mask would be
all ones anyway; but transformers 5.17 (the GPU machines' version) materialises that all-ones mask whenever
TorchDynamo traces the model, which rules out the flash-attention kernel for compiled runs only and would make
eager and compiled BERT run different attention kernels. Eager and compiled runs now both call SDPA without a mask.
The vocabulary stays at the cased 28996 (not padded to a multiple of 64): it is a matrix dimension only in the
MLM head, which runs on the 15% masked tokens (about 1.5% of `bert-large-mlm`'s FLOPs), and the `squad` models
only look rows up; padding would gain at most about 1% while changing the model the benchmark names.
- `squad`: start and end logits; targets the start and end positions; loss `span` = mean of start- and
  end-position cross-entropy, as SQuAD fine-tuning (what AIME and Lambda publish at 384 tokens).
- `mlm`: logits of ceil(15%) of the positions of each sequence (20 at 128 tokens, NVIDIA's
  `max_predictions_per_seq`), the head applied to the masked positions only (see `modules.BertMaskedLM`); the
  positions are an input, their token ids the targets; loss `masked-lm` (cross-entropy).
  NVIDIA's pre-training phase 1 also trains next-sentence prediction; that head is 2 outputs on the pooled
  [CLS] token (under 0.01% of the FLOPs) and is left out.
Sequences are full length (no padding), so no attention mask is passed.
The tiny flavour: 2 layers, hidden 64, 2 heads, vocabulary 1000, 32 tokens.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from dlbench.workloads.base import BertSpec, SizedWorkload
from dlbench.workloads.registry import register

if TYPE_CHECKING:  # pragma: no cover
    from dlbench.measurement.config import RunConfig

CASED_VOCAB = 28996  # bert-base-cased / bert-large-cased vocab.txt
BERT_BASE = BertSpec(
    hidden_size=768, num_layers=12, num_heads=12, intermediate_size=3072, vocab_size=CASED_VOCAB
)
BERT_LARGE = BertSpec(
    hidden_size=1024, num_layers=24, num_heads=16, intermediate_size=4096, vocab_size=CASED_VOCAB
)
BERT_TINY = BertSpec(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=256, vocab_size=1000)

MASKED_FRACTION = 0.15  # BERT's masking rate
ATTENTION = "sdpa_no_mask"  # transformers' SDPA attention without a mask builder (module docstring)


def register_attention() -> str:
    """Register transformers' SDPA function as `ATTENTION` (idempotent) and return the name."""
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    AttentionInterface.register(ATTENTION, sdpa_attention_forward)
    return ATTENTION


def masked_count(seq_len: int) -> int:
    """Masked positions per sequence: ceil(15%), i.e. 20 at 128 tokens (NVIDIA's max_predictions_per_seq)."""
    return max(1, math.ceil(MASKED_FRACTION * seq_len))


class BertWorkload(SizedWorkload):
    """A transformers BERT with a task head; subclasses pick the head, its loss and its inputs."""

    sample_unit = "sequences"
    tiny_seq_len = 32
    optimizer = "adamw"

    def __init__(
        self,
        name: str,
        full: BertSpec,
        default_seq_len: int,
        batch_80gb: int,
        cpu_batch: int = 2,
        tiny: BertSpec = BERT_TINY,
        tiny_batch: int = 8,
        description: str = "",
    ) -> None:
        super().__init__(name, full, tiny, batch_80gb, cpu_batch, tiny_batch, description, default_seq_len)

    def bert_config(self, config: RunConfig) -> Any:
        from transformers import BertConfig

        spec = self.spec(config)
        seq_len = self.seq_len(config) or self.default_seq_len
        return BertConfig(
            vocab_size=spec.vocab_size,
            hidden_size=spec.hidden_size,
            num_hidden_layers=spec.num_layers,
            num_attention_heads=spec.num_heads,
            intermediate_size=spec.intermediate_size,
            # BERT's 512 positions; longer `--seq-len` values get a larger (random) position table.
            max_position_embeddings=max(512, seq_len),
            type_vocab_size=2,
            attn_implementation=register_attention(),
        )

    def _token_inputs(self, config: RunConfig, batch_size: int, generator: Any, device: Any) -> tuple:
        import torch

        spec = self.spec(config)
        seq_len = self.seq_len(config)
        if str(device) == "meta":
            ids = torch.empty((batch_size, seq_len), dtype=torch.long, device="meta")
            return ids, torch.empty_like(ids)
        input_ids = torch.randint(0, spec.vocab_size, (batch_size, seq_len), generator=generator)
        # Two segments (question / context, or sentence A / B) of equal length.
        token_type_ids = (torch.arange(seq_len) >= seq_len // 2).long().expand(batch_size, -1).contiguous()
        return input_ids, token_type_ids


class BertSquadWorkload(BertWorkload):
    """`BertForQuestionAnswering`: start and end logits; trained on start/end cross-entropy (`span`)."""

    loss = "span"

    def build_model(self, config: RunConfig) -> Any:
        from transformers import BertForQuestionAnswering

        from dlbench.workloads.modules import BertQuestionAnswering

        return BertQuestionAnswering(BertForQuestionAnswering(self.bert_config(config)))

    def make_inputs(self, config: RunConfig, batch_size: int, generator: Any, device: Any = "cpu") -> tuple:
        return self._token_inputs(config, batch_size, generator, device)

    def make_targets(self, config: RunConfig, batch_size: int, generator: Any, device: Any = "cpu") -> tuple:
        """Answer start and end positions (an answer of up to 30 tokens, inside the sequence)."""
        import torch

        if str(device) == "meta":
            pos = torch.empty((batch_size,), dtype=torch.long, device="meta")
            return pos, torch.empty_like(pos)
        seq_len = self.seq_len(config)
        start = torch.randint(0, seq_len, (batch_size,), generator=generator)
        end = torch.clamp(start + torch.randint(0, 30, (batch_size,), generator=generator), max=seq_len - 1)
        return start, end


class BertMlmWorkload(BertWorkload):
    """`BertForMaskedLM` (encoder + tied MLM head) on ceil(15%) masked positions per sequence (`masked-lm`)."""

    loss = "masked-lm"

    def build_model(self, config: RunConfig) -> Any:
        from transformers import BertForMaskedLM

        from dlbench.workloads.modules import BertMaskedLM

        return BertMaskedLM(BertForMaskedLM(self.bert_config(config)))

    def make_inputs(self, config: RunConfig, batch_size: int, generator: Any, device: Any = "cpu") -> tuple:
        import torch

        input_ids, token_type_ids = self._token_inputs(config, batch_size, generator, device)
        seq_len = input_ids.size(1)
        masked = masked_count(seq_len)
        if str(device) == "meta":
            return input_ids, token_type_ids, torch.empty((batch_size, masked), dtype=torch.long, device="meta")
        # Distinct positions per sequence, in order (as a masking data pipeline produces them).
        positions = torch.rand((batch_size, seq_len), generator=generator).argsort(dim=1)[:, :masked]
        positions = positions.sort(dim=1).values
        return input_ids, token_type_ids, positions

    def make_targets(self, config: RunConfig, batch_size: int, generator: Any, device: Any = "cpu") -> tuple:
        """The original token ids of the masked positions."""
        import torch

        shape = (batch_size, masked_count(self.seq_len(config)))
        if str(device) == "meta":
            return (torch.empty(shape, dtype=torch.long, device="meta"),)
        return (torch.randint(0, self.spec(config).vocab_size, shape, generator=generator),)


# Default batch sizes on an 80 GB GPU: they fit fp32 as well as AMP (see docs/methodology.md, "Default batch size").
register(
    BertSquadWorkload(
        "bert-base-squad",
        BERT_BASE,
        384,
        batch_80gb=128,
        description="BERT-base cased, SQuAD-style QA head, seq 384, AdamW",
    )
)
register(
    BertSquadWorkload(
        "bert-large-squad",
        BERT_LARGE,
        384,
        batch_80gb=64,
        cpu_batch=1,
        description="BERT-large cased, SQuAD-style QA head, seq 384, AdamW",
    )
)
register(
    BertMlmWorkload(
        "bert-base-mlm",
        BERT_BASE,
        128,
        batch_80gb=256,
        cpu_batch=4,
        description="BERT-base cased, MLM pre-training head on 15% masked tokens, seq 128, AdamW",
    )
)
register(
    BertMlmWorkload(
        "bert-large-mlm",
        BERT_LARGE,
        128,
        batch_80gb=128,
        cpu_batch=2,
        description="BERT-large cased, MLM pre-training head on 15% masked tokens, seq 128, AdamW",
    )
)
