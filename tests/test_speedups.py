"""analysis/speedups.py's partner rules, shared by `dlbench report` and benchmarks/h100_collect.py."""

from __future__ import annotations

from dlbench.analysis.speedups import compile_baseline, precision_baseline
from report_docs import make_result


def test_compile_baseline_is_the_eager_twin():
    eager = make_result(precision="tf32", batch_size=256, seed=1)
    others = [make_result(precision="tf32", batch_size=128, seed=2),          # another batch
              make_result(precision="amp-fp16", batch_size=256, seed=3),      # another precision
              make_result(precision="tf32", batch_size=256, seq_len=None, world_size=2, seed=4),
              make_result(precision="tf32", batch_size=256, flavour="tiny", seed=5),
              make_result(precision="tf32", batch_size=256, status="oom")]
    compiled = make_result(precision="tf32", compile="default", batch_size=256, seed=6)
    assert compile_baseline(compiled, [*others, eager]) is eager
    assert compile_baseline(compiled, others) is None
    assert compile_baseline(eager, [eager, compiled]) is None  # an eager result has no compile speed-up


def test_precision_baseline_prefers_tf32_then_the_same_batch_then_the_largest():
    amp = make_result(precision="amp-fp16", batch_size=512, seed=1)
    fp32 = make_result(precision="fp32", batch_size=512, seed=2)
    tf32_small, tf32_large = (make_result(precision="tf32", batch_size=b, seed=b) for b in (128, 256))
    tf32_same = make_result(precision="tf32", batch_size=512, seed=3)
    assert precision_baseline(amp, [fp32]) is fp32
    assert precision_baseline(amp, [fp32, tf32_small, tf32_large]) is tf32_large
    assert precision_baseline(amp, [tf32_small, tf32_same, tf32_large]) is tf32_same
    compiled_tf32 = make_result(precision="tf32", compile="default", batch_size=512, seed=4)
    assert precision_baseline(amp, [compiled_tf32]) is None  # compile mode must agree
    assert precision_baseline(tf32_same, [fp32]) is None  # full precision has no AMP speed-up
