"""Workloads: every tiny flavour trains on a CPU; registry, plugins, batch-size table, full-size shapes; the
forward of a workload is plain (no loss: the training scenario adds it)."""

from __future__ import annotations

import math
import sys

import pytest

from dlbench.errors import BadInput
from dlbench.measurement.config import RunConfig
from dlbench.workloads import registry
from dlbench.workloads.base import GIB, scaled_batch_size
from dlbench.workloads.bert import masked_count

BUILTIN = ["bert-base-mlm", "bert-base-squad", "bert-large-mlm", "bert-large-squad", "resnet50"]


pytestmark = pytest.mark.usefixtures("one_cpu_thread")

def _train(workload, config, steps=3):
    import torch

    from dlbench.scenarios.train import build_optimizer, training_batch, with_loss

    torch.manual_seed(0)
    inputs, targets = training_batch(
        workload, config, workload.default_batch_size(None, "tiny"), torch.Generator().manual_seed(0)
    )
    model = with_loss(workload, workload.build_model(config), len(inputs))
    model.train()
    optimizer, _ = build_optimizer(workload.optimizer, model.parameters(), "cpu")
    before = [p.detach().clone() for p in model.parameters()]
    losses = []
    for _ in range(steps):
        loss = model(*inputs, *targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
    changed = sum(not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters(), strict=True))
    return losses, changed, len(before)


def test_builtin_workloads_are_registered():
    assert set(BUILTIN) <= set(registry.names())
    for name in BUILTIN:
        workload = registry.get(name)
        assert workload.name == name
        assert workload.sample_unit in ("images", "sequences")


@pytest.mark.parametrize("name", BUILTIN)
def test_tiny_flavour_trains_on_cpu(name):
    workload = registry.get(name)
    losses, changed, total = _train(workload, RunConfig(name, flavour="tiny"))
    assert all(math.isfinite(v) for v in losses)
    # Every parameter that reaches the loss moves (the MLM head's tied decoder counts once).
    assert changed >= 0.9 * total
    assert losses[-1] < losses[0]  # same batch every step: training fits it


def test_unknown_workload_lists_valid_names():
    with pytest.raises(BadInput) as err:
        registry.get("resnet51")
    message = err.value.format_message()
    assert "resnet51" in message
    for name in BUILTIN:
        assert name in message


def test_plugin_module_from_environment(tmp_path, monkeypatch):
    (tmp_path / "dlbench_test_plugin.py").write_text(
        "from dlbench.workloads.registry import register\n"
        "from dlbench.workloads.resnet import ResNetWorkload, RESNET_TINY\n"
        "register(ResNetWorkload('plugin-net', RESNET_TINY))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DLBENCH_PLUGINS", "dlbench_test_plugin")
    try:
        assert "plugin-net" in registry.names()
        assert registry.get("plugin-net").sample_unit == "images"
    finally:
        registry.WORKLOADS.pop("plugin-net", None)
        sys.modules.pop("dlbench_test_plugin", None)
        registry._imported.discard("dlbench_test_plugin")


def test_broken_plugin_is_bad_input(monkeypatch):
    monkeypatch.setenv("DLBENCH_PLUGINS", "no_such_module_for_dlbench")
    with pytest.raises(BadInput, match="no_such_module_for_dlbench"):
        registry.get("resnet50")


def test_default_batch_size_scales_with_memory():
    resnet = registry.get("resnet50")
    h100 = 85_031_714_816  # torch.cuda.get_device_properties(...).total_memory of an H100 80GB HBM3
    rtx4090 = 25_393_692_672
    assert resnet.default_batch_size(h100, "full") == resnet.batch_80gb
    assert resnet.default_batch_size(rtx4090, "full") == resnet.batch_80gb // 4
    assert resnet.default_batch_size(None, "full") == resnet.cpu_batch
    assert resnet.default_batch_size(h100, "tiny") == resnet.tiny_batch
    # AMP halves activation memory: twice the fp32-safe batch on a GPU, the same on a CPU.
    assert resnet.default_batch_size(h100, "full", "amp-bf16") == 2 * resnet.batch_80gb
    assert resnet.default_batch_size(h100, "full", "tf32") == resnet.batch_80gb
    assert resnet.default_batch_size(None, "full", "amp-bf16") == resnet.cpu_batch
    sizes = [scaled_batch_size(128, m * GIB, 2) for m in (1, 8, 11, 16, 24, 40, 80, 141)]
    assert sizes == sorted(sizes) and sizes[0] >= 1


