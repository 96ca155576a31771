# SPDX-License-Identifier: GPL-2.0-only
"""The Python package's layout (issue 13): imports between the package's
modules point one way (no cycles, such as cli <-> demo once was; nothing
imports the command line), and live.py finds the build and source trees
from an argument, the environment or the build's CMakeCache.txt, never from
where the package file sits.
"""
from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Dict, Set

import pytest

from conftest import REPO

PKG = os.path.join(REPO, "python", "agentcg")  # the sources, not a build's copy


def _imports() -> Dict[str, Set[str]]:
    """module -> the package modules it imports (at any depth: lazy imports count)."""
    mods = {f[:-3] for f in os.listdir(PKG) if f.endswith(".py")}
    graph: Dict[str, Set[str]] = {}
    for m in mods:
        tree = ast.parse(Path(PKG, m + ".py").read_text(encoding="utf-8"))
        deps: Set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module.split(".")[0])
                else:
                    deps.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("agentcg."):
                deps.add(node.module.split(".")[1])
            elif isinstance(node, ast.Import):
                deps.update(a.name.split(".")[1] for a in node.names if a.name.startswith("agentcg."))
        graph[m] = {d for d in deps if d in mods and d != m}
    return graph


def test_package_imports_have_no_cycle() -> None:
    graph = _imports()
    assert "demo" in graph["cli"], "the parser check below would pass vacuously"
    state: Dict[str, int] = {}

    def visit(m: str, path: list) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path + [m, d]))
            if d not in state:
                visit(d, path + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_nothing_imports_the_command_line() -> None:
    users = sorted(m for m, deps in _imports().items() if "cli" in deps and m != "__main__")
    assert users == []


def test_live_does_not_locate_the_checkout_from_its_own_path() -> None:
    src = Path(PKG, "live.py").read_text(encoding="utf-8")
    assert "__file__" not in src and "parents[" not in src


def _fake_build(tmp: Path, home: str) -> Path:
    b = tmp / "build"
    for rel in ("live/agentcgroupd/agentcgroupd", "live/player/agentcg-player"):
        (b / rel).parent.mkdir(parents=True, exist_ok=True)
        (b / rel).write_text("")
    (b / "CMakeCache.txt").write_text(f"# cache\nCMAKE_HOME_DIRECTORY:INTERNAL={home}\n")
    return b


def test_live_source_tree_from_the_build_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentcg import live

    monkeypatch.delenv("AGENTCG_SOURCE_DIR", raising=False)
    b = live.build_dir(str(_fake_build(tmp_path, REPO)))
    assert live.source_dir(b) == Path(REPO)
    # a cache naming a folder that is not a source tree: a skip that says what to set
    other = tmp_path / "elsewhere"
    other.mkdir()
    b2 = _fake_build(tmp_path / "x", str(other))
    with pytest.raises(live.LiveSkip, match="AGENTCG_SOURCE_DIR"):
        live.source_dir(b2)
    monkeypatch.setenv("AGENTCG_SOURCE_DIR", REPO)
    assert live.source_dir(b2) == Path(REPO)


def test_live_build_dir_from_env_and_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentcg import live

    b = _fake_build(tmp_path, REPO)
    monkeypatch.setenv("AGENTCG_BUILD_DIR", str(b))
    assert live.build_dir() == b
    monkeypatch.setenv("AGENTCG_BUILD_DIR", str(tmp_path / "missing"))
    with pytest.raises(live.LiveSkip, match="no build directory here.*--build DIR or set AGENTCG_BUILD_DIR"):
        live.build_dir()
