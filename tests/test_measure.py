"""measure() with the training scenario: raw step-time counts, callbacks, precision flags, capabilities, FLOP
counts, and the shared measurement pieces (clocks, compile cache, peak memory)."""

from __future__ import annotations

import time

import pytest

from dlbench.analysis.stats import summarize
from dlbench.measurement.capabilities import unsupported_reason
from dlbench.measurement.config import RunConfig
from dlbench.scenarios import UnsupportedConfig, measure
from dlbench.workloads.base import Workload

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

@pytest.fixture(autouse=True)
def restore_torch_flags():
    """measure() sets process-wide numerics flags; put them back for the other tests."""
    import torch

    saved = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
        torch.backends.cudnn.benchmark,
    )
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
    torch.set_float32_matmul_precision(saved[2])
    torch.backends.cudnn.benchmark = saved[3]


class RecordingSampler:
    def __init__(self):
        self.calls = []

    def start(self):
        self.calls.append("start")

    def stop(self):
        self.calls.append("stop")
        return {"available": False, "reason": "test sampler"}


def test_raw_step_times_and_callbacks():
    events, syncs, wrapped = [], [], []
    sampler = RecordingSampler()

    def wrap(model):
        wrapped.append(type(model).__name__)
        return model

    config = RunConfig("resnet50", flavour="tiny", batch_size=4, warmup_steps=2, steps=3, repeats=2)
    result = measure(
        config,
        progress=lambda phase, done, total: events.append((phase, done, total)),
        sampler=sampler,
        wrap_model=wrap,
        sync=lambda: syncs.append(len(events)),
    )
    assert len(result["warmup_step_times_s"]) == 2
    assert [len(r["step_times_s"]) for r in result["repeats"]] == [3, 3]
    assert all(t > 0 for r in result["repeats"] for t in r["step_times_s"])
    assert result["compile_time_s"] is None  # eager
    assert result["batch_size"] == 4 and result["seq_len"] is None and result["device"] == "cpu"
    assert result["peak_memory_bytes"] is None  # no allocator counter on a CPU
    assert result["peak_reserved_bytes"] is None
    assert result["telemetry"] == {"available": False, "reason": "test sampler"}
    assert sampler.calls == ["start", "stop"]
    assert wrapped == ["WithLoss"]  # DDP wraps the model together with its loss
    # Progress at the start and end of warm-up, then of measuring and after each repeat, counted in steps...
    assert events == [("warmup", 0, 2), ("warmup", 2, 2), ("measure", 0, 6), ("measure", 3, 6), ("measure", 6, 6)]
    # ...and never between the sync() calls that bracket a repeat (before its first, after its last step).
    assert syncs == [3, 3, 4, 4]
    flags = result["precision_flags"]
    assert flags["precision"] == "fp32" and flags["float32_matmul_precision"] == "highest"
    assert flags["cuda_matmul_allow_tf32"] is False and flags["cudnn_allow_tf32"] is False
    assert flags["optimizer"] == "SGD" and flags["channels_last"] is False
    # The statistics come from these raw numbers alone.
    stats = summarize([r["step_times_s"] for r in result["repeats"]], result["batch_size"])
    expected = [4 * 3 / sum(r["step_times_s"]) for r in result["repeats"]]
    assert stats["samples_per_s_repeats"] == pytest.approx(expected)
    assert stats["samples_per_s"] == pytest.approx(sum(expected) / 2)


class SleepyWorkload(Workload):
    """A one-parameter model whose forward sleeps a known time: a step can't be timed shorter than that."""

    name = "test-sleepy"
    sample_unit = "images"
    loss = "mean"  # its output stands for the loss: no targets
    nap_s = 0.02

    def build_model(self, config):
        import torch

        nap_s = self.nap_s

        class Sleepy(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.ones(4))

            def forward(self, x):
                time.sleep(nap_s)
                return (self.weight * x).sum()

        return Sleepy()

    def make_inputs(self, config, batch_size, generator, device="cpu"):
        import torch

        return (torch.ones(batch_size, 4, device=device),)


@pytest.fixture
def sleepy(register_workload):
    return register_workload(SleepyWorkload())


def test_step_times_measure_the_step(sleepy):
    config = RunConfig(sleepy.name, batch_size=2, warmup_steps=1, steps=4, repeats=2)
    start = time.perf_counter()
    result = measure(config)
    wall = time.perf_counter() - start
    times = [t for r in result["repeats"] for t in r["step_times_s"]]
    assert len(times) == 8 and all(t >= sleepy.nap_s for t in times)
    assert sum(times) + sum(result["warmup_step_times_s"]) <= wall
    assert result["flops_per_sample"] == 0  # no matmul or convolution to count


