"""GPU telemetry with a scripted fake NVML: sampling, energy, throttling, PCIe, power limits, device matching."""

from __future__ import annotations

import threading
import time

import pytest

from dlbench.analysis.energy import combine_ranks, efficiency, is_throttled, throttle_kind
from dlbench.telemetry.fake_nvml import FakeGpu, FakeNvml, StepClock
from dlbench.telemetry.nvml import (
    CLOCK_EVENT_REASONS,
    DeviceMatch,
    GpuProcess,
    decode_clock_event_reasons,
    resolve_cuda_device,
)
from dlbench.telemetry.sampler import (
    ENERGY_COUNTER,
    ENERGY_INTEGRATED,
    NvmlSampler,
    UnavailableSampler,
    create_sampler,
)

BIT = {name: bit for bit, name in CLOCK_EVENT_REASONS.items()}


def _no_uuid(_index):
    return None


def _drive(gpu: FakeGpu, n_samples: int, step_s: float = 0.1) -> dict:
    """Take exactly `n_samples` readings by hand (begin + middle + finish) on a stepping clock."""
    nvml = FakeNvml([gpu])
    match = DeviceMatch(gpu, 0, gpu.uuid, "uuid")
    sampler = NvmlSampler(nvml, match, 0, interval_s=step_s, clock=StepClock(step_s))
    sampler.begin()
    for _ in range(n_samples - 2):
        sampler.sample_now()
    return sampler.finish()


def test_decode_clock_event_reasons_names_each_bit():
    mask = BIT["sw_thermal_slowdown"] | BIT["sw_power_cap"] | 0x10000
    assert decode_clock_event_reasons(mask) == ["sw_power_cap", "sw_thermal_slowdown", "bit_0x10000"]
    assert decode_clock_event_reasons(0) == []


def test_throttling_detected_with_share_per_reason():
    thermal, power = BIT["sw_thermal_slowdown"], BIT["sw_power_cap"]
    reasons = [0, thermal, thermal, thermal | power, power, 0, BIT["gpu_idle"], 0, thermal, 0]
    block = _drive(FakeGpu(clock_event_reasons=reasons, temperature_c=[70, 82, 86, 88, 85, 80, 79, 81, 87, 84]),
                   len(reasons))
    n = len(reasons)
    assert block["num_samples"] == n
    assert block["throttle_reasons"]["sw_thermal_slowdown"] == pytest.approx(4 / n)
    assert block["throttle_reasons"]["sw_power_cap"] == pytest.approx(2 / n)
    assert block["throttle_reasons"]["gpu_idle"] == pytest.approx(1 / n)
    # gpu_idle is not throttling: 5 samples had a power or thermal reason.
    assert block["throttle_share"] == pytest.approx(5 / n)
    assert block["temperature_max_c"] == 88
    assert is_throttled(block) is True
    assert throttle_kind(block) == ["thermal", "power"]
    assert block["series"]["clock_event_reasons"] == reasons


def test_no_throttle_when_clocks_are_free():
    block = _drive(FakeGpu(clock_event_reasons=0), 6)
    assert block["throttle_reasons"] == {}
    assert block["throttle_share"] == 0
    assert is_throttled(block) is False


def test_energy_counter_used_when_the_gpu_has_one():
    block = _drive(FakeGpu(power_w=300.0, energy_j=[5000.0, 5123.5]), 4)
    assert block["energy_method"] == ENERGY_COUNTER
    assert block["energy_j"] == pytest.approx(123.5)
    assert block["energy_integrated_j"] == pytest.approx(300.0 * block["duration_s"])


