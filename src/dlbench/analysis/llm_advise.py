"""Which GPUs to buy (or rent) for an LLM: `dlbench advise --llm llama-3.1-8b --task serve --context 8192 --users 4 --min-tokens-per-s 20 --budget 2000`.

serve: for every priced catalogue GPU and 1, 2, 4 or 8 of it (tensor parallel), the fewest cards that hold the
    weights and the KV cache of `users` sequences at `context` tokens (`analysis.fit.memory_needed`) and decode
    at least `min_tokens_per_s` per user (`analysis.llm_estimate`, batch = users). Ranked by cost per million
    generated tokens: 5-year cost of ownership (`analysis.cost`) / tokens generated in the hours in use
    (aggregate decode tokens/s x 3,600 x 8,760 x years x utilisation).
lora, qlora, full-finetune: the fewest cards of each GPU that hold the training state (`analysis.fit.gpus_that_hold`),
    ranked by cost per fine-tuning hour (cost of ownership / hours in use), with a rough training speed: tokens/s
    = the prefill rate / 3 (backward costs twice the forward; QLoRA's dequantization and LoRA's small matrices
    are not modelled, so read it as an upper bound).
cloud: with a rental price per GPU-hour, each build's cloud cost for the same work and the days of use after which
    buying is cheaper (`analysis.cost.cloud_break_even`).
`builds` ("RTX PRO 6000", "2x RTX 5090") compares named builds instead of searching the catalogue.
Nothing here imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from dlbench.analysis import cost as costs
from dlbench.errors import BadInput

TASKS = ("serve", "lora", "qlora", "full-finetune")
PRECISIONS = ("bf16", "fp16", "int8", "int4")  # what both the memory fit and the speed estimate know
GPU_COUNTS = (1, 2, 4, 8)
SECONDS_PER_YEAR = 3600.0 * costs.HOURS_PER_DAY * costs.DAYS_PER_YEAR
TRAIN_FLOPS_FACTOR = 3.0  # forward + backward (twice the forward) per token


@dataclass(frozen=True)
class LlmOption:
    """One build for the LLM task, every figure with where it came from."""

    rank: int
    gpu: str
    num_gpus: int
    fits: bool
    memory_per_gpu_bytes: float
    need_per_gpu_bytes: float
    tokens_per_s: float | None  # serve: aggregate decode; fine-tuning: training tokens/s (rough)
    tokens_per_s_per_user: float | None
    tokens_per_s_low: float | None
    meets_speed: bool
    purchase_usd: float
    total_cost_usd: float
    usd_per_hour: float  # cost of ownership per hour in use
    usd_per_million_tokens: float | None
    cloud_usd_per_million_tokens: float | None
    cloud_break_even_days: float | None
    basis: str
    ownership: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LlmAdvice:
    model: str
    task: str
    precision: str
    context: int
    users: int
    min_tokens_per_s: float | None
    budget_usd: float | None
    memory: dict
    options: list[LlmOption]
    excluded: list[dict]
    assumptions: dict
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["options"] = [o.to_dict() for o in self.options]
        return out


def parse_build(text: str) -> tuple[int, str]:
    """"2x RTX 5090" -> (2, "RTX 5090"); "RTX PRO 6000" -> (1, ...). The name must be in the catalogue."""
    from dlbench.catalog import resolve

    m = re.match(r"^\s*(\d+)\s*[x×*]\s*(.+)$", text)
    n, name = (int(m.group(1)), m.group(2)) if m else (1, text)
    if n not in GPU_COUNTS:
        raise BadInput(f"build {text!r}: 1, 2, 4 or 8 GPUs, got {n}")
    return n, resolve(name).name


def _check(task: str, precision: str, users: int, context: int, min_tps: float | None) -> None:
    if task not in TASKS:
        raise BadInput(f"unknown task {task!r}; expected one of: {', '.join(TASKS)}")
    if precision not in PRECISIONS:
        raise BadInput(f"unknown precision {precision!r} for --llm; expected one of: {', '.join(PRECISIONS)}")
    if users < 1 or context < 1:
        raise BadInput(f"--users and --context must be at least 1, got {users} and {context}")
    if min_tps is not None and min_tps <= 0:
        raise BadInput(f"--min-tokens-per-s must be positive, got {min_tps}")


def advise_llm(model: str, task: str = "serve", precision: str | None = None, context: int = 4096, users: int = 1,
               min_tokens_per_s: float | None = None, budget_usd: float | None = None,
               builds: Sequence[str] = (), max_gpus: int = 8, cloud_usd_per_gpu_hour: float | None = None,
               electricity_price_usd_per_kwh: float = costs.DEFAULT_ELECTRICITY_PRICE_USD_PER_KWH,
               utilization: float = costs.DEFAULT_UTILIZATION, years: float = costs.DEFAULT_YEARS,
               host_price_usd: float = costs.DEFAULT_HOST_PRICE_USD,
               host_power_w: float = costs.DEFAULT_HOST_POWER_W) -> LlmAdvice:
    """Builds for serving or fine-tuning `model`, cheapest per million tokens (serve) or per hour (fine-tuning)."""
    from dlbench import catalog
    from dlbench.analysis.fit import fit_on, memory_needed
    from dlbench.analysis.llm_estimate import estimate_generate
    from dlbench.catalog.models import get_model

    shape = get_model(model)
    precision = precision or "bf16"
    _check(task, precision, users, context, min_tokens_per_s)
    costs.check_positive("budget", budget_usd)
    costs.check_positive("cloud price per GPU-hour", cloud_usd_per_gpu_hour)
    costs.check_utilization(utilization)
    costs.check_positive("years", years)
    if max_gpus not in GPU_COUNTS:
        raise BadInput(f"--max-gpus for --llm must be 1, 2, 4 or 8, got {max_gpus}")
    mem_precision = "bf16" if task == "qlora" and precision == "int4" else precision
    need = memory_needed(shape, mode=task, precision=mem_precision, context=context,
                         batch=users if task == "serve" else 1)
    named = [parse_build(b) for b in builds]
    if named:
        plan = [(catalog.lookup(name), (n,)) for n, name in named]
    else:
        plan = [(spec, tuple(c for c in GPU_COUNTS if c <= max_gpus)) for spec in catalog.all_gpus()]

    hours_in_use = costs.HOURS_PER_DAY * costs.DAYS_PER_YEAR * years * utilization
    options: list[dict] = []
    excluded: list[dict] = []
    for spec, counts in plan:
        if not spec.price_usd or not spec.tdp_w or not spec.memory_bytes:
            excluded.append({"gpu": spec.name, "reason": "no price, TDP or memory size in the catalogue"})
            continue
        n, _, _ = fit_on(need, spec.memory_bytes, counts)
        fits = n is not None
        if not fits:
            if named:  # a named build is shown even when it does not hold the model, with why
                n = counts[0]
            else:
                excluded.append({"gpu": spec.name, "reason": f"does not hold {need.total_bytes / 2**30:,.1f} GiB on "
                                 f"{max(counts)} GPU(s)"})
                continue
        chosen = None
        for count in [c for c in counts if c >= n]:
            own = costs.total_cost_of_ownership(spec.price_usd, spec.tdp_w, count, host_price_usd, host_power_w,
                                                electricity_price_usd_per_kwh, utilization, years)
            if budget_usd is not None and own.purchase_usd > budget_usd and not named:
                break
            if count > n and not need.splits_over(count):
                continue
            try:
                if task == "serve":
                    e = estimate_generate(shape.name, precision, spec.name, batch=users, context=context,
                                          num_gpus=count)
                else:
                    e = estimate_generate(shape.name, "bf16" if precision == "int4" else precision, spec.name,
                                          batch=1, context=context, num_gpus=count)
            except BadInput as err:
                excluded.append({"gpu": spec.name, "reason": err.message})
                break
            if task == "serve":
                rate = e.decode.tokens_per_s if e.decode else None
                low = e.decode.low if e.decode else None
                per_user = rate / users if rate else None
                basis = (f"decode at batch {users}, context {context:,}: "
                         + (e.decode.calibrated_on if e.decode else "no estimate"))
            else:
                rate = e.prefill.tokens_per_s / TRAIN_FLOPS_FACTOR if e.prefill else None
                low = e.prefill.low / TRAIN_FLOPS_FACTOR if e.prefill else None
                per_user = None
                basis = ("training tokens/s = prefill rate / 3 (rough upper bound): "
                         + (e.prefill.calibrated_on if e.prefill else "no estimate"))
            basis += "".join(f"; {n}" for n in e.notes if n.startswith("calibrated on NVIDIA"))
            meets = (min_tokens_per_s is None or task != "serve"
                     or (per_user is not None and per_user >= min_tokens_per_s))
            chosen = (count, own, rate, per_user, low, meets, basis)
            if meets or named:
                break
        if chosen is None:
            excluded.append({"gpu": spec.name, "reason": "over the budget at the count that holds the model"})
            continue
        count, own, rate, per_user, low, meets, basis = chosen
        if not meets and not named:
            excluded.append({"gpu": spec.name, "reason": f"{per_user or 0:,.1f} tokens/s per user at {count} GPU(s),"
                             f" under {min_tokens_per_s:g}"})
            continue
        per_hour = own.total_usd / hours_in_use
        per_m = per_hour / (rate * 3600) * 1e6 if rate else None
        cloud_per_m = breakeven = None
        if cloud_usd_per_gpu_hour is not None:
            cloud_hour = cloud_usd_per_gpu_hour * count
            cloud_per_m = cloud_hour / (rate * 3600) * 1e6 if rate else None
            be = costs.cloud_break_even(own.purchase_usd, own.power_w, cloud_hour, utilization,
                                        electricity_price_usd_per_kwh)
            breakeven = be.break_even_days
        options.append({"gpu": spec.name, "num_gpus": count, "fits": fits,
                        "memory_per_gpu_bytes": float(spec.memory_bytes),
                        "need_per_gpu_bytes": need.per_gpu_bytes(count), "tokens_per_s": rate,
                        "tokens_per_s_per_user": per_user, "tokens_per_s_low": low, "meets_speed": meets,
                        "purchase_usd": own.purchase_usd, "total_cost_usd": own.total_usd, "usd_per_hour": per_hour,
                        "usd_per_million_tokens": per_m, "cloud_usd_per_million_tokens": cloud_per_m,
                        "cloud_break_even_days": breakeven, "basis": basis, "ownership": own.to_dict()})

    if task == "serve":
        options.sort(key=lambda o: (not o["fits"], not o["meets_speed"], o["usd_per_million_tokens"] is None,
                                    o["usd_per_million_tokens"] or 0.0))
    else:
        options.sort(key=lambda o: (not o["fits"], o["usd_per_hour"]))
    ranked = [LlmOption(rank=i + 1, **o) for i, o in enumerate(options)]
    notes = []
    if ranked and ranked[0].fits:
        best = ranked[0]
        what = (f"{best.usd_per_million_tokens:,.2f} USD per million tokens" if task == "serve"
                and best.usd_per_million_tokens else f"{best.usd_per_hour:,.2f} USD per hour in use")
        notes.append(f"cheapest: {best.num_gpus}x {best.gpu} ({what})")
    if task == "serve":
        notes.append("tokens/s are estimates (analysis/llm_estimate.py): decode at batch = users is an "
                     "extrapolation from batch-1 rows; cost per million tokens assumes the build generates at that "
                     "rate for every hour in use")
    else:
        notes.append("fine-tuning speed is a rough upper bound (prefill rate / 3); the ranking is by cost per hour "
                     "of the cheapest build that holds the training state")
    memory = {"total_bytes": need.total_bytes, "terms": [t.to_dict() for t in need.terms],
              "mode": need.mode, "precision": need.precision}
    assumptions = {"years": years, "utilization": utilization, "hours_in_use": hours_in_use,
                   "electricity_price_usd_per_kwh": electricity_price_usd_per_kwh,
                   "host_price_usd": host_price_usd, "host_power_w": host_power_w,
                   "cloud_usd_per_gpu_hour": cloud_usd_per_gpu_hour, "max_gpus": max_gpus,
                   "budget_applies_to": "purchase (GPUs + host)",
                   "sources": "defaults: seed 001 (5 years, 15% utilisation, 0.175 USD/kWh; 100 W, ~700 USD host)"}
    return LlmAdvice(model=shape.name, task=task, precision=precision, context=context, users=users,
                     min_tokens_per_s=min_tokens_per_s, budget_usd=budget_usd, memory=memory, options=ranked,
                     excluded=excluded, assumptions=assumptions, notes=notes)
