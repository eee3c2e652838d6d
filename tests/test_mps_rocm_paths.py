"""The Apple MPS and AMD ROCm code paths, on a machine that has neither: the device is faked by monkeypatching
torch (`torch.backends.mps`, `torch.__version__`, `torch.version.hip`), as tests/test_gpu_paths.py fakes CUDA.
Each rule's source (torch's own code or its pull requests) is cited where the rule lives.

Run: `PYTHONPATH=src python -m pytest -q tests/test_mps_rocm_paths.py`."""

from __future__ import annotations

import pytest

from dlbench.measurement.capabilities import unsupported_reason
from dlbench.measurement.config import RunConfig


@pytest.fixture
def fake_mac(monkeypatch):
    """An Apple-silicon Mac: MPS built and available; `set(torch_version, macos)` picks the releases."""
    import torch
    import torch._dynamo  # noqa: F401 - imported before the fakes: it reads is_available.__wrapped__

    def set_versions(torch_version: str, macos: tuple[int, int]) -> None:
        monkeypatch.setattr(torch, "__version__", torch_version)
        monkeypatch.setattr(torch.backends.mps, "is_macos_or_newer",
                            lambda major, minor: macos >= (major, minor))

    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    set_versions("2.8.0", (15, 0))
    return set_versions


def _mps(precision: str = "fp32", compile_mode: str = "off") -> RunConfig:
    return RunConfig("resnet50", precision=precision, compile=compile_mode, device="mps")


# ---------------------------------------------------------------------------------------------------- MPS


def test_mps_runs_fp32_eager_on_every_supported_torch(fake_mac):
    fake_mac("2.4.1", (13, 0))
    assert unsupported_reason(_mps()) is None


def test_tf32_is_refused_on_mps_in_one_line(fake_mac):
    reason = unsupported_reason(_mps("tf32"))
    assert reason and "tf32" in reason and "mps" in reason and "\n" not in reason


@pytest.mark.parametrize(("torch_version", "macos", "refused"), [
    ("2.4.1", (15, 0), "torch >= 2.6"),  # torch 2.4 has no autocast on MPS at all
    ("2.5.1", (15, 0), "torch >= 2.6"),  # 2.5 autocasts float16 only: bf16 would silently run in fp32
    ("2.6.0", (13, 6), "macOS 14"),  # an M1 on macOS 13: torch disables bf16 autocast there
    ("2.6.0", (14, 0), None),
    ("2.14.1+cpu", (15, 0), None),
])
def test_amp_bf16_on_mps_needs_torch_2_6_and_macos_14(fake_mac, torch_version, macos, refused):
    fake_mac(torch_version, macos)
    reason = unsupported_reason(_mps("amp-bf16"))
    if refused is None:
        assert reason is None
    else:
        assert reason and refused in reason


@pytest.mark.parametrize(("torch_version", "ok"), [("2.4.1", False), ("2.5.1", False), ("2.7.1", False),
                                                   ("2.8.0", True), ("2.10.0.dev20251001", True)])
def test_amp_fp16_on_mps_needs_the_grad_scaler_of_torch_2_8(fake_mac, torch_version, ok):
    fake_mac(torch_version, (15, 0))
    reason = unsupported_reason(_mps("amp-fp16"))
    assert (reason is None) is ok
    if not ok:
        assert "torch >= 2.8" in reason and "GradScaler" in reason


@pytest.mark.parametrize(("torch_version", "ok"), [("2.4.1", False), ("2.6.0", False), ("2.7.1", False),
                                                   ("2.8.0", True)])
def test_compile_on_mps_needs_inductors_metal_backend(fake_mac, torch_version, ok):
    fake_mac(torch_version, (15, 0))
    reason = unsupported_reason(_mps(compile_mode="default"))
    assert (reason is None) is ok
    if not ok:
        assert "torch >= 2.8" in reason and "--compile off" in reason
    assert "CUDA graphs" in unsupported_reason(_mps(compile_mode="reduce-overhead"))


# --------------------------------------------------------------------------------------------------- ROCm

# What `DeviceFacts.detect` records for one GCD of an MI250X under ROCm: torch reports gfx90a as compute
# capability 9.0 (props.major/minor are the gfx version), which is not NVIDIA's Ampere-or-newer.
MI250X_GCD = {"name": "AMD Instinct MI250X/MI250", "memory_bytes": 68_702_699_520, "compute_capability": [9, 0],
              "uuid": None}