@pytest.mark.parametrize(
    ("precision", "dtype", "scaler"), [("amp-bf16", "bfloat16", False), ("amp-fp16", "float16", True)]
)
def test_mixed_precision_on_cpu(precision, dtype, scaler):
    config = RunConfig(
        "bert-base-mlm", flavour="tiny", precision=precision, batch_size=4, warmup_steps=1, steps=2, repeats=1
    )
    result = measure(config)
    flags = result["precision_flags"]
    assert flags["autocast_dtype"] == dtype and flags["grad_scaler"] is scaler
    assert flags["optimizer"] == "AdamW"
    assert len(result["repeats"][0]["step_times_s"]) == 2


def test_compile_watch_warns_of_recompiles_and_graph_skips(monkeypatch):
    from dlbench.measurement import compile as compile_mod

    counts = {"stats": 10, "skips": 2}
    monkeypatch.setattr(compile_mod, "compile_counters", lambda: counts["stats"])
    monkeypatch.setattr(compile_mod, "cuda_graph_skips", lambda: counts["skips"])
    watch = compile_mod.CompileWatch(compiled=True, cuda_graphs=True)
    watch.compile_done()
    watch.check("not kept: nothing recompiled")
    counts.update(stats=11, skips=5)
    watch.check("recompiled")
    assert watch.read() == (["recompiled", "CUDA graphs skipped for 3 compiled graph(s): those ran without graphs "
                             "(TORCH_LOGS=cudagraphs says why)"], 3)

    eager = compile_mod.CompileWatch(compiled=False, cuda_graphs=False)
    eager.compile_done()
    counts.update(stats=12, skips=6)
    eager.check("not kept: not compiled")
    assert eager.read() == ([], None)


def test_compile_cache_is_fresh_and_removed(monkeypatch):
    import os

    import torch._dynamo  # noqa: F401 - its import writes the default cache dir into the environment

    from dlbench.measurement.compile import compile_cache, default_inductor_cache

    default = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    for user_choice in (None, default_inductor_cache()):
        with compile_cache(True, user_choice) as state:
            directory = os.environ["TORCHINDUCTOR_CACHE_DIR"]
            assert state.startswith("cold") and os.path.isdir(directory) and directory != default
            assert os.environ["TRITON_CACHE_DIR"].startswith(directory)
        assert os.environ.get("TORCHINDUCTOR_CACHE_DIR") == default and not os.path.exists(directory)
    with compile_cache(True, "/somewhere/of/the/users") as state:
        assert state.startswith("user")
    with compile_cache(False) as state:
        assert state is None


def test_unsupported_config_is_refused_before_work():
    with pytest.raises(UnsupportedConfig, match="tf32"):
        measure(RunConfig("resnet50", flavour="tiny", precision="tf32", device="cpu"))


def test_tiny_bert_records_sdpa_attention():
    result = measure(
        RunConfig("bert-base-squad", flavour="tiny", batch_size=2, warmup_steps=0, steps=1, repeats=1)
    )
    assert result["seq_len"] == 32 and result["precision_flags"]["attention"] == "sdpa_no_mask"


def test_capability_reasons_on_cpu():
    import torch

    assert unsupported_reason(RunConfig("resnet50", precision="fp32", device="cpu")) is None
    assert unsupported_reason(RunConfig("resnet50", precision="amp-bf16", device="cpu")) is None
    assert "compute capability >= 8.0" in unsupported_reason(
        RunConfig("resnet50", precision="tf32", device="cpu")
    )
    assert "CUDA graphs" in unsupported_reason(RunConfig("resnet50", compile="reduce-overhead", device="cpu"))
    assert "unknown device" in unsupported_reason(RunConfig("resnet50", device="tpu"))
    assert "unknown precision" in unsupported_reason(RunConfig("resnet50", precision="fp4", device="cpu"))
    assert "unknown compile mode" in unsupported_reason(RunConfig("resnet50", compile="fast", device="cpu"))
    if not torch.cuda.is_available():
        assert "cuda is not available" in unsupported_reason(RunConfig("resnet50", device="cuda"))
        assert "not available" in unsupported_reason(RunConfig("resnet50", device="cuda:3"))
    if not torch.backends.mps.is_available():
        assert "mps is not available" in unsupported_reason(RunConfig("resnet50", device="mps"))


