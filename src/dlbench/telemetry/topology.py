"""GPU interconnect topology from NVML: `dlbench comm --gpus 2` prints it under the bandwidth table.

Multi-GPU results are explained by how the GPUs are connected (seed 000): whether two GPUs can reach each other's
memory directly (peer-to-peer), over which path (NVLink, one PCIe switch, the CPU's host bridge, across CPU
sockets), and at which PCIe generation and width each GPU's link runs right now and at most. `collect()` reads
these facts through nvidia-ml-py (imported lazily); on a machine without NVIDIA GPUs or NVML it returns
`{"available": False, "reason": ...}`. Pass a fake module as `nvml` in tests.
"""

from __future__ import annotations

from typing import Any

# pynvml spells NVML_P2P_CAPS_INDEX_READ with a trailing comma (a tuple), so the plain value is used here:
# nvmlGpuP2PCapsIndex_t NVML_P2P_CAPS_INDEX_READ = 0, NVML_P2P_CAPS_INDEX_NVLINK = 2 (nvml.h).
P2P_CAPS_READ = 0
P2P_CAPS_NVLINK = 2
P2P_STATUS_OK = 0
P2P_STATUS_NAMES = {
    0: "ok", 1: "chipset not supported", 2: "GPU not supported", 3: "IOH topology not supported",
    4: "disabled by registry key", 5: "not supported", 6: "unknown",
}
# nvmlGpuTopologyLevel_t, with the labels `nvidia-smi topo -m` uses.
TOPOLOGY_LEVELS = {
    0: ("internal", "same board"),
    10: ("single", "PIX: one PCIe switch"),
    20: ("multiple", "PXB: several PCIe switches"),
    30: ("hostbridge", "PHB: through the CPU's PCIe host bridge"),
    40: ("node", "NODE: across host bridges within one NUMA node"),
    50: ("system", "SYS: across CPU sockets (QPI/UPI)"),
}
NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS is 18 on Hopper-era drivers; newer headers allow more


def _nvml():
    import pynvml

    return pynvml


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _safe(fn, *args) -> Any:
    """Call an NVML query; None when the GPU or driver does not support it."""
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - NVMLError_NotSupported and friends: the fact is unknown, not an error
        return None


def collect(nvml: Any = None, indices: list[int] | None = None) -> dict[str, Any]:
    """Topology of the visible NVIDIA GPUs (or of `indices`): per-GPU PCIe links and NVLinks, per-pair P2P."""
    if nvml is None:
        try:
            nvml = _nvml()
        except ImportError:
            return {"available": False, "reason": "nvidia-ml-py is not installed"}
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no driver, no GPU, or NVML library missing
        return {"available": False, "reason": f"NVML unavailable: {_text(exc) or type(exc).__name__}"}
    try:
        count = nvml.nvmlDeviceGetCount()
        chosen = list(range(count)) if indices is None else [i for i in indices if 0 <= i < count]
        handles = {i: nvml.nvmlDeviceGetHandleByIndex(i) for i in chosen}
        max_links = int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", NVLINK_MAX_LINKS))
        gpus = [_gpu(nvml, i, h, max_links) for i, h in handles.items()]
        pairs = []
        for a in chosen:
            for b in chosen:
                if a < b:
                    pairs.append(_pair(nvml, a, b, handles[a], handles[b]))
        return {"available": True, "reason": None, "gpus": gpus, "pairs": pairs}
    finally:
        _safe(nvml.nvmlShutdown)


def _gpu(nvml: Any, index: int, handle: Any, max_links: int) -> dict[str, Any]:
    pci = _safe(nvml.nvmlDeviceGetPciInfo, handle)
    links = []
    for link in range(max_links):
        state = _safe(nvml.nvmlDeviceGetNvLinkState, handle, link)
        if state is None:
            continue  # link does not exist on this GPU
        remote = _safe(nvml.nvmlDeviceGetNvLinkRemotePciInfo, handle, link)
        links.append({
            "link": link,
            "active": bool(state),
            "version": _safe(nvml.nvmlDeviceGetNvLinkVersion, handle, link),
            "remote_pci_bus_id": _text(remote.busId) if remote is not None else None,
        })
    return {
        "index": index,
        "name": _text(_safe(nvml.nvmlDeviceGetName, handle) or "") or None,
        "pci_bus_id": _text(pci.busId) if pci is not None else None,
        "pcie_generation_current": _safe(nvml.nvmlDeviceGetCurrPcieLinkGeneration, handle),
        "pcie_generation_max": _safe(nvml.nvmlDeviceGetMaxPcieLinkGeneration, handle),
        "pcie_width_current": _safe(nvml.nvmlDeviceGetCurrPcieLinkWidth, handle),
        "pcie_width_max": _safe(nvml.nvmlDeviceGetMaxPcieLinkWidth, handle),
        "nvlinks": links,
        "nvlinks_active": sum(1 for link in links if link["active"]),
    }


def _pair(nvml: Any, a: int, b: int, ha: Any, hb: Any) -> dict[str, Any]:
    read = _safe(nvml.nvmlDeviceGetP2PStatus, ha, hb, P2P_CAPS_READ)
    over_nvlink = _safe(nvml.nvmlDeviceGetP2PStatus, ha, hb, P2P_CAPS_NVLINK)
    level = _safe(nvml.nvmlDeviceGetTopologyCommonAncestor, ha, hb)
    level_name, level_text = TOPOLOGY_LEVELS.get(level, (None, None)) if level is not None else (None, None)
    return {
        "gpus": [a, b],
        "p2p_read": None if read is None else read == P2P_STATUS_OK,
        "p2p_status": None if read is None else P2P_STATUS_NAMES.get(read, str(read)),
        "p2p_nvlink": None if over_nvlink is None else over_nvlink == P2P_STATUS_OK,
        "path": level_name,
        "path_description": level_text,
    }


def summary_lines(topology: dict[str, Any]) -> list[str]:
    """Short human-readable lines for the terminal (no figures computed here, only formatted)."""
    if not topology.get("available"):
        return [f"topology: not available ({topology.get('reason')})"]
    lines = []
    for g in topology["gpus"]:
        gen = f"PCIe gen {g['pcie_generation_current']}/{g['pcie_generation_max']}"
        width = f"x{g['pcie_width_current']}/x{g['pcie_width_max']}"
        nvl = f"NVLink {g['nvlinks_active']}/{len(g['nvlinks'])} links active" if g["nvlinks"] else "no NVLink"
        lines.append(f"GPU {g['index']} {g['name']} [{g['pci_bus_id']}]: {gen} {width} (current/max), {nvl}")
    for p in topology["pairs"]:
        a, b = p["gpus"]
        p2p = {True: "P2P yes", False: f"P2P no ({p['p2p_status']})", None: "P2P unknown"}[p["p2p_read"]]
        via = " over NVLink" if p["p2p_nvlink"] else ""
        path = f", path {p['path_description']}" if p["path_description"] else ""
        lines.append(f"GPU {a} <-> GPU {b}: {p2p}{via}{path}")
    return lines
