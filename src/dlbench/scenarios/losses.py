"""Training losses, and the module that ends a plain model in one, so `torch.compile` and DDP see one `forward`.

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_scenarios.py -k loss`.

A workload names its loss (`Workload.loss`); each is `fn(outputs, *targets) -> scalar tensor`:
- `cross-entropy`: classifier logits `[batch, classes]` against class indices `[batch]` (ResNet).
- `masked-lm`: logits of the masked positions `[batch, masked, vocab]` against their token ids
  `[batch, masked]` (BERT pre-training; the workload's model runs its head on the masked positions only).
- `span`: SQuAD's loss, the mean of the start- and end-position cross-entropy, positions beyond the sequence
  ignored (as transformers' `BertForQuestionAnswering` computes it).
- `mean`: the mean of the output, for a model without targets whose output stands for its loss (tests, probes).
Imported only while a model is built (this module imports torch).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits, labels)


def masked_lm(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))


def span(logits: tuple[torch.Tensor, torch.Tensor], start_positions: torch.Tensor,
         end_positions: torch.Tensor) -> torch.Tensor:
    start_logits, end_logits = logits
    ignored_index = start_logits.size(1)  # a position past the sequence: no answer in it, ignored
    start_positions = start_positions.clamp(0, ignored_index)
    end_positions = end_positions.clamp(0, ignored_index)
    start_loss = F.cross_entropy(start_logits, start_positions, ignore_index=ignored_index)
    end_loss = F.cross_entropy(end_logits, end_positions, ignore_index=ignored_index)
    return (start_loss + end_loss) / 2


def mean(outputs: torch.Tensor) -> torch.Tensor:
    return outputs.float().mean()


LOSS_FUNCTIONS: dict[str, Callable[..., torch.Tensor]] = {
    "cross-entropy": cross_entropy,
    "masked-lm": masked_lm,
    "span": span,
    "mean": mean,
}


def loss_function(name: str) -> Callable[..., torch.Tensor]:
    """The loss called `name` (`Workload.loss`); ValueError naming the valid ones otherwise."""
    try:
        return LOSS_FUNCTIONS[name]
    except KeyError:
        raise ValueError(f"unknown training loss {name!r}; choose from: {', '.join(LOSS_FUNCTIONS)}") from None


class WithLoss(nn.Module):
    """A plain model followed by its loss: `forward(*inputs, *targets) -> loss`, the first `n_inputs`
    arguments going to the model."""

    def __init__(self, model: nn.Module, loss: Callable[..., torch.Tensor], n_inputs: int) -> None:
        super().__init__()
        self.model = model
        self.loss = loss
        self.n_inputs = n_inputs

    def forward(self, *batch: torch.Tensor) -> torch.Tensor:
        return self.loss(self.model(*batch[: self.n_inputs]), *batch[self.n_inputs:])
