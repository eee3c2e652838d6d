"""`dlbench gpus`: list the GPU catalogue; `dlbench gpus show NAME`: every field of one GPU with its sources.

    dlbench gpus --vendor nvidia --min-memory-gb 48 --sort bf16
    dlbench gpus show "NVIDIA H100 80GB HBM3" --json

Never imports torch. Figures are stored in SI units and converted to GB, GB/s and TFLOPS here, for display.
"""

from __future__ import annotations

import math
from typing import Any

import typer

from dlbench.cli._common import console, json_option, print_json
from dlbench.errors import BadInput

GIB = 2**30
MIB = 2**20

# --sort FIELD → (GpuSpec attribute, descending). Numbers sort largest first; names and dates A→Z / oldest first.
SORT_FIELDS: dict[str, tuple[str, bool]] = {
    "name": ("name", False),
    "vendor": ("vendor", False),
    "launch": ("launch_date", False),
    "memory": ("memory_bytes", True),
    "bandwidth": ("memory_bandwidth_bytes_per_s", True),
    "fp32": ("fp32_flops_per_s", True),
    "tf32": ("tf32_tensor_flops_per_s", True),
    "fp16": ("fp16_tensor_flops_per_s", True),
    "bf16": ("bf16_tensor_flops_per_s", True),
    "fp8": ("fp8_tensor_flops_per_s", True),
    "tdp": ("tdp_w", True),
    "price": ("price_usd", True),
}


def _num(value: float | None, scale: float = 1.0, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value / scale:,.{digits}f}"


def _tflops(value: float | None) -> str:
    return _num(value, 1e12, 1)


def _unit(text: str, unit: str) -> str:
    """`text unit`, or just "-" when the figure is unknown (not "- TFLOPS")."""
    return text if text == "-" else f"{text} {unit}"


def select(vendor: str | None, min_memory_gb: float | None, form_factor: str | None, sort: str) -> list[Any]:
    """The catalogue rows passing the filters, sorted; bad filter values raise BadInput."""
    from dlbench.catalog import FORM_FACTORS, all_gpus

    specs = all_gpus()
    if vendor is not None:
        vendors = sorted({spec.vendor for spec in specs})
        if vendor.lower() not in {v.lower() for v in vendors}:
            raise BadInput(f"unknown vendor {vendor!r}; expected one of: {', '.join(vendors)}")
        specs = [spec for spec in specs if spec.vendor.lower() == vendor.lower()]
    if min_memory_gb is not None:
        if not math.isfinite(min_memory_gb) or min_memory_gb < 0:
            raise BadInput(f"--min-memory-gb must be a finite number, zero or more, got {min_memory_gb:g}")
        specs = [spec for spec in specs if spec.memory_bytes is not None
                 and spec.memory_bytes >= min_memory_gb * GIB]
    if form_factor is not None:
        if form_factor not in FORM_FACTORS:
            raise BadInput(f"unknown form factor {form_factor!r}; expected one of: {', '.join(FORM_FACTORS)}")
        specs = [spec for spec in specs if form_factor in spec.suitable_for]
    if sort not in SORT_FIELDS:
        raise BadInput(f"unknown sort field {sort!r}; expected one of: {', '.join(SORT_FIELDS)}")
    attribute, descending = SORT_FIELDS[sort]
    known = [spec for spec in specs if getattr(spec, attribute) is not None]
    unknown = [spec for spec in specs if getattr(spec, attribute) is None]
    known.sort(key=lambda spec: getattr(spec, attribute), reverse=descending)
    return known + unknown  # unknown values last, whatever the direction


