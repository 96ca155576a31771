# SPDX-License-Identifier: GPL-2.0-only
"""agentcgroupd's systemd unit: hardened (systemd-analyze security, offline,
exposure at most 4.0 where the BPF capabilities allow; it was 9.6 UNSAFE)
and Type=notify (the daemon sends READY=1 once attached). SKIPs where
systemd-analyze is missing or too old for --offline."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

UNIT_IN = Path(REPO) / "live" / "agentcgroupd" / "agentcgroupd.service.in"


def _render(tmp: Path) -> Path:
    text = UNIT_IN.read_text(encoding="utf-8")
    for var, val in (("CMAKE_INSTALL_FULL_SBINDIR", "/usr/sbin"), ("CMAKE_INSTALL_FULL_SYSCONFDIR", "/etc"),
                     ("CMAKE_INSTALL_FULL_DOCDIR", "/usr/share/doc/agentcg")):
        text = text.replace(f"@{var}@", val)
    out = tmp / "agentcgroupd.service"
    out.write_text(text, encoding="utf-8")
    return out


def test_unit_is_notify_and_hardened(tmp_path: Path) -> None:
    unit = _render(tmp_path)
    text = unit.read_text()
    assert re.search(r"^Type=notify$", text, re.M)
    assert re.search(r"^CapabilityBoundingSet=CAP_BPF CAP_PERFMON CAP_SYS_ADMIN CAP_SYS_RESOURCE$", text, re.M)
    tool = shutil.which("systemd-analyze")
    if not tool:
        pytest.skip("systemd-analyze is not installed")
    res = subprocess.run([tool, "security", "--offline=true", str(unit)], capture_output=True, text=True,
                         timeout=60)
    m = re.search(r"Overall exposure level for agentcgroupd.service: ([0-9.]+)", res.stdout)
    if not m:
        pytest.skip(f"systemd-analyze security --offline is not supported here: {res.stderr.strip()[:200]}")
    assert float(m.group(1)) <= 4.0, res.stdout[-2000:]
