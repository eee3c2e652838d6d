"""Telemetry of a data-parallel group: every rank's GPU summarised, totalled and named (no torch, no processes).

The per-GPU blocks come from the real sampler driven by a scripted fake NVML, as in test_telemetry.py.
"""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pytest

from dlbench.analysis.diagnose import telemetry_findings
from dlbench.analysis.energy import combine_ranks, efficiency, gpu_label, is_throttled
from dlbench.telemetry.fake_nvml import FakeGpu, FakeNvml, StepClock
from dlbench.telemetry.nvml import CLOCK_EVENT_REASONS, DeviceMatch
from dlbench.telemetry.sampler import NvmlSampler

THERMAL = next(bit for bit, name in CLOCK_EVENT_REASONS.items() if name == "sw_thermal_slowdown")


def block(gpu: FakeGpu, cuda_index: int, n: int = 11, step_s: float = 0.1) -> dict:
    """The block one rank's sampler writes for `gpu`, `n` readings `step_s` apart, through JSON as stored."""
    sampler = NvmlSampler(FakeNvml([gpu]), DeviceMatch(gpu, cuda_index, gpu.uuid, "uuid"), cuda_index,
                          interval_s=step_s, clock=StepClock(step_s))
    sampler.begin()
    for _ in range(n - 2):
        sampler.sample_now()
    return json.loads(json.dumps(sampler.finish()))


def rank(r: int, host: str, local: int) -> dict:
    """A rank's environment as `runner.distributed.rank_environment` reports it."""
    return {"rank": r, "local_rank": local, "node_rank": r // 2, "hostname": host, "device": f"cuda:{local}",
            "gpu_name": "NVIDIA H100 80GB HBM3", "gpu_uuid": None}


def two_node_group() -> tuple[list[dict], list[dict]]:
    """Four GPUs on two nodes; rank 3 (GPU 1 on nodeB) throttles thermally in 4 of 10 readings at 88 C."""
    reasons = [0, 0, THERMAL, THERMAL, 0, THERMAL, 0, THERMAL, 0, 0]
    gpus = [FakeGpu(uuid=f"GPU-{i}", power_w=300.0 + 10 * i, energy_j=[0.0, 100.0 * (i + 1)],
                    temperature_c=60.0 + i, sm_clock_mhz=1980.0 - 10 * i) for i in range(3)]
    gpus.append(FakeGpu(uuid="GPU-3", power_w=280.0, energy_j=[0.0, 250.0], temperature_c=[70, 80, 88, 86],
                        sm_clock_mhz=1700.0, clock_event_reasons=reasons))
    blocks = [block(g, i % 2, n=len(reasons)) for i, g in enumerate(gpus)]
    return blocks, [rank(0, "nodeA", 0), rank(1, "nodeA", 1), rank(2, "nodeB", 0), rank(3, "nodeB", 1)]


def test_group_totals_are_sums_and_each_gpu_keeps_its_own_summary():
    blocks, ranks = two_node_group()
    group = combine_ranks(blocks, ranks)
    assert group["available"] is True and group["num_gpus"] == 4 and group["missing_gpus"] == 0
    assert group["power_mean_w"] == pytest.approx(sum(b["power_mean_w"] for b in blocks))
    assert group["power_mean_w"] == pytest.approx(300 + 310 + 320 + 280)
    assert group["power_max_w"] == pytest.approx(sum(b["power_max_w"] for b in blocks))
    assert group["energy_j"] == pytest.approx(100 + 200 + 300 + 250)  # the four energy counters
    assert group["temperature_max_c"] == 88
    assert group["sm_clock_mean_mhz"] == pytest.approx((1980 + 1970 + 1960 + 1700) / 4)
    assert group["throttle_reasons"]["sw_thermal_slowdown"] == pytest.approx(0.4)
    assert group["throttle_reason_ranks"] == {"sw_thermal_slowdown": [3]}
    assert group["throttle_share"] == pytest.approx(0.4)
    # Each GPU: who it is, and the same fields as a one-GPU block, raw series included; no group-level series.
    assert [(g["rank"], g["hostname"], g["device_index"], g["uuid"]) for g in group["per_gpu"]] == [
        (0, "nodeA", 0, "GPU-0"), (1, "nodeA", 1, "GPU-1"), (2, "nodeB", 0, "GPU-2"), (3, "nodeB", 1, "GPU-3")]
    assert group["per_gpu"][3]["name"] == "NVIDIA H100 80GB HBM3"
    for g, b in zip(group["per_gpu"], blocks, strict=True):
        assert {k: g[k] for k in b} == b
    assert "series" not in group
    assert gpu_label(group["per_gpu"][3]) == "GPU 1 on nodeB (rank 3)"
    assert gpu_label(group["per_gpu"][1]) == "GPU 1 on nodeA"


