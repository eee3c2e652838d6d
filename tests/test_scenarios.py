"""Scenarios: the registry, an unknown name, the training scenario's metrics from its raw times, plain workloads."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dlbench import scenarios
from dlbench.errors import BadInput
from dlbench.measurement.config import RunConfig
from dlbench.scenarios.base import Scenario, metric
from dlbench.scenarios.train import TrainConfig, TrainScenario

pytestmark = pytest.mark.usefixtures("one_cpu_thread")


def test_registry_names_train_and_every_entry_is_a_scenario_under_its_own_name():
    assert scenarios.names()[0] == "train"
    assert isinstance(scenarios.get("train"), TrainScenario)
    for name in scenarios.names():
        scenario = scenarios.get(name)
        assert isinstance(scenario, Scenario) and scenario.name == name
        assert scenario.description and scenario.precisions and scenario.headline


@pytest.mark.parametrize("name", ["infer-ish", "", "TRAIN", None])
def test_an_unknown_scenario_is_bad_input_that_lists_the_names(name):
    with pytest.raises(BadInput) as err:
        scenarios.get(name)
    message = str(err.value)
    assert message.startswith(f"unknown scenario {name!r}; choose from: ")
    for known in scenarios.names():
        assert known in message


def test_a_config_names_its_scenario_and_old_configs_are_training():
    config = RunConfig("resnet50")
    assert config.scenario == "train"
    legacy = config.to_dict()
    del legacy["scenario"]  # a config written before scenarios existed
    assert RunConfig.from_dict(legacy).scenario == "train"
    assert RunConfig.from_dict(RunConfig("resnet50", scenario="train").to_dict()) == config


def test_an_unknown_scenario_is_a_skip_reason_and_measure_refuses_it():
    reason = scenarios.unsupported_reason(RunConfig("resnet50", device="cpu", scenario="nope"))
    assert reason.startswith("unknown scenario 'nope'")
    with pytest.raises(BadInput, match="unknown scenario"):
        scenarios.measure(RunConfig("resnet50", flavour="tiny", device="cpu", scenario="nope"))


def test_train_settings_come_from_the_run_config():
    config = RunConfig("resnet50", warmup_steps=4, steps=7, repeats=5)
    assert scenarios.get("train").settings(config) == TrainConfig(warmup_steps=4, steps=7, repeats=5, optimizer=None)


def test_a_scenario_refuses_a_known_precision_it_does_not_measure():
    class Narrow(TrainScenario):
        name = "narrow"
        precisions = ("fp32",)

    narrow = Narrow()
    assert narrow.unsupported_reason(RunConfig("resnet50", device="cpu")) is None
    reason = narrow.unsupported_reason(RunConfig("resnet50", precision="amp-bf16", device="cpu"))
    assert reason == "precision amp-bf16 is not measured by the narrow scenario; choose from: fp32"
    # An unknown precision keeps the one message every command gives for it.
    assert "unknown precision" in narrow.unsupported_reason(RunConfig("resnet50", precision="fp4", device="cpu"))


def test_train_metrics_follow_from_the_raw_times_alone():
    """Every figure the training scenario reports is recomputed here from its raw step times."""
    config = RunConfig("resnet50", flavour="tiny", batch_size=4, warmup_steps=1, steps=3, repeats=2)
    measurement = scenarios.measure(config)
    assert measurement["scenario"] == "train"
    metrics = scenarios.get("train").metrics(measurement, config)
    repeats = [r["step_times_s"] for r in measurement["repeats"]]
    per_repeat = [4 * 3 / sum(times) for times in repeats]
    assert list(metrics) == ["samples_per_s", "step_time_s", "achieved_flops_per_s"]  # no compile, no peaks on a CPU
    assert metrics["samples_per_s"]["unit"] == "samples/s" and metrics["samples_per_s"]["better"] == "higher"
    assert metrics["samples_per_s"]["repeats"] == pytest.approx(per_repeat)
    assert metrics["samples_per_s"]["value"] == pytest.approx(sum(per_repeat) / 2)
    steps = sorted(t for times in repeats for t in times)
    step = metrics["step_time_s"]
    assert step["unit"] == "s" and step["better"] == "lower"
    assert step["raw"] == [t for times in repeats for t in times]
    assert step["value"] == step["p50"] == pytest.approx((steps[2] + steps[3]) / 2)  # median of six
    # Linear interpolation between the closest ranks (numpy's default): p5 lies 0.25 of the way up from the
    # fastest step, p95 0.75 of the way up from the fifth; p90 and p99 likewise.
    assert step["p5"] == pytest.approx(steps[0] + 0.25 * (steps[1] - steps[0]))
    assert step["p90"] == pytest.approx(steps[4] + 0.5 * (steps[5] - steps[4]))
    assert step["p95"] == pytest.approx(steps[4] + 0.75 * (steps[5] - steps[4]))
    assert step["p99"] == pytest.approx(steps[4] + 0.95 * (steps[5] - steps[4]))
    assert step["mean"] == pytest.approx(sum(steps) / 6)
    assert metrics["achieved_flops_per_s"] == {
        "value": pytest.approx(metrics["samples_per_s"]["value"] * measurement["flops_per_sample"]),
        "unit": "FLOP/s", "better": "higher"}
    json.dumps(metrics)  # plain data: it lands in a result document as it is


def test_train_metrics_of_fixed_times_count_every_device_and_nothing_without_times():
    train = scenarios.get("train")
    config = RunConfig("resnet50", batch_size=8, world_size=2)
    measurement = {"repeats": [{"step_times_s": [0.5, 0.5]}, {"step_times_s": [0.25, 0.25]}], "batch_size": 8,
                   "flops_per_sample": None, "compile_time_s": 12.5, "peak_memory_bytes": 2**30,
                   "peak_reserved_bytes": None}
    metrics = train.metrics(measurement, config)
    assert metrics["samples_per_s"]["repeats"] == [32.0, 64.0]  # 2 steps x 8 samples x 2 devices over 1 s, 0.5 s
    assert metrics["samples_per_s"]["value"] == 48.0
    assert metrics["compile_time_s"] == {"value": 12.5, "unit": "s", "better": "lower"}
    assert metrics["peak_memory_bytes"] == {"value": 2**30, "unit": "bytes", "better": "lower"}
    assert "peak_reserved_bytes" not in metrics and "achieved_flops_per_s" not in metrics  # not measured
    assert train.metrics({"repeats": [], "flops_per_sample": 1e9}, config) == {}  # a failed run: nothing


def test_metric_keeps_only_what_it_is_given():
    assert metric(1.5, "s", "lower", p90=None) == {"value": 1.5, "unit": "s", "better": "lower"}
    assert metric(2.0, "samples/s", "higher", repeats=(1.0, 3.0)) == {
        "value": 2.0, "unit": "samples/s", "better": "higher", "repeats": [1.0, 3.0]}
    with pytest.raises(ValueError):
        metric(1.0, "s", "faster")


@pytest.mark.parametrize("name", ["resnet50", "bert-base-squad", "bert-base-mlm"])
def test_a_workload_forward_is_plain_and_training_adds_the_loss(name):
    """A workload's model returns outputs, never a loss; the train scenario's loss turns them into a scalar."""
    import torch

    from dlbench.scenarios.losses import loss_function
    from dlbench.scenarios.train import OPTIMIZERS, training_batch
    from dlbench.workloads import registry

    workload = registry.get(name)
    config = RunConfig(name, flavour="tiny")
    inputs, targets = training_batch(workload, config, 2, torch.Generator().manual_seed(0))
    assert targets  # every built-in workload trains against targets
    model = workload.build_model(config)
    outputs = model(*inputs)
    logits = outputs if isinstance(outputs, torch.Tensor) else outputs[0]
    assert logits.dim() >= 2 and logits.shape[0] == 2  # per-sample outputs, not a scalar loss
    loss = loss_function(workload.loss)(outputs, *targets)
    assert loss.dim() == 0 and torch.isfinite(loss)
    assert workload.optimizer in OPTIMIZERS


def test_an_unknown_loss_names_the_known_ones():
    from dlbench.scenarios.losses import LOSS_FUNCTIONS, loss_function

    with pytest.raises(ValueError) as err:
        loss_function("hinge")
    assert all(name in str(err.value) for name in LOSS_FUNCTIONS)


def test_importing_scenarios_and_measurement_imports_no_torch():
    code = ("import sys, dlbench.scenarios, dlbench.scenarios.train, dlbench.measurement.clocks, "
            "dlbench.measurement.compile, dlbench.measurement.memory, dlbench.measurement.device, "
            "dlbench.measurement.capabilities, dlbench.measurement.precision; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_run_with_an_unknown_scenario_is_one_error_line_and_exit_2(capsys):
    from cli_helpers import cli

    code, out, err = cli(capsys, "run", "--scenario", "nope", "--device", "cpu")
    assert code == 2 and out == ""
    assert err.strip() == f"error: unknown scenario 'nope'; choose from: {', '.join(scenarios.names())}"
    assert "train" in scenarios.names()


def test_the_planner_gives_each_configuration_its_scenario():
    from dlbench.measurement.device import DeviceFacts
    from dlbench.runner.plan import RunOptions, build_plan

    plan = build_plan(RunOptions(workloads=["resnet50"], device="cpu", tiny=True, scenario="train"), DeviceFacts())
    assert plan.items and all(item.config.scenario == "train" and item.skip_reason is None for item in plan.items)
