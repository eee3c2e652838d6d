"""Compare two result documents configuration by configuration: `dlbench compare A B`.

For every configuration present in both documents (same scenario, workload, precision, compile mode, batch size,
sequence length, GPU count and flavour) this gives the throughput ratio B/A, the percent change and a significance test
on the raw measured step times of all repeats. A change is called significant when both Welch's t-test (what
pyperf uses) and the Mann-Whitney U test (robust to the long right tail step times have) give p < alpha.

Like pyperf's checked metadata, differences between the two environments that change throughput (GPU, GPU
count, driver, CUDA, cuDNN, torch, power limit) are reported as warnings: such a comparison measures the
change of environment as much as anything else.

Works on plain dicts (result documents as issue 2 defines them); nothing here touches the database or torch.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from dlbench.analysis.configuration import config_fields, config_key, config_label
from dlbench.schema import metrics

DEFAULT_ALPHA = 0.05

# Environment facts that change training throughput, with the label used in warnings (and by `dlbench fleet`,
# which names a node whose versions differ from the fleet's majority).
ENV_KEYS: tuple[tuple[str, str], ...] = (
    ("driver_version", "NVIDIA driver"),
    ("cuda_version", "CUDA"),
    ("cudnn_version", "cuDNN"),
    ("torch_version", "torch"),
    ("hip_version", "ROCm (HIP)"),  # ROCm builds: the HIP runtime and MIOpen in place of CUDA and cuDNN
    ("miopen_version", "MIOpen"),
)


measured_step_times = metrics.measured_step_times  # all measured step times of a result, repeats concatenated


class Reference:
    """A sample that many others are tested against (`dlbench fleet`: every slow node against the pooled step times
    of its peers), sorted and summed up once: `significance(reference, times)` then costs O(n log N) for n times
    against N, where ranking the union again for every node made a fleet of thousands of nodes quadratic. The
    p-values are SciPy's (the same formulas: Welch's t from the two means and variances, Mann-Whitney's normal
    approximation with tie and continuity corrections, which SciPy uses when both samples have more than 8)."""

    def __init__(self, times: Any) -> None:
        import numpy as np

        self.times = np.asarray(times, dtype=float)
        self.sorted = np.sort(self.times)
        _, counts = np.unique(self.sorted, return_counts=True)
        self.tie_term = float(np.sum(counts.astype(float) ** 3 - counts))
        self.mean = float(self.times.mean()) if len(self.times) else math.nan
        self.std = float(self.times.std(ddof=1)) if len(self.times) > 1 else math.nan
        self.constant = bool(len(self.sorted)) and self.sorted[0] == self.sorted[-1]

    def __len__(self) -> int:
        return len(self.times)

    def __iter__(self):
        return iter(self.times.tolist())  # the step times in the order given

    def test(self, times: Any) -> tuple[float, float]:
        """(Welch p, Mann-Whitney p) of `times` (more than 8 of them) against this reference (more than 8)."""
        import numpy as np
        from scipy import special, stats

        b = np.asarray(times, dtype=float)
        na, nb = len(self.times), len(b)
        welch = stats.ttest_ind_from_stats(self.mean, self.std, na, float(b.mean()), float(b.std(ddof=1)), nb,
                                           equal_var=False)
        # Mid-ranks of b's values in the union: those below them on either side, plus half of those equal.
        b_sorted = np.sort(b)
        below_a = np.searchsorted(self.sorted, b, "left")
        equal_a = np.searchsorted(self.sorted, b, "right") - below_a
        below_b = np.searchsorted(b_sorted, b, "left")
        equal_b = np.searchsorted(b_sorted, b, "right") - below_b
        u_b = float(np.sum(below_a + below_b + (equal_a + equal_b + 1) / 2.0)) - nb * (nb + 1) / 2.0
        u = max(u_b, na * nb - u_b)
        # Ties of the union: the reference's own, with each of b's values joining (or starting) a group.
        values, counts_b = np.unique(b_sorted, return_counts=True)
        counts_a = (np.searchsorted(self.sorted, values, "right") - np.searchsorted(self.sorted, values, "left"))
        joined = (counts_a + counts_b).astype(float)
        tie_term = self.tie_term + float(np.sum(joined**3 - joined - (counts_a.astype(float) ** 3 - counts_a)))
        n = na + nb
        s = math.sqrt(na * nb / 12.0 * ((n + 1) - tie_term / (n * (n - 1))))
        z = (u - na * nb / 2.0 - 0.5) / s if s > 0 else math.inf
        mwu_p = min(1.0, max(0.0, 2.0 * float(special.ndtr(-z))))
        return float(welch.pvalue), mwu_p


def significance(a_times: list[float] | Reference, b_times: list[float],
                 alpha: float = DEFAULT_ALPHA) -> dict[str, Any]:
    """Welch's t-test and Mann-Whitney U on two samples of step times (`a_times` may be a `Reference`).

    Returns `welch_p`, `mannwhitney_p`, `significant` (both p < alpha; None when there are too few steps to
    test) and `reason` when no test could be made.
    """
    out: dict[str, Any] = {"welch_p": None, "mannwhitney_p": None, "significant": None, "reason": None}
    if isinstance(a_times, Reference):
        if len(a_times) > 8 and len(b_times) > 8 and not (a_times.constant and _constant(b_times)):
            return _verdict(out, *(_finite_or_none(p) for p in a_times.test(b_times)), alpha)
        a_times = a_times.times.tolist()
    if len(a_times) < 2 or len(b_times) < 2:
        out["reason"] = "fewer than 2 measured steps on one side"
        return out
    from scipy import stats

    if _constant(a_times) and _constant(b_times):
        # Both samples have zero spread: the tests are undefined; equal values are plainly no change.
        same = a_times[0] == b_times[0]
        out.update(welch_p=1.0 if same else 0.0, mannwhitney_p=1.0 if same else 0.0, significant=not same)
        return out
    welch = stats.ttest_ind(a_times, b_times, equal_var=False)
    mwu = stats.mannwhitneyu(a_times, b_times, alternative="two-sided")
    return _verdict(out, _finite_or_none(welch.pvalue), _finite_or_none(mwu.pvalue), alpha)


def _verdict(out: dict[str, Any], welch_p: float | None, mwu_p: float | None, alpha: float) -> dict[str, Any]:
    """`out` with both p-values and whether both tests find a difference at `alpha` (or why they cannot)."""
    out.update(welch_p=welch_p, mannwhitney_p=mwu_p)
    if welch_p is None or mwu_p is None:
        out["reason"] = "the tests are undefined for these step times"
        return out
    out["significant"] = bool(welch_p < alpha and mwu_p < alpha)
    return out


def compare_results(a: dict[str, Any], b: dict[str, Any], alpha: float = DEFAULT_ALPHA,
                    min_change_pct: float = 0.0) -> dict[str, Any]:
    """Compare two results of the same configuration: throughput ratio B/A, percent change, significance.

    As pyperf's `--min-speed`, a change smaller than `min_change_pct` percent is never called significant.
    """
    row: dict[str, Any] = config_fields(a)
    row["label"] = config_label(a)
    row["a_status"], row["b_status"] = a.get("status"), b.get("status")
    a_tput, b_tput = metrics.throughput(a), metrics.throughput(b)
    # `a_samples_per_s`/`b_samples_per_s` hold the scenario's throughput (generate: decode tokens/s), which
    # `metric` and `unit` name; the raw step times tested are that scenario's (offline batches, decode steps).
    row["a_samples_per_s"], row["b_samples_per_s"] = a_tput, b_tput
    row["scenario"] = metrics.scenario(a)
    row["metric"] = metrics.throughput_name(a)
    row["unit"] = metrics.unit(a, row["metric"]) or metrics.unit(b, row["metric"])
    row["a_cv"], row["b_cv"] = a.get("cv"), b.get("cv")
    a_times, b_times = measured_step_times(a), measured_step_times(b)
    row["a_steps"], row["b_steps"] = len(a_times), len(b_times)
    row["a_step_time_median_s"] = _median(a_times)
    row["b_step_time_median_s"] = _median(b_times)
    row.update(ratio=None, change_pct=None, welch_p=None, mannwhitney_p=None, significant=None, reason=None)
    if a.get("status") != "ok" or b.get("status") != "ok":
        bad = [f"{side} is {r.get('status')}" for side, r in (("A", a), ("B", b)) if r.get("status") != "ok"]
        row["reason"] = "not compared: " + ", ".join(bad)
        return row
    if not a_tput or not b_tput:
        row["reason"] = "not compared: throughput missing"
        return row
    row["ratio"] = b_tput / a_tput
    row["change_pct"] = (row["ratio"] - 1.0) * 100.0
    test = significance(a_times, b_times, alpha)
    row.update(welch_p=test["welch_p"], mannwhitney_p=test["mannwhitney_p"], significant=test["significant"],
               reason=test["reason"])
    if row["significant"] and abs(row["change_pct"]) < min_change_pct:
        row["significant"] = False
        row["reason"] = f"change below --min-change {min_change_pct:g}%"
    return row


def compare_documents(a: dict[str, Any], b: dict[str, Any], alpha: float = DEFAULT_ALPHA,
                      min_change_pct: float = 0.0) -> dict[str, Any]:
    """Compare result document B with result document A (the baseline).

    Returns `{"a_run_id", "b_run_id", "alpha", "rows": [...], "only_in_a": [labels], "only_in_b": [labels],
    "warnings": [str]}`; each row has the configuration fields, `label`, `a_samples_per_s`, `b_samples_per_s`,
    `ratio` (B/A), `change_pct`, `welch_p`, `mannwhitney_p`, `significant` and `reason` (why a row could not be
    tested, else None).
    """
    a_by_key = _index(a.get("results") or [])
    b_by_key = _index(b.get("results") or [])
    rows = [compare_results(a_by_key[k], b_by_key[k], alpha, min_change_pct) for k in a_by_key if k in b_by_key]
    same = ["A and B are the same run: nothing can differ"] if a.get("run_id") and a.get("run_id") == b.get(
        "run_id") else []
    return {
        "a_run_id": a.get("run_id"),
        "b_run_id": b.get("run_id"),
        "alpha": alpha,
        "min_change_pct": min_change_pct,
        "test": "significant when Welch's t-test and Mann-Whitney U both give p < alpha on the raw step times",
        "rows": rows,
        "only_in_a": [config_label(r) for k, r in a_by_key.items() if k not in b_by_key],
        "only_in_b": [config_label(r) for k, r in b_by_key.items() if k not in a_by_key],
        "warnings": same + environment_warnings(a.get("environment") or {}, b.get("environment") or {})
        + _power_limit_warnings(a, b) + _noise_warnings(rows),
    }


def environment_warnings(env_a: dict[str, Any], env_b: dict[str, Any]) -> list[str]:
    """One line per environment fact that differs and changes throughput (as pyperf warns on metadata)."""
    warnings: list[str] = []
    gpus_a, gpus_b = _gpu_names(env_a), _gpu_names(env_b)
    if gpus_a != gpus_b:
        if len(gpus_a) != len(gpus_b):
            warnings.append(f"GPU count differs: A has {len(gpus_a)}, B has {len(gpus_b)}")
        if sorted(set(gpus_a)) != sorted(set(gpus_b)):
            warnings.append(f"GPU differs: A {_join(gpus_a)}, B {_join(gpus_b)}")
    for key, label in ENV_KEYS:
        va, vb = env_a.get(key), env_b.get(key)
        if va != vb:
            warnings.append(f"{label} version differs: A {_show(va)}, B {_show(vb)}")
    # The model libraries recorded beside torch (`package_versions`: torchvision's ResNet, transformers' BERT,
    # Triton for Inductor). A document written before they were recorded has none: nothing to compare.
    packages_a, packages_b = env_a.get("package_versions"), env_b.get("package_versions")
    if isinstance(packages_a, dict) and isinstance(packages_b, dict):
        def show(packages: dict[str, Any], name: str) -> str:
            if name not in packages:
                return "not recorded"
            return "not installed" if packages[name] is None else str(packages[name])

        for name in dict.fromkeys([*packages_a, *packages_b]):
            if packages_a.get(name) != packages_b.get(name) or (name in packages_a) != (name in packages_b):
                warnings.append(f"{name} version differs: A {show(packages_a, name)}, B {show(packages_b, name)}")
    return warnings


def power_limits_w(document: dict[str, Any]) -> list[float]:
    """The distinct GPU power limits (W) a document records, sorted; empty when it records none.

    Looked for in the environment (`power_limit_w` per GPU or overall) and in each result's telemetry block,
    where the NVML sampler stores the limit in force while the configuration ran.
    """
    env = document.get("environment") or {}
    found = [g.get("power_limit_w") for g in env.get("gpus") or [] if isinstance(g, dict)]
    found.append(env.get("power_limit_w"))
    for result in document.get("results") or []:
        telemetry = result.get("telemetry")
        if isinstance(telemetry, dict):
            found.append(telemetry.get("power_limit_w"))
    return sorted({float(v) for v in found if isinstance(v, (int, float))})


def _power_limit_warnings(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    pa, pb = power_limits_w(a), power_limits_w(b)
    if pa and pb and pa != pb:
        return [f"GPU power limit differs: A {_watts(pa)}, B {_watts(pb)}"]
    if bool(pa) != bool(pb):
        return [f"GPU power limit recorded for only one run: A {_watts(pa)}, B {_watts(pb)}"]
    return []


def _noise_warnings(rows: list[dict[str, Any]]) -> list[str]:
    """One line per configuration whose throughput varies by more than CV_WARN (5%) across repeats in A, B or
    both."""
    # Imported here: analysis.stats loads numpy, and `dlbench --help` imports this module.
    from dlbench.analysis.stats import CV_WARN

    out = []
    for row in rows:
        noisy = [f"{side.upper()} {row[f'{side}_cv'] * 100:.1f}%" for side in ("a", "b")
                 if row.get(f"{side}_cv") is not None and row[f"{side}_cv"] > CV_WARN]
        if noisy:
            out.append(f"{row['label']}: noisy (CV across repeats {', '.join(noisy)}; above {CV_WARN:.0%})")
    return out


def _index(results: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    # When a document holds the same configuration twice, the last one wins (it is the re-run).
    return {config_key(r): r for r in results}


def _gpu_names(env: dict[str, Any]) -> list[str]:
    return [str(g.get("name")) for g in env.get("gpus") or [] if isinstance(g, dict)]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _constant(values: list[float]) -> bool:
    return all(v == values[0] for v in values)


def _finite_or_none(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _join(names: list[str]) -> str:
    return ", ".join(names) if names else "none"


def _show(value: Any) -> str:
    return "unknown" if value is None else str(value)


def _watts(values: list[float]) -> str:
    return ", ".join(f"{v:g} W" for v in values) or "unknown"
