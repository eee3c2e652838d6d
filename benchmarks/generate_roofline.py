"""How far is decode from the memory-bandwidth roofline, and what does the generate harness cost?

Run it with `PYTHONPATH=src python benchmarks/generate_roofline.py` (CPU: the tiny and the 1B shapes, about
3 minutes on 2 cores), or e.g. `... --shapes llama-3.1-8b --device cuda --precision bf16 --prompt-len 512
--new-tokens 128` on a GPU (there the catalogue bandwidth is the roofline; the copy is measured as well).

1. Bandwidth ceiling. On a CPU there is no catalogue figure, so the script measures one: `dst.copy_(src)` of a
   large float32 tensor (default 512 MiB, far beyond the caches), bytes read + bytes written over the best and
   the median of `--copy-repeats` copies, with torch's thread count as the decode uses it.
2. Decode against the roofline. For each shape the generate scenario's own `Generation` (static KV cache, SDPA,
   greedy) runs `--repeats` timed generations; a decode step must read every weight once plus the KV cache up to
   its context (`scenarios.generate.decode_bytes`), so bytes per step / ceiling is the fastest a step can be.
   Printed: achieved bytes/s and its fraction of the copy bandwidth (and of the catalogue's on a known GPU), the
   roofline time per token and the measured one.
3. Harness cost. The same model and cache three ways, interleaved for `--rounds` rounds (order flipped every
   round so that drifting load hits all alike): the harness (`Generation.once`: a clock read or CUDA event at
   every step), a bare loop of the same calls timed once around the whole generation, and transformers'
   `model.generate(max_new_tokens=N, min_new_tokens=N, do_sample=False, cache_implementation="static")`. Each
   round's output tokens/s (batch x new tokens / end-to-end time); printed: the harness / bare and harness /
   generate ratios (median of rounds and ratio of the totals). Goal: harness >= 0.98 of the bare loop (the clock
   costs nothing measurable), and not slower than `model.generate`.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time


def copy_bandwidth(megabytes: int, repeats: int, device: str) -> tuple[float, float]:
    """(best, median) bytes/s of `dst.copy_(src)`: each copy reads and writes `megabytes` MiB."""
    import torch

    n = megabytes * 2**20 // 4
    src = torch.randn(n, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)  # first touch: page faults are not bandwidth
    times = []
    for _ in range(repeats):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start = time.perf_counter()
        dst.copy_(src)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    moved = 2 * n * 4
    return moved / min(times), moved / statistics.median(times)


def clock_cost_s(device: str, n: int = 100_000) -> float:
    """What the harness adds per decode step: one `clock.mark` (median of 5 x `n` marks, seconds each). On a CPU a
    `perf_counter` read; on CUDA an event record (its host-side cost; the GPU work is not delayed by it)."""
    import torch

    from dlbench.measurement.clocks import clock_for

    clock = clock_for(torch.device(device))
    costs = []
    for _ in range(5):
        marks = clock.marks(n)
        start = time.perf_counter()
        for i in range(n):
            clock.mark(marks, i)
        costs.append((time.perf_counter() - start) / n)
    clock.synchronize()
    return statistics.median(costs)


def build(shape_name: str, flavour: str, precision: str, device: str, batch: int, prompt_len: int,
          new_tokens: int, compile_mode: str):
    """The generate scenario's model, prompt and `Generation` for one shape, as `dlbench run` builds them."""
    import torch

    from dlbench.measurement.config import RunConfig
    from dlbench.measurement.inference_precision import apply_inference_precision, compute_dtype
    from dlbench.scenarios.generate import Generation, default_dtype
    from dlbench.workloads import registry

    workload = registry.get(shape_name)
    config = RunConfig(shape_name, precision=precision, flavour=flavour, batch_size=batch, device=device,
                       scenario="generate", prompt_len=prompt_len, new_tokens=new_tokens)
    torch.manual_seed(0)
    with torch.device(device), default_dtype(compute_dtype(precision)):
        model = workload.build_model(config)
    model, _ = apply_inference_precision(model, precision, device)
    (prompt,) = workload.make_inputs(config, batch, torch.Generator().manual_seed(0))
    prompt = prompt.to(device)
    gen = Generation(model, model.config, prompt, new_tokens, device, compile_mode)
    return workload.shape(config), model, prompt, gen


def bare(gen, clock) -> float:
    """The same generation as `gen.once`, timed once around it (no per-step clock)."""
    gen.cache.reset()
    clock.synchronize()
    start = time.perf_counter()
    token = gen.prefill()
    for i in range(gen.steps):
        if gen.begin is not None:
            gen.begin()
        token = gen.decode(token, gen.positions[i])
        if gen.cuda_graphs:
            token = token.clone()
    clock.synchronize()
    return time.perf_counter() - start


def hf_generate(model, prompt, new_tokens: int, clock) -> float:
    """transformers' own greedy loop with a static cache, timed end to end."""
    clock.synchronize()
    start = time.perf_counter()
    model.generate(prompt, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                   cache_implementation="static", pad_token_id=0)
    clock.synchronize()
    return time.perf_counter() - start


