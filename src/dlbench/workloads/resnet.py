"""ResNet image classification: `resnet50` (torchvision ResNet-50 v1.5, 224x224, 1000 classes).

Exercise it with `PYTHONPATH=src python -m dlbench run --workload resnet50 --device cpu --batch-size 2`.

ResNet-50 v1.5 is torchvision's `resnet50()` (stride 2 in the 3x3 convolution of the bottleneck, as NVIDIA's
and MLPerf's reference). The model returns logits; its targets are class labels, and training (the `train`
scenario) uses cross-entropy and SGD with momentum 0.9. On CUDA, weights and images are
`channels_last` (NHWC), the layout cuDNN's tensor-core convolutions use natively; NCHW would add transposes.
The tiny flavour is a ResNet with one BasicBlock per stage at 32x32 and 10 classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlbench.workloads.base import ResNetSpec, SizedWorkload
from dlbench.workloads.registry import register

if TYPE_CHECKING:  # pragma: no cover
    from dlbench.measurement.config import RunConfig

RESNET50 = ResNetSpec(block="bottleneck", layers=(3, 4, 6, 3), num_classes=1000, image_size=224)
RESNET_TINY = ResNetSpec(block="basic", layers=(1, 1, 1, 1), num_classes=10, image_size=32)


class ResNetWorkload(SizedWorkload):
    """A torchvision ResNet trained with cross-entropy and SGD (momentum 0.9, weight decay 1e-4)."""

    sample_unit = "images"
    channels_last = True
    loss = "cross-entropy"
    optimizer = "sgd"

    def __init__(
        self,
        name: str,
        full: ResNetSpec,
        tiny: ResNetSpec = RESNET_TINY,
        batch_80gb: int = 512,
        cpu_batch: int = 8,
        tiny_batch: int = 8,
        description: str = "",
    ) -> None:
        super().__init__(name, full, tiny, batch_80gb, cpu_batch, tiny_batch, description)

    def build_model(self, config: RunConfig) -> Any:
        from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

        spec = self.spec(config)
        block = Bottleneck if spec.block == "bottleneck" else BasicBlock
        return ResNet(block, list(spec.layers), num_classes=spec.num_classes)

    def make_inputs(self, config: RunConfig, batch_size: int, generator: Any, device: Any = "cpu") -> tuple:
        import torch

        spec = self.spec(config)
        shape = (batch_size, 3, spec.image_size, spec.image_size)
        if str(device) == "meta":
            return (torch.empty(shape, device="meta"),)
        return (torch.randn(shape, generator=generator),)

    def make_targets(self, config: RunConfig, batch_size: int, generator: Any, device: Any = "cpu") -> tuple:
        import torch

        if str(device) == "meta":
            return (torch.empty((batch_size,), dtype=torch.long, device="meta"),)
        return (torch.randint(0, self.spec(config).num_classes, (batch_size,), generator=generator),)


register(
    ResNetWorkload(
        "resnet50",
        RESNET50,
        batch_80gb=512,
        cpu_batch=8,
        description="torchvision ResNet-50 v1.5, 224x224, 1000 classes, SGD momentum 0.9",
    )
)