def test_a_gpu_without_sensors_gives_its_reason_and_no_partial_totals():
    blocks, ranks = two_node_group()
    blocks[2] = {"available": False, "reason": "NVML unavailable: driver not loaded"}
    group = combine_ranks(blocks, ranks)
    assert group["available"] is True and group["missing_gpus"] == 1
    assert group["per_gpu"][2] == {**group["per_gpu"][2], "available": False, "rank": 2, "hostname": "nodeB",
                                   "reason": "NVML unavailable: driver not loaded"}
    # A sum over three of four GPUs is not the group's power: unknown, not understated.
    assert group["power_mean_w"] is None and group["energy_j"] is None
    assert efficiency(group, 1000.0)["samples_per_s_per_w"] is None
    assert group["temperature_max_c"] == 88  # maxima and means over the GPUs that have readings
    findings = {f["cause"]: f for f in telemetry_findings({"telemetry": group, "world_size": 4})}
    assert "GPU 0 on nodeB (rank 2)" in findings["no_telemetry"]["message"]
    assert "driver not loaded" in findings["no_telemetry"]["message"]


def test_group_without_any_telemetry_is_unavailable_with_the_reason():
    cpu = {"available": False, "reason": "the device is the CPU"}
    group = combine_ranks([cpu, dict(cpu), None], [rank(0, "a", 0), rank(1, "a", 1), rank(2, "b", 0)])
    assert group == {"available": False, "reason": "the device is the CPU; no telemetry sampler"}


def test_efficiency_of_a_group_uses_the_global_throughput_and_the_total_power():
    blocks, ranks = two_node_group()
    group = combine_ranks(blocks, ranks)
    eff = efficiency(group, samples_per_s=4000.0)
    total_w = group["energy_j"] / group["duration_s"]
    assert eff["average_power_w"] == pytest.approx(total_w)
    assert eff["samples_per_s_per_w"] == pytest.approx(4000.0 / total_w)
    assert eff["energy_per_sample_j"] == pytest.approx(total_w / 4000.0)
    assert eff["throttled"] is True and eff["throttled_gpus"] == ["GPU 1 on nodeB (rank 3)"]
    assert eff["throttle_kind"] == ["thermal"]


def test_doctor_names_the_gpu_that_throttled_and_the_hottest():
    blocks, ranks = two_node_group()
    group = combine_ranks(blocks, ranks)
    findings = {f["cause"]: f for f in telemetry_findings({"telemetry": group, "world_size": 4})}
    thermal = findings["thermal_throttling"]
    assert thermal["severity"] == "warn"
    assert "GPU 1 on nodeB (rank 3) in 40% of its samples, up to 88 C" in thermal["message"]
    assert "slowest GPU sets the pace" in thermal["message"]
    assert "GPU 0 on nodeA" not in thermal["message"]  # the GPUs that did not throttle are not named
    hot = findings["uneven_temperature"]["message"]
    assert hot.startswith("GPU 1 on nodeB (rank 3) ran hottest, up to 88 C, 28 C above the coolest (GPU 0 on nodeA")


