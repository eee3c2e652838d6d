"""Which nodes of a fleet are slower than their peers, and why: the analysis behind `dlbench fleet`.

    dlbench fleet                              # every stored run: one table per configuration, exit 1 if a node is slow
    dlbench fleet --since 1d --host 'node*'    # the node* hosts' runs of the last day
    PYTHONPATH=src python -m pytest -q tests/test_fleet.py

`fleet_report(documents)` groups the results of many runs (one per node, as a Slurm job array makes them) by
like-for-like configuration: the same `configuration.config_key` (workload, precision, compile mode, batch size,
sequence length, GPU count, flavour) over the same number of nodes on the same GPU model (canonical catalogue
name, as `ranking` matches GPUs).
Per group it takes the fleet median samples/s and calls a node **slow** when it is more than `threshold_pct`
below the median *and* its raw step times differ from the pooled step times of its peers (the other runs within
the threshold of the median) by the test that `dlbench compare` uses (`compare.significance`: Welch's t-test and Mann-Whitney U both below alpha), so that noise
is not called a fault. A result that failed (OOM, error, timeout) where at least `MIN_RUNS` others measured the
configuration is flagged as **failed**. Groups with fewer measured runs are shown but not judged.

Likely causes, from what the result recorded: its telemetry (`diagnose.telemetry_findings`: throttling, a power
limit below the default, a PCIe link below its maximum, another process on the GPU; for a data-parallel run each
GPU of `telemetry.per_gpu` when present), its SM clock against the fleet's, and a driver, CUDA, cuDNN or torch
version (`compare.ENV_KEYS`), a model library version (`package_versions`: transformers, torchvision,
Triton) or power limit other than the fleet majority's. A cause that most other nodes of the
group share (power capping at full load, say) is marked `fleet_wide`: it does not tell this node apart.

Works on plain result documents; nothing here touches torch or the database.
"""

from __future__ import annotations

import fnmatch
import statistics
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from dlbench.analysis.compare import DEFAULT_ALPHA, ENV_KEYS, Reference, measured_step_times, significance
from dlbench.analysis.configuration import config_fields, config_key, config_label
from dlbench.analysis.diagnose import telemetry_findings
from dlbench.analysis.energy import gpu_label, gpus_of, usable
from dlbench.analysis.ranking import canonical_gpu, result_gpu
from dlbench.errors import BadInput
from dlbench.schema.metrics import throughput

# dlbench's choice: same-model GPUs running the same software usually sit within a few percent of each other
# (boost clock bins, airflow), so 5% stays clear of that spread while catching the losses worth fixing: seed 001
# puts an x8/x4 PCIe link at 5-10% and a power limit 50 W below stock at about 7%.
DEFAULT_THRESHOLD_PCT = 5.0
# With two runs there is no majority: either could be the slow one.
MIN_RUNS = 3
# Statuses that say nothing about the node (the configuration was not attempted there).
_NOT_ATTEMPTED = ("skipped",)

# The short form of a diagnose cause, for the table and the one-line summary.
_SHORT = {
    "thermal_throttling": "thermal throttling",
    "power_throttling": "power throttling",
    "hardware_slowdown": "hardware slowdown",
    "shared_gpu": "GPU shared with another process",
    "mixed_gpu_models": "mixed GPU models",
}

# What a data-parallel group's own telemetry says beyond its GPUs' blocks (`per_gpu`).
_GROUP_CAUSES = ("hot_start", "mixed_gpu_models")
# A failed result's status in words (an error's own message says more).
_FAILED_TEXT = {"oom": "out of memory", "timeout": "timed out"}

TEST_TEXT = ("slow: more than the threshold below the fleet median, and the run's step times differ from the pooled "
             "step times of its peers within the threshold by Welch's t-test and Mann-Whitney U (both p < alpha)")


# --- choosing documents ------------------------------------------------------------------------------------


def hostnames(doc: dict[str, Any]) -> list[str]:
    """Every host name a document records: its environment's, and each rank's of a multi-node result."""
    names = [(doc.get("environment") or {}).get("hostname")]
    for result in doc.get("results") or []:
        names += [r.get("hostname") for r in result.get("ranks") or [] if isinstance(r, dict)]
    return list(dict.fromkeys(str(n) for n in names if n))


