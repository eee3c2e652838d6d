"""torch modules that give BERT's task heads a plain tensor `forward`, without a loss (scenarios add it).

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_workloads.py`.

Imported only from a workload's `build_model` (this module imports torch; the registry must not).
"""

from __future__ import annotations

import torch
from torch import nn


class BertMaskedLM(nn.Module):
    """BERT's MLM head run on the masked positions only: `forward(input_ids, token_type_ids, masked_positions)`
    returns the logits `[batch, masked, vocab]` of those positions.

    `masked_positions` is a `[batch, masked]` index tensor (a fixed count per sequence, as BERT's
    `max_predictions_per_seq`), so shapes are static. Gathering the masked hidden states before the head
    (NVIDIA's BERT does the same) skips the vocabulary projection for the 85% of tokens that have no label; the
    training loss on these logits equals the loss of the head on every token with the unlabelled ones ignored.
    """

    def __init__(self, mlm: nn.Module) -> None:
        super().__init__()
        self.mlm = mlm  # a transformers BertForMaskedLM: .bert (encoder) and .cls (tied MLM head)

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor,
        masked_positions: torch.Tensor,
    ) -> torch.Tensor:
        # Full-length synthetic sequences have no padding, so no attention mask: SDPA can use its
        # flash / memory-efficient kernels (a mask of ones would only add work).
        hidden = self.mlm.bert(input_ids=input_ids, token_type_ids=token_type_ids).last_hidden_state
        index = masked_positions.unsqueeze(-1).expand(-1, -1, hidden.size(-1))
        picked = torch.gather(hidden, 1, index)
        return self.mlm.cls(picked)


class BertQuestionAnswering(nn.Module):
    """`BertForQuestionAnswering` as `forward(input_ids, token_type_ids) -> (start_logits, end_logits)`."""

    def __init__(self, qa: nn.Module) -> None:
        super().__init__()
        self.qa = qa

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.qa(input_ids=input_ids, token_type_ids=token_type_ids)
        return out.start_logits, out.end_logits
