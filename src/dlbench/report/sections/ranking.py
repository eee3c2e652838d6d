"""The "Against published results" section: for each workload, precision and GPU count, published GPUs ranked by
training throughput with this run's results highlighted (`analysis.ranking.rank_among_published`).
"""

from __future__ import annotations

from typing import Any

from dlbench.analysis.configuration import config_key
from dlbench.analysis.ranking import canonical_gpu, not_comparable_reason, rank_among_published, result_gpu
from dlbench.report import charts, fmt
from dlbench.report.represent import THINNED, thin
from dlbench.report.sections.figures import figure, group
from dlbench.report.sections.results import vs_note
from dlbench.schema.metrics import throughput


def ranking_group(documents, runs, vs_by_doc, published, chart_dir) -> dict[str, Any] | None:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for doc, run, vs_by_result in zip(documents, runs, vs_by_doc, strict=True):
        for r, vs in zip(doc.get("results") or [], vs_by_result, strict=True):
            gpu = result_gpu(doc, r) or {}
            if not_comparable_reason(r, gpu.get("name")):
                continue
            gpu_label = canonical_gpu(gpu.get("name"), gpu.get("memory_bytes")) or gpu.get("name")
            key = (r["workload"], r["precision"], r.get("seq_len"), int(r.get("world_size") or 1))
            name = f"{run['prefix'] or 'this run'}: {gpu_label} \u00b7 {fmt.compile_name(r.get('compile'))}"
            groups.setdefault(key, []).append({"label": f"\u25b6 {name}", "name": name, "unit": fmt.unit_of(r),
                                               "samples_per_s": throughput(r), "key": (config_key(r), gpu_label),
                                               "vs": vs})
    if not groups:  # nothing comparable (a CPU or --tiny run): no section; "At a glance" says why
        return None
    figures, notes = [], []
    for (workload, precision, seq_len, n), every in sorted(groups.items(), key=lambda kv: str(kv[0])):
        thinned = thin(every, lambda e: e["key"])
        entries = [{**e, "label": f"{e['label']} ({role})", "name": f"{e['name']} ({role})"} if role else e
                   for e, role in thinned]
        what = (f"{fmt.workload_name(workload, seq_len)} \u00b7 {fmt.precision_name(precision)} \u00b7 "
                f"{n} GPU{'s' if n > 1 else ''}")
        ranked = rank_among_published(entries, workload, precision, seq_len, n, published)
        if not ranked:
            notes.append(f"{what}: nothing to rank against: {entries[0]['vs']['reason']}.")
            continue
        sources = sorted({s for r in ranked if not r["is_this_run"] for s in r["sources"]})
        name = f"ranking_{workload}_{precision}_{seq_len or 'na'}_{n}gpu"
        # A report of several runs: its bars are "these runs'", each labelled with its run (or host).
        ours = "this run" if len(documents) == 1 else "these runs"
        whose = "this run's GPU" if len(documents) == 1 else "these runs' GPUs"
        subtitle = (f"Grey: median per GPU of published results ({'; '.join(sources)}), darker for {whose}. "
                    "Batch sizes differ by source.")
        same_gpu = {e["vs"]["gpu"] for e in entries if e["vs"]["gpu"]}
        chart = charts.ranking_chart(ranked, what, entries[0]["unit"], subtitle, chart_dir, name, num_gpus=n,
                                     same_gpu=same_gpu, ours=ours)
        caption = "; ".join(f"{e['name']}: {fmt.vs_published_short(e['vs'])} {vs_note(e['vs'])}" for e in entries)
        if len(entries) < len(every):
            caption += f". {THINNED}"
        figures.append(figure(chart, caption))
    ours = "this run's results" if len(documents) == 1 else "the results of these runs"
    return group("ranking", "Against published results",
                 "Each chart ranks published GPUs by training throughput for one workload, sequence length, "
                 f"precision and GPU count, with {ours} highlighted. Only like is compared with like.",
                 figures, notes)
