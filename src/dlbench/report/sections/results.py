"""The results table: one row per run and configuration, its figures and how it compares with published results."""

from __future__ import annotations

from typing import Any

from dlbench.analysis.stats import CV_WARN
from dlbench.report import fmt
from dlbench.schema.metrics import scenario, throughput

RESULT_ROWS_MAX = 16  # more results than this from more than `header.FACT_RUNS_MAX` runs: the results table is folded


def result_rows(documents, runs, vs_by_doc) -> list[dict[str, Any]]:
    """The results table; `vs_by_doc[i][j]` is `vs_published_in` of document i's result j."""
    rows = []
    for doc, run, vs_by_result in zip(documents, runs, vs_by_doc, strict=True):
        for r, vs in zip(doc.get("results") or [], vs_by_result, strict=True):
            st = r.get("step_time_s") or {}
            details = [fmt.precision_name(r.get("precision", "?")), fmt.compile_name(r.get("compile")),
                       f"batch {fmt.plain(r.get('batch_size'))}"]
            if (r.get("world_size") or 1) > 1:
                details.append(f"{r['world_size']} GPUs")
            if (r.get("flavour") or "full") != "full":
                details.append(f"{r['flavour']} flavour")
            if scenario(r) != "train":  # infer: offline samples/s; generate: decode tokens/s
                details.append(SCENARIO_WORDS.get(scenario(r), scenario(r)))
            rows.append({
                "run": run["tag"], "run_id": run["short"] if run["by_host"] else "",
                "workload": fmt.workload_name(r.get("workload", "?"), r.get("seq_len")),
                "details": " \u00b7 ".join(details),
                "throughput": fmt.throughput(throughput(r)),
                "unit": "tokens/s" if scenario(r) == "generate" else f"{fmt.unit_of(r)}/s",
                "cv": fmt.percent(r.get("cv")), "noisy": (r.get("cv") or 0) > CV_WARN,
                "step_ms": fmt.ms(st.get("median")),
                "step_range_ms": f"{fmt.ms(st.get('p5'))}\u2013{fmt.ms(st.get('p95'))}" if st.get("p5") else "",
                "memory": fmt.gigabytes(r.get("peak_memory_bytes")),
                "tflops": fmt.tflops(r.get("achieved_flops_per_s")),
                "vs_main": fmt.vs_published_short(vs),
                # The list of what is published instead belongs to the ranking notes, not to every table cell.
                "vs_title": vs_note(vs).split(" (published: ", 1)[0] if r.get("status") == "ok" else "",
                # Under the ratio only its rank: the sentence ("of published median (45 results); #4 of 10 GPUs")
                # took four lines in every row; it stays in the cell's tooltip and the ranking captions.
                "vs_note": _vs_short_note(vs) if r.get("status") == "ok" else "",
                "vs_good": (vs["ratio"] or 0) >= 0.95,
                "status": r.get("status") or "?", "status_text": STATUS_TEXT.get(r.get("status"), r.get("status") or "?"),
                "error": r.get("error") or "", "sources": vs["sources"],
            })
    return rows


# What the throughput of a non-training row is, in its details.
SCENARIO_WORDS = {"infer": "inference (offline)", "generate": "LLM decode"}
# How a status reads on the page (the stored names are the schema's, `store.documents.STATUSES`).
STATUS_TEXT = {"oom": "out of memory", "timeout": "timed out"}
# The results table's figure columns after the throughput, each left out when no result has a value for it (a CPU
# run has no peak memory, a run of one repeat no CV): (row key, heading).
_FIGURE_COLUMNS = (("cv", "CV"), ("step", "Step ms"), ("memory", "Peak memory"), ("tflops", "TFLOP/s"))


def columns(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    value = {"step": "step_ms"}
    return [{"key": key, "title": title} for key, title in _FIGURE_COLUMNS
            if any(r[value.get(key, key)] != fmt.DASH for r in rows if r["status"] == "ok")]


def _vs_short_note(vs: dict[str, Any]) -> str:
    """What stands under the ratio in the results table: its rank among published GPUs."""
    if vs["ratio"] is not None:
        return f"#{vs['rank']} of {vs['rank_of']} GPUs" if vs["rank"] is not None else ""
    return vs_note(vs).split(" (published: ", 1)[0]


def vs_note(vs: dict[str, Any]) -> str:
    if vs["ratio"] is not None:
        n = vs["published_count"]
        note = f"of published median ({n} result{'s' if n != 1 else ''}); #{vs['rank']} of {vs['rank_of']} GPUs"
        return note
    if vs["rank"] is not None:
        return f"among published GPUs; {vs['reason']}" if vs["reason"] else "among published GPUs"
    return vs["reason"] or ""