def test_rocm_default_plan_measures_fp32_not_tf32():
    """The GPU default is tf32 from compute capability 8.0; every ROCm GPU reports 9.0 or more, and tf32 is
    refused on ROCm, so the default suite measured no full-precision row at all."""
    from dlbench.runner.plan import DeviceFacts, RunOptions, build_plan

    plan = build_plan(RunOptions(), DeviceFacts(cuda=[MI250X_GCD], hip="6.3.42131"))
    assert {item.config.precision for item in plan.items} == {"fp32", "amp-fp16"}
    nvidia = build_plan(RunOptions(), DeviceFacts(cuda=[dict(MI250X_GCD, name="NVIDIA H100 80GB HBM3")]))
    assert {item.config.precision for item in nvidia.items} == {"tf32", "amp-fp16"}


def test_device_facts_record_the_hip_version(monkeypatch):
    import torch

    from dlbench.runner.plan import DeviceFacts

    monkeypatch.setattr(torch.version, "hip", "6.3.42131", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert DeviceFacts.detect().hip == "6.3.42131"
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    assert DeviceFacts.detect().hip is None


@pytest.mark.parametrize("text", [
    # MPSAllocator's limit: PYTORCH_MPS_HIGH_WATERMARK_RATIO x Metal's recommended working set
    "MPS backend out of memory (MPS allocated: 18.50 GiB, other allocations: 448.00 KiB, max allowed: 18.72 GiB). "
    "Tried to allocate 512.00 MiB on shared pool.",
    # the caching allocator under ROCm (hipified) and the HIP runtime
    "HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 63.98 GiB",
    "HIP error: out of memory",
    # TORCH_CUDABLAS_CHECK's text under ROCm (ATen/cuda/Exceptions.h; ROCm/TheRock#1708, pytorch#193890)
    "CUDA error: HIPBLAS_STATUS_ALLOC_FAILED when calling `hipblasCreate(handle)`",
])
def test_mps_and_rocm_out_of_memory_is_an_oom(text):
    """The sweep records `oom` and `--batch-size auto` counts the probe as too big, as for CUDA's texts."""
    from dlbench.runner.worker import is_oom

    assert is_oom(RuntimeError(text))


def test_a_hipblas_failure_while_handling_an_oom_is_an_oom():
    import torch

    from dlbench.runner.worker import is_oom

    try:
        try:
            raise torch.OutOfMemoryError("HIP out of memory. Tried to allocate 2.00 GiB")
        except torch.OutOfMemoryError:
            raise RuntimeError("CUDA error: HIPBLAS_STATUS_EXECUTION_FAILED when calling `hipblasSgemm(...)`")  # noqa: B904
    except RuntimeError as exc:
        assert is_oom(exc)
    assert not is_oom(RuntimeError("CUDA error: HIPBLAS_STATUS_EXECUTION_FAILED when calling `hipblasSgemm(...)`"))


@pytest.mark.parametrize(("hip", "suggest_nhwc", "expected"), [
    (None, None, True),  # CUDA: cuDNN runs NHWC natively
    ("6.3.42131", None, False),  # ROCm: MIOpen gets NCHW copies unless PYTORCH_MIOPEN_SUGGEST_NHWC=1
    ("6.3.42131", "0", False),
    ("6.3.42131", "1", True),
])
def test_channels_last_on_rocm_only_where_miopen_uses_it(monkeypatch, hip, suggest_nhwc, expected):
    import torch

    from dlbench.workloads import registry

    monkeypatch.setattr(torch.version, "hip", hip, raising=False)
    if suggest_nhwc is None:
        monkeypatch.delenv("PYTORCH_MIOPEN_SUGGEST_NHWC", raising=False)
    else:
        monkeypatch.setenv("PYTORCH_MIOPEN_SUGGEST_NHWC", suggest_nhwc)
    resnet = registry.get("resnet50")
    assert resnet.uses_channels_last(torch.device("cuda", 0)) is expected
    assert resnet.uses_channels_last(torch.device("mps")) is False
    assert resnet.uses_channels_last(torch.device("cpu")) is False
    assert registry.get("bert-base-mlm").uses_channels_last(torch.device("cuda", 0)) is False


def test_rocm_environment_records_hip_and_miopen_not_a_cudnn_version(monkeypatch):
    """Under ROCm torch.backends.cudnn.version() is MIOpen's, encoded MAJOR*1000000 + MINOR*1000 + PATCH
    (torch/csrc/cuda/shared/cudnn.cpp); read as cuDNN's encoding, MIOpen 3.2.0 became cuDNN "300.20.0"."""
    import torch

    from dlbench.telemetry import environment

    monkeypatch.setattr(torch.version, "hip", "6.3.42131", raising=False)
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 3002000)
    facts = environment._torch_facts()
    assert facts["cudnn_version"] is None
    assert facts["hip_version"] == "6.3.42131" and facts["miopen_version"] == "3.2.0"

    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 90100)
    facts = environment._torch_facts()
    assert facts["cudnn_version"] == "9.1.0"
    assert facts["hip_version"] is None and facts["miopen_version"] is None
    assert {"hip_version", "miopen_version"} <= set(environment.ENVIRONMENT_KEYS)