# Reference: /work/shared/reference/README.md "FLOPs per trained sample" (FlopCounterMode, fwd+bwd).
@pytest.mark.parametrize(
    ("workload", "seq_len", "gflop"),
    [("resnet50", None, 24.3), ("bert-large-mlm", 128, 240.0), ("bert-base-squad", 384, 212.0)],
)
def test_flops_per_sample_match_reference(workload, seq_len, gflop):
    from dlbench.scenarios.train import flops_per_sample

    flops_per_sample.cache_clear()
    start = time.perf_counter()
    counted = flops_per_sample(workload, "full", seq_len)
    elapsed = time.perf_counter() - start
    assert counted / 1e9 == pytest.approx(gflop, rel=0.02)
    assert elapsed < 30  # meta device: shapes only (about 1 s for BERT-large on an idle core)
    start = time.perf_counter()
    assert flops_per_sample(workload, "full", seq_len) == counted
    assert time.perf_counter() - start < 0.01  # cached


def test_measure_reports_flops_of_the_configured_shape():
    from dlbench.scenarios.train import flops_per_sample

    result = measure(
        RunConfig(
            "bert-base-mlm", flavour="tiny", seq_len=48, batch_size=2, warmup_steps=0, steps=1, repeats=1
        )
    )
    assert result["seq_len"] == 48
    assert result["flops_per_sample"] == flops_per_sample("bert-base-mlm", "tiny", 48)
    assert result["flops_per_sample"] > flops_per_sample("bert-base-mlm", "tiny", 32)


@pytest.mark.gpu
def test_cuda_measurement_uses_events_and_counts_memory():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    config = RunConfig(
        "resnet50",
        flavour="tiny",
        precision="amp-fp16",
        device="cuda",
        batch_size=16,
        warmup_steps=2,
        steps=5,
        repeats=2,
    )
    result = measure(config)
    assert result["device"].startswith("cuda:")
    assert result["peak_memory_bytes"] and result["peak_memory_bytes"] > 0
    assert result["peak_reserved_bytes"] >= result["peak_memory_bytes"]  # the reserve holds every allocation
    flags = result["precision_flags"]
    assert (
        flags["channels_last"] is True and flags["optimizer_impl"] == "fused" and flags["grad_scaler"] is True
    )
    assert all(t > 0 for r in result["repeats"] for t in r["step_times_s"])


@pytest.mark.slow
def test_compiled_run_on_cpu_keeps_compile_time_apart():
    """torch.compile on a CPU (Inductor + C++): about 2 minutes on 2 cores, so opt-in (DLBENCH_RUN_SLOW=1)."""
    import os

    if os.environ.get("DLBENCH_RUN_SLOW") != "1":
        pytest.skip("slow: set DLBENCH_RUN_SLOW=1 to compile a tiny model on the CPU")
    config = RunConfig(
        "bert-base-squad", flavour="tiny", compile="default", batch_size=4, warmup_steps=1, steps=3, repeats=1
    )
    result = measure(config)
    assert result["compile_time_s"] > max(result["repeats"][0]["step_times_s"])
    assert result["precision_flags"]["compile_cache"].startswith("cold")
    assert not result["warnings"]  # no recompilation after the compile steps


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_cuda_compiled_modes(mode):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    config = RunConfig(
        "bert-base-mlm",
        flavour="tiny",
        precision="amp-bf16",
        compile=mode,
        device="cuda",
        batch_size=16,
        warmup_steps=2,
        steps=5,
        repeats=2,
    )
    result = measure(config)
    assert result["compile_time_s"] > max(t for r in result["repeats"] for t in r["step_times_s"])
    assert not result["warnings"]
    assert result["precision_flags"]["attention"] == "sdpa_no_mask"
    assert result["precision_flags"]["cuda_graphs"] is (mode == "reduce-overhead")
    if mode == "reduce-overhead":
        assert result["precision_flags"]["cuda_graph_skips"] == 0
        assert result["peak_memory_bytes"] > 0


def test_cuda_graph_modes_mark_each_step_and_widen_the_memory_window(monkeypatch):
    """reduce-overhead / max-autotune on CUDA: every step starts with cudagraph_mark_step_begin, and the
    peak-memory window covers the graph recording (replays allocate nothing)."""
    from dlbench.measurement.compile import uses_cuda_graphs
    from dlbench.measurement.memory import peak_memory_scope
    from dlbench.measurement.precision import apply_precision
    from dlbench.scenarios import train as m

    assert uses_cuda_graphs("reduce-overhead", "cuda") and uses_cuda_graphs("max-autotune", "cuda")
    assert not uses_cuda_graphs("default", "cuda") and not uses_cuda_graphs("reduce-overhead", "cpu")
    assert peak_memory_scope("reduce-overhead", "cuda").startswith("compile")
    assert peak_memory_scope("default", "cuda") == "measured steps"

    marks = []
    monkeypatch.setattr(m, "step_begin_marker", lambda: (lambda: marks.append("begin")))
    import torch

    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_model = lambda x: model(x).sum()  # noqa: E731 - a tiny stand-in for a workload's loss module
    for precision in ("fp32", "amp-fp16"):
        setup = apply_precision(precision, torch.device("cpu"))
        step = m.make_train_step(loss_model, optimizer, (torch.ones(2, 4),), setup, cuda_graphs=True)
        marks.clear()
        step()
        step()
        assert marks == ["begin", "begin"]
        plain = m.make_train_step(loss_model, optimizer, (torch.ones(2, 4),), setup)
        marks.clear()
        plain()
        assert marks == []