def _list_table(specs: list[Any]):
    from rich import box
    from rich.table import Table

    table = Table(
        title=f"{len(specs)} GPUs",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        caption="GB/s: memory bandwidth. FP16, BF16: dense tensor TFLOPS with FP32 accumulation (half rate on "
        "GeForce). USD: launch or typical price (`dlbench gpus show NAME` gives its date and every source).",
    )
    # Names wrap rather than end in "…" in an 80-column terminal ("Blackw…", "RTX PRO Blackwe…").
    table.add_column("GPU", min_width=12, overflow="fold")
    table.add_column("Arch", min_width=len("Blackwell"), overflow="fold")
    table.add_column("Memory", min_width=len("180 GB"))
    for header in ("GB/s", "FP16", "BF16", "TDP W", "USD"):  # numbers are never cut
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    for spec in specs:
        memory = "-" if spec.memory_bytes is None else f"{spec.memory_bytes / GIB:g} GB {spec.memory_type or ''}"
        table.add_row(
            spec.name, spec.architecture or "-", memory.strip(), _num(spec.memory_bandwidth_bytes_per_s, 1e9),
            _tflops(spec.fp16_tensor_flops_per_s), _tflops(spec.bf16_tensor_flops_per_s), _num(spec.tdp_w),
            _num(spec.price_usd),
        )
    return table


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _show_rows(spec: Any) -> list[tuple[str, str]]:
    half = spec.half_rate_fp32_accumulate
    return [
        ("Name", spec.name),
        ("Vendor", spec.vendor),
        ("Aliases", "; ".join(spec.aliases) or "-"),
        ("Architecture", spec.architecture or "-"),
        ("Compute capability", spec.compute_capability or "-"),
        ("Launch", spec.launch_date or "-"),
        ("Suitable for", ", ".join(spec.suitable_for) or "-"),
        ("Memory", "-" if spec.memory_bytes is None else f"{spec.memory_bytes / GIB:g} GB {spec.memory_type or ''}"),
        ("Memory bandwidth", _unit(_num(spec.memory_bandwidth_bytes_per_s, 1e9, 1), "GB/s")),
        ("CUDA cores / stream processors", _num(spec.shader_cores)),
        ("Tensor / matrix cores", _num(spec.tensor_cores)),
        ("L2 cache", "-" if spec.l2_cache_bytes is None else f"{spec.l2_cache_bytes / MIB:g} MB"),
        ("FP32 (non-tensor)", _unit(_tflops(spec.fp32_flops_per_s), "TFLOPS")),
        ("TF32 tensor (dense)", _unit(_tflops(spec.tf32_tensor_flops_per_s), "TFLOPS")),
        ("FP16 tensor (dense, FP32 accumulate)", _unit(_tflops(spec.fp16_tensor_flops_per_s), "TFLOPS")),
        ("BF16 tensor (dense)", _unit(_tflops(spec.bf16_tensor_flops_per_s), "TFLOPS")),
        ("FP8 tensor (dense)", _unit(_tflops(spec.fp8_tensor_flops_per_s), "TFLOPS")),
        ("FP16 tensor (dense, FP16 accumulate)", _unit(_tflops(spec.fp16_fp16acc_tensor_flops_per_s), "TFLOPS")),
        ("Half-rate FP32 accumulate (GeForce)", _yes_no(half)),
        ("TDP", _unit(_num(spec.tdp_w), "W")),
        ("PCIe generation", _num(spec.pcie_gen)),
        ("GPU interconnect", spec.interconnect or "-"),
        ("PCIe peer-to-peer", _yes_no(spec.p2p)),
        ("Price", "-" if spec.price_usd is None
         else f"{_num(spec.price_usd)} USD ({spec.price_kind or 'price'}, {spec.price_date or 'date unknown'})"),
        ("Sources", spec.sources),
        ("Notes", spec.notes or "-"),
    ]


def register(app: typer.Typer) -> None:
    """Add `dlbench gpus` and `dlbench gpus show` to `app`."""
    gpus_app = typer.Typer(
        help="List the GPU catalogue (specifications with sources), or show one GPU.",
        invoke_without_command=True,
        no_args_is_help=False,
    )

    @gpus_app.callback(invoke_without_command=True)
    def gpus(
        ctx: typer.Context,
        vendor: str = typer.Option(None, "--vendor", help="Only this vendor (NVIDIA or AMD)."),
        min_memory_gb: float = typer.Option(None, "--min-memory-gb", help="Only GPUs with at least this much memory (GB)."),
        form_factor: str = typer.Option(None, "--form-factor", help="Only GPUs suitable for: workstation or server."),
        sort: str = typer.Option("name", "--sort", help=f"Sort by one of: {', '.join(SORT_FIELDS)} (numbers largest first, launch oldest first)."),
        as_json: bool = json_option(),
    ) -> None:
        """List the GPU catalogue: memory, bandwidth, dense FP16/BF16 tensor TFLOPS, TDP and price."""
        if ctx.invoked_subcommand is not None:
            return
        specs = select(vendor, min_memory_gb, form_factor, sort)
        if as_json:
            print_json([spec.to_dict() for spec in specs])
            return
        if not specs:
            console().print("No GPU in the catalogue matches these filters.")
            return
        out = console()
        out.print(_list_table(specs))
        out.print("Data: vendor datasheets, AIME, Epoch AI (CC BY 4.0); see `dlbench gpus show NAME`.")

    @gpus_app.command("show")
    def show(
        name: str = typer.Argument(..., help="GPU name: canonical, alias or a torch.cuda.get_device_name() string."),
        as_json: bool = json_option(),
    ) -> None:
        """Every catalogue field of one GPU, with its sources."""
        from dlbench.catalog import resolve

        spec = resolve(name)
        if as_json:
            print_json(spec.to_dict())
            return
        from rich.table import Table

        table = Table(title=spec.name, show_header=False)
        table.add_column("field", style="bold")
        table.add_column("value", overflow="fold")
        for field, value in _show_rows(spec):
            table.add_row(field, value)
        console().print(table)

    app.add_typer(gpus_app, name="gpus")
