"""Why is this run slower than it should be? The analysis behind `dlbench doctor RUN_ID`.

`diagnose(doc)` takes a stored result document (schema v1) and returns, per measured configuration, how its
throughput compares with published results for the same GPU (`dlbench.reference`) and with the catalogue's
spec-based estimate (`dlbench.analysis.estimate`), plus the likely causes its telemetry shows (infer and generate results: `diagnose_inference`, decode against
its bandwidth roofline and the batch-1 latency tail): thermal or power
throttling, a reduced power limit, a narrow PCIe link, a GPU shared with another process, CPU-bound small
batches, compile off, mixed GPU models. In a data-parallel run each per-GPU cause names the GPU(s) it concerns
(`GPU 3 on nodeB (rank 11)`), and the hottest GPU is named. Advice quotes seed 001 (Tim Dettmers) where it
applies.

No torch here; the published results, GPU-name lookup and estimator are injectable so tests need no data files.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from dlbench.analysis.configuration import config_label
from dlbench.analysis.diagnose_inference import (
    DECODE_ROOFLINE_LOW,
    RATE_UNITS,
    published_inference_for,
    scenario_findings,
)
from dlbench.analysis.energy import (
    efficiency,
    gpu_label,
    gpus_of,
    is_group,
    is_throttled,
    rank0_only,
    throttle_kind,
    throttle_kind_shares,
    throttle_shares,
    usable,
)
from dlbench.schema.metrics import scenario, throughput, value

# A result within this fraction of its reference counts as "in line"; below it, causes are worth naming.
IN_LINE_TOLERANCE = 0.10
# Mean GPU utilisation below this during the measured steps means the GPU waited on the host.
LOW_UTILIZATION_PCT = 80.0
# AIME starts its benchmarks below 50 C (seed 000).
START_TEMPERATURE_LIMIT_C = 50.0
# In a data-parallel group, a GPU this much hotter than the coolest one is named even when it did not throttle
# (dlbench's choice: a few degrees is normal between a card's neighbours; 10 C is a cooling difference).
HOT_SPREAD_C = 10.0
# How many GPUs a group finding names before it says "and N more".
NAMED_GPUS = 4
PACE = "in data-parallel training the slowest GPU sets the pace"

ADVICE_COOLING = ("Seed 001: a GPU above about 80 C throttles itself, mostly when GPUs sit next to each other. Space "
                  "them (PCIe extenders gave 10-30 C lower temperatures) or use blower-style coolers; case design "
                  "changes only 1-3 C.")
ADVICE_POWER_LIMIT = ("Seed 001: power limits cost less than one expects (50 W below stock cost about 7% on an "
                      "RTX 2080 Ti in BERT-large), but published numbers use the default limit. Check with "
                      "`nvidia-smi -q -d POWER`; restore with `sudo nvidia-smi -pl <watts>`.")
ADVICE_PCIE = ("Seed 001: x8 or x4 links cost about 5-10% when 4 GPUs train together and little for 1-2 GPUs; "
               "with dlbench's synthetic data on the GPU a single-GPU run hardly uses the link.")
ADVICE_POWER_CAP = ("Normal for a GPU at full load near its limit; a lower-than-default limit or a power-brake "
                    "signal (PSU, cables) makes it worse.")
ADVICE_HARDWARE = ("Check power cables and the PSU's capacity, and cooling; seed 001 sizes a 4-GPU build's PSU at "
                   "the GPUs' total TDP plus the host.")


def _finding(cause: str, severity: str, message: str, advice: str | None = None) -> dict[str, Any]:
    return {"cause": cause, "severity": severity, "message": message, "advice": advice}


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def telemetry_findings(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Likely causes of lost throughput in one result, from its telemetry and its configuration."""
    tel = result.get("telemetry")
    out: list[dict[str, Any]] = []
    if not usable(tel):
        reason = (tel or {}).get("reason") or result.get("telemetry_reason") or "not recorded"
        out.append(_finding("no_telemetry", "info", f"no telemetry for this configuration ({reason}): power, "
                            "temperature and clock causes cannot be checked"))
    elif is_group(tel):
        out += group_findings(tel)
    else:
        shares = throttle_shares(tel)
        kinds = throttle_kind(tel)
        tmax = tel.get("temperature_max_c")
        if "thermal" in kinds:
            share = max(shares.get("sw_thermal_slowdown", 0.0), shares.get("hw_thermal_slowdown", 0.0))
            hot = f", up to {tmax:.0f} C" if tmax is not None else ""
            out.append(_finding("thermal_throttling", "warn",
                                f"thermal throttling: clocks held down by temperature in {_pct(share)} of the "
                                f"samples{hot}", ADVICE_COOLING))
        if "power" in kinds:
            share = max(shares.get("sw_power_cap", 0.0), shares.get("hw_power_brake_slowdown", 0.0))
            limit, mean = tel.get("power_limit_w"), tel.get("power_mean_w")
            detail = f" (mean {mean:.0f} W against a {limit:.0f} W limit)" if limit and mean else ""
            out.append(_finding("power_throttling", "warn" if share >= 0.5 else "info",
                                f"power throttling: the power cap held clocks down in {_pct(share)} of the "
                                f"samples{detail}",
                                ADVICE_POWER_CAP))
        if "hardware" in kinds:
            out.append(_finding("hardware_slowdown", "warn",
                                f"hardware slowdown in {_pct(shares.get('hw_slowdown', 0.0))} of the samples "
                                "(overheating, power brake or an external signal)",
                                ADVICE_HARDWARE))
        limit, default = tel.get("power_limit_w"), tel.get("default_power_limit_w")
        if limit and default and limit < default - 1.0:
            out.append(_finding("reduced_power_limit", "warn",
                                f"power limit {limit:.0f} W is below the default {default:.0f} W "
                                f"({_pct(1 - limit / default)} lower)", ADVICE_POWER_LIMIT))
        if _narrow_link(tel):
            gmin, wmin = tel.get("pcie_link_gen_min"), tel.get("pcie_link_width_min")
            gmax, wmax = tel.get("pcie_link_gen_max"), tel.get("pcie_link_width_max")
            multi = (result.get("world_size") or 1) > 1
            out.append(_finding("narrow_pcie_link", "warn" if multi else "info",
                                f"PCIe link ran at gen{gmin} x{wmin} during the measurement (the GPU supports "
                                f"gen{gmax} x{wmax})", ADVICE_PCIE))
        others = tel.get("other_processes") or []
        if others:
            out.append(_finding("shared_gpu", "warn",
                                f"{len(others)} other process(es) used the GPU during the measurement "
                                f"(pid {', '.join(str(p) for p in others[:5])})",
                                "A shared GPU gives slower, noisier numbers: benchmark on an idle GPU."))
    if usable(tel):
        util = tel.get("gpu_utilization_mean_pct")
        if util is not None and util < LOW_UTILIZATION_PCT:
            bs = result.get("batch_size")
            what = "the GPUs were" if is_group(tel) else "the GPU was"
            out.append(_finding("cpu_bound", "warn",
                                f"{what} busy only {util:.0f}% of the time (batch {bs}): the host could not "
                                "launch work fast enough",
                                "Use a larger batch (--batch-size auto finds the largest that fits) or "
                                "torch.compile (reduce-overhead uses CUDA graphs) to cut per-step launch cost."))
        names = tel.get("gpu_names") or []
        if len(names) > 1:
            out.append(_finding("mixed_gpu_models", "warn", "this configuration ran on different GPU models: "
                                + ", ".join(names), "In data-parallel training the slowest GPU sets the pace."))
    # The configuration's start temperature (before warm-up; warm-up itself heats the GPU, so the telemetry's
    # first reading is no guide).
    tstart = result.get("start_temperature_c")
    if tstart is not None and tstart > START_TEMPERATURE_LIMIT_C:
        out.append(_finding("hot_start", "info",
                            f"the configuration started at {tstart:.0f} C (the seeds' benchmarks start below "
                            f"{START_TEMPERATURE_LIMIT_C:.0f} C)",
                            "Let the GPU cool between configurations (dlbench run --max-start-temp)."))
    return out


