"""`dlbench doctor`: machine checks with a fake NVML, the real command on this machine, and run diagnosis."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

import pytest

import store_docs
from cli_helpers import cli
from dlbench.analysis.diagnose import diagnose, likely_causes
from dlbench.cli.doctor import machine
from dlbench.store import open_store
from dlbench.telemetry import checks as ck
from dlbench.telemetry.fake_nvml import FakeGpu, FakeNvml
from dlbench.telemetry.nvml import CLOCK_EVENT_REASONS, GpuProcess

BIT = {name: bit for bit, name in CLOCK_EVENT_REASONS.items()}
TORCH_OK = ck.TorchInfo(version="2.11.0", cuda="12.8", cuda_available=True, device_count=1, names=["H100"])


def _by_name(checks):
    return {c.name: c for c in checks}


def _run(gpus, torch=TORCH_OK, tmp_path=None, **nvml_kw):
    root = str(tmp_path) if tmp_path else "/nonexistent"
    return _by_name(ck.run_checks(nvml=FakeNvml(gpus, **nvml_kw), torch=torch, root=root, environ={}))


def test_healthy_gpu_passes_every_gpu_check():
    checks = _run([FakeGpu()])
    for name in ("gpu", "driver", "cuda_compat", "visible", "persistence", "pcie", "power_limit", "memory_errors",
                 "processes", "thermal"):
        assert checks[name].verdict == "ok", (name, checks[name].message)
    assert checks["p2p"].verdict == "n/a"


def test_power_limit_below_default_is_flagged():
    checks = _run([FakeGpu(power_limit_w=250.0, default_power_limit_w=350.0)])
    c = checks["power_limit"]
    assert c.verdict == "warn" and "250 W of 350 W" in c.message
    assert "7%" in c.advice  # seed 001's measured cost of a lower limit


def test_reduced_pcie_width_flagged_at_idle_and_cleared_under_load():
    idle = _run([FakeGpu(pcie_width=8, pcie_max_width=16)])["pcie"]
    assert idle.verdict == "warn" and "x8" in idle.message and "idle" in idle.message
    assert "idle" in idle.advice  # links downshift at idle: say so



def test_pcie_check_loads_the_gpu_before_judging():
    gpu = FakeGpu(pcie_gen=[1, 5], pcie_width=[8, 16])
    rows = [{"index": 0, "handle": gpu, "name": gpu.name, "uuid": gpu.uuid}]
    loads = []
    c = ck.check_pcie(FakeNvml([gpu]), rows, load=lambda i: loads.append(i) or (lambda: None), cuda_index_of={0: 0})
    assert loads == [0] and c.verdict == "ok" and c.details[0]["under_load"] is True


def test_memory_errors_other_processes_and_hot_idle_gpu():
    gpu = FakeGpu(ecc_errors={"uncorrected_volatile": 3, "uncorrected_aggregate": 3, "corrected_volatile": 0,
                              "corrected_aggregate": 9},
                  processes=[GpuProcess(99999, 4 << 30)], temperature_c=71.0)
    checks = _run([gpu])
    assert checks["memory_errors"].verdict == "fail"
    assert checks["processes"].verdict == "warn" and "99999" in checks["processes"].message
    assert checks["thermal"].verdict == "warn" and "71 C" in checks["thermal"].message
    assert ck.exit_code(list(checks.values())) == 1


def test_geforce_without_ecc_is_not_applicable():
    checks = _run([FakeGpu(ecc_errors=None, retired_pages=None, remapped_rows=None)])
    assert checks["memory_errors"].verdict == "n/a"


def test_driver_too_old_for_torch_fails_and_minor_mismatch_warns():
    old = _run([FakeGpu()], cuda_driver_version=11080)["cuda_compat"]
    assert old.verdict == "fail" and "too old" in old.message
    minor = _run([FakeGpu()], cuda_driver_version=12040)["cuda_compat"]
    assert minor.verdict == "warn" and "minor-version" in minor.message
    cpu_torch = ck.TorchInfo(version="2.11.0+cpu", cuda=None)
    assert _run([FakeGpu()], torch=cpu_torch)["cuda_compat"].verdict == "fail"


def test_mixed_models_and_missing_peer_access():
    torch = ck.TorchInfo(version="2.11.0", cuda="12.8", cuda_available=True, device_count=2,
                         peer_access={"0-1": False, "1-0": False})
    checks = _run([FakeGpu(uuid="GPU-a", name="NVIDIA GeForce RTX 4090"),
                   FakeGpu(uuid="GPU-b", name="NVIDIA GeForce RTX 3090")], torch=torch)
    assert checks["models"].verdict == "warn"
    assert checks["p2p"].verdict == "warn" and "0-1" in checks["p2p"].message


def test_cpu_governor_and_swap_from_a_fake_root(tmp_path):
    for i, gov in enumerate(["performance", "powersave"]):
        d = tmp_path / f"sys/devices/system/cpu/cpu{i}/cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(gov + "\n")
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/meminfo").write_text("MemTotal: 1000 kB\nSwapTotal: 4194304 kB\nSwapFree: 3145728 kB\n")
    assert ck.check_cpu_governor(str(tmp_path)).verdict == "warn"
    swap = ck.check_swap(str(tmp_path))
    assert swap.verdict == "warn" and swap.details["swap_used_bytes"] == 1024**3


def test_nvml_absent_doctor_still_runs(capsys):
    nvml = FakeNvml(unavailable="the NVML library (libnvidia-ml) was not found")
    code = machine(as_json=True, load=False, nvml=nvml, torch_info=ck.TorchInfo(version="2.14.1", cuda="13.0"))
    report = json.loads(capsys.readouterr().out)
    gpu = report["checks"][0]
    assert gpu["name"] == "gpu" and gpu["verdict"] == "n/a" and "No NVIDIA GPU" in gpu["message"]
    assert code == report["exit_code"] in (0, 1)


def test_doctor_on_this_machine_prints_verdicts_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "dlbench", "doctor", "--no-load"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip().split(" ")[0] in ck.VERDICTS]
    assert len(lines) >= 2, proc.stdout
    assert ("Nothing wrong found" in proc.stdout) == (proc.returncode == 0)


# --- doctor RUN_ID --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pub:
    gpu: str
    num_gpus: int
    workload: str
    seq_len: int | None
    precision: str
    batch_size_per_gpu: int | None
    samples_per_s: float
    source: str


def _tel(**over):
    base = {"available": True, "source": "nvml", "sample_interval_s": 0.1, "num_samples": 300, "duration_s": 30.0,
            "power_mean_w": 690.0, "power_max_w": 700.0, "energy_j": 20700.0, "energy_method": "nvml_energy_counter",
            "temperature_start_c": 45.0, "temperature_max_c": 89.0, "sm_clock_mean_mhz": 1400.0,
            "gpu_utilization_mean_pct": 99.0, "throttle_reasons": {"sw_thermal_slowdown": 0.6, "hw_thermal_slowdown": 0.2},
            "throttle_share": 0.6, "power_limit_w": 700.0, "default_power_limit_w": 700.0,
            "pcie_link_gen_min": 5, "pcie_link_width_min": 16, "pcie_link_gen_max": 5, "pcie_link_width_max": 16,
            "other_processes": [], "series": {"t_s": [0.0, 0.1], "power_w": [690.0, 690.0]}}
    base.update(over)
    return base


def _doc(results):
    return store_docs.document(results=results)


def _result(telemetry=None, samples_per_s=2000.0, **over):
    r = store_docs.result(workload="resnet50", precision="amp-fp16", compile=over.pop("compile", "default"),
                          batch_size=256)
    r.update(over)
    r["samples_per_s"] = samples_per_s
    r["telemetry"] = _tel() if telemetry is None else telemetry
    return r


def _diagnose(doc, published=()):
    return diagnose(doc, published=list(published), canonical=lambda name: "H100 SXM5 80GB",
                    estimate_fn=lambda *a: None)


def test_diagnosis_names_thermal_throttling_against_published():
    pub = [Pub("H100 SXM5 80GB", 1, "resnet50", None, "amp-fp16", 256, v, "Lambda") for v in (2900.0, 3100.0)]
    report = _diagnose(_doc([_result()]), pub)
    entry = report["results"][0]
    assert entry["published"]["samples_per_s"] == pytest.approx(3000.0)
    assert entry["ratio"] == pytest.approx(2000.0 / 3000.0)
    assert entry["verdict"] == "below"
    assert "thermal_throttling" in likely_causes(report)
    thermal = next(f for f in entry["findings"] if f["cause"] == "thermal_throttling")
    assert "60%" in thermal["message"] and "89 C" in thermal["message"]
    assert "blower" in thermal["advice"]  # seed 001's advice


def test_diagnosis_names_power_limit_pcie_sharing_and_cpu_bound():
    tel = _tel(throttle_reasons={}, throttle_share=0.0, power_limit_w=500.0, pcie_link_width_min=8,
               other_processes=[4242], gpu_utilization_mean_pct=55.0)
    report = _diagnose(_doc([_result(telemetry=tel, world_size=2, start_temperature_c=63.0)]))
    causes = likely_causes(report)
    assert any(f["cause"] == "hot_start" and "63 C" in f["message"] for f in report["results"][0]["findings"])
    for cause in ("reduced_power_limit", "narrow_pcie_link", "shared_gpu", "cpu_bound"):
        assert cause in causes
    assert "thermal_throttling" not in causes
    assert report["results"][0]["verdict"] == "unknown"  # nothing to compare with


def test_diagnosis_mixed_models_compile_gain_and_missing_telemetry():
    doc = _doc([_result(compile="off", samples_per_s=1500.0, telemetry={"available": False, "reason": "no NVML"}),
                _result(compile="default", samples_per_s=2000.0, telemetry=_tel(throttle_reasons={},
                                                                                 throttle_share=0.0))])
    doc["environment"]["gpus"].append({"name": "NVIDIA A100-SXM4-80GB"})
    report = _diagnose(doc)
    assert "mixed_gpu_models" in likely_causes(report)
    eager = report["results"][0]
    assert any(f["cause"] == "no_telemetry" and "no NVML" in f["message"] for f in eager["findings"])
    compile_note = next(f for f in eager["findings"] if f["cause"] == "compile_off")
    assert "+33%" in compile_note["message"]


def test_doctor_run_id_names_thermal_throttling(capsys, tmp_path):
    doc = _doc([_result()])
    with open_store() as store:
        store.save_run(doc)
    code, out, err = cli(capsys, "doctor", doc["run_id"][:8])
    assert code == 0, err
    assert "thermal throttling" in out
    code, out, _ = cli(capsys, "doctor", "latest", "--json")
    report = json.loads(out)
    assert report["run_id"] == doc["run_id"]
    assert "thermal_throttling" in [f["cause"] for f in report["results"][0]["findings"]]
    # The same document as a file.
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    code, out, _ = cli(capsys, "doctor", str(path))
    assert code == 0 and "thermal throttling" in out


def test_doctor_bad_references_are_clear_errors(capsys, tmp_path):
    code, _, err = cli(capsys, "doctor", str(tmp_path / "nope.json"))
    assert code == 2 and "no such result file" in err and "Traceback" not in err
    code, _, err = cli(capsys, "doctor", "ffffffff")
    assert code == 2 and "error:" in err


def test_diagnosis_uses_the_packaged_published_results_and_estimate():
    import statistics

    from dlbench.reference import load_published

    rows = [p for p in load_published() if p.gpu == "H100 SXM5 80GB" and p.workload == "resnet50"
            and p.precision == "amp-fp16" and p.num_gpus == 1]
    assert rows, "the packaged published results should cover H100 ResNet-50 AMP"
    median = statistics.median(p.samples_per_s for p in rows)
    report = diagnose(_doc([_result(samples_per_s=median / 2)]))
    entry = report["results"][0]
    assert report["gpu"] == "H100 SXM5 80GB"
    assert entry["compared_with"] == "published" and entry["published"]["count"] == len(rows)
    assert entry["ratio"] == pytest.approx(0.5)
    assert entry["verdict"] == "below"
    assert entry["estimate"] is None or entry["estimate"]["samples_per_s"] > 0


def test_rocm_machine_without_nvml_is_not_a_warning():
    rocm = ck.TorchInfo(version="2.11.0+rocm6.3", hip="6.3", cuda_available=True, device_count=2)
    checks = _run([], torch=rocm, unavailable="the NVML library (libnvidia-ml) was not found")
    assert checks["gpu"].verdict == "n/a" and "ROCm" in checks["gpu"].message
    nvidia_without_nvml = _run([], unavailable="NVML could not start")
    assert nvidia_without_nvml["gpu"].verdict == "warn"
