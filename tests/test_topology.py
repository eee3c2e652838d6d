"""NVML topology with a fake NVML module (no GPU needed)."""

from __future__ import annotations

from types import SimpleNamespace

from dlbench.telemetry.topology import collect, summary_lines


class NotSupported(Exception):
    pass


class FakeNvml:
    """Two GPUs joined by two active NVLinks (of four), PCIe gen 4 x16 running at gen 1 x16 while idle."""

    NVML_NVLINK_MAX_LINKS = 6

    def __init__(self):
        self.shutdown = False

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shutdown = True

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA A100-SXM4-40GB"

    def nvmlDeviceGetPciInfo(self, h):
        return SimpleNamespace(busId=f"00000000:0{h + 1}:00.0".encode())

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        return 1

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        return 4

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        return 16

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        return 16

    def nvmlDeviceGetNvLinkState(self, h, link):
        if link >= 4:
            raise NotSupported
        return 1 if link < 2 else 0

    def nvmlDeviceGetNvLinkVersion(self, h, link):
        return 3

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h, link):
        return SimpleNamespace(busId=f"00000000:0{2 - h}:00.0".encode())

    def nvmlDeviceGetP2PStatus(self, a, b, index):
        return 0

    def nvmlDeviceGetTopologyCommonAncestor(self, a, b):
        return 0


def test_collect_reports_pcie_nvlink_and_p2p():
    nvml = FakeNvml()
    topo = collect(nvml)
    assert topo["available"] is True and nvml.shutdown
    g0 = topo["gpus"][0]
    assert (g0["pcie_generation_current"], g0["pcie_generation_max"]) == (1, 4)
    assert (g0["pcie_width_current"], g0["pcie_width_max"]) == (16, 16)
    assert len(g0["nvlinks"]) == 4 and g0["nvlinks_active"] == 2
    assert g0["nvlinks"][0]["remote_pci_bus_id"] == "00000000:02:00.0"
    assert topo["pairs"] == [{"gpus": [0, 1], "p2p_read": True, "p2p_status": "ok", "p2p_nvlink": True,
                              "path": "internal", "path_description": "same board"}]
    text = "\n".join(summary_lines(topo))
    assert "PCIe gen 1/4" in text and "NVLink 2/4" in text and "P2P yes over NVLink" in text


def test_unsupported_queries_are_unknown_not_errors():
    nvml = FakeNvml()

    def unsupported(*args):
        raise NotSupported

    nvml.nvmlDeviceGetP2PStatus = unsupported
    nvml.nvmlDeviceGetCurrPcieLinkGeneration = unsupported
    topo = collect(nvml)
    assert topo["gpus"][0]["pcie_generation_current"] is None
    assert topo["pairs"][0]["p2p_read"] is None
    assert "P2P unknown" in "\n".join(summary_lines(topo))


def test_no_nvml_gives_reason():
    class Broken(FakeNvml):
        def nvmlInit(self):
            raise RuntimeError("NVML Shared Library Not Found")

    topo = collect(Broken())
    assert topo["available"] is False and "Not Found" in topo["reason"]
