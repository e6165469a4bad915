"""The site in a real browser: headless Chromium screenshots the landing page, the Gluon
tutorial and an op page, and a script run in each page reports every code block, table or
signature wider than the column it sits in (a reader would have to scroll sideways)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.docs.conftest import require

PAGES = ["index.html", "tutorials/gluon.html", "ops/op_Convolution.html"]
WIDTH, HEIGHT = 1280, 1600
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                  f"--window-size={WIDTH},{HEIGHT}"]
# Marks what overflows and writes the list into the page, which --dump-dom then prints.
CHECK_JS = """
window.addEventListener("load", () => {
  const wide = [];
  // Furo's content column; an element past its right edge runs under the page's side bar.
  const column = document.querySelector(".content") || document.body;
  const right = Math.min(column.getBoundingClientRect().right,
                         document.documentElement.clientWidth) + 1;
  for (const el of document.querySelectorAll("pre, table, .table-wrapper, dt.sig")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    if (el.scrollWidth > el.clientWidth + 1 || r.right > right) {
      wide.push(el.tagName + "." + el.className + ": " + el.textContent.trim().slice(0, 60));
    }
  }
  const out = document.createElement("pre");
  out.id = "overflow-report";
  out.textContent = JSON.stringify({checked: true, wide: wide});
  document.body.appendChild(out);
});
"""
_REPORT = re.compile(r'<pre id="overflow-report">(.*?)</pre>', re.DOTALL)


def chromium() -> str:
    """The browser to drive (Debian's package installs /usr/bin/chromium)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    require([] if found else ["Chromium (apt-get install chromium)"], "the browser test")
    return found


def _run(browser: str, profile: Path, *args: str) -> str:
    done = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def overflow_report(browser: str, profile: Path, page: Path) -> dict:
    """Load a copy of ``page`` with the check script added; return what it found."""
    probe = page.with_name("overflow-check-" + page.name)
    probe.write_text(page.read_text().replace(
        "</body>", f"<script>{CHECK_JS}</script></body>"))
    dom = _run(browser, profile, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri())
    found = _REPORT.search(dom)
    assert found, f"the check script did not run in {page.name}"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&")
                      .replace("&lt;", "<").replace("&gt;", ">"))


@pytest.mark.parametrize("rel", PAGES)
def test_page_renders_without_overflow(built_site, rel: str, tmp_path: Path) -> None:
    browser = chromium()
    page = built_site[0] / rel
    shot = built_site[0].parent / ("screenshot-" + rel.replace("/", "-") + ".png")
    _run(browser, tmp_path / "profile", f"--screenshot={shot}", page.as_uri())
    assert shot.exists() and shot.stat().st_size > 20_000  # a blank page is a few kB
    report = overflow_report(browser, tmp_path / "profile2", page)
    assert report["checked"] and report["wide"] == [], report["wide"]


def test_the_check_finds_a_code_block_wider_than_its_column(tmp_path: Path) -> None:
    """The overflow check itself: a 300-pixel column holding a 200-character line."""
    browser = chromium()
    page = tmp_path / "wide.html"
    page.write_text('<html><body><div class="content" style="width:300px">'
                    '<pre style="overflow:auto">' + "x" * 200 + "</pre>"
                    '<table><tr><td>short</td></tr></table></div></body></html>')
    report = overflow_report(browser, tmp_path / "profile", page)
    assert len(report["wide"]) == 1 and report["wide"][0].startswith("PRE")
