"""`analysis.advise` and `analysis.memory`: ranking by perf per dollar of TCO, multi-GPU builds, filters."""

from __future__ import annotations

import pytest

from dlbench import catalog
from dlbench.analysis import advise as adv
from dlbench.analysis import cost, memory
from dlbench.errors import BadInput


@pytest.fixture(scope="module")
def advice():
    return adv.advise(workload="bert-large-squad", precision="amp-fp16", max_gpus=2)


def test_ranking_matches_perf_per_dollar_computed_independently(advice):
    assert advice.options
    values = []
    for o in advice.options:
        spec = catalog.lookup(o.gpu)
        own = cost.total_cost_of_ownership(spec.price_usd, spec.tdp_w, o.num_gpus)
        assert o.total_cost_usd == pytest.approx(own.total_usd)
        values.append(o.samples_per_s / own.total_usd)
        assert o.samples_per_s_per_w == pytest.approx(o.samples_per_s / (o.num_gpus * spec.tdp_w))
    assert values == sorted(values, reverse=True)
    assert [o.rank for o in advice.options] == list(range(1, len(advice.options) + 1))


def test_every_option_says_where_its_figures_come_from(advice):
    for o in advice.options:
        assert o.throughput_kind in ("measured", "published", "estimated")
        assert o.reason and o.throughput_basis
        assert o.figures["price"].startswith("catalogue")
    assert any(o.throughput_kind == "published" for o in advice.options)


def test_multi_gpu_builds_are_offered_and_never_mixed(advice):
    by_gpu: dict[str, set[int]] = {}
    for o in advice.options:
        assert catalog.lookup(o.gpu) is not None  # one catalogue GPU per build, never a mix
        by_gpu.setdefault(o.gpu, set()).add(o.num_gpus)
    assert any(2 in counts for counts in by_gpu.values())
    assert all(counts <= {1, 2} for counts in by_gpu.values())
    two = next(o for o in advice.options if o.num_gpus == 2)
    one = next(o for o in advice.options if o.num_gpus == 1 and o.gpu == two.gpu)
    assert one.samples_per_s < two.samples_per_s < 2 * one.samples_per_s + 1e-9
    assert "the speed of one" in two.reason


def test_budget_limits_the_purchase_price(advice):
    budget = 3000.0
    cheap = adv.advise(workload="bert-large-squad", precision="amp-fp16", max_gpus=2, budget_usd=budget)
    assert cheap.options and all(o.purchase_usd <= budget for o in cheap.options)
    assert len(cheap.options) < len(advice.options)


def test_memory_filters_apply_per_gpu():
    a = adv.advise(min_memory_gb=40, max_gpus=1)
    assert a.options and all(o.memory_bytes_per_gpu >= 40 * 2**30 for o in a.options)
    need = memory.training_memory(1.3e9, adv.DEFAULT_PRECISION)
    b = adv.advise(model_params=1.3e9, max_gpus=1)
    assert b.memory_need == need and not b.rules_of_thumb
    assert all(o.memory_bytes_per_gpu >= need.total_bytes for o in b.options)


def test_rules_of_thumb_shown_without_a_size(advice):
    quotes = " ".join(r["quote"] for r in advice.rules_of_thumb)
    assert "12 GB for image generation" in quotes and "24 GB for work with transformers" in quotes


def test_form_factor_filter():
    a = adv.advise(form_factor="server", max_gpus=1)
    assert a.options and all("server" in o.form_factor for o in a.options)


@pytest.mark.parametrize("kwargs", [
    {"budget_usd": 0}, {"budget_usd": -100}, {"utilization": 0}, {"utilization": 1.01},
    {"electricity_price_usd_per_kwh": -0.1}, {"years": 0}, {"workload": "resnet51"}, {"precision": "fp64"},
    {"form_factor": "laptop"}, {"max_gpus": 0}, {"min_memory_gb": 24, "model_params": 1e9},
    {"model_params": -1},
])
def test_bad_input(kwargs):
    with pytest.raises(BadInput):
        adv.advise(**kwargs)


def test_training_memory_formula():
    m = memory.training_memory(1e9, activation_fraction=0.5)
    assert m.weights_bytes + m.gradients_bytes + m.optimizer_bytes == 16e9  # 4 + 4 + 8 bytes per parameter
    assert m.total_bytes == pytest.approx(16e9 * 1.5)
    assert "16 B" in m.formula


def test_workload_with_nothing_to_calibrate_on_is_bad_input():
    from dlbench.reference import load_published

    published = {r.workload for r in load_published()}
    missing = [w for w in ("bert-base-mlm", "bert-large-mlm", "bert-base-squad") if w not in published]
    if not missing:
        pytest.skip("every workload has published results")
    with pytest.raises(BadInput, match="dlbench run"):
        adv.advise(workload=missing[0])
