"""The "Against published inference figures" section: decode tokens/s of generate results (and offline
samples/s of infer results) ranked against comparable published rows (`analysis.inference_ranking`), this run
highlighted. Present only when some result has comparable published figures."""

from __future__ import annotations

from typing import Any

from dlbench.analysis.inference_ranking import COMPARED, not_comparable_reason, rank_inference
from dlbench.analysis.ranking import canonical_gpu, result_gpu
from dlbench.report import charts, fmt
from dlbench.report.represent import chart_where
from dlbench.report.sections.figures import figure, group
from dlbench.schema.metrics import scenario, value

# scenario -> (chart name prefix, what the bars are, unit)
CHARTS = {"generate": ("tokens_ranking", "decode throughput", "tokens"),
          "infer": ("ranking_infer", "offline inference throughput", None)}


def tokens_ranking_group(documents, runs, vs_by_doc, chart_dir) -> dict[str, Any] | None:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for doc, run, vs_by_result in zip(documents, runs, vs_by_doc, strict=True):
        for r, vs in zip(doc.get("results") or [], vs_by_result, strict=True):
            gpu = result_gpu(doc, r) or {}
            if scenario(r) not in COMPARED or not_comparable_reason(r, gpu.get("name")):
                continue
            gpu_label = canonical_gpu(gpu.get("name"), gpu.get("memory_bytes")) or gpu.get("name")
            name = f"{run['prefix'] or 'this run'}: {gpu_label} \u00b7 {fmt.compile_name(r.get('compile'))}"
            key = (scenario(r), r["workload"], r["precision"], r.get("batch_size"))
            groups.setdefault(key, []).append({"label": f"\u25b6 {name}", "name": name, "result": r, "vs": vs,
                                               "value": value(r, COMPARED[scenario(r)][0])})
    figures, notes = [], []
    for (name, workload, precision, batch), entries in sorted(groups.items(), key=lambda kv: str(kv[0])):
        what = f"{workload} \u00b7 {fmt.precision_name(precision)} \u00b7 batch {batch}"
        ranked = rank_inference(entries, entries[0]["result"])
        if not ranked:
            notes.append(f"{what}: {entries[0]['vs'].get('reason') or 'no comparable published figure'}.")
            continue
        prefix, quantity, unit = CHARTS[name]
        unit = unit or fmt.unit_of(entries[0]["result"])
        sources = sorted({s for row in ranked if not row["is_this_run"] for s in row["sources"]})
        subtitle = (f"Grey: median per GPU of comparable published figures (PyTorch or gpt-fast, one GPU, same "
                    f"precision and batch; {len(sources)} source{'s' if len(sources) != 1 else ''}).")
        rows = [{**row, "samples_per_s": row["value"]} for row in ranked]
        same_gpu = {e["vs"]["gpu"] for e in entries if e["vs"].get("gpu")}
        chart = charts.ranking_chart(rows, what, unit, subtitle, chart_dir,
                                     f"{prefix}_{workload}_{precision}_bs{batch}", same_gpu=same_gpu,
                                     ours="this run" if len(documents) == 1 else "these runs", quantity=quantity)
        caption = "; ".join(f"{e['name']}: {fmt.vs_published_short(e['vs'])}" for e in entries)
        figures.append(figure(chart, caption + f". Sources: {'; '.join(sources)}"))
    if not figures and not notes:  # no infer or generate result on a GPU: no section
        return None
    if not figures:
        return None
    return group("inference-ranking", "Against published inference figures",
                 "Decode tokens/s (LLM generation) and offline samples/s (inference) of this run against published "
                 "figures that measure the same thing: a llama.cpp or TensorRT figure is context, never a target. "
                 f"{chart_where(runs)}.", figures, notes)
