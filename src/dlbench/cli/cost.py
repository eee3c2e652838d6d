"""`dlbench cost --gpu "RTX 3090" --cloud-price-per-hour 2.14 --system-price 2200 --electricity-price 0.12`.

Buying vs renting: the day on which a desktop with this GPU becomes cheaper than a cloud instance used for the
same hours, the yearly electricity cost and the total cost of ownership (analysis/cost.py has the formulas).
"""

from __future__ import annotations

import typer

from dlbench.cli._common import console, json_option, print_json


def register(app: typer.Typer) -> None:
    """Add `dlbench cost` to `app`."""
    from dlbench.analysis import cost as costs

    @app.command("cost")
    def cost_command(
        gpu: str = typer.Option(..., "--gpu", help="GPU name as in `dlbench gpus` (its TDP and price are used)."),
        cloud_price_per_hour: float = typer.Option(
            ..., "--cloud-price-per-hour", help="Price of the comparable cloud instance in USD per hour."),
        system_price: float | None = typer.Option(
            None, "--system-price",
            help=f"Price of the whole desktop in USD. Default: the GPU's catalogue price + "
                 f"{costs.DEFAULT_HOST_PRICE_USD:.0f} USD host (seed 001's 2-GPU barebone)."),
        host_power_w: float = typer.Option(
            costs.DEFAULT_HOST_POWER_W, "--host-power-w", help="Power of the rest of the system (CPU, board) in W."),
        electricity_price: float = typer.Option(
            costs.DEFAULT_ELECTRICITY_PRICE_USD_PER_KWH, "--electricity-price",
            help="Electricity price in USD per kWh (seed 001: 0.175)."),
        utilization: float = typer.Option(
            costs.DEFAULT_UTILIZATION, "--utilization",
            help="Fraction of the time the GPU is busy, in (0, 1] (seed 001: 0.15; PhD desktop < 0.15, "
                 "company cluster > 0.60)."),
        years: float = typer.Option(costs.DEFAULT_YEARS, "--years", help="Years of ownership for the total cost."),
        as_json: bool = json_option(),
    ) -> None:
        """Break-even days between buying a desktop and renting a cloud GPU; electricity and total cost."""
        from dlbench.analysis.estimate import gpu_name
        from dlbench.catalog import resolve

        costs.check_positive("--cloud-price-per-hour", cloud_price_per_hour)
        costs.check_positive("--system-price", system_price)
        costs.check_non_negative("--host-power-w", host_power_w)
        costs.check_positive("--electricity-price", electricity_price)
        costs.check_utilization(utilization)
        costs.check_positive("--years", years)
        spec = resolve(gpu)
        name = gpu_name(spec)
        tdp = getattr(spec, "tdp_w", None)
        if not tdp:
            from dlbench.errors import BadInput

            raise BadInput(f"the catalogue has no TDP for {name}: cannot compute its electricity")
        gpu_price = getattr(spec, "price_usd", None)
        if system_price is None:
            if not gpu_price:
                from dlbench.errors import BadInput

                raise BadInput(f"the catalogue has no price for {name}: pass --system-price USD")
            system_price = gpu_price + costs.DEFAULT_HOST_PRICE_USD
            price_note = (f"{gpu_price:,.0f} USD GPU ({getattr(spec, 'price_date', None) or 'date unknown'}) + "
                          f"{costs.DEFAULT_HOST_PRICE_USD:,.0f} USD host")
        else:
            price_note = "--system-price"
        power = tdp + host_power_w
        be = costs.cloud_break_even(system_price, power, cloud_price_per_hour, utilization, electricity_price)
        # TCO of the desktop as priced here: the system price already includes its host.
        kwh = be.energy_kwh_per_year
        tco = system_price + be.electricity_usd_per_year * years
        cloud_total = be.cloud_usd_per_day * costs.DAYS_PER_YEAR * years
        costs.check_finite_result("total cost", {"total_cost_of_ownership_usd": tco, "cloud_cost_usd": cloud_total})
        if as_json:
            out = be.to_dict()
            out.update({"gpu": name, "gpu_tdp_w": tdp, "host_power_w": host_power_w, "system_price_source": price_note,
                        "years": years, "total_cost_of_ownership_usd": tco, "cloud_cost_usd": cloud_total})
            print_json(out)
            return
        from rich.table import Table

        table = Table(title=f"{name}: desktop vs cloud at {utilization:.0%} utilisation", show_header=False)
        table.add_column("", style="bold")
        table.add_column("")
        table.add_row("desktop price", f"{system_price:,.0f} USD ({price_note})")
        table.add_row("power", f"{tdp:.0f} W GPU (TDP) + {host_power_w:.0f} W host")
        table.add_row("electricity per year", f"{kwh:,.0f} kWh = {be.electricity_usd_per_year:,.0f} USD "
                                              f"at {electricity_price:.3f} USD/kWh")
        table.add_row("cloud per day used", f"{be.cloud_usd_per_day:,.2f} USD "
                                            f"({cloud_price_per_hour:.2f} USD/h x {utilization:.0%} x 24 h)")
        if be.break_even_days is None:
            table.add_row("break-even", "never: the cloud costs less per day than the desktop's electricity")
        else:
            d = be.break_even_days
            table.add_row("break-even", f"[bold green]{d:,.0f} days[/] ({d / costs.DAYS_PER_YEAR:.1f} years): "
                                        f"buy if you will train for longer")
        table.add_row(f"total cost over {years:g} years", f"desktop {tco:,.0f} USD vs cloud {cloud_total:,.0f} USD")
        console().print(table)