def test_cuda_peaks_read_allocated_and_reserved_since_the_reset(monkeypatch):
    """Both peaks come from the caching allocator's counters after the one reset before measuring (a fake
    allocator stands in for CUDA: its reserve grows in 2 MiB blocks, as the real one's does)."""
    import torch

    from dlbench.measurement import memory as m

    class FakeAllocator:
        def __init__(self):
            self.allocated = self.reserved = self.peak_allocated = self.peak_reserved = 0

        def alloc(self, n):
            self.allocated += n
            self.reserved = max(self.reserved, -(-self.allocated // 2**21) * 2**21)
            self.peak_allocated = max(self.peak_allocated, self.allocated)
            self.peak_reserved = max(self.peak_reserved, self.reserved)

        def reset(self, device=None):
            self.peak_allocated, self.peak_reserved = self.allocated, self.reserved

    fake = FakeAllocator()
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", fake.reset)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: fake.peak_allocated)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda device=None: fake.peak_reserved)
    device = torch.device("cuda", 0)
    fake.alloc(100 * 2**20)  # warm-up garbage, freed below: the reset must forget it
    fake.allocated = 2**20
    m.peak_memory_reset(device)
    fake.alloc(5 * 2**20 + 1)
    assert m.peak_memory(device) == 6 * 2**20 + 1
    assert m.peak_reserved(device) == 100 * 2**20  # the reserve keeps the warm-up's cached blocks
    assert m.peak_reserved(torch.device("cpu")) is None and m.peak_memory(torch.device("cpu")) is None


def test_cpu_run_records_no_cuda_graphs():
    config = RunConfig("resnet50", flavour="tiny", batch_size=2, warmup_steps=1, steps=2, repeats=1)
    flags = measure(config)["precision_flags"]
    assert flags["cuda_graphs"] is False and flags["peak_memory_scope"] == "not measured: torch has no peak-memory counter on cpu"
    assert "cuda_graph_skips" not in flags


class SlowStartWorkload(SleepyWorkload):
    """Its first `slow_calls` forward passes sleep `slow_s`, every later one `nap_s`: with as many warm-up steps,
    a warm-up step that leaks into the measured ones shows as a measured step no shorter than `slow_s`."""

    name = "test-slow-start"
    nap_s = 0.002
    slow_s = 0.3
    slow_calls = 2

    def build_model(self, config):
        import torch

        workload = self

        class SlowStart(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.ones(4))
                self.calls = 0

            def forward(self, x):
                self.calls += 1
                time.sleep(workload.slow_s if self.calls <= workload.slow_calls else workload.nap_s)
                return (self.weight * x).sum()

        return SlowStart()


@pytest.fixture
def slow_start(register_workload):
    return register_workload(SlowStartWorkload())


def test_warmup_steps_are_kept_out_of_the_measured_steps(slow_start):
    config = RunConfig(slow_start.name, batch_size=2, warmup_steps=slow_start.slow_calls, steps=3, repeats=2)
    result = measure(config)
    warmup = result["warmup_step_times_s"]
    measured = [t for r in result["repeats"] for t in r["step_times_s"]]
    assert len(warmup) == 2 and all(t >= slow_start.slow_s for t in warmup)
    assert len(measured) == 6 and max(measured) < slow_start.slow_s  # not one slow warm-up step among them
    stats = summarize([r["step_times_s"] for r in result["repeats"]], result["batch_size"])
    assert stats["samples_per_s"] > 2 * 3 / (slow_start.slow_s + 2 * slow_start.nap_s)


class RecordingClock:
    """A clock that logs each call into the shared `log` (every duration reads as 1 s)."""

    def __init__(self, log):
        self.log = log

    def marks(self, n):
        return [None] * n

    def mark(self, marks, i):
        self.log.append("mark")

    def synchronize(self):
        self.log.append("device sync")

    def durations(self, marks):
        self.log.append("read")
        return [1.0] * (len(marks) - 1)


def test_each_repeat_is_bracketed_by_device_sync_then_barrier(monkeypatch):
    """The order docs/methodology.md promises: before each repeat the device is synchronised and then the ranks
    meet (sync), the clock is marked around every step, and after the last step again device sync, then sync."""
    import torch

    from dlbench.scenarios import train as m

    log = []
    monkeypatch.setattr(m, "clock_for", lambda device: RecordingClock(log))

    class Logged(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            log.append("step")
            return self.inner(*args)

    warmup, steps, repeats = 2, 3, 2
    config = RunConfig("resnet50", flavour="tiny", batch_size=2, warmup_steps=warmup, steps=steps, repeats=repeats)
    result = measure(config, wrap_model=Logged, sync=lambda: log.append("barrier"),
                     progress=lambda phase, done, total: log.append(f"progress {phase} {done}/{total}"))
    timed = lambda n: ["mark", *["step", "mark"] * n, "read"]  # noqa: E731
    total = steps * repeats
    per_repeat = lambda r: ["device sync", "barrier", *timed(steps), "device sync", "barrier",  # noqa: E731
                            f"progress measure {(r + 1) * steps}/{total}"]
    assert log == ["progress warmup 0/2", *timed(warmup), "progress warmup 2/2", "device sync",
                   f"progress measure 0/{total}", *[e for r in range(repeats) for e in per_repeat(r)]]
    assert result["repeats"] == [{"step_times_s": [1.0] * steps}] * repeats


def test_a_slow_progress_display_lands_in_no_step_time(sleepy, monkeypatch):
    """A progress callback that takes longer than a step (a pipe the parent drains late, a status file on a
    slow disk) must not be timed: every step time stays far below the callback's delay."""
    monkeypatch.setattr(sleepy, "nap_s", 0.0)
    delay_s = 0.3
    calls = []

    def slow_progress(phase, done, total):
        calls.append((phase, done, total))
        time.sleep(delay_s)

    config = RunConfig(sleepy.name, batch_size=2, warmup_steps=3, steps=4, repeats=2)
    result = measure(config, progress=slow_progress)
    assert [c for c in calls if c[0] == "measure"] == [("measure", 0, 8), ("measure", 4, 8), ("measure", 8, 8)]
    measured = [t for r in result["repeats"] for t in r["step_times_s"]]
    assert len(measured) == 8 and max(measured) < delay_s / 2, measured
    assert max(result["warmup_step_times_s"]) < delay_s / 2  # warm-up times are kept raw: not charged either


def test_cuda_clock_reads_events_only_after_the_last_one_completed(monkeypatch):
    """On CUDA, event times are read (elapsed_time) only after the host waited for the last event; the
    milliseconds CUDA reports become seconds."""
    import torch

    from dlbench.measurement import clocks as m

    log = []
    now = iter([0.0, 12.0, 30.0, 31.5])  # the GPU's clock in ms at each record()
    recorded, completed = [], []  # events in stream order; those the host knows have completed

    class FakeEvent:
        def __init__(self, enable_timing=False):
            assert enable_timing

        def record(self):
            self.ms = next(now)
            recorded.append(self)
            log.append("record")

        def synchronize(self):  # an event completes after every event recorded before it in the stream
            completed.extend(recorded[: recorded.index(self) + 1])
            log.append("wait")

        def elapsed_time(self, end):
            if self not in completed or end not in completed:
                raise RuntimeError("Both events must be completed before calculating elapsed time.")  # CUDA's
            log.append("read")
            return end.ms - self.ms

    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    times = m.timed_steps(lambda: log.append("step"), 3, m.CudaClock(torch.device("cuda", 0)))
    assert times == pytest.approx([0.012, 0.018, 0.0015])
    assert log == ["record", "step", "record", "step", "record", "step", "record", "wait", "read", "read", "read"]


def test_mps_clock_drains_the_queue_before_every_clock_read(monkeypatch):
    import torch

    from dlbench.measurement import clocks as m

    log = []
    ticks = iter([1.0, 1.25, 1.75])

    def perf_counter():
        log.append("clock")
        return next(ticks)

    clock = m.MpsClock(torch.device("mps"))
    with monkeypatch.context() as patch:
        patch.setattr(torch.mps, "synchronize", lambda: log.append("drain"))
        patch.setattr(m.time, "perf_counter", perf_counter)
        times = m.timed_steps(lambda: log.append("step"), 2, clock)
    assert times == pytest.approx([0.25, 0.5])
    assert log == ["drain", "clock", "step", "drain", "clock", "step", "drain", "clock"]
