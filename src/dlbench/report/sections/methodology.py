"""The "Methodology" section: what was timed and how, from the documents' own numbers."""

from __future__ import annotations

from dlbench.report import fmt

# How each kind of device is timed (docs/methodology.md, "Clocks"; measurement/clocks.py).
_CLOCKS = {
    "cuda": "CUDA events at every step boundary, the GPU synchronised before the first and after the last step "
            "of each repeat",
    "mps": "the MPS device synchronised before every time.perf_counter() read",
    "cpu": "time.perf_counter() at every step boundary",
}


def methodology(documents) -> list[tuple[str, str]]:
    """What was timed and how, from the documents' own numbers (warm-up and measured step counts, devices)."""
    warmups, steps, repeats, devices = set(), set(), set(), set()
    for doc in documents:
        for r in doc.get("results") or []:
            if r.get("status") != "ok":
                continue
            warmups.add(len(r.get("warmup_step_times_s") or []))
            reps = r.get("repeats") or []
            repeats.add(len(reps))
            steps.update(len(rep.get("step_times_s") or []) for rep in reps)
            devices.add(str(r.get("device") or "").split(":")[0])

    def counts(values: set[int], noun: str) -> str:
        """`10 steps`, `1 step`, `2 or 3 repeats`: the noun agrees with the largest count."""
        if not values:
            return f"{fmt.DASH} {noun}s"
        return " or ".join(str(v) for v in sorted(values)) + f" {noun}{'' if max(values) == 1 else 's'}"

    kinds = [kind for kind in _CLOCKS if kind in devices]
    clocks = "; ".join(_CLOCKS[kind] + (f" ({kind.upper()} runs)" if len(kinds) > 1 else "") for kind in kinds)
    return [
        ("Data", "Synthetic random inputs drawn once from a fixed seed and moved to the device before timing "
                 "starts; data loading is not measured."),
        ("Warm-up", f"{counts(warmups, 'step')} per configuration, timed but excluded from every figure."),
        ("Measurement", f"{counts(repeats, 'repeat')} of {counts(steps, 'step')}, timed with "
                        f"{clocks or 'the device clock'}; each configuration runs in its own process."),
        ("Throughput", "Per repeat: samples / sum of its step times (samples = batch size \u00d7 GPUs). Reported: "
                       "the mean over repeats; CV is their coefficient of variation (warning above 5%)."),
        ("Compilation", "torch.compile time is measured separately and never counted in throughput."),
        ("Published results", "Median per GPU of published figures with the same workload, sequence length, "
                              "precision and GPU count; each source is named under the chart."),
    ]
