"""The GPU code paths' torch behaviour that a CPU build can show: TF32 flags, GradScaler with fused optimizers,
out-of-memory classification, and the H100 plan's fail-fast tools (gpu_smoke.py, h100_plan_check.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def torch_flags():
    """apply_precision sets process-wide flags: put them back (through the legacy setters, which never raise)."""
    import torch

    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.get_float32_matmul_precision())
    yield torch
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
    torch.set_float32_matmul_precision(saved[2])


@pytest.mark.parametrize("precision", ["fp32", "tf32", "amp-bf16", "fp32"])
def test_precision_flags_read_back_consistently(torch_flags, precision):
    """precision.py sets TF32 through the legacy flags only; both views (legacy booleans and torch >= 2.9's
    fp32_precision strings) then agree, so reading either back never raises torch's mixed-API error."""
    from dlbench.measurement.precision import apply_precision, precision_flags

    flags = precision_flags(apply_precision(precision, "cpu"))
    tf32 = precision != "fp32"
    assert flags["cuda_matmul_allow_tf32"] is tf32 and flags["cudnn_allow_tf32"] is tf32
    assert flags["float32_matmul_precision"] == ("high" if tf32 else "highest")
    if "cuda_matmul_fp32_precision" in flags:  # torch >= 2.9
        assert flags["cuda_matmul_fp32_precision"] == ("tf32" if tf32 else "ieee")
        # cuDNN's conv precision reads "none" (inherit, i.e. not TF32) once allow_tf32 is off.
        assert (flags["cudnn_conv_fp32_precision"] == "tf32") is tf32


def test_mixing_the_tf32_apis_raises_on_reading(torch_flags):
    """Why precision.py never writes torch.backends.*.fp32_precision: a write through the new API alone leaves
    the legacy state behind, and every legacy read (Inductor's own included) then raises."""
    torch = torch_flags
    if not hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        pytest.skip("torch < 2.9 has no fp32_precision API")
    from dlbench.measurement.precision import apply_precision

    apply_precision("fp32", "cpu")
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    with pytest.raises(RuntimeError, match=r"mix of (the )?legacy"):
        torch.backends.cuda.matmul.allow_tf32  # noqa: B018 - the read is what raises
    apply_precision("fp32", "cpu")  # the legacy setters make the state consistent again
    assert torch.backends.cuda.matmul.allow_tf32 is False


@pytest.mark.parametrize("optimizer", ["SGD", "AdamW"])
def test_grad_scaler_skips_the_fused_step_on_inf(optimizer):
    """GradScaler + the fused optimizer make_optimizer picks: an inf gradient leaves the weights alone and
    halves the scale (the fused kernel reads found_inf itself), a finite one moves them."""
    import torch

    from dlbench.scenarios.train import make_optimizer

    kwargs = {"lr": 0.1, "momentum": 0.9} if optimizer == "SGD" else {"lr": 1e-3}
    model = torch.nn.Linear(4, 4)
    opt, impl = make_optimizer(getattr(torch.optim, optimizer), model.parameters(), "cpu", **kwargs)
    assert impl == "fused"
    scaler = torch.amp.GradScaler("cpu")
    for poison in (True, False):
        before, scale = model.weight.detach().clone(), scaler.get_scale()
        scaler.scale(model(torch.ones(2, 4)).pow(2).mean()).backward()
        if poison:
            model.weight.grad[0, 0] = float("inf")
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        assert torch.equal(before, model.weight.detach()) is poison
        assert (scaler.get_scale() < scale) is poison