def test_doctor_json_gives_each_gpus_headline_figures():
    from dlbench.analysis.diagnose import diagnose

    blocks, ranks = two_node_group()
    result = {"workload": "resnet50", "precision": "amp-bf16", "compile": "off", "batch_size": 8, "world_size": 4,
              "status": "ok", "samples_per_s": 4000.0, "device": "cuda:0", "telemetry": combine_ranks(blocks, ranks)}
    (entry,) = diagnose({"environment": {}, "results": [result]}, published=[])["results"]
    tel = entry["telemetry"]
    assert tel["num_gpus"] == 4 and tel["hottest_gpu"] == "GPU 1 on nodeB (rank 3)"
    assert [g["gpu"] for g in tel["per_gpu"]][:2] == ["GPU 0 on nodeA", "GPU 1 on nodeA"]
    assert [g["throttled"] for g in tel["per_gpu"]] == [False, False, False, True]
    assert tel["power_mean_w"] == pytest.approx(sum(b["energy_j"] / b["duration_s"] for b in blocks))


def test_doctor_lists_every_throttled_gpu_and_the_power_limit_per_gpu():
    gpus = [FakeGpu(uuid=f"GPU-{i}", clock_event_reasons=THERMAL if i % 2 else 0,
                    power_limit_w=250.0 if i == 2 else 350.0, default_power_limit_w=350.0) for i in range(4)]
    group = combine_ranks([block(g, i) for i, g in enumerate(gpus)],
                          [rank(i, "box", i) | {"node_rank": 0} for i in range(4)])
    findings = {f["cause"]: f["message"] for f in telemetry_findings({"telemetry": group, "world_size": 4})}
    assert "GPU 1 on box in 100% of its samples" in findings["thermal_throttling"]
    assert "GPU 3 on box in 100%" in findings["thermal_throttling"]
    assert "(2 of 4 GPUs)" in findings["thermal_throttling"]
    assert findings["reduced_power_limit"] == "power limit below the default on GPU 2 on box (250 W of 350 W)"
    assert [is_throttled(g) for g in group["per_gpu"]] == [False, True, False, True]


def test_make_result_adds_the_groups_energy_per_sample_and_leaves_one_gpu_alone():
    from dlbench.measurement.config import RunConfig
    from dlbench.runner.document import make_result

    blocks, ranks = two_node_group()
    group = combine_ranks(blocks, ranks)
    measurement = {"repeats": [{"step_times_s": [0.1, 0.1]}], "batch_size": 8, "telemetry": group}
    result = make_result(RunConfig("resnet50", batch_size=8, world_size=4), "ok", measurement=measurement)
    assert result["samples_per_s"] == pytest.approx(8 * 4 / 0.1)
    eff = efficiency(group, result["samples_per_s"])
    assert result["telemetry"]["samples_per_s_per_w"] == pytest.approx(eff["samples_per_s_per_w"])
    assert result["telemetry"]["energy_per_sample_j"] == pytest.approx(eff["energy_per_sample_j"])
    single = make_result(RunConfig("resnet50", batch_size=8), "ok",
                         measurement={**measurement, "telemetry": blocks[0]})
    assert single["telemetry"] == blocks[0]


def test_group_documents_validate_and_a_malformed_gpu_entry_is_refused():
    import store_docs
    from dlbench.errors import DataError
    from dlbench.schema import validate_document

    blocks, ranks = two_node_group()
    doc = store_docs.document()
    doc["results"][0]["telemetry"] = json.loads(json.dumps(combine_ranks(blocks, ranks)))
    validate_document(doc)
    doc["results"][0]["telemetry"]["per_gpu"][1]["temperature_max_c"] = "hot"
    with pytest.raises(DataError, match=r"results\[0\]\.telemetry\.per_gpu\[1\]\.temperature_max_c"):
        validate_document(doc)


