"""What a workload is: a plain model, its synthetic inputs and targets, and its default batch size.

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_workloads.py`.

A workload builds a module whose `forward(*inputs)` returns the model's plain outputs (logits), as it would in
any use; a scenario (`dlbench.scenarios`) decides what to do with them. Training adds the loss the workload
names (`loss`) against its targets (`make_targets`) and the optimizer it names (`optimizer`):

    with torch.device(device):
        model = workload.build_model(config)                       # random weights, made on the device
    inputs = workload.make_inputs(config, batch_size, generator)   # CPU tensors from a seeded generator
    targets = workload.make_targets(config, batch_size, generator) # drawn after the inputs, same generator
    model, batch, channels_last = workload.to_device(model, inputs + targets, device)
    outputs = model(*batch[:len(inputs)])

Adding a model is one line in its family's file (`register(SomeFamily("name", ...))`) or, outside the
package, a module named in `DLBENCH_PLUGINS` (see `registry`). Nothing here imports torch at import time:
`dlbench --help` lists workloads without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    from dlbench.measurement.config import RunConfig

GIB = 1024**3

# Default batch size as a fraction of a workload's batch size on an 80 GB GPU, by device memory
# (total bytes as torch reports them: an "80 GB" H100 reports 79.1 GiB, a "24 GB" card 23.6 GiB).
# `batch_80gb` is sized for fp32/tf32 and stays below what Lambda's published H100/A100 80GB runs trained
# (ResNet-50 640, BERT-large SQuAD 64, BERT-base SQuAD 172 in TF32); AMP halves activation memory and gets
# `AMP_FACTOR` times that batch. `--batch-size auto` finds the largest batch that actually trains.
MEMORY_TIERS: tuple[tuple[float, float], ...] = (
    (128 * GIB, 1.5),  # H200 141 GB, B200 (not 2x: an 80 GB part's batch x2 would be borderline)
    (70 * GIB, 1.0),  # H100 / A100 80 GB
    (36 * GIB, 0.5),  # A100 40 GB, A6000 / L40S 48 GB
    (20 * GIB, 0.25),  # RTX 3090 / 4090 / A5000 24 GB
    (14 * GIB, 0.125),  # 16 GB cards
    (10 * GIB, 0.0625),  # 11-12 GB cards
    (0, 0.03125),
)
AMP_FACTOR = 2  # 16-bit activations: twice the fp32 batch fits


def scaled_batch_size(batch_80gb: int, device_memory_bytes: int | None, cpu_batch: int) -> int:
    """The memory-tier default for a device with `device_memory_bytes` (None: CPU or unknown memory)."""
    if device_memory_bytes is None:
        return cpu_batch
    for floor_bytes, fraction in MEMORY_TIERS:
        if device_memory_bytes >= floor_bytes:
            return max(1, int(batch_80gb * fraction))
    return 1  # unreachable: the last tier's floor is 0


class Workload:
    """A model with synthetic data. Subclasses provide `build_model`, `make_inputs` and, to train, `make_targets`.

    Attributes:
        name: registry key, e.g. "resnet50".
        sample_unit: "images" or "sequences" (what samples/s counts).
        default_seq_len: the sequence length when `--seq-len` is not given (None for images).
        batch_80gb: default fp32/tf32 batch size on an 80 GB GPU (scaled by `MEMORY_TIERS`; x2 for AMP).
        cpu_batch: default batch size on a CPU or a device of unknown memory.
        tiny_batch: default batch size of the tiny flavour, any device.
        channels_last: whether inputs and weights use the NHWC layout on CUDA (convolutions; `uses_channels_last`).
        loss: the training loss against `make_targets` (a name in `dlbench.scenarios.losses.LOSS_FUNCTIONS`).
        optimizer: the training optimizer (a name in `dlbench.scenarios.train.OPTIMIZERS`).
        description: one line for listings.
        scenarios: the only scenarios that run this workload (`dlbench.scenarios`; the Llama workloads: generate),
            or None: every scenario that takes a plain model and its inputs (train, infer).
    """

    name: str = ""
    sample_unit: str = "sequences"
    default_seq_len: int | None = None
    tiny_seq_len: int | None = None
    batch_80gb: int = 32
    cpu_batch: int = 4
    tiny_batch: int = 8
    channels_last: bool = False
    loss: str = "cross-entropy"
    optimizer: str = "sgd"
    description: str = ""
    scenarios: tuple[str, ...] | None = None

    def default_batch_size(
        self, device_memory_bytes: int | None, flavour: str, precision: str | None = None
    ) -> int:
        """Per-device batch size used when `--batch-size` is not given.

        `precision` "amp-fp16"/"amp-bf16" doubles the GPU default (None: the fp32-safe size, which fits
        every precision). CPU and tiny defaults do not depend on it.
        """
        if flavour == "tiny":
            return self.tiny_batch
        batch = scaled_batch_size(self.batch_80gb, device_memory_bytes, self.cpu_batch)
        if device_memory_bytes is not None and precision in ("amp-fp16", "amp-bf16"):
            batch *= AMP_FACTOR
        return batch

    def seq_len(self, config: RunConfig) -> int | None:
        """The sequence length this config trains at (None for image workloads)."""
        if self.default_seq_len is None:
            return None
        if config.seq_len:
            return int(config.seq_len)
        if config.flavour == "tiny" and self.tiny_seq_len:
            return self.tiny_seq_len
        return self.default_seq_len

    # -- to be provided by each family -------------------------------------------------------------
    def build_model(self, config: RunConfig) -> Any:
        """A `torch.nn.Module` (random weights, on the current default device) whose forward returns the model's
        plain outputs, never a loss."""
        raise NotImplementedError

    def make_inputs(self, config: RunConfig, batch_size: int, generator: Any, device: Any = "cpu") -> tuple:
        """The synthetic batch: a tuple of tensors passed as `model(*inputs)`, drawn from `generator`.

        `device` "meta" asks for shape-only tensors (FLOP counting); otherwise tensors are drawn on the CPU
        (so every device trains on the same numbers for a seed) and the caller moves them once.
        """
        raise NotImplementedError

    def make_targets(self, config: RunConfig, batch_size: int, generator: Any, device: Any = "cpu") -> tuple:
        """The training targets of the batch (labels, positions...): what `loss` compares the outputs with.

        Drawn from `generator` after `make_inputs`; `device` as there. A model without targets (loss "mean")
        returns ().
        """
        return ()

    def uses_channels_last(self, device: Any) -> bool:
        """Whether `to_device` makes this workload NHWC on `device`.

        On CUDA, yes for `channels_last` workloads: cuDNN's tensor-core convolutions take NHWC natively. Under
        ROCm (also device type "cuda") only with PYTORCH_MIOPEN_SUGGEST_NHWC=1: without it torch hands MIOpen
        contiguous (NCHW) copies of channels-last inputs and weights at every convolution
        (`miopen_conv_suggest_memory_format` in ATen/native/ConvUtils.h, torch 2.4 to 2.14), so NHWC would add
        copies and be recorded as a layout that never ran. MPS and CPUs keep the default layout.
        """
        import os

        import torch

        if not self.channels_last or torch.device(device).type != "cuda":
            return False
        if getattr(torch.version, "hip", None):
            return os.environ.get("PYTORCH_MIOPEN_SUGGEST_NHWC") == "1"  # c10::utils::check_env: "1" is true
        return True

    def to_device(self, model: Any, inputs: tuple, device: Any) -> tuple[Any, tuple, bool]:
        """Move model and inputs to `device`; returns (model, inputs, channels_last_used).

        Workloads with `channels_last` get NHWC weights and 4-D inputs where `uses_channels_last` says so (CUDA:
        cuDNN's native tensor-core layout); elsewhere the default layout is kept.
        """
        import torch

        use_nhwc = self.uses_channels_last(device)
        if use_nhwc:
            model = model.to(device=device, memory_format=torch.channels_last)
        else:
            model = model.to(device)
        moved = []
        for tensor in inputs:
            if use_nhwc and tensor.dim() == 4 and tensor.is_floating_point():
                moved.append(tensor.to(device=device, memory_format=torch.channels_last))
            else:
                moved.append(tensor.to(device))
        return model, tuple(moved), use_nhwc

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class SizedWorkload(Workload):
    """A model family with two size specs, `full` (the published model) and `tiny` (`--tiny`), picked per config.

    Plugins may subclass `Workload` directly and set the class attributes instead.
    """

    def __init__(
        self,
        name: str,
        full: Any,
        tiny: Any,
        batch_80gb: int,
        cpu_batch: int,
        tiny_batch: int,
        description: str = "",
        default_seq_len: int | None = None,
    ) -> None:
        """`full` and `tiny` are the family's size specs (e.g. `ResNetSpec`, `BertSpec`) of the two flavours."""
        self.name = name
        self.full = full
        self.tiny = tiny
        self.batch_80gb = batch_80gb
        self.cpu_batch = cpu_batch
        self.tiny_batch = tiny_batch
        self.description = description
        if default_seq_len is not None:
            self.default_seq_len = default_seq_len

    def spec(self, config: RunConfig) -> Any:
        """The size spec of `config.flavour`."""
        return self.tiny if config.flavour == "tiny" else self.full


@dataclass(frozen=True)
class ResNetSpec:
    """A torchvision ResNet: block type, blocks per stage, classes and input resolution."""

    block: str  # "bottleneck" (ResNet-50 and up) or "basic" (ResNet-18/34 style)
    layers: tuple[int, int, int, int]
    num_classes: int
    image_size: int


@dataclass(frozen=True)
class BertSpec:
    """A BERT encoder: transformers `BertConfig` fields that set its size."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    vocab_size: int