def test_seq_len_override_and_masked_positions():
    import torch

    mlm = registry.get("bert-base-mlm")
    config = RunConfig("bert-base-mlm", flavour="tiny", seq_len=40)
    assert mlm.seq_len(config) == 40
    generator = torch.Generator().manual_seed(1)
    ids, types, positions = mlm.make_inputs(config, 3, generator)
    (labels,) = mlm.make_targets(config, 3, generator)
    assert ids.shape == (3, 40) and types.shape == (3, 40)
    assert positions.shape == (3, masked_count(40)) == labels.shape
    assert masked_count(128) == 20  # NVIDIA's max_predictions_per_seq at 128 tokens
    for row in positions:  # distinct, sorted, in range
        assert row.unique().numel() == row.numel() and torch.equal(row, row.sort().values)
        assert int(row.max()) < 40
    assert mlm.seq_len(RunConfig("bert-base-mlm")) == 128
    assert registry.get("bert-large-squad").seq_len(RunConfig("bert-large-squad")) == 384


def test_masked_only_head_gives_the_full_head_loss():
    """Gathering masked positions before the head equals the head on all tokens with the rest ignored."""
    import torch
    import torch.nn.functional as F

    from dlbench.scenarios.losses import loss_function

    mlm = registry.get("bert-base-mlm")
    config = RunConfig("bert-base-mlm", flavour="tiny")
    torch.manual_seed(0)
    model = mlm.build_model(config).eval()
    generator = torch.Generator().manual_seed(2)
    ids, types, positions = mlm.make_inputs(config, 4, generator)
    (labels,) = mlm.make_targets(config, 4, generator)
    with torch.no_grad():
        gathered = loss_function(mlm.loss)(model(ids, types, positions), labels)
        logits = model.mlm(input_ids=ids, token_type_ids=types).logits
        full_labels = torch.full(ids.shape, -100)
        full_labels.scatter_(1, positions, labels)
        reference = F.cross_entropy(logits.reshape(-1, logits.size(-1)), full_labels.reshape(-1))
    torch.testing.assert_close(gathered, reference)


def test_full_size_models_match_the_published_architectures():
    import torch

    def params(name, **kw):
        with torch.device("meta"):
            model = registry.get(name).build_model(RunConfig(name, **kw))
        return sum(p.numel() for p in model.parameters())

    assert params("resnet50") == 25_557_032  # torchvision resnet50(): 25.6 M
    large = registry.get("bert-large-squad").bert_config(RunConfig("bert-large-squad"))
    assert (large.hidden_size, large.num_hidden_layers, large.num_attention_heads, large.vocab_size) == (
        1024,
        24,
        16,
        28996,
    )
    assert large._attn_implementation == "sdpa_no_mask"
    # BERT-large cased encoder is about 333 M parameters (334 M with the QA head's 2 outputs).
    assert 330e6 < params("bert-large-squad") < 336e6


def test_bert_attention_is_sdpa_without_a_mask_even_when_traced(monkeypatch):
    """transformers 5.17 builds an all-ones mask whenever it is traced (torch.compile), which rules out the
    flash kernel; dlbench's attention name has no mask builder, so no mask is built, traced or not."""
    import torch
    import torch.nn.functional as F
    import transformers.masking_utils as masking
    from transformers.masking_utils import create_bidirectional_mask

    workload = registry.get("bert-base-mlm")
    config = RunConfig("bert-base-mlm", flavour="tiny", device="cpu")
    bert_config = workload.bert_config(config)
    embeds = torch.zeros(2, 32, bert_config.hidden_size)
    monkeypatch.setattr(masking, "is_tracing", lambda *args: True)  # what 5.17 sees under TorchDynamo
    monkeypatch.setattr(masking, "is_torchdynamo_exporting", lambda: True, raising=False)
    assert create_bidirectional_mask(config=bert_config, inputs_embeds=embeds, attention_mask=None) is None
    monkeypatch.undo()

    calls = []
    real_sdpa = F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        no_mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None) is None
        # BERT attends both ways: a causal flag would be a different (and cheaper) model.
        calls.append(no_mask and not kwargs.get("is_causal", args[5] if len(args) > 5 else False))
        return real_sdpa(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    model = workload.build_model(config)
    model(*workload.make_inputs(config, 2, torch.Generator().manual_seed(0))).sum().backward()
    assert calls and all(calls)  # one SDPA call per layer, none with a mask, none causal