def test_report_draws_one_line_per_gpu(monkeypatch):
    from dlbench.report import charts
    from dlbench.report.sections import telemetry

    blocks, ranks = two_node_group()
    result = {"workload": "resnet50", "precision": "amp-bf16", "compile": "off", "batch_size": 8,
              "world_size": 4, "telemetry": combine_ranks(blocks, ranks)}
    seen = []
    monkeypatch.setattr(charts, "telemetry_chart", lambda traces, *a, **k: seen.extend(traces) or SimpleNamespace(
        caption=""))
    monkeypatch.setattr(telemetry, "figure", lambda chart, caption=None: chart)
    telemetry.telemetry_group([{"results": [result]}], [{"short": "run 1", "prefix": False, "gpus": "H100"}], None)
    assert [t["label"] for t in seen] == [
        "GPU 0 on nodeA", "GPU 1 on nodeA", "GPU 0 on nodeB (rank 2)", "GPU 1 on nodeB (rank 3) \u00b7 throttled (thermal)"]
    assert seen[3]["series"]["temperature_c"][2] == 88


def test_report_names_rank_0s_gpu_on_an_older_data_parallel_result(monkeypatch):
    """An older multi-GPU result sampled rank 0's GPU only: its line says so, unlike a group's or one GPU's."""
    from dlbench.report import charts
    from dlbench.report.sections import telemetry
    from report_docs import make_result

    blocks, ranks = two_node_group()
    results = [make_result(world_size=1, telemetry=blocks[0], seed=1),
               make_result(world_size=2, telemetry=blocks[0], seed=2),
               make_result(world_size=4, telemetry=combine_ranks(blocks, ranks), seed=4)]
    seen = []
    monkeypatch.setattr(charts, "telemetry_chart", lambda traces, *a, **k: seen.extend(traces) or SimpleNamespace(
        caption=""))
    monkeypatch.setattr(telemetry, "figure", lambda chart, caption=None: chart)
    telemetry.telemetry_group([{"results": results}], [{"short": "run 1", "prefix": False, "gpus": "H100"}], None)
    rank0 = [t["label"] for t in seen if t["label"].endswith("rank 0's GPU")]
    assert len(seen) == 1 + 1 + 4 and len(rank0) == 1 and "2 GPUs" in rank0[0]


