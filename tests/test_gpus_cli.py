"""`dlbench gpus` and `dlbench gpus show`: output, filters, exit codes, no torch (python -m pytest tests/test_gpus_cli.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cli_helpers import cli
from dlbench.catalog import all_gpus
from dlbench.catalog.spec import GIB


def run_cli(args, capsys):
    return cli(capsys, *args)


def test_list_json_has_every_gpu_in_si_units(capsys):
    code, out, _ = run_cli(["gpus", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert len(data) == len(all_gpus())
    h100 = next(gpu for gpu in data if gpu["name"] == "H100 SXM5 80GB")
    assert h100["memory_bytes"] == 80 * GIB and h100["memory_bandwidth_bytes_per_s"] == 3.35e12


def test_list_table_shows_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    code, out, _ = run_cli(["gpus", "--vendor", "nvidia", "--sort", "memory"], capsys)
    assert code == 0
    assert "GB/s" in out and "BF16" in out and "RTX 4090" in out and "MI300X" not in out


def test_filters_and_sort(capsys):
    code, out, _ = run_cli(["gpus", "--vendor", "AMD", "--min-memory-gb", "100", "--form-factor", "server",
                            "--sort", "bf16", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data and all(gpu["vendor"] == "AMD" and gpu["memory_bytes"] >= 100 * GIB
                        and "server" in gpu["suitable_for"] for gpu in data)
    bf16 = [gpu["bf16_tensor_flops_per_s"] for gpu in data if gpu["bf16_tensor_flops_per_s"] is not None]
    assert bf16 == sorted(bf16, reverse=True)

    code, out, _ = run_cli(["gpus", "--form-factor", "workstation", "--json"], capsys)
    assert code == 0 and all("workstation" in gpu["suitable_for"] for gpu in json.loads(out))


def test_sort_puts_unknown_values_last(capsys):
    code, out, _ = run_cli(["gpus", "--sort", "price", "--json"], capsys)
    prices = [gpu["price_usd"] for gpu in json.loads(out)]
    known = [p for p in prices if p is not None]
    assert code == 0 and prices[: len(known)] == sorted(known, reverse=True)
    assert all(p is None for p in prices[len(known):])


@pytest.mark.parametrize("args,needle", [
    (["gpus", "--vendor", "intel"], "unknown vendor"),
    (["gpus", "--min-memory-gb", "-1"], "--min-memory-gb"),
    (["gpus", "--sort", "speed"], "unknown sort field"),
    (["gpus", "--form-factor", "laptop"], "unknown form factor"),
])
def test_bad_options_exit_2_with_one_line(args, needle, capsys):
    code, _, err = run_cli(args, capsys)
    assert code == 2
    assert needle in err and "Traceback" not in err


def test_show_accepts_torch_device_name(capsys):
    code, out, _ = run_cli(["gpus", "show", "NVIDIA H100 80GB HBM3", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["name"] == "H100 SXM5 80GB" and data["sources"]


def test_show_table_lists_sources_and_fields(capsys):
    code, out, _ = run_cli(["gpus", "show", "rtx 4090"], capsys)
    assert code == 0
    for field in ("Sources", "Half-rate FP32 accumulate", "TDP", "Price", "Launch"):
        assert field in out


def test_show_unknown_exits_2_with_close_matches(capsys):
    code, _, err = run_cli(["gpus", "show", "H100"], capsys)
    assert code == 2
    assert "H100 PCIe 80GB" in err and "H100 SXM5 80GB" in err


def test_show_ambiguous_device_name_lists_the_candidates(capsys):
    code, _, err = run_cli(["gpus", "show", "NVIDIA GeForce RTX 4060 Ti"], capsys)
    assert code == 2
    assert "RTX 4060 Ti 8GB" in err and "RTX 4060 Ti 16GB" in err


def test_gpus_does_not_import_torch_and_answers_fast():
    code = (
        "import sys, time\n"
        "from dlbench.cli.app import main\n"
        "start = time.perf_counter()\n"
        "for args in (['gpus'], ['gpus', 'show', 'NVIDIA H100 80GB HBM3'], ['gpus', '--json']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as exc:\n"
        "        assert not exc.code, exc.code\n"
        "elapsed = time.perf_counter() - start\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "print('ELAPSED', elapsed, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    elapsed = float(proc.stderr.split("ELAPSED")[-1])
    # Three commands, on a shared machine: each well under a second.
    assert elapsed < 3.0, elapsed