def _names(parts: list[str], total: int) -> str:
    """The GPUs a finding concerns, one part each (`GPU 3 on a in 40% of its samples`), at most NAMED_GPUS of
    them and `and N more`, with `(k of N GPUs)` when several but not all GPUs are concerned."""
    shown = ", ".join(parts[:NAMED_GPUS]) + (f" and {len(parts) - NAMED_GPUS} more" if len(parts) > NAMED_GPUS
                                              else "")
    return shown + (f" ({len(parts)} of {total} GPUs)" if 1 < len(parts) < total else "")


_THROTTLE_KINDS = (  # kind (its NVML reasons: energy.throttle_kind_shares), cause, what held the clocks down
    ("thermal", "thermal_throttling", "temperature"),
    ("power", "power_throttling", "the power cap"),
    ("hardware", "hardware_slowdown", "a hardware slowdown"),
)


def group_findings(tel: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-GPU causes in a data-parallel group's telemetry, each naming the GPU(s) it concerns."""
    out: list[dict[str, Any]] = []
    gpus = gpus_of(tel)
    good = [g for g in gpus if usable(g)]
    for kind, cause, what in _THROTTLE_KINDS:
        hit = [(throttle_kind_shares(g)[kind], g) for g in good if kind in throttle_kind(g)]
        if not hit:
            continue
        hit.sort(key=lambda sg: -sg[0])
        parts = []
        for share, g in hit:
            tmax = g.get("temperature_max_c")
            parts.append(f"{gpu_label(g)} in {_pct(share)} of its samples"
                         + (f", up to {tmax:.0f} C" if kind == "thermal" and tmax is not None else ""))
        advice = {"thermal": ADVICE_COOLING, "power": ADVICE_POWER_CAP, "hardware": ADVICE_HARDWARE}[kind]
        severity = "warn" if kind != "power" or hit[0][0] >= 0.5 else "info"
        out.append(_finding(cause, severity, f"{kind} throttling ({what} held the clocks down) on "
                            f"{_names(parts, len(gpus))}; {PACE}", advice))
    hot = sorted((g for g in good if g.get("temperature_max_c") is not None), key=lambda g: g["temperature_max_c"])
    if len(hot) > 1 and hot[-1]["temperature_max_c"] - hot[0]["temperature_max_c"] >= HOT_SPREAD_C:
        top, low = hot[-1], hot[0]
        out.append(_finding("uneven_temperature", "info",
                            f"{gpu_label(top)} ran hottest, up to {top['temperature_max_c']:.0f} C, "
                            f"{top['temperature_max_c'] - low['temperature_max_c']:.0f} C above the coolest "
                            f"({gpu_label(low)}, {low['temperature_max_c']:.0f} C); {PACE}", ADVICE_COOLING))
    limited = [g for g in good if g.get("power_limit_w") and g.get("default_power_limit_w")
               and g["power_limit_w"] < g["default_power_limit_w"] - 1.0]
    if limited:
        parts = [f"{gpu_label(g)} ({g['power_limit_w']:.0f} W of {g['default_power_limit_w']:.0f} W)"
                 for g in limited]
        out.append(_finding("reduced_power_limit", "warn", "power limit below the default on "
                            + _names(parts, len(gpus)), ADVICE_POWER_LIMIT))
    narrow = [g for g in good if _narrow_link(g)]
    if narrow:
        parts = [f"{gpu_label(g)} (gen{g.get('pcie_link_gen_min')} x{g.get('pcie_link_width_min')} of "
                 f"gen{g.get('pcie_link_gen_max')} x{g.get('pcie_link_width_max')})" for g in narrow]
        out.append(_finding("narrow_pcie_link", "warn", "PCIe link below its maximum during the measurement on "
                            + _names(parts, len(gpus)), ADVICE_PCIE))
    shared = [g for g in good if g.get("other_processes")]
    if shared:
        parts = [f"{gpu_label(g)} (pid {', '.join(str(p) for p in g['other_processes'][:5])})" for g in shared]
        out.append(_finding("shared_gpu", "warn", "other processes used " + _names(parts, len(gpus)),
                            "A shared GPU gives slower, noisier numbers: benchmark on idle GPUs."))
    missing = [g for g in gpus if not usable(g)]
    if missing:
        parts = [f"{gpu_label(g)} ({g.get('reason') or 'not recorded'})" for g in missing]
        out.append(_finding("no_telemetry", "info", "no telemetry from " + _names(parts, len(gpus))
                            + ": the group's power and energy are not totalled"))
    return out


def _narrow_link(tel: dict[str, Any]) -> bool:
    wmin, wmax = tel.get("pcie_link_width_min"), tel.get("pcie_link_width_max")
    gmin, gmax = tel.get("pcie_link_gen_min"), tel.get("pcie_link_gen_max")
    return (wmin is not None and wmax is not None and wmin < wmax) or (
        gmin is not None and gmax is not None and gmin < gmax)


def hottest_gpu(tel: dict[str, Any] | None) -> dict[str, Any] | None:
    """The GPU of a group that reached the highest temperature (None for one GPU or without readings)."""
    hot = [g for g in gpus_of(tel) if usable(g) and g.get("temperature_max_c") is not None]
    return max(hot, key=lambda g: g["temperature_max_c"]) if hot else None


def _gpu_summary(g: dict[str, Any]) -> dict[str, Any]:
    """One GPU of a group in `doctor --json`: who it is and its headline figures."""
    out = {"gpu": gpu_label(g), "rank": g.get("rank"), "hostname": g.get("hostname"),
           "device_index": g.get("device_index"), "uuid": g.get("uuid"), "name": g.get("name")}
    if not usable(g):
        return {**out, "available": False, "reason": g.get("reason")}
    return {**out, "available": True, "power_mean_w": g.get("power_mean_w"),
            "temperature_max_c": g.get("temperature_max_c"), "sm_clock_mean_mhz": g.get("sm_clock_mean_mhz"),
            "throttle_share": g.get("throttle_share"), "throttled": is_throttled(g)}


def _canonical_default(name: str, memory_bytes: int | None = None) -> str | None:
    from dlbench import catalog

    # The memory tells apart cards that report the same name (RTX 4060 Ti 8 GB and 16 GB).
    return catalog.canonical_name(name, memory_bytes)


def _published_default() -> list[Any]:
    from dlbench.reference import load_published

    return list(load_published())


def _estimate_default(gpu: str, workload: str, precision: str, num_gpus: int) -> dict[str, Any] | None:
    from dlbench.analysis.estimate import estimate

    est = estimate(gpu, workload, precision, num_gpus=num_gpus, spec_only=True)
    if est.model_samples_per_s is None:
        return None
    return {"samples_per_s": est.model_samples_per_s, "low": est.model_low, "high": est.model_high,
            "basis": est.basis}


def _published_for(rows: list[Any], gpu: str, result: dict[str, Any]) -> dict[str, Any] | None:
    from dlbench.analysis.ranking import matching_published

    # The same like-for-like rule as the run table's "vs published" (workload, precision, sequence length,
    # GPU count; rows marked not comparable left out), restricted to this GPU.
    match = [r for r in matching_published(result.get("workload"), result.get("precision"), result.get("seq_len"),
                                           result.get("world_size") or 1, rows) if r.gpu == gpu]
    if not match:
        return None
    values = [r.samples_per_s for r in match]
    return {"samples_per_s": statistics.median(values), "low": min(values), "high": max(values),
            "count": len(match), "batch_sizes_per_gpu": sorted({r.batch_size_per_gpu for r in match
                                                                if r.batch_size_per_gpu}),
            "sources": sorted({r.source for r in match})}


def _not_comparable(result: dict[str, Any]) -> dict[str, Any] | None:
    """A finding when published and estimated GPU figures do not describe this result, else None.

    A tiny-flavour result (a few layers, small inputs: a smoke test) is not the full model; a result measured
    on the CPU of a GPU machine is not the GPU's.
    """
    if result.get("flavour") == "tiny":
        return _finding("tiny_flavour", "info", "tiny flavour (a few layers, small inputs): not comparable with "
                        "published or estimated figures for the full model",
                        "Measure the full model (the default flavour).")
    device = str(result.get("device") or "")
    if device and not device.startswith("cuda"):
        return _finding("not_on_gpu", "info", f"measured on {device}, not on the GPU: not comparable with GPU "
                        "figures")
    return None


def _verdict(ratio: float | None) -> str:
    if ratio is None:
        return "unknown"
    if ratio < 1 - IN_LINE_TOLERANCE:
        return "below"
    if ratio > 1 + IN_LINE_TOLERANCE:
        return "above"
    return "in line"


def diagnose(doc: dict[str, Any], *, published: list[Any] | None = None,
             canonical: Callable[[str], str | None] | None = None,
             estimate_fn: Callable[[str, str, str, int], dict[str, Any] | None] | None = None) -> dict[str, Any]:
    """Explain a result document; see the module docstring. Missing data sources become `notes`."""
    notes: list[str] = []
    env = doc.get("environment") or {}
    gpu_names = [g.get("name") for g in env.get("gpus") or [] if g.get("name")]
    findings: list[dict[str, Any]] = []
    distinct = sorted(set(gpu_names))
    if len(distinct) > 1:
        findings.append(_finding("mixed_gpu_models", "warn", "the machine has different GPU models: "
                                 + ", ".join(distinct),
                                 "In data-parallel training the slowest GPU sets the pace (seed 000); benchmark "
                                 "equal GPUs together (CUDA_VISIBLE_DEVICES)."))

    memory = next((g.get("memory_bytes") for g in env.get("gpus") or [] if g.get("name")), None)
    canonical_fn = canonical or (lambda name: _canonical_default(name, memory))
    gpu = None
    if gpu_names:
        try:
            gpu = canonical_fn(gpu_names[0])
        except Exception as exc:  # noqa: BLE001 - the catalogue may not be installed; say so
            notes.append(f"GPU catalogue unavailable ({type(exc).__name__}: {exc})")
        if gpu is None and not notes:
            notes.append(f"{gpu_names[0]!r} is not in the GPU catalogue: no published or estimated figures")
    else:
        notes.append("the run recorded no GPU: published and estimated figures apply to GPUs only")

    rows: list[Any] = []
    if gpu is not None:
        if published is not None:
            rows = published
        else:
            try:
                rows = _published_default()
            except Exception as exc:  # noqa: BLE001
                notes.append(f"published results unavailable ({type(exc).__name__}: {exc})")
    est_fn = estimate_fn or _estimate_default
    estimate_error_noted = False

    results_out = []
    for r in doc.get("results") or []:
        entry: dict[str, Any] = {"label": config_label(r), "workload": r.get("workload"), "precision": r.get("precision"),
                                 "compile": r.get("compile"), "batch_size": r.get("batch_size"),
                                 "seq_len": r.get("seq_len"), "world_size": r.get("world_size") or 1,
                                 "status": r.get("status"), "samples_per_s": throughput(r),
                                 "unit": r.get("unit")}
        if r.get("status") != "ok" or not throughput(r):
            entry.update(verdict="not measured", findings=[], published=None, estimate=None)
            results_out.append(entry)
            continue
        sps = throughput(r)
        unlike = _not_comparable(r)
        inference = scenario(r) != "train"  # infer, generate: published inference figures, no training estimate
        if inference:
            entry.update(scenario=scenario(r), rate_unit=RATE_UNITS.get(scenario(r)))
            pub = published_inference_for(r, gpu) if gpu and not unlike else None
        else:
            pub = _published_for(rows, gpu, r) if gpu and not unlike else None
        est = None
        if gpu is not None and not unlike and not inference:
            try:
                est = est_fn(gpu, r.get("workload"), r.get("precision"), entry["world_size"])
            except Exception as exc:  # noqa: BLE001 - estimator missing or no model for this case
                if not estimate_error_noted:
                    notes.append(f"spec-based estimate unavailable ({type(exc).__name__}: {exc})")
                    estimate_error_noted = True
        if pub:
            pub["ratio"] = sps / pub["samples_per_s"]
        if est and est.get("samples_per_s"):
            est["ratio"] = sps / est["samples_per_s"]
        reference = pub or est
        entry.update(published=pub, estimate=est, ratio=reference["ratio"] if reference else None,
                     compared_with="published" if pub else ("estimate" if est else None))
        roofline = value(r, "bandwidth_fraction")
        if inference and reference is None and roofline is not None and not unlike:
            # No published figure for this GPU: decode is judged against its bandwidth roofline instead.
            entry.update(ratio=roofline, compared_with="roofline")
            entry["verdict"] = "below" if roofline < DECODE_ROOFLINE_LOW else "in line"
        else:
            entry["verdict"] = _verdict(entry["ratio"])
        entry["findings"] = telemetry_findings(r)
        if inference:  # the latency tail and the roofline share say something on any device, tiny or not
            entry["findings"] += scenario_findings(r, gpu)
        if unlike:
            entry["findings"].insert(0, unlike)
        if r.get("compile") == "off" and entry["verdict"] == "below":
            entry["findings"].append(_finding(
                "compile_off", "info", "eager mode (compile off)",
                "torch.compile often adds throughput (seed 003: PyTorch 2 benchmarks); measure it with "
                "--compile default."))
        tel = r.get("telemetry")
        if usable(tel):
            eff = efficiency(tel, sps, world_size=entry["world_size"])
            entry["telemetry"] = {"power_mean_w": eff["average_power_w"], "samples_per_s_per_w":
                                  eff["samples_per_s_per_w"], "temperature_max_c": tel.get("temperature_max_c"),
                                  "sm_clock_mean_mhz": tel.get("sm_clock_mean_mhz"),
                                  "throttle_share": tel.get("throttle_share"), "throttled": is_throttled(tel)}
            if rank0_only(tel, entry["world_size"]):  # an older document: the figures are one GPU's of the group
                entry["telemetry"]["rank0_only"] = True
            if is_group(tel):
                hottest = hottest_gpu(tel)
                entry["telemetry"].update(num_gpus=tel.get("num_gpus"),
                                          hottest_gpu=gpu_label(hottest) if hottest else None,
                                          per_gpu=[_gpu_summary(g) for g in gpus_of(tel)])
        results_out.append(entry)

    _compare_compile(results_out)
    return {"run_id": doc.get("run_id"), "created_at": doc.get("created_at"), "gpus": gpu_names, "gpu": gpu,
            "findings": findings, "results": results_out, "notes": notes}


def _compare_compile(entries: list[dict[str, Any]]) -> None:
    """Where the run measured both eager and compiled, state the measured gain on the eager result."""
    best: dict[tuple, float] = {}
    for e in entries:
        if e.get("compile") not in (None, "off") and e.get("samples_per_s"):
            key = (e["workload"], e["precision"], e["batch_size"], e["world_size"])
            best[key] = max(best.get(key, 0.0), e["samples_per_s"])
    for e in entries:
        key = (e["workload"], e["precision"], e["batch_size"], e["world_size"])
        if e.get("compile") != "off" or key not in best or not e.get("samples_per_s"):
            continue
        gain = best[key] / e["samples_per_s"] - 1
        e["findings"] = [f for f in e.get("findings", []) if f["cause"] != "compile_off"]
        if gain > IN_LINE_TOLERANCE:
            e["findings"].append(_finding("compile_off", "warn",
                                          f"eager mode: the compiled run of this configuration was {gain:+.0%} faster",
                                          "Use --compile default for this workload."))


def likely_causes(diagnosis: dict[str, Any]) -> list[str]:
    """Distinct `warn` causes across the run (handy for tests and one-line summaries)."""
    causes = [f["cause"] for f in diagnosis.get("findings", []) if f["severity"] == "warn"]
    for e in diagnosis.get("results", []):
        causes += [f["cause"] for f in e.get("findings", []) if f["severity"] == "warn"]
    return sorted(set(causes))
