"""The three notebooks run end to end (nbclient, as CI does) and show the results they describe.

Each notebook asserts its own claims and ends by printing ``RESULTS {json}``; this test checks those
numbers against independent derivations (given next to each expectation). Notebooks are stored with
outputs stripped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# jupyter_core warns about its config paths unless told which convention to use; warnings are errors.
os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")

import nbformat  # noqa: E402  (after the environment variable above)
from nbclient import NotebookClient  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _run(name: str) -> dict:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{name}: outputs are not stripped"
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    ).execute()
    lines = [
        line
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "stream"
        for line in out.text.splitlines()
        if line.startswith("RESULTS ")
    ]
    assert len(lines) == 1, f"{name}: expected one RESULTS line, got {lines}"
    images = sum(
        "image/png" in out.get("data", {})
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
    )
    return {**json.loads(lines[0].removeprefix("RESULTS ")), "_images": images}


@pytest.mark.slow
def test_notebook_a_symmetry_argument():
    """K = 3, N = 4. C_aa = -p(1-p)/9 (tests/test_explore.py derives it), so C vanishes at {0, 1}.
    At p = 1, Σ_{i<N} (Πᵀ)^{N-i} = Σ_{k=1}^{3} Π0^k = 1_{3×3} (Lemma E.1), so V(1) = η/(εNK)·1 = 10/12 = 5/6
    in every entry; every walk then gets the same scores and the smallest-label rule gives 1/K = 1/3."""
    results = _run("a_symmetry_argument.ipynb")
    assert results["vanishing_set"] == ["0", "1"]
    assert results["V1_p1"] == "5/6"
    assert results["accuracy"]["1"] == ["1/3", "1/3", "1/3"]
    assert results["accuracy"]["1/2"][-1] == "1/2"  # OPT = max{p, 1-p}


@pytest.mark.slow
def test_notebook_b_paper_figures():
    """Zero init at p = 1 (N = K + 1: one visit per node) scores every walk alike: accuracy 1/K = 1/6;
    p = 1/2 reaches OPT = 1/2. QA Task 2's two inputs share one bag of words: accuracy 1/2."""
    results = _run("b_paper_figures.ipynb")
    assert results["circle"]["p=1"] == pytest.approx(1 / 6, abs=1e-12)  # exact population average
    assert results["circle"]["p=1/2"] == pytest.approx(0.5, abs=1e-12)
    assert results["qa"] == {"task1_final": 1.0, "task2_final": 0.5}
    assert results["_images"] == 2


@pytest.mark.slow
def test_notebook_c_explore_new_task():
    """K = 4: N = 5 zeros {0, 1/2, 1} (tests/test_explore.py derives them by hand). The lazy walk with
    p = 1, K = 3, N = 4 has C[a, a-1] = 1/24 at q = 1/2 (tests/test_explore.py) and C = 0 at q = 0
    (Theorem 4.1's balanced visits), so its vanishing set contains 0 and not 1/2."""
    results = _run("c_explore_new_task.ipynb")
    assert results["circle_K4_zeros"]["5"] == ["0", "1/2", "1"]
    assert results["lazy_zeros"] == ["0"]
    assert results["first_of_two"]["verdict"] == "stuck"
    assert results["unstable"] == {"accuracy_first": 0.25, "accuracy_last": 0.5}
    assert results["_images"] == 2  # the instability plot and the report's accuracy curves