def test_rocm_versions_are_compared_and_shown_in_the_report():
    from dlbench.analysis.compare import environment_warnings
    from dlbench.report.sections.environment import environment_table

    rocm = {"hip_version": "6.3.42131", "miopen_version": "3.3.0", "cudnn_version": None}
    newer = dict(rocm, hip_version="6.4.43482")
    assert "ROCm (HIP) version differs: A 6.3.42131, B 6.4.43482" in environment_warnings(rocm, newer)
    assert not environment_warnings({"cudnn_version": "9.1.0"}, {"cudnn_version": "9.1.0"})

    runs = [{"run_id": "r", "created_at": "t", "gpus": "1x MI250X", "short": "r", "tag": "r"}]
    labels = [label for label, _ in environment_table([{"environment": rocm}], runs)["rows"]]
    # with the other software versions, where cuDNN stands for an NVIDIA run (a row of dashes here: left out)
    assert labels.index("GPUs") < labels.index("ROCm (HIP)") and labels.index("ROCm (HIP)") + 1 == labels.index("MIOpen")
    assert "cuDNN" not in labels
    nvidia = [label for label, _ in environment_table([{"environment": {"cudnn_version": "9.1.0"}}], runs)["rows"]]
    assert "ROCm (HIP)" not in nvidia and "MIOpen" not in nvidia


# ------------------------------------------------------------------------------------ ranking an Apple GPU


def test_an_apple_gpu_is_ranked_among_published_gpus_and_said_to_be_uncatalogued():
    """An MPS result ran on a GPU (the environment names it "Apple M2 Pro GPU (MPS)"): it is ranked like any GPU
    the catalogue does not know, with that reason, instead of being turned away as "not a GPU". (The M2 Max is in
    the catalogue since issue 14; the M2 Pro is not.)"""
    from types import SimpleNamespace

    from dlbench.analysis.ranking import vs_published_in
    from dlbench.report.run_table import vs_published_cell

    published = [SimpleNamespace(workload="resnet50", precision="fp32", seq_len=None, num_gpus=1, gpu=gpu,
                                 samples_per_s=rate, source="Lambda (test)", comparable=True)
                 for gpu, rate in (("H100 SXM5 80GB", 1200.0), ("RTX 3090", 400.0))]
    document = {"environment": {"gpus": [{"name": "Apple M2 Pro GPU (MPS)", "memory_bytes": None,
                                          "compute_capability": None, "multiprocessor_count": None}]}}
    result = {"workload": "resnet50", "precision": "fp32", "seq_len": None, "world_size": 1, "status": "ok",
              "samples_per_s": 150.0, "flavour": "full", "device": "mps"}
    vs = vs_published_in(document, result, published)
    assert vs["gpu"] is None and (vs["rank"], vs["rank_of"]) == (3, 3) and vs["ratio"] is None
    assert vs["reason"] == "GPU 'Apple M2 Pro GPU (MPS)' is not in the catalogue: ranked, but no same-GPU ratio"
    assert vs_published_cell(vs) == "#3 of 3"
    # A catalogued Apple chip is named by its catalogue row, and ranked the same way.
    max_document = {"environment": {"gpus": [dict(document["environment"]["gpus"][0], name="Apple M2 Max GPU (MPS)")]}}
    known = vs_published_in(max_document, result, published)
    assert known["gpu"] == "M2 Max" and (known["rank"], known["rank_of"]) == (3, 3) and known["ratio"] is None
    cpu = vs_published_in({"environment": {"gpus": []}}, dict(result, device="cpu"), published)
    assert cpu["rank"] is None and "published results are for GPUs" in cpu["reason"]


def test_batch_size_auto_on_mps_names_the_allocators_limit():
    """MPS has a device-memory limit (MPSAllocator: PYTORCH_MPS_HIGH_WATERMARK_RATIO, 1.7 by default, x Metal's
    recommended working set), which the plan's note for CPUs denied; it can exceed the unified memory."""
    from dlbench.runner.plan import DeviceFacts, RunOptions, build_plan

    plan = build_plan(RunOptions(workloads=["resnet50"], batch_size="auto", tiny=True),
                      DeviceFacts(mps_available=True))
    assert plan.device == "mps"
    note = next(n for n in plan.notes if "--batch-size auto on mps" in n)
    assert "PYTORCH_MPS_HIGH_WATERMARK_RATIO" in note and "swap" in note
    assert "no device-memory limit" not in note


