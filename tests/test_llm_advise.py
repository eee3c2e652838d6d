"""`dlbench advise --llm`: serving and fine-tuning builds, ranked by cost per token or per hour."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cli_helpers import cli
from dlbench.analysis import cost as costs
from dlbench.analysis.llm_advise import advise_llm, parse_build
from dlbench.errors import BadInput


def test_serve_meets_memory_speed_and_budget_and_ranks_by_cost_per_token():
    a = advise_llm("llama-3.1-8b", task="serve", context=8192, users=4, min_tokens_per_s=20, budget_usd=2000)
    assert a.options, a.excluded
    for o in a.options:
        assert o.fits and o.meets_speed
        assert o.need_per_gpu_bytes <= o.memory_per_gpu_bytes
        assert o.tokens_per_s_per_user >= 20
        assert o.purchase_usd <= 2000
        assert o.usd_per_million_tokens == pytest.approx(o.usd_per_hour / (o.tokens_per_s * 3600) * 1e6)
    per_m = [o.usd_per_million_tokens for o in a.options]
    assert per_m == sorted(per_m)
    assert a.memory["total_bytes"] > 16e9  # 16 GB of bf16 weights plus the cache


def test_cost_per_hour_is_the_five_year_cost_of_ownership_over_hours_in_use():
    a = advise_llm("llama-3.1-8b", task="serve", builds=["RTX 4090"])
    o = a.options[0]
    own = costs.total_cost_of_ownership(1599.0, 450.0, 1)
    assert o.total_cost_usd == pytest.approx(own.total_usd)
    assert o.usd_per_hour == pytest.approx(own.total_usd / (24 * 365 * 5 * 0.15))


def test_qlora_70b_cheapest_build_holds_the_training_state():
    a = advise_llm("llama-3.1-70b", task="qlora")
    assert a.options and all(o.fits for o in a.options)
    hours = [o.usd_per_hour for o in a.options]
    assert hours == sorted(hours)
    for o in a.options:
        assert o.need_per_gpu_bytes <= o.memory_per_gpu_bytes
    full = advise_llm("llama-3.1-8b", task="full-finetune")
    assert all(o.num_gpus > 1 or o.memory_per_gpu_bytes > 80 * 2**30 for o in full.options)


def test_named_builds_are_compared_side_by_side_with_cloud():
    a = advise_llm("llama-3.1-8b", task="serve", users=8, builds=["RTX PRO 6000", "2x RTX 5090"],
                   cloud_usd_per_gpu_hour=1.5)
    assert {(o.num_gpus, o.gpu) for o in a.options} == {(1, "RTX PRO 6000 Blackwell"), (2, "RTX 5090")}
    for o in a.options:
        assert o.cloud_usd_per_million_tokens == pytest.approx(1.5 * o.num_gpus / (o.tokens_per_s * 3600) * 1e6)
        assert o.cloud_break_even_days is None or o.cloud_break_even_days > 0
    assert parse_build("2x RTX 5090") == (2, "RTX 5090")
    assert parse_build("RTX 4090") == (1, "RTX 4090")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"task": "pretrain"}, "unknown task"),
    ({"precision": "amp-fp16"}, "unknown precision"),
    ({"users": 0}, "at least 1"),
    ({"min_tokens_per_s": -1}, "positive"),
    ({"builds": ["3x RTX 4090"]}, "1, 2, 4 or 8"),
    ({"builds": ["RTX 9999"]}, "unknown GPU"),
])
def test_bad_input(kwargs, message):
    with pytest.raises(BadInput, match=message):
        advise_llm("llama-3.1-8b", **kwargs)


def test_cli_llm_advice(capsys):
    code, out, _ = cli(capsys, "advise", "--llm", "llama-3.1-8b", "--task", "serve", "--context", "8192",
                       "--users", "4", "--min-tokens-per-s", "20", "--budget", "2000")
    assert code == 0 and "USD per million generated tokens" in out and "cheapest" in out
    code, out, _ = cli(capsys, "advise", "--llm", "llama-3.1-70b", "--task", "qlora", "--json")
    data = json.loads(out)
    assert code == 0 and data["task"] == "qlora" and data["options"]
    code, out, _ = cli(capsys, "advise", "--llm", "llama-3.1-8b", "--gpu", "RTX PRO 6000", "--gpu", "2x RTX 5090",
                       "--cloud-price-per-hour", "1.5")
    assert code == 0 and "break-even" in out
    code, _, err = cli(capsys, "advise", "--gpu", "RTX 4090")
    assert code == 2 and "go with --llm" in err
    code, _, err = cli(capsys, "advise", "--llm", "llama-9b")
    assert code == 2 and err.startswith("error:")


def test_llm_advice_imports_no_torch():
    code = (
        "import sys\n"
        "from dlbench.cli.app import main\n"
        "try:\n"
        "    main(['advise', '--llm', 'llama-3.1-8b', '--users', '4', '--context', '8192', '--json'])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
