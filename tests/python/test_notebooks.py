# SPDX-License-Identifier: GPL-2.0-only
"""The evaluation notebooks execute headless (nbclient, python3 kernel),
each within two minutes, without errors, and produce their plots, so what
they show stays true to the current code.
"""
from __future__ import annotations

import os

import pytest

from conftest import PYDIR, REPO

NOTEBOOKS = ["cpu_evaluation.ipynb", "gpu_evaluation.ipynb"]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_executes(name, monkeypatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    monkeypatch.setenv("PYTHONPATH", PYDIR)
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel picks the inline backend
    path = os.path.join(REPO, "notebooks", name)
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": os.path.join(REPO, "notebooks")}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    if name == "cpu_evaluation.ipynb":
        assert len(images) >= 6, "expected the CDF, tool-call, share, timeline and sweep plots"
    else:
        assert len(images) >= 3, "expected the GPU timelines (lock holds) and the share plot"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebooks_use_the_eevdf_baseline(name) -> None:
    """The notebooks compare against eevdf (the kernel's default since 6.6, the
    baseline of `compare` and of the live runs), never cfs; read without
    executing, so this holds even where nbclient is missing."""
    import json

    with open(os.path.join(REPO, "notebooks", name), encoding="utf-8") as f:
        nb = json.load(f)
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert '"eevdf"' in code
    assert '"cfs"' not in code, "a notebook still uses cfs as its baseline"
