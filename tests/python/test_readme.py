# SPDX-License-Identifier: GPL-2.0-only
"""The README's walkthrough runs as written: every code block marked with
`<!-- walkthrough -->` on the line before it is extracted and run, top to
bottom, in a scratch directory (sh blocks with bash, python blocks with
this interpreter), with `./agentcg` and `traces/` reachable there as in the
repository. Blocks that need the VM, root or recordings (live, install,
import) are not marked. A block that fails names itself and its output."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from conftest import PYDIR, REPO, build_under_test

MARK = "<!-- walkthrough -->"


def walkthrough_blocks(text: str) -> List[Tuple[int, str, str]]:
    """(line, language, code) of each marked fenced block."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != MARK:
            continue
        m = re.match(r"```(\w+)", lines[i + 1].strip()) if i + 1 < len(lines) else None
        assert m, f"README.md:{i + 1}: {MARK} must be followed by a fenced code block"
        end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == "```")
        out.append((i + 2, m.group(1), "\n".join(lines[i + 2:end]) + "\n"))
    return out


def test_readme_walkthrough_runs(tmp_path: Path) -> None:
    blocks = walkthrough_blocks((Path(REPO) / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 4, "the README lost its walkthrough markers"
    launcher = tmp_path / "agentcg"
    launcher.write_text(f'#!/bin/sh\nexec "{REPO}/agentcg" "$@"\n')  # the repository's launcher, cwd here
    launcher.chmod(0o755)
    (tmp_path / "traces").symlink_to(Path(REPO) / "traces")
    (tmp_path / "out").mkdir()
    env = dict(os.environ, PYTHONPATH=PYDIR, MPLBACKEND="Agg")
    if build_under_test():  # under CTest: ./agentcg runs the build under test
        env["AGENTCG_BUILD_DIR"] = build_under_test()
    for line, lang, code in blocks:
        if lang in ("sh", "bash"):
            cmd = ["bash", "-euo", "pipefail", "-c", code]
        elif lang == "python":
            cmd = [sys.executable, "-c", code]
        else:
            pytest.fail(f"README.md:{line}: cannot run a ```{lang} block")
        res = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, f"README.md:{line}: block failed ({res.returncode}):\n{code}\n{res.stderr[-3000:]}"
    # what the walkthrough promises to leave behind
    assert (tmp_path / "out" / "fs" / "report.html").exists()
    assert (tmp_path / "out" / "io" / "plots" / "schedule-agentcg.png").exists()
    assert (tmp_path / "out" / "sw" / "sweep.csv").exists()
