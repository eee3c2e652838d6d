"""Inference precisions (measurement/inference_precision.py) on the CPU: cast, torchao quantization, refusals."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dlbench.analysis.configuration import PRECISIONS, TRAIN_PRECISIONS  # noqa: E402
from dlbench.measurement.device import DeviceFacts  # noqa: E402
from dlbench.measurement.inference_precision import (  # noqa: E402
    INFERENCE_PRECISIONS,
    apply_inference_precision,
    compute_dtype,
    inference_unsupported_reason,
    weight_bytes,
)

CPU = DeviceFacts()  # no GPU


@pytest.fixture
def torch_flags():
    """apply_inference_precision sets process-wide matmul flags: put them back (legacy setters never raise)."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.get_float32_matmul_precision())
    yield torch
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
    torch.set_float32_matmul_precision(saved[2])


def _gpu(cc: tuple[int, int], name: str = "NVIDIA Test GPU", hip: str | None = None) -> DeviceFacts:
    return DeviceFacts(cuda=[{"name": name, "memory_bytes": 80 << 30, "compute_capability": list(cc)}], hip=hip)


class _Net(torch.nn.Module):
    """Two linear layers (quantized) and a layer norm (a buffer-free module that stays in the compute dtype)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(256, 512)
        self.norm = torch.nn.LayerNorm(512)
        self.fc2 = torch.nn.Linear(512, 128)

    def forward(self, x):
        return self.fc2(torch.relu(self.norm(self.fc1(x))))


def test_the_precision_lists():
    assert INFERENCE_PRECISIONS == ("fp32", "tf32", "fp16", "bf16", "int8-weight-only", "int4-weight-only", "fp8")
    assert set(INFERENCE_PRECISIONS) | set(TRAIN_PRECISIONS) == set(PRECISIONS)
    assert PRECISIONS[:4] == TRAIN_PRECISIONS  # training's names come first, as before


def test_train_refuses_the_inference_precisions():
    from dlbench.measurement.config import RunConfig
    from dlbench.scenarios import unsupported_reason

    for precision in ("fp16", "bf16", "int8-weight-only", "fp8"):
        reason = unsupported_reason(RunConfig("resnet50", precision=precision, device="cpu"))
        assert reason == (f"precision {precision} is not measured by the train scenario; "
                          "choose from: fp32, tf32, amp-fp16, amp-bf16")


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16", "int8-weight-only", "int4-weight-only"])
def test_cpu_runs(precision):
    assert inference_unsupported_reason(precision, CPU, device="cpu") is None


def test_refusals_name_the_reason():
    assert inference_unsupported_reason("fp8", CPU, device="cpu") == (
        "fp8 is an NVIDIA tensor-core mode (CUDA compute capability >= 8.9); not available on cpu")
    assert inference_unsupported_reason("tf32", CPU, device="cpu").startswith("tf32 is an NVIDIA tensor-core mode")
    assert inference_unsupported_reason("fp8", _gpu((8, 0), "NVIDIA A100"), device="cuda:0") == (
        "fp8 needs CUDA compute capability >= 8.9 (float8 tensor cores); NVIDIA A100 is 8.0")
    assert inference_unsupported_reason("fp8", _gpu((8, 9)), device="cuda") is None
    assert inference_unsupported_reason("fp8", _gpu((9, 0)), device="auto") is None
    assert inference_unsupported_reason("int4-weight-only", _gpu((7, 5), "Tesla T4"), device="cuda:0") == (
        "int4-weight-only needs CUDA compute capability >= 8.0 (torchao's int4 tinygemm kernels); Tesla T4 is 7.5")
    assert inference_unsupported_reason("bf16", _gpu((7, 0), "Tesla V100"), device="cuda:0").startswith(
        "bf16 needs CUDA compute capability >= 8.0 (bfloat16 in hardware)")
    assert inference_unsupported_reason("fp16", _gpu((7, 0)), device="cuda:0") is None
    assert inference_unsupported_reason("int8-weight-only", _gpu((7, 0)), device="cuda:0") is None
    assert "ROCm" in inference_unsupported_reason("fp8", _gpu((9, 4), "AMD MI300X", hip="6.2"), device="cuda:0")
    assert inference_unsupported_reason("bf16", _gpu((9, 4), hip="6.2"), device="cuda:0") is None
    assert inference_unsupported_reason("amp-fp16", CPU, device="cpu") == (
        "precision amp-fp16 is a training mode; for inference choose from: fp32, tf32, fp16, bf16, "
        "int8-weight-only, int4-weight-only, fp8")
    assert inference_unsupported_reason("fp4", CPU, device="cpu").startswith("unknown precision 'fp4'")


def test_missing_torchao_is_one_line(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torchao" else real(name, *a))
    for precision in ("int8-weight-only", "int4-weight-only", "fp8"):
        assert inference_unsupported_reason(precision, _gpu((9, 0)), device="cuda:0") == (
            f"{precision} needs torchao (pip install 'dlbench[quant]')")
    assert inference_unsupported_reason("bf16", CPU, device="cpu") is None  # the casts need no torchao


def test_old_torchao_is_refused(monkeypatch):
    from dlbench.measurement import inference_precision

    monkeypatch.setattr(inference_precision, "torchao_version", lambda: "0.9.0")
    assert inference_unsupported_reason("int8-weight-only", CPU, device="cpu") == (
        "int8-weight-only needs torchao >= 0.10; this is 0.9.0 (pip install 'dlbench[quant]')")


def _run(precision):
    torch.manual_seed(0)
    model = _Net().eval()
    x = torch.randn(8, 256)
    with torch.inference_mode():
        reference = model(x)
    model, flags = apply_inference_precision(model, precision, "cpu")
    with torch.inference_mode():
        out = model(x.to(compute_dtype(precision)))
    return reference, out, model, flags


PARAMS = 256 * 512 + 512 + 512 * 2 + 512 * 128 + 128


@pytest.mark.parametrize("precision,dtype,bytes_per", [("fp32", torch.float32, 4), ("bf16", torch.bfloat16, 2),
                                                       ("fp16", torch.float16, 2)])
def test_casts(torch_flags, precision, dtype, bytes_per):
    reference, out, model, flags = _run(precision)
    assert out.dtype == dtype and all(p.dtype == dtype for p in model.parameters())
    assert torch.allclose(out.float(), reference, atol=0.05 if bytes_per == 2 else 1e-5)
    assert flags["weight_bytes"] == weight_bytes(model) == PARAMS * bytes_per
    assert flags["quantization"] is None and flags["autocast_dtype"] is None and not flags["grad_scaler"]
    assert flags["float32_matmul_precision"] == ("highest" if precision == "fp32" else "high")


@pytest.mark.parametrize("precision,config", [("int8-weight-only", "Int8WeightOnlyConfig"),
                                              ("int4-weight-only", "IntxWeightOnlyConfig")])
def test_torchao_quantization_on_cpu(torch_flags, precision, config):
    pytest.importorskip("torchao")
    reference, out, model, flags = _run(precision)
    assert out.dtype == torch.bfloat16 and out.shape == reference.shape
    error = (out.float() - reference).abs().mean() / reference.abs().mean()
    assert error < (0.02 if precision == "int8-weight-only" else 0.15), error
    assert flags["quantization"] == config and flags["quantized_modules"] == flags["linear_modules"] == 2
    assert flags["torchao_version"] and flags["compute_dtype"] == "bfloat16"
    # Bytes held: int8 data (int4 values sit unpacked in int8 on the CPU), per-channel or per-group scales and
    # zero points, bf16 biases and norm parameters.
    if precision == "int8-weight-only":
        scales = (512 + 128) * (4 + 1)  # fp32 scale and int8 zero point per output channel
    else:
        assert flags["quantization_group_size"] == 32
        scales = (512 * 256 // 32 + 128 * 512 // 32) * (2 + 1)  # bf16 scale and int8 zero point per group
    expected = (256 * 512 + 512 * 128) + scales + (512 + 512 * 2 + 128) * 2
    assert weight_bytes(model) == flags["weight_bytes"] == expected


def test_weight_bytes_counts_a_tied_weight_once():
    embed = torch.nn.Embedding(100, 16)
    head = torch.nn.Linear(16, 100, bias=False)
    head.weight = embed.weight
    model = torch.nn.ModuleDict({"embed": embed, "head": head})
    model.register_buffer("mask", torch.ones(10, dtype=torch.bool))
    assert weight_bytes(model) == 100 * 16 * 4 + 10


def test_layers_the_kernels_cannot_take_stay_unquantized():
    from dlbench.measurement.inference_precision import _kernel_fits

    int4_cuda, fp8 = _kernel_fits("int4-weight-only", "cuda"), _kernel_fits("fp8", "cuda")
    assert int4_cuda(768, 3072) and not int4_cuda(64, 256) and not int4_cuda(768, 2)  # BERT-tiny, a QA head
    assert fp8(768, 3072) and not fp8(768, 2) and fp8(64, 256)
    assert _kernel_fits("int4-weight-only", "cpu")(64, 2) and not _kernel_fits("int4-weight-only", "cpu")(48, 8)
    assert _kernel_fits("int8-weight-only", "cuda")(3, 5)


def test_int4_on_the_cpu_leaves_a_layer_without_whole_groups(torch_flags):
    pytest.importorskip("torchao")
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Linear(32, 48), torch.nn.Linear(48, 8)).eval()
    model, flags = apply_inference_precision(model, "int4-weight-only", "cpu")
    assert (flags["quantized_modules"], flags["linear_modules"]) == (2, 3)  # 48 inputs: not whole groups of 32
    with torch.inference_mode():
        assert model(torch.randn(2, 64, dtype=torch.bfloat16)).shape == (2, 8)
