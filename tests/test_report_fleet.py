"""`dlbench report` on a fleet: the fleet section (summary, chart, table), the page for many runs, the selection.

Run: `PYTHONPATH=src:tests python -m pytest -q tests/test_report_fleet.py`. Fleets come from `fleet_docs`, the
same documents `tests/test_fleet.py` judges; the CLI tests store them in a real SQLite file in a temp dir.
"""

from __future__ import annotations

import base64
import html as htmllib
import re

import pytest

from dlbench.analysis.fleet import fleet_report
from dlbench.report.html import write_report
from dlbench.report.sections.fleet import TABLE_ROWS_MAX, fleet_section
from fleet_docs import STEP_S, ddp_node, large_fleet, node, readme_fleet, six_nodes
from report_docs import make_result, run_cli


@pytest.fixture(scope="module")
def readme_report(tmp_path_factory):
    docs = readme_fleet()
    return docs, write_report(docs, tmp_path_factory.mktemp("fleet") / "out")


def _fleet_html(page: str) -> str:
    match = re.search(r'<section class="card" id="fleet">(.*?)</section>', page, re.S)
    assert match, "no fleet section"
    return match.group(1)


def _rows(section: str) -> dict[str, str]:
    """Each table row of the fleet section by host, as its HTML."""
    rows = re.findall(r'<tr(?: class="flagged")?>\s*<td class="host">(.*?)</td>(.*?)</tr>', section, re.S)
    return {htmllib.unescape(host): cells for host, cells in rows}


def _chip(cells: str) -> str:
    return re.search(r'<span class="chip [a-z]+">(.*?)</span>', cells).group(1)


def test_the_section_names_the_slow_hosts_like_the_command(readme_report):
    docs, index = readme_report
    page = index.read_text(encoding="utf-8")
    section = _fleet_html(page)
    expected = fleet_report(docs)
    assert expected["summary"].startswith("8 nodes, 2 slow: node04 (-10%, thermal throttling)")
    assert htmllib.escape(expected["summary"], quote=False) in section
    assert '<a href="#fleet">Fleet</a>' in page and page.index('id="fleet"') < page.index('id="results"')
    rows = _rows(section)
    assert list(rows) == [row["host"] for row in expected["groups"][0]["rows"]]  # slowest first, every host
    assert _chip(rows["node04"]) == "slow" and "thermal throttling; SM clock -15%" in rows["node04"]
    assert '<tr class="flagged">\n          <td class="host">node04</td>' in section
    assert _chip(rows["node07"]) == "slow" and "PCIe x8" in rows["node07"]
    assert _chip(rows["node05"]) == "ok" and "-1.9%" in rows["node05"]
    assert "driver 550.54.15 (fleet 570.133.20)" in rows["node08"]
    assert "Seen on most runs, so it singles out no node: power throttling (8 of 8)." in section


