"""`torch.compile` bookkeeping: cold Inductor caches, CUDA-graph modes, recompilation and graph-skip counters.

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_measure.py -k compile`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator

# Compiled modes: the first steps include tracing and Inductor code generation/autotuning (step 1) and,
# with CUDA graphs (reduce-overhead, max-autotune), warm-up and graph recording (steps 1-2); step 3 is the
# first replay. All three are charged to compile time.
COMPILE_STEPS = 3

# torch.compile modes that record CUDA graphs on a CUDA device ("max-autotune" sets triton.cudagraphs too).
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")


def uses_cuda_graphs(compile_mode: str, device_type: str) -> bool:
    """Whether `torch.compile(mode=compile_mode)` records CUDA graphs on this device type."""
    return device_type == "cuda" and compile_mode in CUDA_GRAPH_MODES


def step_begin_marker() -> Callable[[], None]:
    """`torch.compiler.cudagraph_mark_step_begin`: tells CUDA graph trees where one iteration begins."""
    import torch

    return torch.compiler.cudagraph_mark_step_begin  # torch >= 2.1


def default_inductor_cache() -> str:
    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir

        return os.path.abspath(default_cache_dir())
    except ImportError:  # older torch: the same default, computed by hand
        import getpass

        return os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")


@contextlib.contextmanager
def compile_cache(enabled: bool, user_cache_dir: str | None = None) -> Iterator[str | None]:
    """Compile with empty Inductor and Triton caches, so `compile_time_s` is what a first run pays.

    Inductor keeps compiled graphs and kernels on disk between processes (`/tmp/torchinductor_<user>`); a
    second run of the same configuration would otherwise report a fraction of the real compile time, and
    compile times would depend on what ran before. A user who chose a `TORCHINDUCTOR_CACHE_DIR` (other than
    the default, which importing TorchDynamo writes into the environment by itself) keeps that cache, and the
    result says so. Yields the flag recorded in `precision_flags["compile_cache"]`.
    """
    if not enabled:
        yield None
        return
    if user_cache_dir and os.path.abspath(user_cache_dir) != default_inductor_cache():
        yield "user TORCHINDUCTOR_CACHE_DIR (may be warm)"
        return
    directory = tempfile.mkdtemp(prefix="dlbench-inductor-")
    keys = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
    saved = {key: os.environ.get(key) for key in keys}
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = directory
    os.environ["TRITON_CACHE_DIR"] = os.path.join(directory, "triton")
    try:
        yield "cold (fresh Inductor and Triton cache directories)"
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(directory, ignore_errors=True)


def compile_counters() -> int | None:
    """TorchDynamo's frame statistics (a change after the compile steps means a recompilation); None if unread."""
    try:
        from torch._dynamo.utils import counters

        return int(sum(counters["stats"].values()))
    except Exception:  # private API: its absence only loses a diagnostic
        return None


def cuda_graph_skips() -> int | None:
    """Graphs Inductor compiled but ran without CUDA graphs (mutated inputs, CPU ops, dynamic shapes...)."""
    try:
        from torch._dynamo.utils import counters

        return int(counters["inductor"]["cudagraph_skips"])
    except Exception:  # private API: its absence only loses a diagnostic
        return None


class CompileWatch:
    """TorchDynamo's counters around one measurement: recompilations after the compile steps, and graphs Inductor
    ran without CUDA graphs. Made before the first compiled step; `compile_done()` after the compile steps,
    `check(warning)` after the steps that must not recompile, `read()` at the end. Never inside a timed loop."""

    def __init__(self, compiled: bool, cuda_graphs: bool) -> None:
        self.enabled = compiled
        self.cuda_graphs = cuda_graphs
        self.skips_before = cuda_graph_skips()
        self.compiles: int | None = None
        self.warnings: list[str] = []

    def compile_done(self) -> None:
        """The compile steps are done: any later change of the frame statistics is a recompilation."""
        self.compiles = compile_counters()

    def check(self, warning: str) -> None:
        """Keep `warning` if torch.compile recompiled since `compile_done()`."""
        after = compile_counters()
        if self.enabled and self.compiles is not None and after != self.compiles:
            self.warnings.append(warning)

    def read(self) -> tuple[list[str], int | None]:
        """The warnings kept, plus one for graphs run without CUDA graphs; and how many those were (None when
        CUDA graphs were not used or the counters could not be read)."""
        skips_after = cuda_graph_skips()
        graph_skips = None
        if self.cuda_graphs and self.skips_before is not None and skips_after is not None:
            graph_skips = skips_after - self.skips_before
            if graph_skips:
                self.warnings.append(f"CUDA graphs skipped for {graph_skips} compiled graph(s): those ran without "
                                     "graphs (TORCH_LOGS=cudagraphs says why)")
        return self.warnings, graph_skips
