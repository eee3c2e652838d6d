"""How much does dlbench's measurement cost? dlbench's `measure()` against a bare training loop, interleaved.

Run it with `PYTHONPATH=src python benchmarks/harness_overhead.py` (CPU, tiny ResNet, about a minute), or on a
GPU: `PYTHONPATH=src python benchmarks/harness_overhead.py --device cuda --flavour full --precision amp-fp16`.

Both sides train the same workload (same model code, loss, batch, optimizer and precision) in this one process.
The bare loop is what one would write by hand: warm up, synchronise, read the clock, run the steps,
synchronise, read the clock. dlbench's side is `scenarios.measure()` (the train scenario) with one repeat (per-step CUDA events or clock
reads, progress callback). The two alternate for `--rounds` rounds, the order flipping each round so that a
slow drift (heat, other load) hits both equally. Printed: each side's throughput per round, the mean
ratio dlbench / bare, and the ratio of the sums. Target: >= 0.98.

On a shared or noisy machine round-to-round noise can exceed the harness cost by far, so the script also
measures that cost directly: the extra time per step of `measure()` over a bare loop when the step itself
is a one-parameter no-op (median of 5 x 2000 steps), and what fraction it is of the workload's step; on a
CPU it also compares the process CPU time of the measured steps, which other processes barely disturb.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time


def bare_loop(config, workload, cpu_times: list | None = None) -> float:
    """Samples/s of a hand-written training loop (the reference): no per-step timing, no callbacks.

    `cpu_times`, if given, receives the process CPU seconds of the measured steps.
    """
    import torch

    from dlbench.scenarios.train import build_optimizer, training_batch, with_loss

    device = torch.device("cuda" if config.device == "cuda" else config.device)
    torch.manual_seed(config.seed)
    with torch.device(device):
        model = workload.build_model(config)
    inputs, targets = training_batch(workload, config, config.batch_size, torch.Generator().manual_seed(config.seed))
    model, batch, _ = workload.to_device(model, inputs + targets, device)
    model = with_loss(workload, model, len(inputs))  # forward(*inputs, *targets) -> loss, as dlbench trains
    model.train()
    optimizer, _ = build_optimizer(workload.optimizer, model.parameters(), device)
    dtype = {"amp-fp16": torch.float16, "amp-bf16": torch.bfloat16}.get(config.precision)
    scaler = torch.amp.GradScaler(device.type) if config.precision == "amp-fp16" else None

    def step():
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = model(*batch)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        optimizer.zero_grad(set_to_none=True)

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elif device.type == "mps":
            torch.mps.synchronize()

    for _ in range(config.warmup_steps):
        step()
    synchronize()
    cpu_start, start = time.process_time(), time.perf_counter()
    for _ in range(config.steps):
        step()
    synchronize()
    elapsed = time.perf_counter() - start
    if cpu_times is not None:
        cpu_times.append(time.process_time() - cpu_start)
    return config.batch_size * config.steps / elapsed


class _NoopWorkload:
    """A one-parameter model: a step is almost nothing but the harness around it."""

    @staticmethod
    def create():
        from dlbench.workloads.base import Workload

        class Noop(Workload):
            name = "harness-noop"
            sample_unit = "samples"
            loss = "mean"  # the output stands for the loss: no targets

            def build_model(self, config):
                import torch

                class Tiny(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.weight = torch.nn.Parameter(torch.ones(1))

                    def forward(self, x):
                        return (self.weight * x).sum()

                return Tiny()

            def make_inputs(self, config, batch_size, generator, device="cpu"):
                import torch

                return (torch.ones(batch_size, device=device),)

        return Noop()


def harness_cost_per_step(device: str, steps: int, rounds: int) -> float:
    """Seconds the harness adds per step: dlbench vs bare on a step that does (almost) nothing."""
    from dataclasses import replace

    from dlbench.measurement.config import RunConfig
    from dlbench.workloads import registry

    workload = registry.register(_NoopWorkload.create())
    config = RunConfig(workload.name, batch_size=1, device=device, warmup_steps=50, steps=steps, repeats=1)
    deltas = []
    for r in range(rounds):
        ours = 1 / dlbench_loop(replace(config, seed=r))
        bare = 1 / bare_loop(config, workload)
        deltas.append(ours - bare)
    return statistics.median(deltas)


def dlbench_loop(config, cpu_times: list | None = None) -> float:
    """Samples/s as dlbench reports it for one repeat.

    `cpu_times`, if given, receives the process CPU seconds between measure()'s `sync()` calls, which
    bracket the measured steps.
    """
    from dlbench.analysis.stats import summarize
    from dlbench.scenarios import measure

    marks: list[float] = []
    result = measure(
        config, progress=lambda phase, done, total: None, sync=lambda: marks.append(time.process_time())
    )
    if cpu_times is not None:
        cpu_times.append(marks[1] - marks[0])
    return summarize([r["step_times_s"] for r in result["repeats"]], config.batch_size)["samples_per_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or mps")
    parser.add_argument("--workload", default="resnet50", help="registered workload name")
    parser.add_argument("--flavour", default="tiny", choices=("tiny", "full"), help="model size")
    parser.add_argument("--precision", default="fp32", help="fp32, tf32, amp-fp16 or amp-bf16")
    parser.add_argument("--batch-size", type=int, default=None, help="per-device batch (default: workload's)")
    parser.add_argument("--steps", type=int, default=30, help="measured steps per round and side")
    parser.add_argument("--warmup", type=int, default=5, help="warm-up steps per round and side")
    parser.add_argument("--rounds", type=int, default=6, help="alternations of the two sides")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args()

    import torch

    from dlbench.measurement.config import RunConfig
    from dlbench.measurement.device import resolve_device
    from dlbench.workloads import registry

    if args.threads:
        torch.set_num_threads(args.threads)
    workload = registry.get(args.workload)
    device = resolve_device(args.device)
    memory = torch.cuda.get_device_properties(device).total_memory if device.startswith("cuda") else None
    batch = args.batch_size or workload.default_batch_size(memory, args.flavour)
    config = RunConfig(
        args.workload,
        precision=args.precision,
        batch_size=batch,
        device=device,
        warmup_steps=args.warmup,
        steps=args.steps,
        repeats=1,
        flavour=args.flavour,
    )
    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else platform.processor() or "cpu"
    print(
        f"{config.label} on {device} ({name}), torch {torch.__version__}, {torch.get_num_threads()} CPU threads"
    )
    print(
        f"{args.rounds} rounds x ({args.warmup} warm-up + {args.steps} measured steps) per side, order alternating"
    )

    ours, bare, ours_cpu, bare_cpu = [], [], [], []
    for r in range(args.rounds):
        sides = [
            ("dlbench", dlbench_loop, (config, ours_cpu)),
            ("bare", bare_loop, (config, workload, bare_cpu)),
        ]
        if r % 2:
            sides.reverse()
        rates = {label: fn(*fn_args) for label, fn, fn_args in sides}
        ours.append(rates["dlbench"])
        bare.append(rates["bare"])
        print(
            f"round {r + 1}: dlbench {rates['dlbench']:.2f} {workload.sample_unit}/s, "
            f"bare {rates['bare']:.2f}/s, ratio {rates['dlbench'] / rates['bare']:.4f}"
        )
    cost_s = harness_cost_per_step(device, steps=2000, rounds=5)
    ratios = [a / b for a, b in zip(ours, bare, strict=True)]
    print(f"mean dlbench {statistics.fmean(ours):.2f}/s, mean bare {statistics.fmean(bare):.2f}/s")
    print(
        f"ratio dlbench/bare: mean of rounds {statistics.fmean(ratios):.4f} "
        f"(median {statistics.median(ratios):.4f}), of means {statistics.fmean(ours) / statistics.fmean(bare):.4f}"
    )
    if not device.startswith("cuda"):
        # On a host device the CPU time of this process is the work itself, far less disturbed by other load.
        print(
            f"ratio by process CPU time of the measured steps (bare / dlbench): "
            f"{statistics.fmean(bare_cpu) / statistics.fmean(ours_cpu):.4f} "
            f"(median of rounds {statistics.median(b / o for b, o in zip(bare_cpu, ours_cpu, strict=True)):.4f})"
        )
    step_s = batch / statistics.median(bare)
    print(
        f"harness cost per step (no-op step, median of 5 x 2000 steps): {cost_s * 1e6:.1f} us = "
        f"{cost_s / step_s:.3%} of this workload's {step_s * 1e3:.1f} ms step -> expected ratio {step_s / (step_s + cost_s):.4f}"
    )


if __name__ == "__main__":
    main()