def select_documents(docs: Iterable[dict[str, Any]], since: datetime | None = None,
                     hosts: Iterable[str] = (), gpu: str | None = None) -> list[dict[str, Any]]:
    """The documents created at or after `since` (aware datetime), on a host matching one of the `hosts` globs
    (case-insensitive, as host names are) and on a GPU whose name contains `gpu` (case-insensitive, as
    `dlbench results list --gpu`); each run once (BadInput when two different documents share a run id)."""
    from dlbench.timestamps import parse_created_at

    globs = [h.lower() for h in hosts]
    seen: dict[Any, tuple] = {}
    out = []
    for doc in docs:
        rid = doc.get("run_id")
        if rid in seen:
            if seen[rid] != _identity(doc):  # the same run given twice is fine; two runs under one id are not
                raise BadInput(f"two different result documents share run id {rid} (hosts "
                               f"{', '.join(seen[rid][1]) or '?'} and {', '.join(_identity(doc)[1]) or '?'}): "
                               "a copied result file? Give each run once, or import them to see which is which")
            continue
        if since is not None and parse_created_at(doc["created_at"]) < since:
            continue
        if globs and not any(fnmatch.fnmatchcase(h.lower(), g) for h in hostnames(doc) for g in globs):
            continue
        names = [str(g.get("name") or "") for g in (doc.get("environment") or {}).get("gpus") or []]
        if gpu and not any(gpu.lower() in n.lower() for n in names):
            continue
        seen[rid] = _identity(doc)
        out.append(doc)
    return out


def _identity(doc: dict[str, Any]) -> tuple:
    """What tells two copies of one run from two runs: when, where, and what was measured."""
    return (doc.get("created_at"), tuple(hostnames(doc)),
            tuple(throughput(r) for r in doc.get("results") or []))


# --- the report -------------------------------------------------------------------------------------------


def fleet_report(docs: list[dict[str, Any]], threshold_pct: float = DEFAULT_THRESHOLD_PCT,
                 alpha: float = DEFAULT_ALPHA, all_runs: bool = False) -> dict[str, Any]:
    """Judge every node against its peers; see the module docstring.

    Where a host (and device) has several runs of a configuration, the newest counts (a re-run after a fix
    replaces the old one) and the others are listed under the group's `superseded`; `all_runs=True` keeps them.
    Returns `threshold_pct`, `alpha`, `min_runs`, `test`, `runs`, `hosts`, `groups` (each with its configuration
    fields, `label`, `gpu`, `judged`, `reason`, `median_samples_per_s`, `majority` and `rows`, slowest first),
    `flagged` (one entry per flagged row), `summary` (one line) and `exit_code` (1 when a node is flagged).
    """
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for doc in docs:
        for result in doc.get("results") or []:
            entry = _entry(doc, result)
            # The node count too: 8 GPUs over two nodes talk over the network, 8 in one node do not.
            groups.setdefault((config_key(result), node_count(result), entry["gpu"]), []).append(entry)
    out_groups = []
    for (_key, nodes, gpu), entries in sorted(groups.items(), key=lambda kv: (config_label(kv[1][0]["result"]),
                                                                                kv[0][1], kv[0][2] or "")):
        # One order whatever the input's (the database lists newest first): the pooled step times, and so the
        # p-values to the last digit, do not depend on it.
        entries.sort(key=lambda e: (e["host"], str(e["device"]), str(e["created_at"]), str(e["doc"].get("run_id"))))
        kept, superseded = (entries, []) if all_runs else _newest_per_node(entries)
        out_groups.append({**_judge(kept, gpu, threshold_pct / 100.0, alpha, superseded), "nodes": nodes})
    flagged = [{"host": row["host"], "node": row["node"], "run_id": row["run_id"], "label": g["label"], "gpu": g["gpu"],
                "verdict": row["verdict"], "vs_median_pct": row["vs_median_pct"], "cause": main_cause(row)}
               for g in out_groups for row in g["rows"] if row["flagged"]]
    all_hosts = sorted({row["host"] for g in out_groups for row in g["rows"]})
    report = {"threshold_pct": threshold_pct, "alpha": alpha, "min_runs": MIN_RUNS, "test": TEST_TEXT,
              "runs": len(docs), "hosts": all_hosts, "groups": out_groups, "flagged": flagged,
              "exit_code": 1 if flagged else 0}
    report["summary"] = summary_line(report)
    return report