def one_shape(args, name: str, flavour: str, prompt_len: int, new_tokens: int, ceiling: float,
              catalogue_bw: float | None) -> dict:
    import torch

    from dlbench.measurement.clocks import clock_for
    from dlbench.scenarios.generate import decode_bytes, weight_bytes_read

    shape, model, prompt, gen = build(name, flavour, args.precision, args.device, args.batch, prompt_len,
                                      new_tokens, args.compile)
    clock = clock_for(torch.device(args.device))
    label = f"{shape.name} ({args.precision}, batch {args.batch}, pp{prompt_len} tg{new_tokens})"
    with torch.inference_mode():
        _, read = weight_bytes_read(model)
        element = model.get_input_embeddings().weight.element_size()
        from dlbench.catalog.models import kv_cache_bytes

        kv = kv_cache_bytes(shape, tokens=1, batch=args.batch, bytes_per_elem=element)
        for _ in range(args.warmup):
            gen.once(clock)
        decode_s, ttfts = [], []
        for _ in range(args.repeats):
            ttft, steps, _ = gen.once(clock)
            ttfts.append(ttft)
            decode_s.append(sum(steps))
        moved = decode_bytes(read, kv, prompt_len, gen.steps)
        achieved = [moved / t for t in decode_s]
        per_step_bytes = moved / gen.steps
        print(f"\n== {label}: {read / 1e6:,.1f} MB of weights read per step, KV {kv / 1e3:,.1f} kB per position")
        print(f"   decode: {statistics.median([t / gen.steps for t in decode_s]) * 1e3:8.3f} ms/token measured, "
              f"{per_step_bytes / ceiling * 1e3:8.3f} ms/token at the copy bandwidth (roofline)")
        best = max(achieved)
        print(f"   achieved {statistics.median(achieved) / 1e9:7.2f} GB/s median, {best / 1e9:7.2f} GB/s best: "
              f"{statistics.median(achieved) / ceiling:6.1%} / {best / ceiling:6.1%} of the measured copy bandwidth"
              + (f", {statistics.median(achieved) / catalogue_bw:6.1%} of the catalogue's" if catalogue_bw else ""))

        harness, plain, hf = [], [], []
        for r in range(args.rounds):
            order = [("harness", None), ("bare", None), ("generate", None)]
            if r % 2:
                order.reverse()
            for kind, _ in order:
                if kind == "harness":
                    ttft, steps, _ = gen.once(clock)
                    harness.append(ttft + sum(steps))
                elif kind == "bare":
                    plain.append(bare(gen, clock))
                else:
                    hf.append(hf_generate(model, prompt, new_tokens, clock))
        tokens = args.batch * new_tokens
        rates = {k: [tokens / t for t in v] for k, v in (("harness", harness), ("bare", plain), ("generate", hf))}
        per_round_bare = statistics.median([h / b for h, b in zip(rates["harness"], rates["bare"], strict=True)])
        per_round_hf = statistics.median([h / g for h, g in zip(rates["harness"], rates["generate"], strict=True)])
        print(f"   output tokens/s over {args.rounds} rounds (median): harness {statistics.median(rates['harness']):.2f}, "
              f"bare loop {statistics.median(rates['bare']):.2f}, model.generate {statistics.median(rates['generate']):.2f}")
        print(f"   harness / bare loop: {per_round_bare:.4f} (median of rounds), {sum(plain) / sum(harness):.4f} "
              f"(totals); harness / model.generate: {per_round_hf:.4f} (median), {sum(hf) / sum(harness):.4f} (totals)")
    del model, gen
    return {"shape": shape.name, "achieved": statistics.median(achieved), "ceiling": ceiling,
            "harness_vs_bare": per_round_bare, "harness_vs_generate": per_round_hf}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--compile", default="off", help="compile mode of the decode step (off, default, ...)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--shapes", default="llama-3.2-1b:tiny,llama-3.2-1b",
                        help="comma-separated NAME or NAME:tiny (default: the 1B shape's tiny flavour, then 1B)")
    parser.add_argument("--prompt-len", type=int, default=None, help="default: 128 tiny, 32 full on a CPU")
    parser.add_argument("--new-tokens", type=int, default=None, help="default: 64 tiny, 8 full on a CPU")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=30, help="harness/bare/generate rounds (tiny flavours)")
    parser.add_argument("--full-rounds", type=int, default=3, help="rounds for full shapes on a CPU (slow)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--copy-mib", type=int, default=512)
    parser.add_argument("--copy-repeats", type=int, default=10)
    args = parser.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {platform.processor() or platform.machine()}, {torch.get_num_threads()} "
          f"torch threads, device {args.device}")
    best, median = copy_bandwidth(args.copy_mib, args.copy_repeats, args.device)
    print(f"copy bandwidth ({args.copy_mib} MiB float32, read + write): best {best / 1e9:.2f} GB/s, "
          f"median {median / 1e9:.2f} GB/s (the CPU roofline below is the best copy)")
    print(f"harness cost per decode step (one clock mark): {clock_cost_s(args.device, 20_000 if args.device != 'cpu' else 100_000) * 1e9:.0f} ns")
    catalogue_bw = None
    if args.device.startswith("cuda"):
        from dlbench.catalog.lookup import lookup

        props = torch.cuda.get_device_properties(torch.device(args.device))
        spec = lookup(props.name, int(props.total_memory))
        catalogue_bw = spec.memory_bandwidth_bytes_per_s if spec else None
        print(f"catalogue bandwidth of {props.name}: "
              f"{catalogue_bw / 1e9:.0f} GB/s" if catalogue_bw else f"{props.name}: not in the catalogue")
    cpu = args.device == "cpu"
    for item in args.shapes.split(","):
        name, _, flavour = item.partition(":")
        flavour = flavour or "full"
        small = flavour == "tiny"
        prompt_len = args.prompt_len or (128 if small or not cpu else 32)
        new_tokens = args.new_tokens or (64 if small or not cpu else 8)
        start = time.perf_counter()
        rounds = args.rounds if small or not cpu else args.full_rounds
        one_shape(argparse.Namespace(**{**vars(args), "rounds": rounds}), name, flavour, prompt_len, new_tokens,
                  best, catalogue_bw)
        print(f"   ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
