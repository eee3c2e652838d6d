"""The HTML report in a real headless Chromium: every chart image loads, and a screenshot is taken.

Skipped when no Chromium is installed (CI installs Debian's `chromium`).
"""

from __future__ import annotations

import html as htmllib
import json
import re
import shutil
import subprocess

import pytest

from report_docs import SAMPLE_CHARTS, sample_report_in

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# After the page's load event, record for every <img> whether it decoded (naturalWidth > 0) in a <pre>
# that --dump-dom prints.
IMAGE_CHECK = """
<script>
window.addEventListener("load", () => {
  const images = Array.from(document.images).map(img => ({
    chart: img.dataset.chart || null, complete: img.complete, width: img.naturalWidth, height: img.naturalHeight,
  }));
  const pre = document.createElement("pre");
  pre.id = "dlbench-image-check";
  pre.textContent = JSON.stringify(images);
  document.body.appendChild(pre);
});
</script>
"""


def _browser() -> str | None:
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


@pytest.fixture(scope="module")
def browser():
    path = _browser()
    if path is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")
    return path


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    return sample_report_in(tmp_path_factory)


def _chromium(browser: str, profile, *args: str) -> subprocess.CompletedProcess:
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", "--hide-scrollbars", f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def test_every_image_loads_in_chromium(browser, sample_report, tmp_path):
    _, index = sample_report
    page = index.read_text(encoding="utf-8")
    # A copy next to index.html, so relative links resolve the same way; the report itself stays script-free.
    check = index.parent / "browser-check.html"
    check.write_text(page.replace("</body>", IMAGE_CHECK + "</body>"), encoding="utf-8")
    proc = _chromium(browser, tmp_path / "profile", "--virtual-time-budget=10000", "--dump-dom",
                     check.as_uri())
    match = re.search(r'<pre id="dlbench-image-check">(.*?)</pre>', proc.stdout, re.S)
    assert match, f"no image report in the DOM (exit {proc.returncode}): {proc.stderr[-2000:]}"
    images = json.loads(htmllib.unescape(match.group(1)))
    assert sorted(i["chart"] for i in images) == sorted(SAMPLE_CHARTS)
    broken = [i for i in images if not (i["complete"] and i["width"] > 0 and i["height"] > 0)]
    assert not broken, f"images that did not load: {broken}"


def test_screenshot(browser, sample_report, tmp_path):
    import numpy as np
    from PIL import Image

    _, index = sample_report
    shot = tmp_path / "report.png"
    proc = _chromium(browser, tmp_path / "profile", "--window-size=1280,2600", f"--screenshot={shot}",
                     index.as_uri())
    assert shot.is_file(), f"no screenshot (exit {proc.returncode}): {proc.stderr[-2000:]}"
    with Image.open(shot) as image:
        assert image.size == (1280, 2600)
        rgb = np.asarray(image.convert("RGB")).astype(int)
        # The first ranking chart's highlighted bar is drawn in Okabe-Ito vermillion (#D55E00); the page itself
        # uses that colour nowhere, so seeing it means the embedded chart was rendered on screen.
        r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
        vermillion = int(((abs(r - 0xD5) < 12) & (abs(g - 0x5E) < 12) & (b < 20)).sum())
    assert vermillion > 200, f"no highlighted bar visible in {shot}"