def summary_line(report: dict[str, Any]) -> str:
    """`12 nodes, 2 slow: node07 (-11%, thermal throttling), node11 (-6%, PCIe x8)`: each flagged host once, at
    its worst."""
    hosts = report["hosts"]
    head = f"{len(hosts)} node{'s' if len(hosts) != 1 else ''}"
    if not any(g["judged"] for g in report["groups"]):
        return f"{head}: too few runs of every configuration to judge (at least {MIN_RUNS} needed)"
    worst: dict[str, dict[str, Any]] = {}
    for f in report["flagged"]:
        rank = -1e9 if f["vs_median_pct"] is None else f["vs_median_pct"]
        if f["node"] not in worst or rank < worst[f["node"]]["rank"]:
            worst[f["node"]] = {**f, "rank": rank}
    unjudged = sum(1 for g in report["groups"] if not g["judged"])
    tail = (f"; {unjudged} configuration{'s' if unjudged != 1 else ''} with fewer than {MIN_RUNS} runs not judged"
            if unjudged else "")
    if not worst:
        return f"{head}, none slow (threshold {report['threshold_pct']:g}% below the fleet median){tail}"
    parts = []
    for who, f in sorted(worst.items(), key=lambda wf: wf[1]["rank"]):
        what = "failed" if f["verdict"] == "failed" else f"{f['vs_median_pct']:+.0f}%"
        parts.append(f"{who} ({what}, {f['cause']})" if f["cause"] else f"{who} ({what})")
    slow = sum(1 for f in worst.values() if f["verdict"] == "slow")
    failed = len(worst) - slow
    counts = ", ".join(p for p in (f"{slow} slow" if slow else "", f"{failed} failed" if failed else "") if p)
    return f"{head}, {counts}: " + ", ".join(parts) + tail


# --- one group ----------------------------------------------------------------------------------------------


