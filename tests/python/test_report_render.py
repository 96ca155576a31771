# SPDX-License-Identifier: GPL-2.0-only
"""report.html renders: a contents list linking every section, the
terminal's table cells, embedded plots; and headless Chromium (Debian
`chromium`; SKIP when absent) paints it: the screenshot is not blank and
shows the table's and the plots' colours. It checks that the page renders,
not that it is pretty (the pictures are looked at by people)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, small_trace_path: str) -> Path:
    out = tmp_path_factory.mktemp("rep")
    res = run_cli(["compare", small_trace_path, "--policies", "agentcg,eevdf", "--seeds", "1-3",
                   "--out", str(out / "small"), "--plots"])
    assert res.returncode == 0, res.stderr
    (out / "terminal.txt").write_text(res.stdout)
    res = run_cli(["report", str(out)])
    assert res.returncode == 0, res.stderr
    return out


def test_report_has_contents_and_the_terminal_table(report: Path) -> None:
    page = (report / "report.html").read_text()
    anchors = re.findall(r'<a href="#([^"]+)">', page)
    assert anchors and all(f'id="{a}"' in page for a in anchors)
    # the columns in the order the comparison ran, every terminal cell in the page
    heads = re.findall(r"<th>([^<]*)</th>", page)
    assert heads[:5] == ["metric", "unit", "agentcg", "vs eevdf", "eevdf"]
    terminal = (report / "terminal.txt").read_text().splitlines()
    row = next(line for line in terminal if line.startswith("longest runnable wait"))
    cells = re.split(r"\s{2,}", row.strip())
    for c in cells:
        assert f">{c}</td>" in page, c
    assert page.count("data:image/png;base64,") >= 3
    assert "http://" not in page and "https://" not in page


def test_report_renders_in_chromium(report: Path, tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        pytest.skip("chromium is not installed (Debian package chromium)")
    shot = tmp_path / "shot.png"
    # Under the sanitize preset this interpreter runs with libasan preloaded;
    # chromium is not built for it (its own allocator and sandbox clash with
    # ASan's), so it starts without the sanitizer's environment.
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")}
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--force-device-scale-factor=1", "--window-size=1200,1400", f"--screenshot={shot}",
                    f"file://{report / 'report.html'}"], capture_output=True, timeout=120, env=env)
    assert shot.exists(), "chromium wrote no screenshot"
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(str(shot))[:, :, :3]
    assert img.shape[:2] == (1400, 1200)
    ink = (img < 0.9).any(axis=2).mean()  # text, table rules, plots
    assert ink > 0.03, f"the page looks blank ({ink:.3f} of the pixels are not white)"
    colours = {tuple(np.round(p, 1)) for p in img.reshape(-1, 3)[::97]}
    assert len(colours) > 20, "no plots or verdict colours painted"