# At the load event, measure the layout: page overflow, where each throughput cell ends, the header cards' widths.
LAYOUT_CHECK = """
<script>
window.addEventListener("load", () => {
  const right = el => el.getBoundingClientRect().right;
  const out = {
    viewport: window.innerWidth,
    page: document.documentElement.scrollWidth,
    throughput_right: Array.from(document.querySelectorAll("#results td.throughput")).map(right),
    status_right: Array.from(document.querySelectorAll("#results td.status")).map(right),
    fact_widths: Array.from(document.querySelectorAll(".fact")).map(el => el.getBoundingClientRect().width),
  };
  const pre = document.createElement("pre");
  pre.id = "dlbench-layout-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def test_narrow_window_shows_every_result_without_sideways_scrolling(browser, sample_report, tmp_path):
    # At 420 px (a phone) the results table scrolled sideways with only the run and configuration in view, and
    # the header cards were three columns of "PyTorc / h / 2.14.1".
    _, index = sample_report
    check = index.parent / "layout-check.html"
    check.write_text(index.read_text(encoding="utf-8").replace("</body>", LAYOUT_CHECK + "</body>"),
                     encoding="utf-8")
    proc = _chromium(browser, tmp_path / "profile", "--window-size=420,3000", "--virtual-time-budget=10000",
                     "--dump-dom", check.as_uri())
    match = re.search(r'<pre id="dlbench-layout-check">(.*?)</pre>', proc.stdout, re.S)
    assert match, f"no layout report in the DOM (exit {proc.returncode}): {proc.stderr[-2000:]}"
    layout = json.loads(htmllib.unescape(match.group(1)))
    width = layout["viewport"]
    assert width <= 500
    assert layout["throughput_right"] and max(layout["throughput_right"]) <= width
    assert layout["status_right"] and max(layout["status_right"]) <= width
    assert layout["page"] <= width  # nothing sticks out of the page
    assert min(layout["fact_widths"]) > width * 0.6  # one card per line


FLEET_CHECK = """
<script>
window.addEventListener("load", () => {
  const out = {
    viewport: window.innerWidth,
    page: document.documentElement.scrollWidth,
    cells_right: Array.from(document.querySelectorAll("#fleet table.fleet td")).map(
      el => el.getBoundingClientRect().right),
    cause_widths: Array.from(document.querySelectorAll("#fleet table.fleet td.cause")).map(
      el => el.getBoundingClientRect().width),
    charts: Array.from(document.querySelectorAll("#fleet img")).map(img => img.naturalWidth),
    facts: document.querySelectorAll(".fact").length,
  };
  const pre = document.createElement("pre");
  pre.id = "dlbench-fleet-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def test_fleet_section_on_a_phone(browser, tmp_path):
    # A fleet report at 420 px: the fleet chart loads and each host is a card whose cause reads across the screen
    # (in a six-column table it was a sliver of a column).
    from dlbench.report.html import write_report
    from fleet_docs import six_nodes

    index = write_report(six_nodes(), tmp_path / "fleet")
    check = index.parent / "fleet-check.html"
    check.write_text(index.read_text(encoding="utf-8").replace("</body>", FLEET_CHECK + "</body>"), encoding="utf-8")
    proc = _chromium(browser, tmp_path / "profile", "--window-size=420,3000", "--virtual-time-budget=10000",
                     "--dump-dom", check.as_uri())
    match = re.search(r'<pre id="dlbench-fleet-check">(.*?)</pre>', proc.stdout, re.S)
    assert match, f"no fleet report in the DOM (exit {proc.returncode}): {proc.stderr[-2000:]}"
    layout = json.loads(htmllib.unescape(match.group(1)))
    width = layout["viewport"]
    assert layout["charts"] and min(layout["charts"]) > 0
    assert len(layout["cells_right"]) == 6 * 6 and max(layout["cells_right"]) <= width
    assert layout["page"] <= width
    assert max(layout["cause_widths"]) > width * 0.7
    assert layout["facts"] == 4  # six runs: summed up, not eighteen cards


WIDE_CHECK = """
<script>
window.addEventListener("load", () => {
  const box = document.querySelector("#results .scroll");
  const out = {page: document.documentElement.scrollWidth, viewport: window.innerWidth,
               table: box.scrollWidth, room: box.clientWidth};
  const pre = document.createElement("pre");
  pre.id = "dlbench-wide-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def test_a_long_error_message_does_not_widen_the_results_table(browser, tmp_path):
    # A compiler error of one unbreakable 40-character token sat in the Status column and pushed the table past
    # its card: the message was cut off at the card's edge, to be scrolled to sideways.
    from dlbench.report.html import write_report
    from report_docs import make_document, make_result

    failed = make_result("bert-base-squad", "amp-fp16", "default", 128, seq_len=384, status="error")
    failed["error"] = ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: RuntimeError: Triton "
                       "Error [CUDA]: an illegal memory access was encountered" + " x" * 40)
    index = write_report([make_document([make_result(seed=1), failed])], tmp_path / "out")
    check = index.parent / "wide-check.html"
    check.write_text(index.read_text(encoding="utf-8").replace("</body>", WIDE_CHECK + "</body>"), encoding="utf-8")
    proc = _chromium(browser, tmp_path / "profile", "--window-size=1400,2000", "--virtual-time-budget=10000",
                     "--dump-dom", check.as_uri())
    match = re.search(r'<pre id="dlbench-wide-check">(.*?)</pre>', proc.stdout, re.S)
    assert match, f"no layout report in the DOM (exit {proc.returncode}): {proc.stderr[-2000:]}"
    layout = json.loads(htmllib.unescape(match.group(1)))
    assert layout["table"] <= layout["room"]
    assert layout["page"] <= layout["viewport"]


HEADLINE_CHECK = """
<script>
window.addEventListener("load", () => {
  const img = document.querySelector("figure.headline img");
  const out = {viewport: window.innerWidth, natural: img.naturalWidth, shown: img.getBoundingClientRect().width,
               box: img.closest("figure").getBoundingClientRect().width};
  const pre = document.createElement("pre");
  pre.id = "dlbench-headline-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


@pytest.mark.parametrize("width", [420, 1400])
def test_a_phone_gets_the_headline_chart_drawn_at_its_width(browser, sample_report, tmp_path, width):
    # At 420 px the 9-inch headline chart was scaled to fit (or scrolled): its 9 pt labels came out at 6 px.
    _, index = sample_report
    check = index.parent / f"headline-check-{width}.html"
    check.write_text(index.read_text(encoding="utf-8").replace("</body>", HEADLINE_CHECK + "</body>"),
                     encoding="utf-8")
    proc = _chromium(browser, tmp_path / "profile", f"--window-size={width},2000", "--virtual-time-budget=10000",
                     "--dump-dom", check.as_uri())
    match = re.search(r'<pre id="dlbench-headline-check">(.*?)</pre>', proc.stdout, re.S)
    assert match, f"no layout report in the DOM (exit {proc.returncode}): {proc.stderr[-2000:]}"
    layout = json.loads(htmllib.unescape(match.group(1)))
    if width < 720:
        assert layout["natural"] < 500  # the phone variant (4.4 in), shown at about its own size
        assert layout["shown"] <= layout["box"] and layout["shown"] > 0.8 * layout["natural"]
    else:
        assert layout["natural"] > 800  # the 9-inch chart