def test_mps_results_say_their_peak_memory_was_not_measured():
    """torch.mps has current_allocated_memory and driver_allocated_memory (and recommended_max_memory from 2.5)
    but no peak counter and no reset: peak_memory_bytes is null on MPS, and its scope must not claim steps."""
    from dlbench.measurement import memory as m

    for mode in ("off", "default"):
        scope = m.peak_memory_scope(mode, "mps")
        assert scope.startswith("not measured") and "MPS" in scope
    assert m.peak_memory_scope("default", "cuda") == "measured steps"


# --------------------------------------------------------------------------------------------- AMD SMI


class _FakeAmdSmi:
    """The amdsmi calls telemetry/amd.py makes, answering as amdsmi 7.0.2's amdsmi_interface.py does: power in W
    with 0xFFFF turned into "N/A" (an MI250X fills average_socket_power only), the energy accumulator with its
    resolution in microjoules, temperatures and clocks as numbers, activity in percent."""

    class AmdSmiException(Exception):
        pass

    class AmdSmiTemperatureType:
        EDGE, HOTSPOT = 0, 1

    class AmdSmiTemperatureMetric:
        CURRENT = 0

    class AmdSmiClkType:
        GFX, MEM = 1, 5

    def __init__(self):
        self.shut = False

    def amdsmi_init(self):
        pass

    def amdsmi_shut_down(self):
        self.shut = True

    def amdsmi_get_processor_handles(self):
        return ["gpu0", "gpu1"]

    def amdsmi_get_gpu_device_uuid(self, handle):
        return f"uuid-{handle}"

    def amdsmi_get_gpu_asic_info(self, handle):
        return {"market_name": "AMD Instinct MI250X / MI250"}

    def amdsmi_get_power_info(self, handle):
        return {"socket_power": "N/A", "current_socket_power": "N/A", "average_socket_power": 312,
                "gfx_voltage": "N/A", "soc_voltage": "N/A", "mem_voltage": "N/A", "power_limit": 500}

    def amdsmi_get_energy_count(self, handle):
        return {"energy_accumulator": 2_000_000, "counter_resolution": 15.3, "timestamp": 1}

    def amdsmi_get_temp_metric(self, handle, sensor, metric):
        if sensor == self.AmdSmiTemperatureType.EDGE:
            raise self.AmdSmiException("AMDSMI_STATUS_NOT_SUPPORTED")  # MI200/MI300 report no edge sensor
        return 61

    def amdsmi_get_clock_info(self, handle, clock):
        return {"clk": 1700 if clock == self.AmdSmiClkType.GFX else 1600, "min_clk": 500, "max_clk": 1700,
                "clk_locked": False, "clk_deep_sleep": 0}

    def amdsmi_get_gpu_activity(self, handle):
        return {"gfx_activity": 97, "umc_activity": 40, "mm_activity": "N/A"}


def test_amd_adapter_reads_amdsmi_as_it_answers():
    from dlbench.telemetry.amd import AmdSmi
    from dlbench.telemetry.nvml import NotSupported

    fake = _FakeAmdSmi()
    smi = AmdSmi(fake)
    handle = smi.handles()[1]
    assert smi.uuid(handle) == "uuid-gpu1" and smi.name(handle) == "AMD Instinct MI250X / MI250"
    assert smi.power_w(handle) == 312.0  # current_socket_power "N/A": the average is read
    assert smi.energy_j(handle) == pytest.approx(2_000_000 * 15.3 / 1e6)
    assert smi.temperature_c(handle) == 61.0  # no edge sensor: the hotspot
    assert (smi.sm_clock_mhz(handle), smi.mem_clock_mhz(handle)) == (1700.0, 1600.0)
    assert smi.utilization_pct(handle) == (97.0, 40.0)
    with pytest.raises(NotSupported):
        smi.clock_event_reasons(handle)
    smi.shutdown()
    assert fake.shut


def test_amd_sampler_maps_the_hip_index_through_visible_devices(monkeypatch):
    import sys

    from dlbench.telemetry import sampler as samplers

    monkeypatch.setitem(sys.modules, "amdsmi", _FakeAmdSmi())
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    sampler = samplers.create_amd_sampler(0, 0.1)
    assert sampler.source == "amdsmi" and sampler.match.handle == "gpu1"
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "GPU-abc")  # a UUID: not guessed
    assert "cannot tell which amdsmi device" in samplers.create_amd_sampler(0, 0.1).reason