def test_an_older_data_parallel_result_with_rank_0s_telemetry_gets_no_group_power_figures(tmp_path, capsys):
    """Before every rank sampled its own GPU, a data-parallel result stored rank 0's one-GPU block: its watts
    against the group's samples/s overstated samples/s per W world_size times. Stored documents still hold it."""
    from dlbench.analysis.diagnose import diagnose
    from dlbench.analysis.energy import rank0_only, result_efficiency
    from report_docs import make_document, make_result, run_cli

    blocks, _ = two_node_group()
    one, two = (make_result(world_size=n, telemetry=blocks[0], seed=n) for n in (1, 2))
    assert not rank0_only(one["telemetry"], 1) and rank0_only(two["telemetry"], 2)
    assert result_efficiency(one)["samples_per_s_per_w"] == pytest.approx(
        one["samples_per_s"] * blocks[0]["duration_s"] / blocks[0]["energy_j"])
    eff = result_efficiency(two)
    assert eff["average_power_w"] is None and eff["samples_per_s_per_w"] is None
    assert eff["energy_per_sample_j"] is None and eff["energy_measured_j"] is None
    assert any("rank 0's GPU only (1 of 2 GPUs)" in w for w in eff["warnings"])
    doc = make_document([one, two])
    single, group = diagnose(doc, published=[], estimate_fn=lambda *a: None)["results"]
    assert single["telemetry"]["samples_per_s_per_w"] is not None and "rank0_only" not in single["telemetry"]
    assert group["telemetry"]["samples_per_s_per_w"] is None and group["telemetry"]["power_mean_w"] is None
    assert group["telemetry"]["rank0_only"] is True
    # The run table's samples/s per W: one figure, for the one-GPU result only.
    from dlbench.report.run_table import results_table

    table = results_table([one, two])
    per_w = next(c for c in table.columns if c.header == "samples/s/W")
    assert [str(c).strip() for c in per_w._cells] == [f"{result_efficiency(one)['samples_per_s_per_w']:.2f}", "-"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    code, out, err = run_cli(capsys, "doctor", str(path))
    assert code == 0, err
    lines = " ".join(out.split())
    assert "rank 0's GPU only, of 2" in lines and lines.count("/s per W") == 1, lines  # the one-GPU result's only
    from rich.console import Console

    from dlbench.cli.results import _telemetry_table

    shown = Console(width=200, record=True, file=io.StringIO())
    shown.print(_telemetry_table(doc))
    assert "(rank 0 only, of 2)" in shown.export_text()


def _twelve_eight_gpu_configurations():
    """12 data-parallel configurations on 8 GPUs each (GPU 3 throttles thermally in the 5th and 10th), and two
    one-GPU configurations."""
    from fleet_docs import ddp_result_with_series
    from report_docs import environment, make_document, make_result, telemetry_block

    configs = [(p, c, bs) for p in ("tf32", "amp-fp16", "amp-bf16") for c in ("off", "default") for bs in (128, 256)]
    results = [ddp_result_with_series(8, hot_gpu=3 if i in (4, 9) else None, seed=i, precision=p, compile=c,
                                      batch_size=bs) for i, (p, c, bs) in enumerate(configs)]
    results += [make_result(precision=p, telemetry=telemetry_block(), seed=20 + i)
                for i, p in enumerate(("tf32", "amp-fp16"))]
    return make_document(results, env=environment(hostname="dgx01", gpu_count=8)), configs


def test_report_draws_a_chart_per_data_parallel_configuration(monkeypatch):
    """96 lines on one chart (12 configurations x 8 GPUs) could not be read: the one-GPU configurations share a
    chart, each data-parallel one gets its own (a line per GPU), the most throttled first, and past four the
    caption names what was left out."""
    from dlbench.report import charts
    from dlbench.report.represent import short_config
    from dlbench.report.sections import telemetry
    from dlbench.report.sections.header import run_info

    doc, configs = _twelve_eight_gpu_configurations()
    calls = []

    def chart(traces, out_dir, name="telemetry", where="", subject=None, note=None):
        calls.append({"traces": traces, "name": name, "subject": subject, "note": note})
        return SimpleNamespace(name=name, caption=f"caption of {name}." + (f" {note}" if note else ""))

    monkeypatch.setattr(charts, "telemetry_chart", chart)
    monkeypatch.setattr(telemetry, "figure", lambda c, caption=None: {"name": c.name, "caption": caption or c.caption})
    group = telemetry.telemetry_group([doc], [run_info(doc, 0, 1)], None)
    assert [f["name"] for f in group["figures"]] == ["telemetry", "telemetry_1", "telemetry_2", "telemetry_3",
                                                     "telemetry_4"]
    singles, *per_config = calls
    assert singles["subject"] is None and len(singles["traces"]) == 2
    for call in per_config:
        assert [t["label"] for t in call["traces"]][:3] == ["GPU 0", "GPU 1", "GPU 2"]
        assert len(call["traces"]) == 8 and "8 GPUs" in call["subject"]
        assert call["note"].startswith("Every GPU throttled (power)")  # said once, not on each line
    # the two configurations with a thermally throttled GPU come first, and that GPU's line says so
    hot = [short_config(doc["results"][i]) for i in (4, 9)]
    assert [any(h in call["subject"] for h in hot) for call in per_config] == [True, True, False, False]
    assert per_config[0]["traces"][3]["label"] == "GPU 3 \u00b7 throttled (thermal)"
    last = group["figures"][-1]["caption"]
    assert "Of 12 data-parallel configurations, the 4 whose GPUs throttled most, then ran hottest, are drawn" in last
    assert last.count("8 GPUs") == 6 and "; and 2 more." in last  # 8 left out: six named, two counted
    assert all("not drawn" not in f["caption"] for f in group["figures"][:-1])


def test_report_writes_the_per_configuration_telemetry_charts(tmp_path):
    from dlbench.report.html import write_report

    doc, _ = _twelve_eight_gpu_configurations()
    stale = tmp_path / "charts" / "telemetry_9.svg"  # from an earlier report with more charts
    stale.parent.mkdir(parents=True)
    stale.write_text("<svg/>")
    html = write_report([doc], tmp_path, published=[]).read_text(encoding="utf-8")
    written = sorted(p.name for p in (tmp_path / "charts").glob("telemetry*.svg"))
    assert written == ["telemetry.svg"] + [f"telemetry_{i}.svg" for i in range(1, 5)]
    for i in range(1, 5):
        assert f'<figure id="telemetry_{i}">' in html
    assert "not drawn:" in html


def test_a_32_gpu_configuration_draws_its_16_worst_gpus(monkeypatch):
    from dlbench.report import charts
    from dlbench.report.sections import telemetry
    from dlbench.report.sections.header import run_info
    from fleet_docs import ddp_result_with_series
    from report_docs import environment, make_document

    result = ddp_result_with_series(32, hot_gpu=27)
    result["telemetry"]["per_gpu"][20]["temperature_max_c"] = 85.0  # hot, not throttled thermally
    doc = make_document([result], env=environment(hostname="dgx01", gpu_count=8))
    calls = []
    monkeypatch.setattr(charts, "telemetry_chart", lambda traces, *a, **k: calls.append((traces, k)) or
                        SimpleNamespace(name=k["name"], caption=""))
    monkeypatch.setattr(telemetry, "figure", lambda c, caption=None: c)
    telemetry.telemetry_group([doc], [run_info(doc, 0, 1)], None)
    ((traces, kwargs),) = calls
    labels = [t["label"] for t in traces]
    assert len(labels) == 16 and labels[0] == "GPU 0"  # in rank order
    assert "GPU 27 \u00b7 throttled (thermal)" in labels and "GPU 20" in labels
    assert "16 of its 32 GPUs are drawn" in kwargs["note"]


def test_a_telemetry_caption_says_when_the_drawn_series_was_thinned(tmp_path):
    """A series cut on storing (`series_thinning`) is drawn from every k-th reading: the caption says so, and that
    the summaries used every reading; a chart of whole series says nothing of the kind."""
    from dlbench.report.html import write_report
    from dlbench.report.sections.telemetry import thinning_note
    from dlbench.telemetry.series import series_cap, thin_series
    from fleet_docs import ddp_result_with_series
    from report_docs import environment, make_document, make_result, telemetry_block

    long_one = thin_series(telemetry_block(seconds=240.0))  # 2,400 readings
    assert long_one["series_thinning"]["every"] == 5 and long_one["series_thinning"]["readings"] == 2400
    group = ddp_result_with_series(8, seconds=120.0, seed=3)  # 1,200 readings per GPU
    group["telemetry"]["per_gpu"] = [thin_series(b, series_cap(8)) for b in group["telemetry"]["per_gpu"]]
    doc = make_document([make_result(telemetry=long_one, seed=1), make_result(precision="tf32",
                                                                              telemetry=telemetry_block(), seed=2),
                         group], env=environment(hostname="dgx01", gpu_count=8))
    page = write_report([doc], tmp_path, published=[]).read_text(encoding="utf-8")
    assert "1 of the 2 series: every 5th of 2,400 readings drawn; summaries use all." in page
    assert "Every 9th of 1,200 readings drawn; summaries use all." in page
    assert thinning_note([telemetry_block()]) is None
    blocks = [{"series_thinning": {"readings": n, "kept": 100, "every": k}} for n, k in ((1190, 12), (1200, 21))]
    assert thinning_note(blocks) == "Every 12th to 21st of 1,190\u20131,200 readings drawn; summaries use all."