def test_out_of_memory_is_recognised_however_it_arrives():
    import torch

    from dlbench.runner.worker import is_oom

    assert is_oom(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_oom(RuntimeError("CUDA error: out of memory"))
    assert is_oom(RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"))
    try:  # torch.compile re-raises what failed while compiling as its own error type
        try:
            raise torch.OutOfMemoryError("Tried to allocate 80.00 GiB")
        except torch.OutOfMemoryError as inner:
            raise RuntimeError("backend='inductor' raised: see above") from inner
    except RuntimeError as outer:
        assert is_oom(outer)
    assert not is_oom(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert not is_oom(ValueError("out of memory"))  # not a torch runtime failure


def _raised_while_handling(inner: BaseException, outer: BaseException) -> BaseException:
    """`outer` raised inside the `except` that caught `inner` (so `outer.__context__ is inner`, no cause)."""
    try:
        try:
            raise inner
        except type(inner):
            raise outer  # noqa: B904 - the implicit context is what is being tested
    except type(outer) as caught:
        assert caught.__context__ is inner and caught.__cause__ is None
        return caught


def test_an_error_raised_while_handling_an_oom_is_its_own_failure():
    """Only an explicit cause always counts; an unrelated error raised in an OOM handler (a bug in the cleanup,
    a failed log write) is an error, not an OOM."""
    import torch

    from dlbench.runner.worker import is_oom

    oom = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert not is_oom(_raised_while_handling(oom, KeyError("step_time_s")))
    assert not is_oom(_raised_while_handling(oom, RuntimeError("mat1 and mat2 shapes cannot be multiplied")))
    assert not is_oom(_raised_while_handling(RuntimeError("CUDA error: out of memory"), OSError("disk full")))


def test_a_cuda_library_failure_raised_while_handling_an_oom_is_an_oom():
    """cuBLAS/cuDNN report the allocation they could not make inside torch's OOM handling as their own status."""
    import torch

    from dlbench.runner.worker import is_oom

    oom = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    for library_error in ("cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
                          "CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, ...)`"):
        assert is_oom(_raised_while_handling(oom, RuntimeError(library_error)))
        assert not is_oom(RuntimeError(library_error))  # on its own it is no OOM
    # an explicit cause is followed whatever the outer error is, through several levels
    try:
        try:
            raise RuntimeError("backend='inductor' raised") from oom
        except RuntimeError as compiled:
            raise ValueError("compilation failed") from compiled
    except ValueError as outer:
        assert is_oom(outer)


_SAMPLER_CHOICE = """
import sys
assert "torch" not in sys.modules
import dlbench.telemetry.sampler as sampler_module
from dlbench.runner.distributed import DistEnv, rank_sampler
from dlbench.telemetry.sampler import create_sampler

sampler_module.create_amd_sampler = lambda index, interval_s: f"amd:{index}"
single = create_sampler("cuda:1")
env = DistEnv(rank=3, world_size=4, local_rank=1, local_world_size=2, group_rank=1, master_addr="a",
              master_port=1, run_id="t")
sampler, _reason = rank_sampler(env, "cuda")
for chosen in (single, sampler):
    print(chosen if isinstance(chosen, str) else "nvml: " + str(getattr(chosen, "reason", "sampling")))
"""


@pytest.mark.parametrize("hip", ["6.3", None])
def test_sampler_factory_tells_rocm_from_cuda_without_torch_imported_first(tmp_path, hip):
    """The worker, a rank of a `--gpus N` group (rank_worker) and a torchrun rank (joined) all create their
    sampler through `create_sampler`; it imports torch itself to read `torch.version.hip`, so a ROCm GPU gets
    AMD SMI whatever was imported before (a stub torch stands in for a ROCm or CUDA build)."""
    stub = tmp_path / "stub" / "torch"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text(f"class version:\n    hip = {hip!r}\n    cuda = None\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stub.parent), str(ROOT / "src")])}
    out = subprocess.run([sys.executable, "-c", _SAMPLER_CHOICE], capture_output=True, text=True, env=env,
                         check=True).stdout.splitlines()
    if hip:
        assert out == ["amd:1", "amd:1"]  # cuda:1, and the rank with LOCAL_RANK 1
    else:
        assert all(line.startswith("nvml:") for line in out) and len(out) == 2


# --- the H100 plan's fail-fast tools ----------------------------------------------------------------------


def test_gpu_smoke_trains_and_reports_on_cpu(capsys):
    smoke = _load("gpu_smoke")
    assert smoke.main(["--device", "cpu", "-w", "resnet50", "-p", "fp32", "-p", "tf32"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^ok +packages: ", out, re.M) and re.search(r"^ok +store: ", out, re.M)
    assert re.search(r"^ok +train resnet50 fp32 eager: fastest step [\d.]+ ms, SGD fused", out, re.M)
    assert re.search(r"^n/a +train resnet50 tf32 eager: tf32 is an NVIDIA", out, re.M)
    assert out.rstrip().endswith("gpu_smoke: 0 failed, 0 warned")
    # --expect-all: a configuration the device refuses is a failure, and so is an unknown workload.
    assert smoke.main(["--device", "cpu", "-w", "resnet50", "-w", "nope", "-p", "tf32", "--expect-all"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^FAIL train resnet50 tf32 eager: RuntimeError: skipped on this device", out, re.M)
    assert "gpu_smoke: 2 failed, 0 warned: train resnet50 tf32 eager, train nope tf32 eager" in out


def test_gpu_smoke_device_checks_run_here(monkeypatch, capsys, torch_flags):
    """The checks gpu_smoke.py runs on a CUDA device, exercised on the CPU where torch allows (their code must
    not be first run on the GPU): TF32 errors, autocast, GradScaler + fused, OOM classification, NVML."""
    torch = torch_flags
    smoke = _load("gpu_smoke")
    with pytest.raises(smoke.Warn, match="tf32 mode looks like full fp32"):  # a CPU has no TF32
        smoke.check_tf32("cpu")
    assert smoke.check_autocast_ops("cpu").startswith("matmul float16, bfloat16; bf16 channels_last conv2d")
    assert smoke.check_grad_scaler("cpu") == (
        "SGD fused, AdamW fused; inf gradient skipped the step and halved the scale")

    def impossible(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1024.00 TiB")

    try:  # which SDPA kernels a CPU has (with dropout) differs between torch versions: only that it reports
        text = smoke.check_sdpa("cpu")
    except smoke.Warn as exc:
        text = str(exc)
    assert "flash_attention bfloat16" in text and "efficient_attention float16" in text

    monkeypatch.setattr(torch, "empty", impossible)
    assert "OutOfMemoryError, classified as OOM" in smoke.check_graph_marker_and_oom("cpu")
    monkeypatch.undo()

    from dlbench.telemetry.fake_nvml import FakeGpu, FakeNvml

    text = smoke.check_nvml("cuda:0", nvml=FakeNvml([FakeGpu(clock_event_reasons=0x4, energy_j=1234.5)]))
    assert text == f"{len(smoke.NVML_READINGS)} readings"
    printed = capsys.readouterr().out
    assert "matched by only_gpu" in printed and "clock_event_reasons=['sw_power_cap']" in printed
    assert "fan_speed_pct=n/a" in printed and "power_w=300 W" in printed
    with pytest.raises(smoke.Warn, match="no thermometer"):
        smoke.check_thermometer("cpu")


def test_gpu_smoke_flags_what_a_cuda_run_must_record():
    smoke = _load("gpu_smoke")
    flags = {"optimizer_impl": "foreach", "channels_last": False, "cudnn_benchmark": True,
             "cuda_matmul_allow_tf32": True, "cudnn_allow_tf32": True, "grad_scaler": False,
             "float32_matmul_precision": "high", "attention": None}
    result = {"precision_flags": flags, "peak_memory_bytes": 1, "peak_reserved_bytes": 2}
    problems = smoke.expected_flag_problems(result, "resnet50", "amp-fp16", "cuda:0")
    assert problems == ["optimizer foreach, not fused", "ResNet not channels_last", "grad_scaler False"]
    problems = smoke.expected_flag_problems({**result, "peak_reserved_bytes": None}, "resnet50", "amp-fp16",
                                            "cuda:0")
    assert "no peak reserved memory" in problems
    assert smoke.expected_flag_problems(result, "bert-base-mlm", "tf32", "cpu") == [
        "attention None, not sdpa_no_mask"]


def test_plan_check_verdicts(tmp_path, capsys):
    check = _load("h100_plan_check")
    doctor = tmp_path / "doctor.json"
    doctor.write_text(json.dumps({"checks": [{"verdict": "warn", "title": "CPU governor", "message": "ondemand"},
                                             {"verdict": "fail", "title": "CUDA vs torch", "message": "old"}]}))
    assert check.main(["doctor", str(doctor)]) == 1
    assert "FAIL dlbench doctor: CUDA vs torch" in capsys.readouterr().out
    run = tmp_path / "run.json"
    results = [{"workload": "resnet50", "precision": "tf32", "compile": "off", "status": "skipped",
                "error": "no tf32", "device": "cpu"},
               {"workload": "resnet50", "precision": "fp32", "compile": "off", "status": "ok", "device": "cuda:0",
                "telemetry": {"available": False, "reason": "NVML unavailable"}, "start_temperature_c": 31.0}]
    run.write_text(json.dumps({"results": results}))
    assert check.main(["run", str(run)]) == 1
    out = capsys.readouterr().out
    assert "run skipped resnet50 tf32 compile=off: no tf32" in out and "1 of 2 configuration(s) not ok" in out
    assert "warning: no telemetry: NVML unavailable" in out
    assert check.main(["run", str(run), "--allow-skipped"]) == 0
    assert check.main(["run", str(tmp_path / "missing.json")]) == 1
    # A broken run (a result without status, a check without verdict) is failed and said, not a TypeError.
    run.write_text(json.dumps({"results": [{"workload": "resnet50"}, "garbage"]}))
    assert check.main(["run", str(run)]) == 1
    assert "run None    resnet50 None compile=None: None" in capsys.readouterr().out
    doctor.write_text(json.dumps({"checks": [{"verdict": None, "title": "GPU"}]}))
    assert check.main(["doctor", str(doctor)]) == 0


def _pins(text: str) -> list[str]:
    return sorted(set(re.findall(r"\b([a-z][a-z0-9_.-]*==[0-9][0-9a-z.]*)", text)))


def test_plan_lists_its_steps_and_both_documents_carry_the_same_wheels():
    script = BENCH / "h100_plan.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    listing = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True).stdout
    steps = {line.split()[0] for line in listing.splitlines()[3:] if line and not line.startswith(("Group", " "))}
    sessions = [line.split(":", 1)[1] for line in listing.splitlines() if line.strip().startswith("session")]
    named = {word for line in sessions for word in line.replace("|", " ").split()}
    assert named <= steps and "setup" in steps
    assert sessions[0].split("|")[0].split() == ["setup"]  # the fail-fast check is a command of its own
    header = script.read_text()
    readme = (BENCH / "README.md").read_text()
    section = readme[readme.index("<!-- section:h100 -->"):readme.index("<!-- /section:h100 -->")]
    pins = _pins(header[:header.index("set -euo pipefail")])
    assert pins == _pins(section) and len(pins) == 12
    names = {pin.split("==")[0] for pin in pins}
    assert {"sqlalchemy", "alembic", "mako", "markupsafe", "platformdirs", "pytest"} <= names


def test_carried_wheels_match_the_pins_and_python_312():
    """Where .whl/ has been downloaded: exactly the pinned versions, each installable on CPython 3.12 x86_64."""
    wheels = sorted((ROOT / ".whl").glob("*.whl"))
    if not wheels:
        pytest.skip("no .whl/ here (see benchmarks/h100_plan.sh for the download command)")
    pins = _pins((BENCH / "h100_plan.sh").read_text().split("set -euo pipefail")[0])
    found = []
    for wheel in wheels:
        name, version, *_, python, abi, platform = wheel.stem.split("-")
        found.append(f"{name.lower().replace('_', '-')}=={version}")
        assert python in ("py3", "cp312") and abi in ("none", "cp312"), wheel.name
        assert platform == "any" or "x86_64" in platform, wheel.name
    assert sorted(found) == sorted(pin.replace("_", "-") for pin in pins)


def test_apply_precision_uses_the_one_precision_list(torch_flags):
    """apply_precision accepts exactly runner.config.PRECISIONS and rejects anything else with the shared check's
    message (it used to keep its own list, which could drift from the planner's)."""
    from dlbench.errors import BadInput
    from dlbench.measurement.config import PRECISIONS, check_precision
    from dlbench.measurement.precision import AUTOCAST_DTYPES, apply_precision

    assert set(AUTOCAST_DTYPES) <= set(PRECISIONS)
    for precision in PRECISIONS:
        assert apply_precision(precision, "cpu").precision == precision
    with pytest.raises(BadInput) as shared:
        check_precision("fp4")
    with pytest.raises(BadInput) as raised:
        apply_precision("fp4", "cpu")
    assert str(raised.value) == str(shared.value)
