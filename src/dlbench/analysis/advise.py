"""Which GPU(s) to buy, ranked by performance per dollar of total cost of ownership: `dlbench advise --workload bert-large-squad --max-gpus 2`.

For every catalogue GPU with a price (optionally filtered by budget, form factor and memory), and for builds of
1..max_gpus of that same GPU (never mixed: seed 000, "the slowest GPU will be the bottleneck for which all GPUs
have to wait for"), it takes the training throughput (measured by you, published, or estimated by
`analysis.estimate`, and says which), the total cost of ownership (`analysis.cost`: GPUs + host share +
electricity over N years at a utilisation) and ranks by samples/s per 1,000 USD of that cost, as Tim Dettmers'
performance-per-dollar chart does (seed 001). Two cheaper GPUs and one faster GPU appear side by side.

Memory: data-parallel training keeps a whole copy of the model on every GPU, so a memory need applies per GPU.
Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from dlbench.analysis import cost as costs
from dlbench.analysis import estimate as est
from dlbench.analysis.memory import GIB, MemoryNeed, rules_of_thumb, training_memory
from dlbench.errors import BadInput

FORM_FACTORS = ("workstation", "server")
DEFAULT_WORKLOAD = "bert-large-squad"
DEFAULT_PRECISION = "amp-fp16"
DEFAULT_MAX_GPUS = 2
MAX_GPUS_LIMIT = est.MAX_GPUS


@dataclass(frozen=True)
class Option:
    """One build: `num_gpus` x `gpu`, with where every figure comes from."""

    rank: int
    gpu: str
    num_gpus: int
    samples_per_s: float
    samples_per_s_low: float
    samples_per_s_high: float
    throughput_kind: str  # measured | published | estimated
    throughput_basis: str
    memory_bytes_per_gpu: int | None
    price_usd_per_gpu: float
    price_date: str | None
    purchase_usd: float
    gpu_power_w: float
    total_cost_usd: float
    samples_per_s_per_kusd: float
    samples_per_s_per_w: float
    form_factor: str | None
    reason: str
    ownership: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Advice:
    workload: str
    precision: str
    options: list[Option]
    excluded: list[dict]
    memory_need: MemoryNeed | None
    min_memory_bytes: float | None
    rules_of_thumb: list[dict]
    assumptions: dict
    notes: list[str]

    def to_dict(self) -> dict:
        return {
            "workload": self.workload, "precision": self.precision,
            "unit": est.WORKLOAD_UNITS.get(self.workload, "sequences"),
            "options": [o.to_dict() for o in self.options], "excluded": self.excluded,
            "memory_need": self.memory_need.to_dict() if self.memory_need else None,
            "min_memory_bytes": self.min_memory_bytes, "rules_of_thumb": self.rules_of_thumb,
            "assumptions": self.assumptions, "notes": self.notes,
        }


def _form_factors(spec) -> str | None:
    for attr in ("suitable_for", "form_factor"):
        v = getattr(spec, attr, None)
        if v:
            return v if isinstance(v, str) else ",".join(v)
    return None


def _price(spec) -> tuple[float | None, str | None]:
    return getattr(spec, "price_usd", None), getattr(spec, "price_date", None)


def _reason(o: dict, single: dict | None, need_bytes: float | None) -> str:
    """One line: where the throughput comes from, what the extra GPUs buy, the memory headroom."""
    kind = o["throughput_kind"]
    if kind == "estimated":
        src = "estimated from specs"
        if o["num_gpus"] > 1 and not o["throughput_basis"].startswith("model"):
            src = "1-GPU result scaled by the seeds' factor"
    else:
        src = f"{kind} result"
    parts = [src]
    parts += [n for n in o.get("notes", ()) if n.startswith("calibrated on other vendors")][:1]
    if single is not None and o["num_gpus"] > 1:
        parts.append(f"{o['samples_per_s'] / single['samples_per_s']:.2f}x the speed of one for "
                     f"{o['total_cost_usd'] / single['total_cost_usd']:.2f}x the cost")
    sc = o["figures"].get("scaling")
    if sc and o["num_gpus"] > 1:
        assumed = " (assumed from a similar GPU)" if "assumed" in sc["source"] or "no seed" in sc["source"] else ""
        parts.append(f"{sc['low']:.2f}-{sc['high']:.2f} per added GPU{assumed}")
    mem = o["memory_bytes_per_gpu"]
    if mem:
        if need_bytes:
            parts.append(f"{mem / GIB:.0f} GB per GPU for {need_bytes / GIB:.1f} GB needed")
        else:
            parts.append(f"{mem / GIB:.0f} GB per GPU")
    return "; ".join(parts)


def advise(
    workload: str = DEFAULT_WORKLOAD,
    precision: str = DEFAULT_PRECISION,
    min_memory_gb: float | None = None,
    model_params: float | None = None,
    budget_usd: float | None = None,
    form_factor: str | None = None,
    max_gpus: int = DEFAULT_MAX_GPUS,
    electricity_price_usd_per_kwh: float = costs.DEFAULT_ELECTRICITY_PRICE_USD_PER_KWH,
    utilization: float = costs.DEFAULT_UTILIZATION,
    years: float = costs.DEFAULT_YEARS,
    host_price_usd: float = costs.DEFAULT_HOST_PRICE_USD,
    host_power_w: float = costs.DEFAULT_HOST_POWER_W,
    extra_points: Sequence[est.Point] = (),
) -> Advice:
    """Rank builds of 1..`max_gpus` identical GPUs by samples/s per 1,000 USD of total cost of ownership."""
    from dlbench import catalog

    workload = est.check_workload(workload)
    precision = est.check_precision(precision)
    costs.check_positive("electricity price", electricity_price_usd_per_kwh)
    costs.check_utilization(utilization)
    costs.check_positive("years", years)
    costs.check_positive("budget", budget_usd)
    costs.check_non_negative("host price", host_price_usd)
    costs.check_non_negative("host power", host_power_w)
    if min_memory_gb is not None and model_params is not None:
        raise BadInput("give either --min-memory-gb or --model-params, not both")
    costs.check_positive("minimum memory", min_memory_gb)
    if form_factor is not None and form_factor not in FORM_FACTORS:
        raise BadInput(f"unknown form factor {form_factor!r} (known: {', '.join(FORM_FACTORS)})")
    if not 1 <= max_gpus <= MAX_GPUS_LIMIT:
        raise BadInput(f"--max-gpus must be between 1 and {MAX_GPUS_LIMIT}, got {max_gpus}")

    model = est.get_model(extra_points)
    key = (workload, est.CALIBRATION_PRECISION.get(precision, precision))
    if model is None or key not in model.keys:
        raise BadInput(f"no published or measured {workload} {precision} results to rank GPUs by: measure one "
                       f"GPU with `dlbench run`, or choose another workload or precision")
    need = training_memory(model_params, precision) if model_params is not None else None
    need_bytes = need.total_bytes if need else (min_memory_gb * GIB if min_memory_gb else None)

    candidates: list[dict] = []
    excluded: list[dict] = []
    for spec in catalog.all_gpus():
        name = est.gpu_name(spec)
        ff = _form_factors(spec)
        if form_factor and ff and form_factor not in ff:
            continue
        if form_factor and not ff:
            excluded.append({"gpu": name, "reason": "form factor unknown in the catalogue"})
            continue
        mem = getattr(spec, "memory_bytes", None)
        if need_bytes and (mem is None or mem < need_bytes):
            continue
        price, price_date = _price(spec)
        tdp = getattr(spec, "tdp_w", None)
        if not price:
            excluded.append({"gpu": name, "reason": "no price in the catalogue"})
            continue
        if not tdp:
            excluded.append({"gpu": name, "reason": "no TDP in the catalogue"})
            continue
        single = None
        for n in range(1, max_gpus + 1):
            own = costs.total_cost_of_ownership(
                price, tdp, n, host_price_usd, host_power_w, electricity_price_usd_per_kwh, utilization, years)
            if budget_usd is not None and own.purchase_usd > budget_usd:
                break
            e = est.estimate(name, workload, precision, num_gpus=n, extra_points=extra_points)
            if e.samples_per_s is None:
                excluded.append({"gpu": name, "reason": e.basis})
                break
            o = {
                "gpu": name, "num_gpus": n, "samples_per_s": e.samples_per_s,
                "samples_per_s_low": e.low if e.low is not None else e.samples_per_s,
                "samples_per_s_high": e.high if e.high is not None else e.samples_per_s,
                "throughput_kind": e.kind, "throughput_basis": e.basis, "memory_bytes_per_gpu": mem,
                "price_usd_per_gpu": price, "price_date": price_date, "purchase_usd": own.purchase_usd,
                "gpu_power_w": tdp * n, "total_cost_usd": own.total_usd,
                "samples_per_s_per_kusd": e.samples_per_s / own.total_usd * 1000.0,
                "samples_per_s_per_w": e.samples_per_s / (tdp * n), "form_factor": ff,
                "ownership": own.to_dict(),
                "figures": {"throughput": e.kind, "price": f"catalogue: {getattr(spec, 'price_kind', None) or 'price'} "
                                     f"({price_date or 'date unknown'})",
                            "memory": "catalogue", "power": "catalogue TDP", "scaling": e.scaling},
            }
            o["reason"] = _reason({**o, "notes": e.notes}, single, need_bytes)
            if n == 1:
                single = o
            candidates.append(o)

    candidates.sort(key=lambda o: (-o["samples_per_s_per_kusd"], -o["samples_per_s"]))
    options = [Option(rank=i + 1, **o) for i, o in enumerate(candidates)]
    notes = []
    if options:
        best = options[0]
        notes.append(f"best performance per dollar: {best.num_gpus}x {best.gpu}")
        singles = [o for o in options if o.num_gpus == 1]
        if best.num_gpus > 1 and singles:
            notes.append(f"best single GPU: {singles[0].gpu} (rank {singles[0].rank})")
        fastest = max(options, key=lambda o: o.samples_per_s)
        notes.append(f"fastest within the filters: {fastest.num_gpus}x {fastest.gpu} "
                     f"({fastest.samples_per_s:,.0f} samples/s)")
    assumptions = {
        "years": years, "utilization": utilization,
        "electricity_price_usd_per_kwh": electricity_price_usd_per_kwh,
        "host_price_usd": host_price_usd, "host_power_w": host_power_w,
        "host_gpus": costs.GPUS_PER_DEFAULT_HOST, "max_gpus": max_gpus, "budget_usd": budget_usd,
        "budget_applies_to": "purchase (GPUs + host)", "form_factor": form_factor,
        "perf_per_w": "samples/s per W of GPU TDP",
        "sources": "defaults: seed 001 (5 years, 15% utilisation, 0.175 USD/kWh; 100 W, ~700 USD host)",
    }
    return Advice(
        workload=workload, precision=precision, options=options, excluded=excluded, memory_need=need,
        min_memory_bytes=need_bytes, rules_of_thumb=rules_of_thumb() if need_bytes is None else [],
        assumptions=assumptions, notes=notes,
    )
