"""Cost of ownership and cloud break-even, checked against Tim Dettmers' worked example (seed 001)."""

from __future__ import annotations

import pytest

from dlbench.analysis import cost
from dlbench.errors import BadInput

# Seed 001, "When is it better to use the cloud vs a dedicated GPU desktop/server?": an RTX 3090 desktop at
# $2,200, 350 W GPU + 100 W CPU, $0.12 per kWh, 15% utilisation, against $2.14/h on AWS.
SEED = {"system_price_usd": 2200.0, "power_w": 350.0 + 100.0, "cloud_price_usd_per_hour": 2.14,
        "utilization": 0.15, "electricity_price_usd_per_kwh": 0.12}


def test_seed_worked_example_intermediate_figures():
    be = cost.cloud_break_even(**SEED)
    assert be.energy_kwh_per_year == pytest.approx(591, abs=0.5)  # "= 591 kWh per year"
    assert be.electricity_usd_per_year == pytest.approx(71, abs=0.5)  # "an additional $71"
    assert be.cloud_cost_usd(300) == pytest.approx(2311, abs=1)  # "$2.14/h * 0.15 * 24 hours * 300 days = $2,311"
    assert be.first_year_desktop_usd == pytest.approx(2270, abs=1.5)  # "($2,311 vs $2,270)"


def test_seed_worked_example_breaks_even_after_about_300_days():
    be = cost.cloud_break_even(**SEED)
    assert be.break_even_days == pytest.approx(300, rel=0.05)  # "would be about 300 days"
    # At the break-even day both ways have cost the same; a day earlier the cloud was cheaper, a day later dearer.
    d = be.break_even_days
    assert be.desktop_cost_usd(d) == pytest.approx(be.cloud_cost_usd(d))
    assert be.cloud_cost_usd(d - 1) < be.desktop_cost_usd(d - 1)
    assert be.cloud_cost_usd(d + 1) > be.desktop_cost_usd(d + 1)


def test_defaults_are_the_seeds_and_reproduce_its_rtx_4090_electricity():
    assert (cost.DEFAULT_YEARS, cost.DEFAULT_UTILIZATION, cost.DEFAULT_ELECTRICITY_PRICE_USD_PER_KWH) == (5, 0.15, 0.175)
    # Seed 001: "The electricity cost for a RTX 4090 is about $100 per year" (450 W at the chart's defaults).
    own = cost.total_cost_of_ownership(1599, 450, host_power_w=0, host_price_usd=0)
    assert own.electricity_usd_per_year == pytest.approx(100, rel=0.1)


def test_total_cost_of_ownership_adds_purchase_and_years_of_electricity():
    own = cost.total_cost_of_ownership(1000, 300, num_gpus=4, host_price_usd=700, host_power_w=100,
                                       electricity_price_usd_per_kwh=0.2, utilization=0.5, years=3)
    host_usd, host_w = 700 * 2, 100 * 2  # one 2-GPU host share per two GPUs
    assert own.purchase_usd == 4 * 1000 + host_usd
    kwh = (4 * 300 + host_w) * 0.5 * 24 * 365 / 1000
    assert own.energy_kwh_per_year == pytest.approx(kwh)
    assert own.total_usd == pytest.approx(own.purchase_usd + 3 * kwh * 0.2)


def test_one_and_two_gpus_share_one_host():
    assert cost.host_for(1) == cost.host_for(2) == (cost.DEFAULT_HOST_PRICE_USD, cost.DEFAULT_HOST_POWER_W)
    assert cost.host_for(8)[0] == 4 * cost.DEFAULT_HOST_PRICE_USD


def test_never_breaks_even_when_the_cloud_costs_less_than_the_electricity():
    be = cost.cloud_break_even(2200, 450, 0.01, 0.15, 0.5)
    assert be.break_even_days is None


@pytest.mark.parametrize("kwargs", [
    {"system_price_usd": 0}, {"system_price_usd": -5}, {"cloud_price_usd_per_hour": 0},
    {"cloud_price_usd_per_hour": -2.14}, {"electricity_price_usd_per_kwh": 0}, {"utilization": 0},
    {"utilization": 1.5}, {"utilization": -0.1}, {"system_price_usd": float("nan")},
])
def test_bad_input(kwargs):
    with pytest.raises(BadInput):
        cost.cloud_break_even(**{**SEED, **kwargs})


def test_utilization_of_one_is_allowed():
    assert cost.cloud_break_even(**{**SEED, "utilization": 1.0}).break_even_days > 0
