"""Matching a workload name the user typed against a list of known names: `match_workload("RESNET50", names)`.

Shared by `dlbench run` (`runner.plan.check_workloads`, against the registry) and `dlbench estimate` / `dlbench
advise` (`analysis.points.check_workload`, against the workloads with figures), so that every command accepts any
case and says the same about a typo. Imports nothing but the standard library and `dlbench.errors`.
"""

from __future__ import annotations

import difflib

from dlbench.errors import BadInput


def match_workload(name: str, known: list[str]) -> str:
    """The name in `known` that `name` is, regardless of case and surrounding spaces (`RESNET50` is resnet50).

    Otherwise BadInput listing `known`, with the name probably meant: `X-tiny` is `-w X --tiny`, a prefix or a
    typo gets its close matches; an empty name says so.
    """
    by_lower = {k.lower(): k for k in known}
    wanted = name.strip().lower()
    if wanted in by_lower:
        return by_lower[wanted]
    if not wanted:
        raise BadInput(f"empty workload name (choose from: {', '.join(known)})")
    base = wanted.removesuffix("-tiny").removesuffix("_tiny")
    if base != wanted and base in by_lower:
        hint = f"; the tiny flavour is an option: use -w {by_lower[base]} --tiny"
    else:
        close = [k for k in known if k.lower().startswith(wanted)] or sorted(
            by_lower[m] for m in difflib.get_close_matches(wanted, by_lower, n=3, cutoff=0.6))
        hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise BadInput(f"unknown workload {name!r}{hint} (choose from: {', '.join(known)})")
