"""The page's header: what each run was (hardware, software, host, time) as cards, summed up for many runs.

`run_info` describes one run for every section (its tag, and the prefix a chart label takes where the report has
several runs); `facts` lays out the header's cards; `counted` sums up a value many runs share.
"""

from __future__ import annotations

from typing import Any

from dlbench.analysis.ranking import canonical_gpu
from dlbench.report import fmt
from dlbench.schema import cut_short


def run_info(doc: dict[str, Any], index: int, count: int, by_host: bool = False) -> dict[str, Any]:
    env = doc.get("environment") or {}
    gpus = [canonical_gpu(g.get("name"), g.get("memory_bytes")) or g.get("name")
            for g in env.get("gpus") or [] if isinstance(g, dict)]
    names = sorted(set(gpus))
    if names:
        gpu_text = ", ".join(f"{gpus.count(n)}\u00d7 {n}" for n in names)
    else:
        cores = f", {env['cpu_count']} cores" if env.get("cpu_count") else ""
        gpu_text = f"CPU only ({env.get('cpu_model') or 'unknown CPU'}{cores})"
    short = str(doc.get("run_id") or f"run{index + 1}")[:8]
    software = " \u00b7 ".join(f"{label} {env[key]}" for label, key in
                               (("PyTorch", "torch_version"), ("CUDA", "cuda_version")) if env.get(key))
    planned = cut_short(doc)
    return {"run_id": doc.get("run_id"), "short": short, "created_at": doc.get("created_at"),
            "cut_short": None if planned is None else
            f"cut short: {len(doc.get('results') or [])} of {planned} configurations",
            "hostname": env.get("hostname"), "gpus": gpu_text, "software": software or fmt.DASH,
            "tag": env["hostname"] if by_host else short, "by_host": by_host,
            "prefix": (env["hostname"] if by_host else f"run {short}") if count > 1 else None}


# Past this many runs the header sums the runs up instead of giving each its own three cards (a fleet of 64).
FACT_RUNS_MAX = 3
FEW = 3  # a value at most this many runs have is named with those runs: the odd ones out of a fleet


def facts(runs: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The header's cards: per run its hardware, software, host and time; for many runs, each of these summed up."""
    def when(run: dict[str, Any]) -> str:
        return (run["created_at"] or fmt.DASH)[:16].replace("T", " ")

    if len(runs) <= FACT_RUNS_MAX:
        return [card for run in runs for card in (
            {"k": f"Run {run['short']}",
             "v": run["gpus"] + (f" \u00b7 {run['cut_short']}" if run.get("cut_short") else "")},
            {"k": "Software", "v": run["software"]},
            {"k": "Host \u00b7 created (UTC)", "v": f"{run['hostname'] or fmt.DASH} \u00b7 {when(run)}"})]
    times = sorted(when(r) for r in runs if r["created_at"])
    hosts = sorted({r["hostname"] for r in runs if r["hostname"]}, key=fmt.natural_key)  # "first, …, last"
    shown = ", ".join(hosts) if len(hosts) <= 3 else f"{hosts[0]}, {hosts[1]}, \u2026 {hosts[-1]}"
    return [
        {"k": "Runs \u00b7 created (UTC)",
         "v": f"{len(runs)} runs \u00b7 " + (f"{times[0]} \u2013 {times[-1]}" if times else fmt.DASH)},
        {"k": "Hosts", "v": f"{len(hosts)} host{'s' if len(hosts) != 1 else ''}: {shown}" if hosts else fmt.DASH},
        {"k": "Hardware", "v": counted(r["gpus"] for r in runs)},
        {"k": "Software", "v": counted(r["software"] for r in runs)},
        *([{"k": "Cut short", "v": ", ".join(f"{r['tag']} ({r['cut_short']})" for r in runs if r.get("cut_short"))}]
          if any(r.get("cut_short") for r in runs) else []),
    ]


def counted(values, tags: list[str] | None = None) -> str:
    """`A (60 runs), B (4 runs)`, most common first; a value every run shares stands alone, and one that at most
    `FEW` runs have names them when `tags` (one per value) are given: `550.54.15 (1 run: node08)`."""
    from collections import Counter

    values = list(values)
    counts = Counter(values).most_common()
    if len(counts) == 1:
        return counts[0][0]
    parts = []
    for v, n in counts:
        who = [t for t, x in zip(tags, values, strict=True) if x == v] if tags and n <= FEW else []
        parts.append(f"{v} ({n} run{'s' if n != 1 else ''}{': ' + ', '.join(who) if who else ''})")
    return ", ".join(parts)
