"""What every scenario measures with: clocks, seeding, precision, compilation, peak memory, device facts.

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_measure.py tests/test_scenarios.py`.

A scenario (`dlbench.scenarios`) owns its step and its metrics; the pieces here are the ones every kind of
benchmark needs and must do the same way, so that a training number and an inference number are timed alike:
- `clocks`: host, CUDA-event and MPS clocks, `timed_steps` (per-step times without an extra synchronisation);
- `seeding`: one seed for Python, NumPy and torch;
- `precision`: TF32 flags, autocast and GradScaler per precision mode, read back for the result;
- `compile`: `torch.compile` bookkeeping: fresh Inductor caches, recompilation and CUDA-graph counters;
- `memory`: peak allocated / reserved bytes and which steps they cover;
- `device`: resolving `auto` / `cuda` and the facts the planner knows about the accelerators;
- `capabilities`: whether this machine can run a device, precision and compile mode, and why not;
- `flops`: counting FLOPs on the meta device;
- `telemetry`: the GPU sampler for a device (never costs a measurement);
- `thermal`: the wait for a cool GPU before a configuration.
Nothing here imports torch at import time.
"""
