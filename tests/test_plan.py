"""Planning `dlbench run`: option validation, device resolution, default matrices, skipped combinations; the
thermal wait with a fake NVML. Run: `PYTHONPATH=src python -m pytest -q tests/test_plan.py`."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dlbench.errors import BadInput
from dlbench.measurement.thermal import GpuThermometer, wait_until_cool
from dlbench.runner.plan import (
    GPU_DEFAULT_WORKLOADS,
    DeviceFacts,
    RunOptions,
    build_plan,
    check_device,
    check_workloads,
    resolve_device,
    validate_options,
)
from dlbench.telemetry.fake_nvml import FakeGpu, FakeNvml

H100_UUID = "GPU-12345678-9abc-def0-1234-56789abcdef0"
H100 = {"name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85_031_714_816, "compute_capability": [9, 0],
        "uuid": H100_UUID[4:]}  # as `DeviceFacts.detect` records torch's UUID
T4 = {"name": "Tesla T4", "memory_bytes": 15_642_329_088, "compute_capability": [7, 5], "uuid": None}


def test_device_resolution():
    none, gpu, mac = DeviceFacts(), DeviceFacts(cuda=[H100, T4]), DeviceFacts(mps_available=True)
    assert resolve_device("auto", none) == "cpu"
    assert resolve_device("auto", gpu) == "cuda:0"
    assert resolve_device("auto", mac) == "mps"
    assert resolve_device("cuda", gpu) == "cuda:0"
    assert resolve_device("cuda:1", gpu) == "cuda:1"
    assert resolve_device("cpu", gpu) == "cpu"
    for device, facts in (("cuda", none), ("cuda:0", mac), ("cuda:2", gpu), ("mps", gpu)):
        with pytest.raises(BadInput):
            check_device(resolve_device(device, facts), facts)
        with pytest.raises(BadInput):
            build_plan(RunOptions(workloads=["resnet50"], tiny=True, device=device), facts)


def test_auto_and_bare_cuda_mean_the_current_cuda_device():
    # torch's meaning of "cuda": device 0 in a fresh process, the set_device choice in a program measuring itself
    chosen = DeviceFacts(cuda=[H100, T4], current_cuda=1)
    assert resolve_device("auto", chosen) == resolve_device("cuda", chosen) == "cuda:1"
    assert resolve_device("cuda:0", chosen) == "cuda:0"  # an index given is kept


def test_without_facts_the_device_is_resolved_in_this_process(monkeypatch):
    detected = []

    def detect():
        detected.append(1)
        return DeviceFacts(cuda=[H100, T4], current_cuda=1)

    monkeypatch.setattr(DeviceFacts, "detect", staticmethod(detect))
    assert resolve_device("cpu") == "cpu" and resolve_device("cuda:0") == "cuda:0" and detected == []
    assert resolve_device("auto") == "cuda:1" and detected == [1]


@pytest.mark.parametrize("options", [
    RunOptions(precisions=["fp64"]), RunOptions(compile_modes=["fast"]), RunOptions(batch_size=0),
    RunOptions(batch_size="big"), RunOptions(steps=0), RunOptions(repeats=-1), RunOptions(warmup=-1),
    RunOptions(seq_len=0), RunOptions(timeout_s=0), RunOptions(device="tpu"), RunOptions(device="cuda:x"),
])
def test_bad_options(options):
    with pytest.raises(BadInput):
        validate_options(options)


def test_batch_size_accepts_int_and_auto():
    assert validate_options(RunOptions(batch_size="64")).batch_size == 64
    assert validate_options(RunOptions(batch_size="AUTO")).batch_size == "auto"


def test_unknown_workload_lists_the_valid_ones():
    with pytest.raises(BadInput) as info:
        build_plan(RunOptions(workloads=["resnet5O"]), DeviceFacts())
    assert "resnet50" in info.value.format_message() and "bert-base-squad" in info.value.format_message()


def test_workload_names_match_regardless_of_case():
    assert check_workloads(["RESNET50", " Bert-Base-Squad"]) == ["resnet50", "bert-base-squad"]
    plan = build_plan(RunOptions(workloads=["ResNet50"], tiny=True), DeviceFacts())
    assert [item.config.workload for item in plan.items] == ["resnet50"]
    with pytest.raises(BadInput, match=r"use -w resnet50 --tiny"):
        check_workloads(["RESNET50-TINY"])


@pytest.mark.parametrize("name", ["", "  "])
def test_empty_workload_name_says_so_and_suggests_nothing(name):
    with pytest.raises(BadInput) as info:
        check_workloads([name])
    message = info.value.format_message()
    assert message.startswith("empty workload name (choose from: ") and "did you mean" not in message


def test_prefix_and_typo_hints():
    with pytest.raises(BadInput, match=r"did you mean bert-base-mlm, bert-base-squad\?"):
        check_workloads(["BERT-BASE"])
    with pytest.raises(BadInput, match=r"did you mean resnet50\?"):
        check_workloads(["resnet5O"])


@pytest.mark.parametrize("gpu,first_precision", [(H100, "tf32"), (T4, "fp32")])
def test_default_gpu_matrix(gpu, first_precision):
    plan = build_plan(RunOptions(), DeviceFacts(cuda=[gpu]))
    assert plan.device == "cuda:0" and not plan.quick_suite
    combos = [(i.config.workload, i.config.precision, i.config.compile) for i in plan.items]
    assert combos == [(w, p, c) for w in GPU_DEFAULT_WORKLOADS for p in (first_precision, "amp-fp16")
                      for c in ("off", "default")]
    for item in plan.items:
        cfg = item.config
        assert (cfg.warmup_steps, cfg.steps, cfg.repeats) == (10, 50, 3)
        assert cfg.batch_size >= 1 and cfg.flavour == "full"
        assert cfg.seq_len == (None if cfg.workload == "resnet50" else 384)
    # batch sizes scale with memory: the 80 GB card gets more than the 16 GB one
    small = build_plan(RunOptions(workloads=["resnet50"], precisions=["fp32"], compile_modes=["off"]),
                       DeviceFacts(cuda=[T4]))
    big = build_plan(RunOptions(workloads=["resnet50"], precisions=["fp32"], compile_modes=["off"]),
                     DeviceFacts(cuda=[H100]))
    assert big.items[0].config.batch_size > small.items[0].config.batch_size


def test_cpu_default_is_a_quick_suite():
    plan = build_plan(RunOptions(), DeviceFacts())
    assert plan.device == "cpu" and plan.quick_suite
    assert any("quick suite" in note for note in plan.notes)
    units = {item.unit for item in plan.items}
    assert units == {"images", "sequences"}
    for item in plan.items:
        assert item.config.precision == "fp32" and item.config.compile == "off"
        assert item.config.steps < 50 and item.skip_reason is None


def test_product_of_repeated_options_and_skips():
    plan = build_plan(RunOptions(workloads=["resnet50", "bert-base-mlm"], precisions=["fp32", "tf32"],
                                 compile_modes=["off", "default"], batch_size=3, seq_len=64, steps=4),
                      DeviceFacts())
    assert len(plan.items) == 8 and not plan.quick_suite
    for item in plan.items:
        assert item.config.batch_size == 3 and item.config.steps == 4
        assert item.config.seq_len == (64 if item.config.workload == "bert-base-mlm" else None)
        if item.config.precision == "tf32":  # no tensor cores on a CPU: recorded as skipped with the reason
            assert item.skip_reason and "tf32" in item.skip_reason


def test_batch_size_auto_and_timeouts():
    plan = build_plan(RunOptions(workloads=["resnet50"], precisions=["tf32"], batch_size="auto",
                                 compile_modes=["off", "max-autotune"]),
                      DeviceFacts(cuda=[H100]))
    assert all(item.auto_batch for item in plan.items)
    assert [item.timeout_s for item in plan.items] == [600.0, 1800.0]
    plan = build_plan(RunOptions(workloads=["resnet50"], timeout_s=42), DeviceFacts())
    assert plan.items[0].timeout_s == 42


def test_tiny_flavour():
    plan = build_plan(RunOptions(tiny=True), DeviceFacts())
    assert {i.config.flavour for i in plan.items} == {"tiny"} and not plan.quick_suite


# ------------------------------------------------------------------------------------------- thermal


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def sleep(self, seconds):
        self.now += seconds

    def __call__(self):
        return self.now


def test_waits_until_cool_with_a_countdown():
    # The planner records torch's UUID (no prefix); the thermometer finds the GPU with it among several.
    nvml = FakeNvml([FakeGpu(uuid="GPU-99999999-0000-0000-0000-000000000000", temperature_c=90.0),
                     FakeGpu(uuid=H100_UUID, temperature_c=[62, 57, 51, 50, 49])])
    thermometer = GpuThermometer.open("cuda:0", [H100], nvml=nvml)
    assert thermometer.match.nvml_index == 1 and thermometer.match.how == "uuid"
    clock, countdown = FakeClock(), []
    temp, warning = wait_until_cool(thermometer, 50, 300, lambda t, left: countdown.append((t, left)),
                                    sleep=clock.sleep, clock=clock)
    assert temp == 50 and warning is None
    assert [t for t, _ in countdown] == [62, 57, 51]
    assert countdown[0][1] > countdown[-1][1]  # counts down


def test_gives_up_after_max_wait(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    clock = FakeClock()
    thermometer = GpuThermometer.open("cuda:0", [T4], nvml=FakeNvml([FakeGpu(temperature_c=80.0)]))
    temp, warning = wait_until_cool(thermometer, 50, 10, sleep=clock.sleep, clock=clock)
    assert temp == 80 and "did not cool" in warning and clock.now == pytest.approx(10)


def test_no_thermometer_on_cpu_or_without_nvml():
    assert GpuThermometer.open("cpu", [], nvml=FakeNvml([FakeGpu()])) is None
    assert GpuThermometer.open("cuda:0", [H100], nvml=FakeNvml(unavailable="no NVIDIA driver")) is None
    nvml = FakeNvml([FakeGpu(uuid="GPU-99999999-0000-0000-0000-000000000000")])
    assert GpuThermometer.open("cuda:0", [H100], nvml=nvml) is None  # another GPU: not guessed
    assert nvml.shut_down
    assert wait_until_cool(None) == (None, None)


MIG_GPU = "GPU-5a5c0e2b-0000-0000-0000-000000000001"
MIG_SLICES = ("MIG-0b2d0a2f-1111-2222-3333-444444444444", "MIG-7f6e5d4c-1111-2222-3333-444444444444")


def _mig_machine():
    """GPU 0 without MIG at 40 C; GPU 1 split into two MIG instances, at 71 C."""
    return FakeNvml([FakeGpu(uuid="GPU-99999999-0000-0000-0000-000000000000", temperature_c=40.0),
                     FakeGpu(uuid=MIG_GPU, temperature_c=71.0, mig_uuids=list(MIG_SLICES))])


def test_mig_instance_is_read_through_its_gpu():
    """Under MIG torch reports the instance's UUID (no prefix): the planner must not turn it into a `GPU-`
    UUID, and the thermometer reads the GPU that holds the instance."""
    props = SimpleNamespace(name="NVIDIA H100 80GB HBM3 MIG 3g.40gb", total_memory=42_949_672_960, major=9,
                            minor=0, uuid=MIG_SLICES[1][4:])
    from dlbench.measurement.device import _uuid

    recorded = _uuid(props)
    assert recorded == MIG_SLICES[1][4:]
    slice_facts = {"name": props.name, "memory_bytes": props.total_memory, "compute_capability": [9, 0],
                   "uuid": recorded}
    thermometer = GpuThermometer.open("cuda:0", [slice_facts], nvml=_mig_machine())
    assert thermometer is not None
    assert (thermometer.match.nvml_index, thermometer.match.mig_uuid) == (1, MIG_SLICES[1])
    assert thermometer.temperature_c() == 71.0
    thermometer.close()


@pytest.mark.parametrize(("visible", "mig_uuid"), [(MIG_SLICES[0], MIG_SLICES[0]), (MIG_SLICES[0][:12], MIG_SLICES[0]),
                                                   (f"MIG-{MIG_GPU}/1/0", f"MIG-{MIG_GPU}/1/0")])
def test_mig_instance_named_in_cuda_visible_devices(monkeypatch, visible, mig_uuid):
    """Without a UUID from torch: `MIG-<uuid>` (or a unique prefix) and the older `MIG-GPU-<uuid>/gi/ci`."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    no_uuid = {**H100, "uuid": None}
    thermometer = GpuThermometer.open("cuda:0", [no_uuid], nvml=_mig_machine())
    assert thermometer is not None and thermometer.temperature_c() == 71.0
    assert thermometer.match.how == "visible_devices" and thermometer.match.mig_uuid == mig_uuid


def test_batch_size_auto_on_the_cpu_says_what_it_will_do():
    # Found by a second test pass: `run --batch-size auto --tiny` on a CPU probed 8, 16, ... 4096 for minutes
    # without a word of warning.
    plan = build_plan(RunOptions(workloads=["resnet50"], batch_size="auto", tiny=True), DeviceFacts())
    assert any("--batch-size auto on cpu" in note and "4096" in note for note in plan.notes)
    plan = build_plan(RunOptions(workloads=["resnet50"], batch_size=8, tiny=True), DeviceFacts())
    assert not any("--batch-size auto" in note for note in plan.notes)
