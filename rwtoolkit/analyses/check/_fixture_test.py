"""Frozen exact oracles for your implementation: written by ``rw check --emit``, run by plain pytest.

This folder holds, per configuration, the exact trajectory of population gradient descent from zero
initialisation as an oracle file (``oracles/*.json`` with per-input columns ``*.inputs.npz``) and
the positional embeddings P the implementation is given (``oracles/*.P.npy``); ``manifest.json``
lists them with their SHA-256 digests, the toolkit version and the tolerance rule. Running it needs
numpy, pytest and your framework only: ``rwcheck_runtime/`` is the toolkit's own numpy-only runtime
(``rwtoolkit.runtime``: the config your factory is handed, the protocol runner, the comparison and the
oracle reader), its package folder copied here as it is.

Name your implementation (a factory ``config -> torch.nn.Module`` or ``config -> iterator of states``,
the protocols of ``rw check``) once, by any of::

    pytest DIR --rwfixture-factory path/to/model.py:factory
    RWFIXTURE_FACTORY=mypackage.model:factory pytest DIR
    rw check path/to/model.py:factory --emit DIR        (recorded in manifest.json)

and choose the dtype with ``--rwfixture-dtype float32`` (default float64). A failure names the first
step and quantity that leave the oracle, both values, the tolerance, and a snippet that reproduces it.
A missing or damaged file (``manifest.json`` cut, an oracle altered) fails in one line naming the file.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rwcheck_runtime as runtime  # type: ignore[import-not-found]  # the package beside this file

HERE = Path(__file__).resolve().parent
MANIFEST: dict[str, Any]
try:
    MANIFEST, DAMAGED = runtime.load_manifest(HERE), ""
except runtime.OracleFormatError as err:  # every test fails with this line (none is collected silently)
    MANIFEST, DAMAGED = {"files": {}, "configs": [{"id": "manifest.json"}]}, str(err)


class NotChecked(UserWarning):
    """A read-out the implementation does not provide (reported, never passed)."""


def _target(request: pytest.FixtureRequest) -> str:
    target = (
        request.config.getoption("rwfixture_factory", default=None)
        or os.environ.get("RWFIXTURE_FACTORY")
        or MANIFEST.get("implementation")
    )
    if not target:
        pytest.fail(
            "no implementation named: pass --rwfixture-factory MODULE:FACTORY (or path/to/file.py:FACTORY), "
            "set RWFIXTURE_FACTORY, or emit the fixtures with rw check MODULE:FACTORY --emit DIR",
            pytrace=False,
        )
    return str(target)


def _dtype(request: pytest.FixtureRequest) -> str:
    return str(
        request.config.getoption("rwfixture_dtype", default=None)
        or os.environ.get("RWFIXTURE_DTYPE")
        or "float64"
    )


def _snippet(target: str, entry: dict, dtype: str) -> str:
    return "\n".join(
        [
            "import sys; from pathlib import Path",
            f"here = Path({str(HERE)!r}); sys.path.insert(0, str(here))",
            "import rwcheck_runtime as rt",
            f"entry = next(e for e in rt.load_manifest(here)['configs'] if e['id'] == {entry['id']!r})",
            f"config = rt.fixture_config(here, entry, {dtype!r})",
            f"readouts = rt.run(rt.load_factory({target!r}), config, entry['steps'])",
            "expected = rt.expected_readouts(here / entry['oracle'], config.P)",
            f"print(rt.first_difference(readouts, expected, entry['rtol'][{dtype!r}],",
            f"                          frozenset(entry['accuracy_not_compared'][{dtype!r}])))",
        ]
    )


def _read(reader: Callable[..., Any], *args: Any) -> Any:
    """``reader(*args)``; a damaged file fails the test with the reader's one line naming it."""
    try:
        return reader(*args)
    except runtime.OracleFormatError as err:
        damaged = str(err)
    pytest.fail(damaged, pytrace=False)


def test_files_are_the_ones_emitted() -> None:
    """Every file of the fixture is there with the SHA-256 digest the manifest recorded."""
    if DAMAGED:
        pytest.fail(DAMAGED, pytrace=False)
    wrong = []
    for name, digest in MANIFEST["files"].items():
        try:
            data = (HERE / name).read_bytes()
        except OSError as err:
            wrong.append(f"{name} is missing or unreadable ({type(err).__name__}; manifest.json lists it)")
            continue
        if hashlib.sha256(data).hexdigest() != digest:
            wrong.append(f"{name} changed since it was emitted (its SHA-256 differs from manifest.json)")
    if wrong:
        pytest.fail("; ".join(wrong), pytrace=False)


@pytest.mark.parametrize("entry", MANIFEST["configs"], ids=[e["id"] for e in MANIFEST["configs"]])
def test_matches_the_exact_oracle(entry: dict, request: pytest.FixtureRequest) -> None:
    """V, W x̃_N, S, f, loss and accuracy at t = 0..T equal the oracle within the manifest's tolerance."""
    if DAMAGED:
        pytest.fail(DAMAGED, pytrace=False)
    target, dtype = _target(request), _dtype(request)
    if dtype not in entry["rtol"]:
        pytest.fail(f"--rwfixture-dtype {dtype}: the fixtures have tolerances for {', '.join(entry['rtol'])}")
    factory = runtime.load_factory(target)
    config = _read(runtime.fixture_config, HERE, entry, dtype)
    readouts = runtime.run(factory, config, entry["steps"])
    if readouts.P is not None:
        found = runtime.check_positions(readouts.P, config.N, dtype)
        if found.assumption is not None:
            pytest.fail(f"P: {found.assumption} fails: {found.text}", pytrace=False)
        if abs(found.mu - float(config.mu)) > 1e-9 * float(config.mu):
            pytest.fail(
                f"the implementation keeps its own P (μ = {found.mu:.17g}); a frozen oracle holds the trajectory "
                f"at the config's μ = {config.mu} only: use config.P here, or rw check (which re-derives at your μ)",
                pytrace=False,
            )
    expected = _read(
        runtime.expected_readouts, HERE / entry["oracle"], readouts.P if readouts.P is not None else config.P
    )
    skip = frozenset(entry["accuracy_not_compared"][dtype])
    diff = runtime.first_difference(readouts, expected, entry["rtol"][dtype], skip)
    if diff is not None:
        pytest.fail(
            f"first wrong quantity: {diff.describe()}\n"
            f"on {config.describe()}\n"
            f"tolerance: {MANIFEST['tolerance_rule'][dtype]}\n"
            f"reproduce:\n{_snippet(target, entry, dtype)}",
            pytrace=False,
        )
    for q in runtime.QUANTITIES:
        if not readouts.provided(q):
            warnings.warn(
                f"{entry['id']}: {q} not checked: {readouts.missing_reason(q)}", NotChecked, stacklevel=1
            )