def _entry(doc: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    env = doc.get("environment") or {}
    rank_hosts = list(dict.fromkeys(r.get("hostname") for r in result.get("ranks") or []
                                    if isinstance(r, dict) and r.get("hostname")))
    host = "+".join(rank_hosts) if len(rank_hosts) > 1 else env.get("hostname")
    return {"doc": doc, "result": result, "env": env, "gpu": _hardware(doc, result),
            "host": str(host) if host else f"run {str(doc.get('run_id'))[:8]}",
            "device": result.get("device"), "created_at": doc.get("created_at")}


def node_count(result: dict[str, Any]) -> int:
    """How many nodes a result ran on: its `nodes` (a count, or older documents' list), else the distinct host
    names of its ranks, else 1."""
    nodes = result.get("nodes")
    if isinstance(nodes, list):
        return max(len(nodes), 1)
    if isinstance(nodes, int) and nodes > 0:
        return nodes
    hosts = {r.get("hostname") for r in result.get("ranks") or [] if isinstance(r, dict) and r.get("hostname")}
    return max(len(hosts), 1)


def _hardware(doc: dict[str, Any], result: dict[str, Any]) -> str:
    """The GPU model a result ran on (catalogue name where known), or the CPU model for a CPU result."""
    gpu = result_gpu(doc, result)
    if gpu and gpu.get("name"):
        return canonical_gpu(gpu["name"], gpu.get("memory_bytes")) or str(gpu["name"])
    device = str(result.get("device") or "unknown device")
    if device == "cpu":
        cpu = (doc.get("environment") or {}).get("cpu_model")
        return f"CPU ({cpu})" if cpu else "CPU"
    return device


def node_device(device: Any) -> str | None:
    """The device as a node's key: "cuda" is the first visible GPU, as "cuda:0" (older runs recorded "cuda")."""
    return "cuda:0" if device == "cuda" else device


def _newest_per_node(entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    from dlbench.timestamps import parse_created_at

    newest: dict[tuple, dict[str, Any]] = {}
    superseded = []
    for e in sorted(entries, key=lambda e: parse_created_at(e["created_at"]), reverse=True):
        node = (e["host"], node_device(e["device"]))
        if node in newest:
            superseded.append(e["doc"].get("run_id"))
        else:
            newest[node] = e
    return [e for e in entries if newest.get((e["host"], node_device(e["device"]))) is e], superseded


def _judge(entries: list[dict[str, Any]], gpu: str | None, threshold: float, alpha: float,
           superseded: list[str]) -> dict[str, Any]:
    first = entries[0]["result"]
    measured = [e for e in entries if _measured(e["result"])]
    median = statistics.median(throughput(e["result"]) for e in measured) if measured else None
    judged = len(measured) >= MIN_RUNS
    reason = None if judged else (
        f"only {len(measured)} run{'s' if len(measured) != 1 else ''} measured this configuration: too few to "
        f"judge (at least {MIN_RUNS} needed to tell a slow node from a slow peer)")
    majority = _majorities(entries)
    peers = _peers(measured, median, judged, threshold)
    rows = []
    for e in entries:
        row = _row(e, peers, median, judged, threshold, alpha)
        row["causes"] = _causes(e, peers, majority, threshold) + row.pop("gpu_causes")
        rows.append(row)
    _mark_fleet_wide(rows)
    _name_nodes(rows)
    rows.sort(key=_slowest_first)
    return {**config_fields(first), "label": config_label(first), "gpu": gpu,
            "judged": judged, "reason": reason, "runs": len(entries), "measured": len(measured),
            "median_samples_per_s": median, "majority": majority, "fleet_wide_causes": _fleet_wide_causes(rows),
            "rows": rows, "superseded": superseded}


def _name_nodes(rows: list[dict[str, Any]]) -> None:
    """`node` names what a row measured: its host, and its GPU where the host has one row per GPU (`node07 GPU 3`,
    from one-GPU runs on each device in turn)."""
    devices: dict[str, set] = {}
    for row in rows:
        devices.setdefault(row["host"], set()).add(node_device(row["device"]))
    for row in rows:
        device = str(node_device(row["device"]) or "")
        several = len(devices[row["host"]]) > 1 and row["world_size"] == 1 and ":" in device
        row["node"] = f"{row['host']} GPU {device.split(':', 1)[1]}" if several else row["host"]


def _measured(result: dict[str, Any]) -> bool:
    return result.get("status") == "ok" and bool(throughput(result))


def _peers(measured: list[dict[str, Any]], median: float | None, judged: bool, threshold: float) -> dict[str, Any]:
    """What every row of a group is held against, gathered once per group (not once per row: a fleet of hundreds
    of hosts with hundreds of steps each made that quadratic).

    `pool`: the step times of the runs within the threshold of the median, in the group's order (the reference of
    the test; a run below the threshold, the only kind tested, is never in it). `sm_clocks`: every measured run's
    mean SM clock, and `gpu_sm_clocks` every GPU's of the runs with per-GPU telemetry (the run's own included,
    as the fleet median they are set against)."""
    pool: list[float] = []
    if judged and median is not None:
        for o in measured:
            if throughput(o["result"]) >= median * (1.0 - threshold):
                pool += measured_step_times(o["result"])
    clocks = [(o["result"].get("telemetry") or {}).get("sm_clock_mean_mhz") for o in measured
              if usable(o["result"].get("telemetry"))]
    gpu_clocks = [g.get("sm_clock_mean_mhz") for o in measured for g in gpus_of(o["result"].get("telemetry"))
                  if usable(g) and g.get("sm_clock_mean_mhz")]
    # Sorted and summed up once, rather than the tests ranking the same pool again for every run they test.
    return {"pool": Reference(pool), "sm_clocks": [c for c in clocks if c], "gpu_sm_clocks": gpu_clocks}


def _row(e: dict[str, Any], peers: dict[str, Any], median: float | None, judged: bool,
         threshold: float, alpha: float) -> dict[str, Any]:
    r = e["result"]
    row: dict[str, Any] = {"host": e["host"], "run_id": e["doc"].get("run_id"), "created_at": e["created_at"],
                           "device": r.get("device"), "world_size": r.get("world_size") or 1,
                           "status": r.get("status"), "error": r.get("error"), "samples_per_s": None,
                           "cv": r.get("cv"), "ratio": None, "vs_median_pct": None, "steps": 0, "welch_p": None,
                           "mannwhitney_p": None, "significant": None, "test_reason": None,
                           "telemetry": usable(r.get("telemetry")), "verdict": "", "flagged": False}
    row["gpus"], row["gpu_causes"] = _per_gpu(r, e["host"], peers["gpu_sm_clocks"], threshold)
    if not _measured(r):
        attempted = r.get("status") not in _NOT_ATTEMPTED
        row["verdict"] = "failed" if attempted else str(r.get("status"))
        row["flagged"] = attempted and judged
        return row
    value = throughput(r)
    times = measured_step_times(r)
    row.update(samples_per_s=value, ratio=value / median, vs_median_pct=(value / median - 1.0) * 100.0,
               steps=len(times))
    if not judged:
        row["verdict"] = "not judged"
        return row
    if value >= median * (1.0 - threshold):
        row["verdict"] = "ok"
        return row
    # The reference is the peers within the threshold of the median: another slow node in the pool would pull
    # the pool's mean towards this one and hide it from Welch's test.
    test = significance(peers["pool"], times, alpha)
    row.update(welch_p=test["welch_p"], mannwhitney_p=test["mannwhitney_p"], significant=test["significant"],
               test_reason=test["reason"])
    if test["significant"] is False:
        row["verdict"] = "within noise"  # below the threshold, but the step times do not tell it apart
    else:  # significant, or untested (no raw step times): the threshold alone decides
        row["verdict"] = "slow"
        row["flagged"] = True
    return row


def _slowest_first(row: dict[str, Any]) -> tuple:
    if row["samples_per_s"] is not None:
        return (1, row["samples_per_s"], row["host"])
    return (0 if row["verdict"] == "failed" else 2, 0.0, row["host"])


# --- causes -------------------------------------------------------------------------------------------------


def _cause(cause: str, severity: str, message: str, short: str) -> dict[str, Any]:
    return {"cause": cause, "severity": severity, "message": message, "short": short, "gpu": None,
            "fleet_wide": False}


def _from_findings(findings: list[dict[str, Any]], tel: dict[str, Any] | None) -> list[dict[str, Any]]:
    """diagnose's findings as fleet causes (a missing telemetry is no cause; the row says it has none)."""
    return [_cause(f["cause"], f["severity"], f["message"], _short(f["cause"], tel or {}))
            for f in findings if f["cause"] != "no_telemetry"]


def _short(cause: str, tel: dict[str, Any]) -> str:
    if cause == "narrow_pcie_link":
        g, w = tel.get("pcie_link_gen_min"), tel.get("pcie_link_width_min")
        gmax, wmax = tel.get("pcie_link_gen_max"), tel.get("pcie_link_width_max")
        parts = []
        if g is not None and gmax is not None and g < gmax:
            parts.append(f"gen{g}")
        if w is not None and wmax is not None and w < wmax:
            parts.append(f"x{w}")
        return "PCIe " + " ".join(parts or [f"gen{g} x{w}"])
    if cause == "reduced_power_limit":
        return f"power limit {tel.get('power_limit_w'):.0f} W of {tel.get('default_power_limit_w'):.0f} W"
    if cause == "cpu_bound":
        return f"GPU busy {tel.get('gpu_utilization_mean_pct'):.0f}%"
    if cause == "hot_start":
        return "hot start"
    return _SHORT.get(cause, cause.replace("_", " "))


def _causes(e: dict[str, Any], peers: dict[str, Any], majority: dict[str, Any],
            threshold: float) -> list[dict[str, Any]]:
    """Causes for one run: its telemetry (the GPUs' own under `gpus` when it has `per_gpu`), its SM clock against
    the fleet's, and its software and power limit against the fleet majority's."""
    r = e["result"]
    tel = r.get("telemetry")
    if gpus_of(tel):  # the per-GPU causes name each GPU; the group's block adds what is not per GPU
        out = _from_findings([f for f in telemetry_findings(r) if f["cause"] in _GROUP_CAUSES], tel)
    else:
        out = _from_findings(telemetry_findings(r), tel)
        clock = (tel or {}).get("sm_clock_mean_mhz") if usable(tel) else None
        out += _low_clock(clock, peers["sm_clocks"], threshold)
    env = e["env"]
    for key, label in ENV_KEYS:
        have, fleet = env.get(key), majority.get(key)
        if have is not None and fleet is not None and _hashable(have) != fleet:
            name = label.replace("NVIDIA ", "")
            out.append(_cause(f"{key.removesuffix('_version')}_differs", "warn",
                              f"{label} {have}, the fleet's majority has {fleet}", f"{name} {have} (fleet {fleet})"))
    packages = env.get("package_versions") if isinstance(env.get("package_versions"), dict) else {}
    for package, fleet in (majority.get("package_versions") or {}).items():  # transformers, torchvision, ...
        have = packages.get(package)
        if have is not None and fleet is not None and _hashable(have) != fleet:
            out.append(_cause(f"{package}_differs", "warn", f"{package} {have}, the fleet's majority has {fleet}",
                              f"{package} {have} (fleet {fleet})"))
    limit, fleet_limit = _power_limit(r), majority.get("power_limit_w")
    if limit and fleet_limit and limit < fleet_limit - 1.0 and not any(c["cause"] == "reduced_power_limit"
                                                                         for c in out):
        out.append(_cause("power_limit_below_fleet", "warn",
                          f"power limit {limit:.0f} W, the fleet's majority has {fleet_limit:.0f} W",
                          f"power limit {limit:.0f} W (fleet {fleet_limit:.0f} W)"))
    return sorted(out, key=lambda c: c["severity"] != "warn")


def _low_clock(clock: float | None, peers: list[float], threshold: float) -> list[dict[str, Any]]:
    """A cause when a mean SM clock is more than `threshold` below the median of at least MIN_RUNS peers'."""
    if not clock or len(peers) < MIN_RUNS:
        return []
    median = statistics.median(peers)
    if clock >= median * (1.0 - threshold):
        return []
    pct = (clock / median - 1.0) * 100.0
    return [_cause("low_sm_clock", "warn", f"mean SM clock {clock:.0f} MHz, {-pct:.0f}% below the fleet median "
                   f"{median:.0f} MHz", f"SM clock {pct:+.0f}%")]


def _per_gpu(r: dict[str, Any], host: str, peers: list[float], threshold: float) -> tuple[list, list]:
    """Each GPU of a data-parallel result (from `telemetry.per_gpu`) with its figures and causes, and all those
    causes (each naming its GPU under `gpu`) for the result's own list. Empty without per-GPU telemetry.

    A GPU is named by `analysis.energy.gpu_label`, without the host when it is the run's own; `peers` are the
    group's GPUs' mean SM clocks."""
    blocks = gpus_of(r.get("telemetry"))
    if not blocks:
        return [], []
    gpus, row_causes = [], []
    for i, g in enumerate(blocks):
        name = gpu_label(g, home_host=host, position=i)
        one = {"world_size": r.get("world_size"), "batch_size": r.get("batch_size"), "telemetry": g}
        causes = _from_findings(telemetry_findings(one), g) if usable(g) else []
        if usable(g):
            causes += _low_clock(g.get("sm_clock_mean_mhz"), peers, threshold)
        gpus.append({"gpu": name, "name": g.get("name") or (g.get("gpu") or {}).get("name"),
                     "hostname": g.get("hostname"), "available": usable(g), "reason": g.get("reason"),
                     "sm_clock_mean_mhz": g.get("sm_clock_mean_mhz"), "temperature_max_c": g.get("temperature_max_c"),
                     "throttle_share": g.get("throttle_share"), "power_limit_w": g.get("power_limit_w"),
                     "causes": causes})
        for c in causes:  # the same objects in the run's list, so that both say whether they are fleet-wide
            c["gpu"] = name
        row_causes += causes
    return gpus, row_causes


def _power_limit(result: dict[str, Any]) -> float | None:
    tel = result.get("telemetry")
    return tel.get("power_limit_w") if usable(tel) else None


def _majorities(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The value more than half of the group's runs share, per software version and for the power limit (None
    where no value has a majority, or where none is recorded)."""
    def majority(values: list[Any]) -> Any:
        known = [v for v in values if v is not None]
        if not known:
            return None
        value, count = Counter(map(_hashable, known)).most_common(1)[0]
        return value if count * 2 > len(known) else None

    out = {key: majority([e["env"].get(key) for e in entries]) for key, _ in ENV_KEYS}
    out["power_limit_w"] = majority([_power_limit(e["result"]) for e in entries])
    # The model libraries (environment `package_versions`), among the runs that recorded them.
    recorded = [e["env"]["package_versions"] for e in entries if isinstance(e["env"].get("package_versions"), dict)]
    out["package_versions"] = {name: majority([p.get(name) for p in recorded])
                               for name in dict.fromkeys(n for p in recorded for n in p)}
    return out


def _hashable(value: Any) -> Any:
    """A version as a Counter key: lists (`nccl_version: [2, 27, 3]`) as tuples, and whatever else a document
    holds in these free-form fields (a dict) as something hashable too."""
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    return value


def _mark_fleet_wide(rows: list[dict[str, Any]]) -> None:
    """A cause seen on at least half of the other measured runs does not tell a run apart: mark it fleet-wide."""
    measured = [row for row in rows if row["samples_per_s"] is not None]
    seen = [{c["cause"] for c in row["causes"]} for row in measured]
    runs_with = Counter(cause for causes in seen for cause in causes)  # counted once, not once per row
    others = len(measured) - 1
    if others < MIN_RUNS - 1:
        return
    for row, own in zip(measured, seen, strict=True):
        for c in row["causes"]:
            c["fleet_wide"] = (runs_with[c["cause"]] - (c["cause"] in own)) * 2 >= others
        row["causes"].sort(key=lambda c: (c["fleet_wide"], c["severity"] != "warn"))


def cause_text(cause: dict[str, Any]) -> str:
    """A cause in short, with the GPU it concerns: `thermal throttling`, `GPU 3: PCIe x8`."""
    return f"{cause['gpu']}: {cause['short']}" if cause.get("gpu") else cause["short"]


def _fleet_wide_causes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each fleet-wide cause once, with the number of runs that show it, most common first."""
    counts = Counter(c["cause"] for row in rows for c in {c["cause"]: c for c in row["causes"] if c["fleet_wide"]
                                                           }.values())
    return [{"cause": cause, "text": _SHORT.get(cause, cause.replace("_", " ")), "runs": n}
            for cause, n in sorted(counts.items(), key=lambda cn: (-cn[1], cn[0]))]


def main_cause(row: dict[str, Any]) -> str | None:
    """The cause the summary line names for a row of a group (a failure's error, else the first cause that is not
    fleet-wide, else `no telemetry`); the HTML report's fleet chart labels each row with it too."""
    if row["verdict"] == "failed":
        if row["status"] in _FAILED_TEXT:
            return _FAILED_TEXT[row["status"]]
        if row["error"] and str(row["error"]).strip():
            first = str(row["error"]).strip().splitlines()[0]
            return first if len(first) <= 60 else first[:59] + "\u2026"
        return "no throughput measured" if row["status"] == "ok" else str(row["status"])
    distinct = [c for c in row["causes"] if not c["fleet_wide"]]
    if distinct:
        return cause_text(distinct[0])
    return None if row["telemetry"] else "no telemetry"
