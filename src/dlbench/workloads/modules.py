"""torch modules that end in the training loss, so that `torch.compile` and DDP see one `forward`.

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_workloads.py`.

Imported only from a workload's `build_model` (this module imports torch; the registry must not).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ClassifierLoss(nn.Module):
    """An image classifier followed by cross-entropy: `forward(images, labels) -> loss`."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self.net(images), labels)


class BertMaskedLMLoss(nn.Module):
    """BERT pre-training (MLM) loss with the prediction head run on the masked positions only.

    `forward(input_ids, token_type_ids, masked_positions, masked_labels)`: `masked_positions` is a
    `[batch, masked]` index tensor (a fixed count per sequence, as BERT's `max_predictions_per_seq`), so
    shapes are static. Gathering the masked hidden states before the head (NVIDIA's BERT does the same)
    skips the vocabulary projection for the 85% of tokens that have no label; the gather keeps the loss
    identical to computing the head everywhere and ignoring unlabelled tokens.
    """

    def __init__(self, mlm: nn.Module) -> None:
        super().__init__()
        self.mlm = mlm  # a transformers BertForMaskedLM: .bert (encoder) and .cls (tied MLM head)

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor,
        masked_positions: torch.Tensor,
        masked_labels: torch.Tensor,
    ) -> torch.Tensor:
        # Full-length synthetic sequences have no padding, so no attention mask: SDPA can use its
        # flash / memory-efficient kernels (a mask of ones would only add work).
        hidden = self.mlm.bert(input_ids=input_ids, token_type_ids=token_type_ids).last_hidden_state
        index = masked_positions.unsqueeze(-1).expand(-1, -1, hidden.size(-1))
        picked = torch.gather(hidden, 1, index)
        logits = self.mlm.cls(picked)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), masked_labels.reshape(-1))


class BertQuestionAnsweringLoss(nn.Module):
    """SQuAD-style fine-tuning loss (mean of start and end cross-entropy) of `BertForQuestionAnswering`."""

    def __init__(self, qa: nn.Module) -> None:
        super().__init__()
        self.qa = qa

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor,
        start_positions: torch.Tensor,
        end_positions: torch.Tensor,
    ) -> torch.Tensor:
        out = self.qa(
            input_ids=input_ids,
            token_type_ids=token_type_ids,
            start_positions=start_positions,
            end_positions=end_positions,
        )
        return out.loss