def test_an_mi250x_gcd_is_said_to_match_two_catalogue_rows_not_to_be_missing():
    """ROCm reports 'AMD Instinct MI250X/MI250' for one GCD of either card (the catalogue's MI250 and MI250X rows
    both carry that alias, with the same memory): the reason must name the ambiguity, not call it unknown."""
    from types import SimpleNamespace

    from dlbench.analysis.ranking import vs_published_in

    published = [SimpleNamespace(workload="resnet50", precision="fp32", seq_len=None, num_gpus=1,
                                 gpu="H100 SXM5 80GB", samples_per_s=1200.0, source="Lambda (t)", comparable=True)]
    document = {"environment": {"gpus": [dict(MI250X_GCD)]}}
    result = {"workload": "resnet50", "precision": "fp32", "seq_len": None, "world_size": 1, "status": "ok",
              "samples_per_s": 700.0, "flavour": "full", "device": "cuda:0"}
    vs = vs_published_in(document, result, published)
    assert vs["rank"] == 2 and vs["gpu"] is None
    assert vs["reason"] == ("GPU 'AMD Instinct MI250X/MI250' matches several catalogue GPUs (MI250, MI250X): "
                            "ranked, but no same-GPU ratio")


def test_fused_optimizer_is_rebuilt_on_foreach_keeping_class_hyperparameters_and_parameters():
    import torch

    from dlbench.scenarios.train import without_fused_kernel

    model = torch.nn.Linear(4, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.02, fused=True)
    rebuilt, impl = without_fused_kernel(opt)
    assert impl == "foreach" and type(rebuilt) is torch.optim.AdamW
    assert rebuilt.defaults["fused"] is False and rebuilt.defaults["foreach"] is True
    assert rebuilt.defaults["lr"] == 3e-4 and rebuilt.defaults["weight_decay"] == 0.02
    assert [id(p) for p in rebuilt.param_groups[0]["params"]] == [id(p) for p in model.parameters()]

    # Parameter groups keep their own settings (a no-decay group for biases).
    grouped = torch.optim.AdamW([{"params": [model.weight]}, {"params": [model.bias], "weight_decay": 0.0}],
                                lr=1e-3, weight_decay=0.1, fused=True)
    rebuilt, _ = without_fused_kernel(grouped)
    assert [g["weight_decay"] for g in rebuilt.param_groups] == [0.1, 0.0]
    assert [g["params"] for g in rebuilt.param_groups] == [[model.weight], [model.bias]]
    assert all(g["fused"] is False and g["foreach"] is True for g in rebuilt.param_groups)



@pytest.mark.parametrize(("device_type", "with_scaler", "expected"),
                         [("mps", True, "foreach"), ("mps", False, "fused"), ("cpu", True, "fused"),
                          ("cuda", True, "fused")])
def test_only_mps_with_a_grad_scaler_gives_up_the_fused_kernel(device_type, with_scaler, expected):
    # Fused MPS kernels ignored GradScaler's grad_scale/found_inf before pytorch#186360; elsewhere fused
    # optimizers unscale and skip inf steps themselves, and without a scaler there is nothing to ignore.
    import torch

    from dlbench.scenarios.train import optimizer_for_scaler

    opt = torch.optim.SGD(torch.nn.Linear(4, 2).parameters(), lr=0.1, momentum=0.9, fused=True)
    scaler = torch.amp.GradScaler("cpu") if with_scaler else None
    out, impl = optimizer_for_scaler(opt, "fused", device_type, scaler)
    assert impl == expected and out.defaults["fused"] is (expected == "fused")
    assert (out is opt) is (expected == "fused")


def test_amp_bf16_is_judged_on_the_configured_gpu_not_the_current_one(monkeypatch):
    # A machine with an A100 as cuda:0 (current) and a V100 as cuda:1: bf16 on cuda:1 is refused, on cuda:0 not.
    import torch

    from dlbench.measurement import capabilities

    caps = {0: (8, 0), 1: (7, 0)}
    names = {0: "NVIDIA A100-SXM4-80GB", 1: "Tesla V100-SXM2-32GB"}
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=None: caps[0 if i is None else i])
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=None: names[0 if i is None else i])
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)  # answers for cuda:0
    reason = capabilities._precision_reason("amp-bf16", "cuda:1")
    assert reason is not None and "V100" in reason and "7.0" in reason
    assert capabilities._precision_reason("amp-bf16", "cuda:0") is None
    assert capabilities._precision_reason("amp-bf16", "cuda") is None