def test_the_chart_is_embedded_and_saved(readme_report):
    _, index = readme_report
    section = _fleet_html(index.read_text(encoding="utf-8"))
    (src, name), = re.findall(r'<img src="([^"]+)" alt="[^"]*" data-chart="(fleet_[^"]+)"', section)
    assert name == "fleet_resnet50-amp-fp16-compile-off-bs-256-h100-sxm5-80gb"
    svg = index.parent / "charts" / f"{name}.svg"
    assert base64.b64decode(src.split(",", 1)[1]) == svg.read_bytes()
    assert (index.parent / "charts" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f'href="charts/{name}.png"' in section


def test_many_runs_are_summed_up_not_repeated(readme_report):
    # Eight runs, one per host: hosts name them, the header sums them up, the environment names the odd one out
    # and the ranking shows three of the eight results instead of eight bars.
    docs, index = readme_report
    page = index.read_text(encoding="utf-8")
    assert page.count('<div class="fact">') == 4 and "8 hosts: node01, node02, \u2026 node08" in page
    assert "8 results of 1 configuration across 8 runs" in page
    assert "570.133.20 (7 runs), 550.54.15 (1 run: node08)" in page
    ranking = re.search(r'<section class="card chart-group" id="ranking">(.*?)</section>', page, re.S).group(1)
    caption = htmllib.unescape(re.search(r"<figcaption><span>(.*?)</span>", ranking, re.S).group(1))
    slowest = min(docs, key=lambda d: d["results"][0]["samples_per_s"])["environment"]["hostname"]
    assert f"{slowest}: H100 SXM5 80GB \u00b7 eager (slowest of 8)" in caption
    assert caption.count("of 8)") == 3 and "the results table lists every run" in caption
    assert f'<td class="muted run" data-label="Run">node01<div class="small">{docs[0]["run_id"][:8]}</div>' in page


def test_no_section_below_three_hosts_of_one_configuration(tmp_path):
    one_host = [node("testhost", seed=i, created_at=f"2026-11-2{i}T04:00:00Z") for i in range(1, 7)]
    two_hosts = six_nodes()[:2]
    other_gpus = six_nodes()[:3]
    for doc, gpu in zip(other_gpus[1:], ("NVIDIA A100-SXM4-80GB", "NVIDIA L40S"), strict=True):
        doc["environment"]["gpus"][0]["name"] = gpu
    for i, docs in enumerate((one_host, two_hosts, other_gpus)):
        index = write_report(docs, tmp_path / str(i))
        page = index.read_text(encoding="utf-8")
        assert 'id="fleet"' not in page and "#fleet" not in page
        assert not list((index.parent / "charts").glob("fleet_*"))
    assert 'id="fleet"' in write_report(six_nodes()[:3], tmp_path / "three").read_text(encoding="utf-8")


def test_failed_node_data_parallel_group_and_a_configuration_on_two_hosts(tmp_path):
    docs = [*six_nodes(), node("node09", status="oom")]
    for i, doc in enumerate(docs[:2]):  # bert on two hosts only: not a fleet
        doc["results"].append(make_result("bert-base-squad", batch_size=32, seq_len=384, step_time_s=0.05,
                                          seed=20 + i))
    docs += [ddp_node(f"dgx{i}", STEP_S, seed=i) for i in range(1, 5)]
    docs.append(ddp_node("dgx5", STEP_S / 0.88, hot_gpu=2, seed=5))
    index = write_report(docs, tmp_path / "out")
    section = _fleet_html(index.read_text(encoding="utf-8"))
    assert len(re.findall(r'data-chart="fleet_', section)) == 2
    rows = _rows(section)
    assert _chip(rows["node09"]) == "failed" and "oom: simulated oom" in rows["node09"]
    assert list(rows)[0] == "node09"  # failures first, as the command lists them
    assert _chip(rows["dgx5"]) == "slow" and "GPU 2: thermal throttling" in rows["dgx5"]
    assert "4 GPUs" in rows["dgx5"]
    assert "1 configuration measured on fewer than 3 hosts not shown here" in section
    assert "node09 (failed, out of memory)" in section


def test_a_large_fleet_keeps_one_row_per_host_that_matters(tmp_path):
    from PIL import Image

    def height(chart):
        with Image.open(chart.png) as image:
            return image.size[1]

    big = fleet_section(large_fleet(64), tmp_path / "64")
    (group,) = big["groups"]
    assert [r["host"] for r in group["rows"]] == ["gpu007", "gpu042"]  # the flagged ones, on view
    assert len(group["more_rows"]) == 62 and all(r["verdict"] == "ok" for r in group["more_rows"])
    small, medium = (fleet_section(large_fleet(n), tmp_path / str(n))["groups"][0] for n in (8, 20))
    assert 20 > TABLE_ROWS_MAX and [r["host"] for r in medium["rows"]] == ["gpu007"]
    assert len(medium["more_rows"]) == 19  # the table folds the hosts within the threshold ...
    assert len(small["rows"]) == 8 and small["more_rows"] == []  # ... only past TABLE_ROWS_MAX
    # the chart grows with the hosts shown one per row (all 20 up to charts.FLEET_ROWS_MAX); 62 healthy hosts
    # share one strip
    assert height(small["chart"]) < height(medium["chart"])
    assert height(group["chart"]) < height(medium["chart"])
    assert big["summary"].startswith("64 nodes, 2 slow: gpu007 (-12%, thermal throttling), gpu042 (-7%, PCIe x4)")


def test_host_names_are_text_in_charts_and_page(tmp_path):
    docs = six_nodes()
    docs[3]["environment"]["hostname"] = "node$\\frac{$04<b>"  # mathtext to matplotlib, markup to a browser
    page = write_report(docs, tmp_path / "out").read_text(encoding="utf-8")
    assert "node$\\frac{$04&lt;b&gt;" in _fleet_html(page) and "<b>" not in page


# --- the command ------------------------------------------------------------------------------------------


def _store(docs):
    from dlbench.store import open_store

    with open_store() as s:
        for doc in docs:
            s.save_run(doc)


def test_cli_selects_runs_as_dlbench_fleet_does(capsys, tmp_path):
    from pathlib import Path

    from dlbench.jsonio import write_json_atomic

    docs = readme_fleet()
    _store(docs)
    code, out, err = run_cli(capsys, "report", "--host", "node*", "-o", str(tmp_path / "all"))  # the manual's example
    assert code == 0, err
    summary = _fleet_html((tmp_path / "all" / "index.html").read_text(encoding="utf-8"))
    readme = (Path(__file__).resolve().parent.parent / "docs" / "report.md").read_text(encoding="utf-8")
    line = "8 nodes, 2 slow: node04 (-10%, thermal throttling), node07 (-6%, PCIe x8)"
    assert line in summary and f'"{line}"' in readme.replace("\n", " ")
    code, out, err = run_cli(capsys, "report", "--host", "node0[1-6]", "-o", str(tmp_path / "six"))
    assert code == 0, err
    assert "(6 runs with a fleet section, " in out
    page = (tmp_path / "six" / "index.html").read_text(encoding="utf-8")
    assert "6 nodes, 1 slow: node04" in page and "node07" not in page
    code, out, _ = run_cli(capsys, "report", "-o", str(tmp_path / "latest"))  # still the latest run alone
    assert code == 0 and "index.html (3 charts, " in out and "fleet section" not in out  # its headline, ranking, steps
    code, out, err = run_cli(capsys, "report", "--host", "nowhere*", "-o", str(tmp_path / "none"))
    assert code == 2 and out == "" and err.startswith("error: no runs match --host nowhere* (in database")
    folder = tmp_path / "array"
    folder.mkdir()
    for doc in docs[:3]:
        write_json_atomic(folder / f"{doc['environment']['hostname']}.json", doc)
    code, out, err = run_cli(capsys, "report", str(folder), "-o", str(tmp_path / "files"))
    assert code == 0, err
    assert "(3 runs with a fleet section, " in out


def test_cli_gpu_filter_and_bad_since(capsys, tmp_path):
    docs = six_nodes()
    a100 = node("a100")
    a100["environment"]["gpus"][0]["name"] = "NVIDIA A100-SXM4-80GB"
    docs.append(a100)
    _store(docs)
    code, out, err = run_cli(capsys, "report", "--gpu", "a100", "-o", str(tmp_path / "a100"))
    assert code == 0, err
    page = (tmp_path / "a100" / "index.html").read_text(encoding="utf-8")
    assert 'id="fleet"' not in page and "A100 SXM4 80GB" in page and "H100" not in page.split("<main>")[0]
    code, out, err = run_cli(capsys, "report", "--since", "soon")
    assert code == 2 and err.startswith("error: --since 'soon'") and err.count("\n") == 1


def test_cli_threshold_and_alpha_judge_the_fleet_section_as_dlbench_fleet_does(capsys, tmp_path):
    docs = readme_fleet()
    _store(docs)
    code, out, err = run_cli(capsys, "report", "--host", "node*", "--threshold", "8", "--alpha", "0.01",
                             "-o", str(tmp_path / "t8"))
    assert code == 0, err
    section = _fleet_html((tmp_path / "t8" / "index.html").read_text(encoding="utf-8"))
    expected = fleet_report(docs, threshold_pct=8.0, alpha=0.01)
    assert expected["summary"] != fleet_report(docs)["summary"]  # node07 (-6%) is within 8%
    assert htmllib.escape(expected["summary"], quote=False) in section
    assert _chip(_rows(section)["node07"]) != "slow" and _chip(_rows(section)["node04"]) == "slow"
    assert "more than 8% below" in section and "p &lt; 0.01" in section
    for bad, message in ((["--threshold", "0"], "error: --threshold must be between 0 and 100 percent, got 0"),
                         (["--alpha", "1.5"], "error: --alpha must be between 0 and 1, got 1.5")):
        code, out, err = run_cli(capsys, "report", "--host", "node*", *bad, "-o", str(tmp_path / "bad"))
        assert code == 2 and err.strip() == message and not (tmp_path / "bad").exists()


def test_the_header_names_hosts_in_counting_order_whatever_order_the_runs_came_in():
    from dlbench.report.sections.header import facts

    runs = [{"hostname": h, "created_at": "2026-11-22T10:00:00Z", "gpus": "1x H100", "software": "torch 2.11"}
            for h in ("node10", "node3", "Node2", "node1", "node3")]
    hosts = next(card["v"] for card in facts(runs * 2) if card["k"] == "Hosts")
    assert hosts == "4 hosts: node1, Node2, \u2026 node10"
