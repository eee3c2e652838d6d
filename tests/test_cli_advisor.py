"""`dlbench cost`, `dlbench estimate`, `dlbench advise`: output, exit codes, and no torch import."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cli_helpers import cli
from dlbench import catalog

SEED_COST = ["cost", "--gpu", "RTX 3090", "--cloud-price-per-hour", "2.14", "--system-price", "2200",
             "--electricity-price", "0.12", "--host-power-w", "100", "--utilization", "0.15"]


class Result:
    def __init__(self, exit_code: int, output: str, stderr: str) -> None:
        self.exit_code, self.output, self.stderr = exit_code, output, stderr


@pytest.fixture
def run(capsys):
    """Run `dlbench ARGS` in this process through `main` (as the console script does)."""

    def _run(args):
        return Result(*cli(capsys, *args))

    return _run


def test_cost_reproduces_the_seed_example(run):
    result = run([*SEED_COST, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["gpu_tdp_w"] == 350  # catalogue TDP of the RTX 3090, as in the seed
    assert data["energy_kwh_per_year"] == pytest.approx(591, abs=0.5)
    assert data["electricity_usd_per_year"] == pytest.approx(71, abs=0.5)
    assert data["break_even_days"] == pytest.approx(300, rel=0.05)
    table = run(SEED_COST)
    assert table.exit_code == 0 and "break-even" in table.output and "days" in table.output


def test_cost_defaults_to_catalogue_price_plus_host(run):
    data = json.loads(run(["cost", "--gpu", "RTX 4090", "--cloud-price-per-hour", "1", "--json"]).output)
    assert data["system_price_usd"] == catalog.lookup("RTX 4090").price_usd + 700
    assert data["utilization"] == 0.15 and data["electricity_price_usd_per_kwh"] == 0.175 and data["years"] == 5


def test_estimate_json_and_table(run):
    data = json.loads(run(["estimate", "--gpu", "RTX 3090", "--workload", "resnet50", "--precision", "amp-fp16",
                            "--json"]).output)
    assert data["kind"] == "estimated" and data["low"] <= data["samples_per_s"] <= data["high"]
    assert data["unit"] == "images" and data["calibration_gpus"]
    table = run(["estimate", "--gpu", "RTX 4090", "--workload", "resnet50", "--precision", "amp-fp16"])
    assert table.exit_code == 0 and "published" in table.output and "model" in table.output


def test_advise_json_and_table(run):
    data = json.loads(run(["advise", "--max-gpus", "2", "--budget-usd", "6000", "--json"]).output)
    assert data["options"] and all(o["purchase_usd"] <= 6000 for o in data["options"])
    assert {o["num_gpus"] for o in data["options"]} == {1, 2}
    table = run(["advise", "--model-params", "3e8", "--form-factor", "workstation"])
    assert table.exit_code == 0 and "memory need" in table.output and "TCO = GPUs + host" in table.output


@pytest.mark.parametrize("args", [
    ["cost", "--gpu", "RTX 3090", "--cloud-price-per-hour", "-1"],
    ["cost", "--gpu", "RTX 3090", "--cloud-price-per-hour", "0"],
    ["cost", "--gpu", "RTX 3090", "--cloud-price-per-hour", "2", "--system-price", "0"],
    ["cost", "--gpu", "RTX 3090", "--cloud-price-per-hour", "2", "--electricity-price", "-0.1"],
    ["cost", "--gpu", "RTX 3090", "--cloud-price-per-hour", "2", "--utilization", "0"],
    ["cost", "--gpu", "RTX 3090", "--cloud-price-per-hour", "2", "--utilization", "1.5"],
    ["cost", "--gpu", "RTX 9999", "--cloud-price-per-hour", "2"],
    ["estimate", "--gpu", "RTX 9999", "--workload", "resnet50", "--precision", "tf32"],
    ["estimate", "--gpu", "RTX 4090", "--workload", "resnet-50", "--precision", "tf32"],
    ["estimate", "--gpu", "V100 SXM2 16GB", "--workload", "resnet50", "--precision", "amp-bf16"],
    ["advise", "--budget-usd", "-5"],
    ["advise", "--utilization", "2"],
    ["advise", "--workload", "gpt2"],
])
def test_bad_input_exits_2_with_one_line(run, args):
    result = run(args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert not result.output


def test_cost_of_a_gpu_without_a_price_asks_for_the_system_price(run):
    unpriced = [g for g in catalog.all_gpus() if g.price_usd is None and g.tdp_w]
    if not unpriced:
        pytest.skip("every catalogue GPU has a price")
    args = ["cost", "--gpu", unpriced[0].name, "--cloud-price-per-hour", "2"]
    result = run(args)
    assert result.exit_code == 2 and "--system-price" in result.stderr
    assert run([*args, "--system-price", "30000", "--json"]).exit_code == 0


def test_commands_do_not_import_torch_and_exit_cleanly():
    code = (
        "import sys, json\n"
        "from dlbench.cli.app import main\n"
        "for args in (['cost', '--gpu', 'RTX 3090', '--cloud-price-per-hour', '2.14', '--json'],\n"
        "             ['estimate', '--gpu', 'RTX 5090', '--workload', 'bert-base-squad', '--precision', 'amp-bf16',"
        " '--gpus', '2', '--json'],\n"
        "             ['advise', '--max-gpus', '2', '--json']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as e:\n"
        "        assert not e.code, (args, e.code)\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_input_in_a_real_process_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "dlbench", "cost", "--gpu", "RTX 3090", "--cloud-price-per-hour",
                           "2", "--utilization", "1.5"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:") and "Traceback" not in proc.stderr


def test_stored_runs_are_measured_figures_and_calibrate_the_model(run, tmp_path):
    from dlbench.store import open_store
    from store_docs import document, environment, result

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    mine = result(workload="resnet50", precision="amp-fp16", compile="default", batch_size=256, seed=3)
    eager = result(workload="resnet50", precision="amp-fp16", compile="off", batch_size=256, seed=4)
    eager["samples_per_s"] = mine["samples_per_s"] / 2  # the slower eager run is not the figure used
    tiny = {**result(workload="resnet50", precision="tf32", seed=5), "flavour": "tiny"}
    store = open_store(url)
    store.save_run(document([mine, eager, tiny], env=environment("NVIDIA GeForce RTX 3090")))
    store.close()

    args = ["estimate", "--gpu", "RTX 3090", "--workload", "resnet50", "--precision", "amp-fp16", "--json"]
    data = json.loads(run([*args, "--db", url]).output)
    assert data["kind"] == "measured"
    assert data["samples_per_s"] == pytest.approx(mine["samples_per_s"])
    other = json.loads(run(["estimate", "--gpu", "RTX 5090", "--workload", "resnet50", "--precision", "amp-fp16",
                            "--json", "--db", url]).output)
    assert other["calibration_gpus"] == ["RTX 3090"] and "measured" in other["basis"]
    # the tiny tf32 run is not a measurement of the GPU: nothing measured for tf32
    tf32 = json.loads(run(["estimate", "--gpu", "RTX 3090", "--workload", "resnet50", "--precision", "tf32",
                           "--json", "--db", url]).output)
    assert tf32["kind"] == "estimated" and "RTX 3090" not in tf32["calibration_gpus"]
    published_only = json.loads(run([*args, "--db", url, "--no-runs"]).output)
    assert published_only["kind"] == "estimated"
    ranked = json.loads(run(["advise", "--workload", "resnet50", "--precision", "amp-fp16", "--max-gpus", "1",
                             "--json", "--db", url]).output)
    assert next(o for o in ranked["options"] if o["gpu"] == "RTX 3090")["throughput_kind"] == "measured"


def test_no_database_is_created_by_estimating(run, isolated_home):
    result = run(["estimate", "--gpu", "RTX 3090", "--workload", "resnet50", "--precision", "tf32", "--json"])
    assert result.exit_code == 0
    assert not (isolated_home / "dlbench.db").exists()


def test_cost_totals_count_every_year(run):
    # Seed inputs: 591 kWh and 71 USD of electricity a year; the cloud at 2.14 USD/h x 15% x 24 h a day.
    one = json.loads(run([*SEED_COST, "--years", "1", "--json"]).output)
    three = json.loads(run([*SEED_COST, "--years", "3", "--json"]).output)
    assert one["total_cost_of_ownership_usd"] == pytest.approx(2200 + one["electricity_usd_per_year"])
    assert three["total_cost_of_ownership_usd"] == pytest.approx(2200 + 3 * three["electricity_usd_per_year"])
    assert three["total_cost_of_ownership_usd"] == pytest.approx(2200 + 3 * 71, abs=2)
    assert three["cloud_cost_usd"] == pytest.approx(2.14 * 0.15 * 24 * 365 * 3)


def test_estimate_and_advise_take_workload_names_in_any_case_as_run_does(run):
    """`dlbench run -w RESNET50` runs resnet50; estimate and advise take it too, answer for the canonical name,
    and say about a typo what `dlbench run` says."""
    args = ["--gpu", "RTX 3090", "--precision", "amp-fp16", "--json"]
    lower = json.loads(run(["estimate", "-w", "bert-base-squad", *args]).output)
    for name in ("BERT-Base-SQuAD", " bert-base-squad "):
        mixed = run(["estimate", "-w", name, *args])
        assert mixed.exit_code == 0, mixed.stderr
        assert json.loads(mixed.output) == lower and lower["workload"] == "bert-base-squad"
    ranked = run(["advise", "-w", "RESNET50", "--max-gpus", "1", "--json"])
    assert ranked.exit_code == 0, ranked.stderr
    assert json.loads(ranked.output) == json.loads(run(["advise", "-w", "resnet50", "--max-gpus", "1",
                                                        "--json"]).output)
    for name, hint in (("resnet50-tiny", "; the tiny flavour is an option: use -w resnet50 --tiny"),
                       ("ResNet5", "; did you mean resnet50?"),
                       ("bert-large", "; did you mean bert-large-mlm, bert-large-squad?")):
        for command in (["estimate", "-w", name, *args], ["advise", "-w", name]):
            result = run(command)
            assert result.exit_code == 2 and not result.output
            assert result.stderr.startswith(f"error: unknown workload '{name}'{hint} (choose from: ")
            assert result.stderr.count("\n") == 1
    proc = subprocess.run([sys.executable, "-c", (
        "import sys\nfrom dlbench.cli.app import main\n"
        "for args in (['estimate', '--gpu', 'RTX 5090', '-w', 'RESNET50', '-p', 'amp-bf16', '--json'],\n"
        "             ['estimate', '--gpu', 'RTX 5090', '-w', 'resnet5', '-p', 'amp-bf16'],\n"
        "             ['advise', '-w', 'Bert-Large-SQuAD', '--max-gpus', '1', '--json']):\n"
        "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
