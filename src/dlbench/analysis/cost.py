"""Total cost of ownership and cloud-vs-desktop break-even: `dlbench cost --gpu "RTX 3090" --cloud-price-per-hour 2.14`.

Follows Tim Dettmers' "Which GPU(s) to Get for Deep Learning" (seed 001):

* Electricity: `(GPU TDP + host power) x utilisation x 24 h x 365 d` kWh per year, times the price per kWh.
  Seed 001: "(350 W (GPU) + 100 W (CPU))*0.15 (utilization) * 24 hours * 365 days = 591 kWh per year ...
  an additional $71" at 0.12 USD/kWh.
* Cloud: you pay only for the hours you use, `price per hour x utilisation x 24 h` per day.
  Seed 001: "$2.14/h * 0.15 (utilization) * 24 hours * 300 days = $2,311".
* Break-even: the day on which the desktop (purchase + electricity so far) costs as much as the cloud so far:
  `days = purchase / (cloud per day - electricity per day)`. The seed compares 300 days of cloud ($2,311) with
  the purchase plus one whole year of electricity ($2,270) and calls it "about 300 days"; counting the
  electricity day by day, as here (so it also works past one year), gives 293 days for the same inputs.
* Total cost of ownership over N years: purchase (GPUs plus the host) + N years of electricity. Defaults from
  seed 001's performance-per-dollar chart: 5 years, 15% utilisation, 0.175 USD/kWh.

All money in USD, power in W, energy in kWh only where the name says so. Nothing here imports torch.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from dlbench.errors import BadInput

HOURS_PER_DAY = 24.0
DAYS_PER_YEAR = 365.0

# Seed 001, performance-per-dollar chart: "the electricity cost of ownership for 5 years is added with an
# electricity price of 0.175 USD per kWh and a 15% GPU utilization rate".
DEFAULT_YEARS = 5.0
DEFAULT_UTILIZATION = 0.15
DEFAULT_ELECTRICITY_PRICE_USD_PER_KWH = 0.175

# Seed 001, cloud-vs-desktop example: "(350 W (GPU) + 100 W (CPU))".
DEFAULT_HOST_POWER_W = 100.0
# Seed 001: "The desktop with RTX 3090 costs $2,200 (2-GPU barebone + RTX 3090)"; the RTX 3090's launch price
# was $1,499 (NVIDIA), which leaves about $700 for the 2-GPU barebone host.
DEFAULT_HOST_PRICE_USD = 700.0
# The seed's barebone holds two GPUs; larger builds are charged one such share per two GPUs (see host_for).
GPUS_PER_DEFAULT_HOST = 2


def check_positive(name: str, value: float | None) -> float | None:
    """`value` unless it is zero, negative or not finite (then BadInput naming the option)."""
    if value is None:
        return None
    if not math.isfinite(value) or value <= 0:
        raise BadInput(f"{name} must be a positive number, got {value:g}")
    return float(value)


def check_non_negative(name: str, value: float | None) -> float | None:
    """`value` unless it is negative or not finite."""
    if value is None:
        return None
    if not math.isfinite(value) or value < 0:
        raise BadInput(f"{name} must be zero or a positive number, got {value:g}")
    return float(value)


def check_utilization(value: float) -> float:
    """A utilisation is a fraction of the time in (0, 1]: 0.15 means 15%."""
    if not math.isfinite(value) or not 0 < value <= 1:
        raise BadInput(f"utilization must be in (0, 1] (0.15 means 15% of the time), got {value:g}")
    return float(value)


def check_finite_result(what: str, values: dict) -> None:
    """BadInput when inputs that are each finite multiply out to infinity (e.g. a price of 1e308 USD)."""
    for key, value in values.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise BadInput(f"{what}: {key} overflows with these inputs; use realistic prices, powers and years")


def host_for(num_gpus: int, host_price_usd: float = DEFAULT_HOST_PRICE_USD,
             host_power_w: float = DEFAULT_HOST_POWER_W) -> tuple[float, float]:
    """(price USD, power W) of the host for a build of `num_gpus` GPUs.

    One host (the seed's 2-GPU barebone, 100 W) for one or two GPUs; bigger builds pay one such share per two
    GPUs, so that a 4- or 8-GPU build is not handed its chassis, CPU and PSU for the price of a small desktop.
    """
    shares = max(1.0, num_gpus / GPUS_PER_DEFAULT_HOST)
    return host_price_usd * shares, host_power_w * shares


def energy_kwh_per_year(power_w: float, utilization: float) -> float:
    """kWh drawn in a year by `power_w` running `utilization` of the time."""
    return power_w * utilization * HOURS_PER_DAY * DAYS_PER_YEAR / 1000.0


@dataclass(frozen=True)
class Ownership:
    """Total cost of ownership of one build over `years`."""

    num_gpus: int
    gpu_price_usd: float
    host_price_usd: float
    purchase_usd: float
    power_w: float
    utilization: float
    electricity_price_usd_per_kwh: float
    years: float
    energy_kwh_per_year: float
    electricity_usd_per_year: float
    electricity_usd: float
    total_usd: float

    def to_dict(self) -> dict:
        return asdict(self)


def total_cost_of_ownership(
    gpu_price_usd: float,
    gpu_power_w: float,
    num_gpus: int = 1,
    host_price_usd: float = DEFAULT_HOST_PRICE_USD,
    host_power_w: float = DEFAULT_HOST_POWER_W,
    electricity_price_usd_per_kwh: float = DEFAULT_ELECTRICITY_PRICE_USD_PER_KWH,
    utilization: float = DEFAULT_UTILIZATION,
    years: float = DEFAULT_YEARS,
) -> Ownership:
    """Purchase (GPUs + host share, see `host_for`) + `years` of electricity for GPU TDP and host power."""
    check_positive("GPU price", gpu_price_usd)
    check_positive("GPU power", gpu_power_w)
    check_non_negative("host price", host_price_usd)
    check_non_negative("host power", host_power_w)
    check_positive("electricity price", electricity_price_usd_per_kwh)
    check_utilization(utilization)
    check_positive("years", years)
    if num_gpus < 1:
        raise BadInput(f"number of GPUs must be at least 1, got {num_gpus}")
    host_usd, host_w = host_for(num_gpus, host_price_usd, host_power_w)
    purchase = gpu_price_usd * num_gpus + host_usd
    power = gpu_power_w * num_gpus + host_w
    kwh = energy_kwh_per_year(power, utilization)
    per_year = kwh * electricity_price_usd_per_kwh
    owned = Ownership(
        num_gpus=num_gpus, gpu_price_usd=gpu_price_usd, host_price_usd=host_usd, purchase_usd=purchase,
        power_w=power, utilization=utilization, electricity_price_usd_per_kwh=electricity_price_usd_per_kwh,
        years=years, energy_kwh_per_year=kwh, electricity_usd_per_year=per_year,
        electricity_usd=per_year * years, total_usd=purchase + per_year * years,
    )
    check_finite_result("total cost of ownership", owned.to_dict())
    return owned


@dataclass(frozen=True)
class BreakEven:
    """Buying a desktop vs renting a cloud instance for the same hours."""

    system_price_usd: float
    power_w: float
    cloud_price_usd_per_hour: float
    utilization: float
    electricity_price_usd_per_kwh: float
    energy_kwh_per_year: float
    electricity_usd_per_year: float
    cloud_usd_per_day: float
    electricity_usd_per_day: float
    first_year_desktop_usd: float  # purchase + one year of electricity (the seed's "$2,270")
    break_even_days: float | None  # None: the cloud costs less per day than the electricity alone

    def desktop_cost_usd(self, days: float) -> float:
        """What the desktop has cost after `days` (purchase + electricity so far)."""
        return self.system_price_usd + self.electricity_usd_per_day * days

    def cloud_cost_usd(self, days: float) -> float:
        """What the cloud has cost after `days` at the same utilisation."""
        return self.cloud_usd_per_day * days

    def to_dict(self) -> dict:
        return asdict(self)


def cloud_break_even(
    system_price_usd: float,
    power_w: float,
    cloud_price_usd_per_hour: float,
    utilization: float = DEFAULT_UTILIZATION,
    electricity_price_usd_per_kwh: float = DEFAULT_ELECTRICITY_PRICE_USD_PER_KWH,
) -> BreakEven:
    """Days after which owning the desktop becomes cheaper than renting (seed 001's worked example)."""
    check_positive("system price", system_price_usd)
    check_positive("power", power_w)
    check_positive("cloud price per hour", cloud_price_usd_per_hour)
    check_utilization(utilization)
    check_positive("electricity price", electricity_price_usd_per_kwh)
    kwh = energy_kwh_per_year(power_w, utilization)
    per_year = kwh * electricity_price_usd_per_kwh
    per_day = per_year / DAYS_PER_YEAR
    cloud_per_day = cloud_price_usd_per_hour * utilization * HOURS_PER_DAY
    margin = cloud_per_day - per_day
    result = BreakEven(
        system_price_usd=system_price_usd, power_w=power_w, cloud_price_usd_per_hour=cloud_price_usd_per_hour,
        utilization=utilization, electricity_price_usd_per_kwh=electricity_price_usd_per_kwh,
        energy_kwh_per_year=kwh, electricity_usd_per_year=per_year, cloud_usd_per_day=cloud_per_day,
        electricity_usd_per_day=per_day, first_year_desktop_usd=system_price_usd + per_year,
        break_even_days=system_price_usd / margin if margin > 0 else None,
    )
    check_finite_result("break-even", result.to_dict())
    return result