def test_telemetry_and_analysis_modules_do_not_import_torch():
    import subprocess
    import sys

    code = ("import sys\nimport dlbench.telemetry.sampler, dlbench.telemetry.checks, dlbench.analysis.energy, "
            "dlbench.analysis.diagnose, dlbench.cli.doctor\nassert 'torch' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_missing_energy_counter_falls_back_to_integrating_power():
    # Power rises linearly with time: P(t) = 100 + 50 t. The trapezoid rule is exact for a straight line, so the
    # integral over [0, T] must be 100 T + 25 T^2.
    step, n = 0.1, 21
    powers = [100.0 + 50.0 * (i * step) for i in range(n)]
    block = _drive(FakeGpu(power_w=powers, energy_j=None), n, step)
    duration = (n - 1) * step
    assert block["energy_method"] == ENERGY_INTEGRATED
    assert block["duration_s"] == pytest.approx(duration)
    assert block["energy_j"] == pytest.approx(100.0 * duration + 25.0 * duration**2)
    assert block["power_mean_w"] == pytest.approx(100.0 + 25.0 * duration)
    assert block["power_max_w"] == pytest.approx(powers[-1])


def test_reduced_pcie_width_and_power_limit_recorded():
    block = _drive(FakeGpu(pcie_gen=[4, 3, 4], pcie_width=8, pcie_max_gen=4, pcie_max_width=16,
                           power_limit_w=250.0, default_power_limit_w=350.0), 3)
    assert (block["pcie_link_gen_min"], block["pcie_link_width_min"]) == (3, 8)
    assert (block["pcie_link_gen_max"], block["pcie_link_width_max"]) == (4, 16)
    assert block["power_limit_w"] == 250.0 and block["default_power_limit_w"] == 350.0


def test_unsupported_sensors_are_none_not_guesses():
    block = _drive(FakeGpu(fan_speed_pct=None, energy_j=None, power_w=None), 3)
    assert block["fan_speed_max_pct"] is None
    assert block["energy_j"] is None and block["energy_method"] is None
    assert "fan_speed_pct" not in block["series"] and "power_w" not in block["series"]


def test_other_processes_on_the_gpu_are_recorded():
    import os

    gpu = FakeGpu(processes=[GpuProcess(os.getpid(), 1 << 30), GpuProcess(4242, 2 << 30)])
    block = _drive(gpu, 3)
    assert block["other_processes"] == [4242]


def test_nvml_absent_gives_unavailable_with_reason():
    sampler = create_sampler("cuda:0", nvml=FakeNvml(unavailable="no NVIDIA driver"), uuid_of=_no_uuid)
    assert isinstance(sampler, UnavailableSampler)
    sampler.start()
    block = sampler.stop()
    assert block["available"] is False
    assert "no NVIDIA driver" in block["reason"]
    assert efficiency(block, 100.0, 1.0)["samples_per_s_per_w"] is None


@pytest.mark.parametrize("device", ["cpu", "mps", "tpu:0"])
def test_devices_without_sensors_are_unavailable(device):
    block = create_sampler(device, nvml=FakeNvml([FakeGpu()])).stop()
    assert block["available"] is False and block["reason"]


GPUS = [FakeGpu(uuid="GPU-aaaaaaaa-0000"), FakeGpu(uuid="GPU-bbbbbbbb-1111"), FakeGpu(uuid="GPU-cccccccc-2222")]


@pytest.mark.parametrize(("visible", "order", "expected"), [
    ("GPU-cccccccc,GPU-aaaaaaaa", None, ["GPU-cccccccc-2222", "GPU-aaaaaaaa-0000"]),
    ("2,0", "PCI_BUS_ID", ["GPU-cccccccc-2222", "GPU-aaaaaaaa-0000"]),
])
def test_cuda_visible_devices_that_reorder_gpus(visible, order, expected):
    nvml = FakeNvml(GPUS)
    env = {"CUDA_VISIBLE_DEVICES": visible}
    if order:
        env["CUDA_DEVICE_ORDER"] = order
    assert [resolve_cuda_device(nvml, i, environ=env).uuid for i in range(2)] == expected


def test_integer_visible_devices_without_pci_order_are_not_guessed():
    # CUDA's default order is fastest-first, so "2" is not NVML's index 2.
    match = resolve_cuda_device(FakeNvml(GPUS), 0, environ={"CUDA_VISIBLE_DEVICES": "2,0"})
    assert match.handle is None and "UUID" in match.how


def test_torch_uuid_wins_over_everything():
    env = {"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    match = resolve_cuda_device(FakeNvml(GPUS), 0, torch_uuid="bbbbbbbb-1111", environ=env)
    assert (match.nvml_index, match.how) == (1, "uuid")


def test_sampler_reads_the_gpu_behind_cuda_visible_devices(monkeypatch):
    gpus = [FakeGpu(uuid="GPU-aaaaaaaa-0000", power_w=100.0), FakeGpu(uuid="GPU-cccccccc-2222", power_w=400.0)]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-cccccccc")
    sampler = create_sampler("cuda:0", interval_s=0.01, nvml=FakeNvml(gpus), uuid_of=_no_uuid)
    sampler.start()
    block = sampler.stop()
    assert block["gpu"]["uuid"] == "GPU-cccccccc-2222" and block["gpu"]["nvml_index"] == 1
    assert block["power_mean_w"] == pytest.approx(400.0)


def test_thread_samples_in_background_and_stops_cleanly():
    nvml = FakeNvml([FakeGpu(power_w=250.0, energy_j=None)])
    sampler = create_sampler("cuda", interval_s=0.01, nvml=nvml, uuid_of=_no_uuid)
    main = threading.get_ident()
    sampler.start()
    after_start = len(nvml.calls)
    time.sleep(0.2)
    # Between start() and stop() the caller's thread makes no NVML call: sampling is off the timed path.
    assert not [c for c in nvml.calls[after_start:] if c[1] == main]
    assert any(tid != main for _, tid in nvml.calls)
    sampler_thread = sampler._thread
    block = sampler.stop()
    assert not sampler_thread.is_alive()
    calls = len(nvml.calls)
    time.sleep(0.05)
    assert len(nvml.calls) == calls, "the sampler kept reading after stop()"
    assert block["num_samples"] >= 5
    # A constant power integrates exactly, whatever the spacing of the readings.
    assert block["energy_j"] == pytest.approx(250.0 * block["duration_s"])


def test_stop_wakes_a_sleeping_sampler_at_once():
    sampler = create_sampler("cuda:0", interval_s=30.0, nvml=FakeNvml([FakeGpu()]), uuid_of=_no_uuid)
    sampler.start()
    t0 = time.perf_counter()
    block = sampler.stop()
    assert time.perf_counter() - t0 < 1.0
    assert block["num_samples"] == 2  # the readings of start() and stop()


def test_efficiency_figures_follow_from_power_and_throughput():
    block = _drive(FakeGpu(power_w=200.0, energy_j=[0.0, 400.0]), 21)  # 2 s at 200 W
    eff = efficiency(block, samples_per_s=1000.0, measured_time_s=2.0)
    assert eff["average_power_w"] == pytest.approx(200.0)
    assert eff["energy_per_sample_j"] == pytest.approx(0.2)
    assert eff["samples_per_s_per_w"] == pytest.approx(5.0)
    assert eff["energy_measured_j"] == pytest.approx(400.0)
    assert eff["throttled"] is False and eff["warnings"] == []


def test_combine_ranks_adds_power_and_keeps_the_worst_throttling():
    a = _drive(FakeGpu(name="NVIDIA GeForce RTX 4090", power_w=300.0, energy_j=[0, 600.0]), 5)
    b = _drive(FakeGpu(name="NVIDIA GeForce RTX 3090", power_w=350.0, energy_j=[0, 700.0],
                       clock_event_reasons=BIT["hw_thermal_slowdown"]), 5)
    both = combine_ranks([a, b])
    assert both["energy_j"] == pytest.approx(1300.0)
    assert both["power_mean_w"] == pytest.approx(650.0)
    assert both["gpu_names"] == ["NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 4090"]
    assert both["throttle_reasons"]["hw_thermal_slowdown"] == 1.0
    assert both["per_gpu"][1]["series"] == b["series"]  # each GPU keeps its raw readings, as one GPU does
    assert combine_ranks([{"available": False, "reason": "cpu"}])["available"] is False


# --- the real wrapper, against the installed nvidia-ml-py -----------------------------------------------------


def test_every_nvml_call_the_wrapper_makes_exists_in_pynvml():
    import inspect
    import re

    import pynvml

    import dlbench.telemetry.nvml as wrapper

    source = inspect.getsource(wrapper)
    names = set(re.findall(r'"(nvml[A-Za-z_0-9]+)"', source))
    constants = set(re.findall(r"nv\.(NVML_[A-Z_0-9]+)", source)) | set(re.findall(r"pynvml\.(NVML_[A-Z_0-9]+)",
                                                                                      source))
    assert len(names) >= 20 and constants
    assert [n for n in sorted(names | constants) if not hasattr(pynvml, n)] == []
    # The clock-event bits dlbench decodes are NVML's.
    for bit, name in CLOCK_EVENT_REASONS.items():
        camel = "".join(part.capitalize() for part in name.split("_"))
        assert getattr(pynvml, "nvmlClocksEventReason" + camel) == bit, name


def test_real_wrapper_converts_units_and_maps_not_supported():
    import types

    import pynvml

    from dlbench.telemetry.nvml import NotSupported, Nvml, NvmlError

    def not_supported(_handle):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def gpu_lost(_handle):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)

    fake = types.SimpleNamespace(
        NVMLError=pynvml.NVMLError, NVML_ERROR_NOT_SUPPORTED=pynvml.NVML_ERROR_NOT_SUPPORTED,
        NVML_ERROR_FUNCTION_NOT_FOUND=pynvml.NVML_ERROR_FUNCTION_NOT_FOUND,
        nvmlDeviceGetPowerUsage=lambda h: 312_500,  # milliwatts
        nvmlDeviceGetEnforcedPowerLimit=lambda h: 700_000,
        nvmlDeviceGetTotalEnergyConsumption=not_supported,
        nvmlDeviceGetFanSpeed=gpu_lost,
        nvmlDeviceGetCurrentClocksEventReasons=not_supported,  # an old driver: only the older name works
        nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: 0x20,
        # nvidia-ml-py releases before its str/bytes wrapper return NVML's strings as bytes
        nvmlSystemGetDriverVersion=lambda: b"535.183.01",
        nvmlDeviceGetName=lambda h: b"NVIDIA H100 80GB HBM3",
        nvmlDeviceGetUUID=lambda h: "GPU-5a5c0e2b-0000-0000-0000-000000000000",
    )
    nv = Nvml(fake)
    assert nv.driver_version() == "535.183.01" and nv.name(None) == "NVIDIA H100 80GB HBM3"
    assert nv.uuid(None) == "GPU-5a5c0e2b-0000-0000-0000-000000000000"
    assert nv.power_w(None) == pytest.approx(312.5)
    assert nv.power_limit_w(None) == pytest.approx(700.0)
    assert nv.clock_event_reasons(None) == 0x20
    with pytest.raises(NotSupported):
        nv.energy_j(None)
    with pytest.raises(NvmlError) as info:
        nv.fan_speed_pct(None)
    assert not isinstance(info.value, NotSupported)
    with pytest.raises(NotSupported):
        nv.persistence_mode(None)  # not in this (fake) module at all
    assert nv.power_reading == "driver_average"  # no instantaneous power field in this module

    field = types.SimpleNamespace(nvmlReturn=0, valueType=pynvml.NVML_VALUE_TYPE_UNSIGNED_INT,
                                  value=types.SimpleNamespace(uiVal=401_250))
    fake.NVML_FI_DEV_POWER_INSTANT = pynvml.NVML_FI_DEV_POWER_INSTANT
    fake.nvmlDeviceGetFieldValues = lambda h, ids: [field] if ids == [pynvml.NVML_FI_DEV_POWER_INSTANT] else []
    nv = Nvml(fake)
    assert nv.power_w(None) == pytest.approx(401.25)
    assert nv.power_reading == "instant"


def test_real_wrapper_lists_mig_instances():
    """`Nvml.mig_uuids` over pynvml's MIG calls: empty slots skipped; MIG off or unsupported gives []."""
    import types

    import pynvml

    from dlbench.telemetry.nvml import Nvml

    slots = {"gpu0": {0: "MIG-aaaa", 2: "MIG-cccc"}}

    def mig_handle(handle, slot):
        if slot not in slots[handle]:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return (handle, slot)

    def mig_mode(handle):
        if handle == "t4":
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return (pynvml.NVML_DEVICE_MIG_ENABLE if handle == "gpu0" else pynvml.NVML_DEVICE_MIG_DISABLE, 0)

    fake = types.SimpleNamespace(
        NVMLError=pynvml.NVMLError, NVML_ERROR_NOT_SUPPORTED=pynvml.NVML_ERROR_NOT_SUPPORTED,
        NVML_DEVICE_MIG_ENABLE=pynvml.NVML_DEVICE_MIG_ENABLE,
        nvmlDeviceGetMigMode=mig_mode, nvmlDeviceGetMaxMigDeviceCount=lambda h: 7,
        nvmlDeviceGetMigDeviceHandleByIndex=mig_handle, nvmlDeviceGetUUID=lambda h: slots[h[0]][h[1]],
    )
    nv = Nvml(fake)
    assert nv.mig_uuids("gpu0") == ["MIG-aaaa", "MIG-cccc"]
    assert nv.mig_uuids("gpu1") == [] and nv.mig_uuids("t4") == []
    assert Nvml(types.SimpleNamespace(NVMLError=pynvml.NVMLError)).mig_uuids("gpu0") == []  # old nvidia-ml-py


def test_result_efficiency_reads_a_result_of_the_document():
    from dlbench.analysis.energy import result_efficiency

    block = _drive(FakeGpu(power_w=300.0, energy_j=[0.0, 600.0]), 21)  # 2 s at 300 W
    result = {"samples_per_s": 1500.0, "repeats": [{"step_times_s": [0.5, 0.5]}, {"step_times_s": [0.5, 0.5]}],
              "telemetry": block}
    eff = result_efficiency(result)
    assert eff["samples_per_s_per_w"] == pytest.approx(5.0)
    assert eff["energy_measured_j"] == pytest.approx(600.0)
    assert result_efficiency({"samples_per_s": 10.0, "telemetry": None})["throttled"] is None


def test_throttling_unknown_when_the_gpu_reports_no_reasons():
    block = _drive(FakeGpu(clock_event_reasons=None), 4)
    assert block["throttle_reasons"] is None and block["throttle_share"] is None
    assert is_throttled(block) is None


def test_a_broken_nvml_never_breaks_the_measurement():
    class Broken(FakeNvml):
        def temperature_c(self, handle):
            raise RuntimeError("driver went away")

    sampler = create_sampler("cuda:0", nvml=Broken([FakeGpu()]), uuid_of=_no_uuid)
    sampler.start()  # must not raise
    block = sampler.stop()
    assert block["available"] is False and "driver went away" in block["reason"]


@pytest.mark.parametrize("torch_uuid", ["bbbbbbbb-1111", "BBBBBBBB1111", "GPU-bbbbbbbb-1111"])
def test_torch_uuid_spellings_match_nvml(torch_uuid):
    # torch's _CUuuid prints 8-4-4-4-12 hex without a prefix; NVML says "GPU-" + the same groups.
    match = resolve_cuda_device(FakeNvml(GPUS), 0, torch_uuid=torch_uuid, environ={})
    assert (match.nvml_index, match.uuid) == (1, "GPU-bbbbbbbb-1111")


def test_mig_instance_is_sampled_through_its_gpu():
    """Under MIG torch's UUID is the instance's: the sampler reads the GPU holding it and says so."""
    mig = "MIG-7f6e5d4c-1111-2222-3333-444444444444"
    gpus = [FakeGpu(uuid="GPU-aaaaaaaa-0000", power_w=100.0),
            FakeGpu(uuid="GPU-bbbbbbbb-1111", power_w=350.0, mig_uuids=["MIG-0b2d0a2f-0000", mig])]
    sampler = create_sampler("cuda:0", interval_s=0.01, nvml=FakeNvml(gpus), uuid_of=lambda i: mig[4:])
    sampler.start()
    block = sampler.stop()
    assert block["available"] is True, block.get("reason")
    assert block["gpu"]["uuid"] == "GPU-bbbbbbbb-1111" and block["gpu"]["mig_uuid"] == mig
    assert block["gpu"]["matched_by"] == "mig_uuid" and block["power_mean_w"] == pytest.approx(350.0)
    # An instance no GPU holds is not guessed.
    match = resolve_cuda_device(FakeNvml(gpus), 0, torch_uuid="7f6e5d4c-9999", environ={})
    assert match.handle is None and "7f6e5d4c-9999" in match.how


@pytest.mark.gpu
def test_real_nvml_sampler_finds_the_cuda_device_by_uuid():
    """On an NVIDIA GPU: torch's device UUID matches NVML's, and a short load yields power and clocks."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("pynvml")
    if not torch.cuda.is_available() or torch.version.hip is not None:
        pytest.skip("needs an NVIDIA CUDA GPU")
    sampler = create_sampler("cuda:0", interval_s=0.05)
    a = torch.randn(4096, 4096, device="cuda")
    sampler.start()
    for _ in range(50):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
    block = sampler.stop()
    assert block["available"] is True, block.get("reason")
    assert block["gpu"]["matched_by"] == "uuid"
    assert block["num_samples"] >= 1 and block["power_mean_w"] > 0 and block["sm_clock_mean_mhz"] > 0


def test_real_wrapper_reads_the_energy_counter_in_millijoules():
    import types

    import pynvml

    from dlbench.telemetry.nvml import Nvml

    fake = types.SimpleNamespace(
        NVMLError=pynvml.NVMLError, NVML_ERROR_NOT_SUPPORTED=pynvml.NVML_ERROR_NOT_SUPPORTED,
        NVML_ERROR_FUNCTION_NOT_FOUND=pynvml.NVML_ERROR_FUNCTION_NOT_FOUND,
        nvmlDeviceGetTotalEnergyConsumption=lambda h: 123_456_789,  # millijoules since the driver loaded
        nvmlDeviceGetPowerManagementDefaultLimit=lambda h: 350_000,  # milliwatts
    )
    nv = Nvml(fake)
    assert nv.energy_j(None) == pytest.approx(123_456.789)
    assert nv.default_power_limit_w(None) == pytest.approx(350.0)


def test_an_energy_counter_that_went_backwards_falls_back_to_integrating_power():
    # A driver reload resets the counter mid-run: end < start says nothing about the energy used.
    block = _drive(FakeGpu(power_w=300.0, energy_j=[5000.0, 12.0]), 4)
    assert block["energy_method"] == ENERGY_INTEGRATED
    assert block["duration_s"] == pytest.approx(0.3)
    assert block["energy_j"] == pytest.approx(300.0 * 0.3)


def test_mean_power_weights_each_reading_by_the_time_around_it():
    # Readings at 0, 0.1 and 1.0 s of 100, 100 and 400 W: 0.1 x 100 + 0.9 x 250 = 235 J over 1 s is 235 W;
    # the plain mean of the readings (200 W) would over-weight the closely spaced first two.
    from dlbench.telemetry.sampler import SERIES_KEYS, summarize

    columns = {key: [None] * 3 for key in SERIES_KEYS}
    columns.update(t_s=[0.0, 0.1, 1.0], power_w=[100.0, 100.0, 400.0])
    block = summarize(columns, {}, None, None, 0.1)
    assert block["energy_method"] == ENERGY_INTEGRATED and block["energy_j"] == pytest.approx(235.0)
    assert block["power_mean_w"] == pytest.approx(235.0) and block["power_max_w"] == 400.0


# --- thinning the raw series -----------------------------------------------------------------------------------


def test_a_long_series_is_thinned_but_the_summaries_see_every_reading():
    """2,000 readings: the kept series has at most 600, the first and last among them; the one hot reading and the
    one clock dip fall between kept points, yet the maximum temperature and the minimum clock are theirs."""
    from dlbench.telemetry.series import SERIES_MAX_POINTS

    temps, clocks = [60.0] * 2000, [1980.0] * 2000
    temps[1], clocks[2] = 93.0, 1410.0
    block = _drive(FakeGpu(temperature_c=temps, sm_clock_mhz=clocks, energy_j=[0.0, 60_000.0]), 2000)
    series = block["series"]
    kept = len(series["t_s"])
    assert kept <= SERIES_MAX_POINTS and {len(v) for v in series.values()} == {kept}
    every = block["series_thinning"]["every"]
    assert block["series_thinning"] == {"readings": 2000, "kept": kept, "every": every} and every == 4
    assert series["t_s"][0] == pytest.approx(0.1) and series["t_s"][-1] == pytest.approx(200.0)  # first, last
    assert series["t_s"][1] == pytest.approx(0.1 + every * 0.1)  # real readings, every 4th
    assert 93.0 not in series["temperature_c"] and 1410.0 not in series["sm_clock_mhz"]
    assert block["num_samples"] == 2000 and block["duration_s"] == pytest.approx(199.9)
    assert block["temperature_max_c"] == 93.0 and block["sm_clock_min_mhz"] == 1410.0


def test_a_short_series_is_kept_whole():
    block = _drive(FakeGpu(), 50)
    assert len(block["series"]["t_s"]) == 50 and "series_thinning" not in block


def test_a_data_parallel_result_keeps_no_more_readings_than_its_budget():
    """Eight GPUs share the result's budget (150 readings each), so an 8-GPU sweep's documents do not grow eight
    times; thinning an already thinned series counts readings taken, not points kept."""
    import json

    from dlbench.runner.distributed import combine_ranks as combine_measurements
    from dlbench.telemetry.series import GROUP_SERIES_MAX_POINTS, series_cap

    one = _drive(FakeGpu(power_w=[300.0 + i % 50 for i in range(1200)], energy_j=[0.0, 36_000.0]), 1200)
    assert one["series_thinning"]["every"] == 3
    per_rank = [{"env": {"rank": r, "local_rank": r, "node_rank": 0, "hostname": "dgx", "device": f"cuda:{r}",
                         "gpu_name": "NVIDIA H100 80GB HBM3", "gpu_uuid": None},
                 "measurement": {"repeats": [{"step_times_s": [0.1] * 10}], "warmup_step_times_s": [0.5],
                                 "peak_memory_bytes": None, "batch_size": 4, "device": f"cuda:{r}",
                                 "telemetry": json.loads(json.dumps(one))}} for r in range(8)]
    group = combine_measurements(per_rank, 8)["telemetry"]
    assert series_cap(8) == 150 and series_cap(1) == 600 and series_cap(2) == 600
    points = [len(g["series"]["t_s"]) for g in group["per_gpu"]]
    assert max(points) <= 150 and sum(points) <= GROUP_SERIES_MAX_POINTS
    assert group["per_gpu"][0]["series_thinning"] == {"readings": 1200, "kept": points[0], "every": 3 * 3}
    assert group["num_samples"] == 1200 and group["power_mean_w"] == pytest.approx(8 * one["power_mean_w"])
    # an 8-GPU sweep of 50 such configurations stays a few MB in the database (compact JSON)
    assert 50 * len(json.dumps(group)) < 5e6
