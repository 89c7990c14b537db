"""Shared test setup: hypothesis profiles chosen by HYPOTHESIS_PROFILE, a seeded RNG, tolerance helpers,
example counts scaled by the profile, and a float64 rwtoolkit.engines.numeric run (the strategies live in rwtoolkit.analyses.check.strategies).

Profiles: ``dev`` (default; quick, random), ``ci`` (derandomized, no deadline, modest example
counts: what .ci/run selects), ``thorough`` (many examples, for a run by hand).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from fractions import Fraction
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, settings

from rwtoolkit.analyses.check import CheckConfig
from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, TrainResult, train
from rwtoolkit.tasks import CircleWalk

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=10,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=10)
settings.register_profile("thorough", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def scaled(n_ci: int) -> int:
    """Examples for a property: ``n_ci`` under the ``ci``/``dev`` profiles, 20x that under ``thorough``.

    The profiles set max_examples = 10 (ci, dev) or 200 (thorough); properties whose examples are
    cheap ask for more than 10 and keep the profile's ratio.
    """
    return max(1, n_ci * settings.default.max_examples // 10)


def numeric_run(
    task: object, model: ModelConfig, steps: int, eta: object, eps: Fraction, loss: str, **kwargs: object
) -> TrainResult:
    """rwtoolkit.engines.numeric population GD in float64 for ``steps`` updates (``eta`` a Fraction or a schedule)."""
    # threads=1: these tensors are tiny, and a second torch thread only waits on a shared machine
    kwargs = {"threads": 1, **kwargs}
    cfg = TrainConfig(
        steps=steps,
        eta=eta if callable(eta) else float(eta),
        eps=float(eps),
        loss=loss,
        population=True,
        **kwargs,
    )
    return train(task, model, cfg, progress=False)


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A numpy Generator seeded from the test's name; the seed is printed so a failure can be replayed."""
    seed = sum(map(ord, request.node.nodeid)) % 2**32
    print(f"rng seed = {seed}")
    return np.random.default_rng(seed)


def assert_close(actual: object, expected: object, atol: float, what: str = "") -> None:
    """Assert max |actual - expected| <= atol (arrays or nested lists); the tolerance is part of the message."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    err = float(np.max(np.abs(a - e))) if a.size else 0.0
    assert err <= atol, f"{what}: max abs error {err:.3g} exceeds the tolerance {atol:g}"


def assert_rel(actual: object, expected: object, rtol: float, what: str = "") -> float:
    """Assert max |actual - expected| <= rtol·max(1, max |expected|); returns the scaled error.

    Scaling by max(1, ·) makes the check relative for large values and absolute near zero, where a
    relative error is meaningless (exact zeros of the oracle).
    """
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    if not e.size:
        return 0.0
    err = float(np.max(np.abs(a - e))) / max(1.0, float(np.max(np.abs(e))))
    assert err <= rtol, f"{what}: relative error {err:.3g} exceeds the tolerance {rtol:g}"
    return err


def transition_by_hand(K: int, p: float) -> np.ndarray:
    """Π from docs/theory.md#task, written out independently of rwtoolkit.tasks: row i = current state (0-based)."""
    Pi = np.zeros((K, K))
    for i in range(K):
        Pi[i, (i + 1) % K] += p
        Pi[i, (i - 1) % K] += 1 - p
    return Pi


def forward_by_hand(
    task: CircleWalk, M: int, sigma: float, seed: int, normalize: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(S (n, N), f (n, K)) of the population at a Gaussian init, in numpy with X̃ built explicitly.

    Uses the documented seeding: SeedSequence(seed).spawn(3)[2] draws V(0) (K×K) then W(0); the sine
    basis of docs/theory.md#model; with ``normalize`` every column x̃_j (and x̃_N) is scaled to unit norm.
    """
    pop = task.population()
    K, N = task.K, task.N
    init = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2])
    V = init.normal(0.0, sigma, size=(K, K))
    W = init.normal(0.0, sigma, size=(K + M, K + M))
    i, m = np.arange(1, N + 1), np.arange(1, M + 1)
    P = np.sin(np.pi * np.outer(m, i) / M)  # (M, N) the sine basis
    X = np.zeros((pop.size, K, N))
    X[:, :, :-1] = pop.one_hot()
    Xt = np.concatenate([X, np.broadcast_to(P, (pop.size, M, N))], axis=1)  # (n, K+M, N)
    if normalize:
        Xt = Xt / np.linalg.norm(Xt, axis=1, keepdims=True)
    logits = np.einsum("nkj,k->nj", Xt, W @ Xt[0, :, -1])  # (n, N)
    S = np.exp(logits - logits.max(1, keepdims=True))
    S /= S.sum(1, keepdims=True)
    return S, np.einsum("yk,nkj,nj->ny", V, X, S)  # f (n, K)


def rwnumeric_training(config: CheckConfig, fast: bool = True):
    """rwtoolkit.engines.numeric as an implementation for ``rwtoolkit.analyses.check`` (protocol (b)), through its public API only.

    State t comes from ``train(steps=t)`` on the config's population and P: ``TrainResult.final["V"]``,
    ``TrainResult.W()``, ``history[t]`` (train_loss, test_accuracy) and the trained model's ``evaluate``
    (f, S of every input, in the population's order).
    """
    import torch

    model = ModelConfig(
        K=config.K,
        N=config.N,
        M=config.M,
        pos=config.embedding,
        mu=float(config.mu),
        pos_seed=config.seed,
    )
    tokens = torch.as_tensor(config.tokens)
    t = 0
    while True:
        cfg = TrainConfig(
            steps=t,
            eta=float(config.eta),
            eps=float(config.eps),
            loss=config.loss,
            population=True,
            dtype=config.dtype,
            fast=fast,
            threads=1,
        )
        run = train(config.task, model, cfg, progress=False)
        f, S, _ = run.net.evaluate(tokens)
        yield {
            "V": run.final["V"],
            "W": run.W(),
            "S": S,
            "f": f,
            "loss": run.history[t]["train_loss"],
            "accuracy": run.history[t]["test_accuracy"],
        }
        t += 1


#: ``rw train`` options for a run of a few milliseconds (a 4-cycle, sampled walks), shared by the CLI tests.
SMALL_TRAIN_ARGS = ["--K", "4", "--N", "5", "--M", "8", "--p", "0.7", "--steps", "3"]
SMALL_TRAIN_ARGS += ["--train-size", "20", "--test-size", "10"]


def icl_train_argv(folder, eta: str, steps: int, record_every: int) -> list[str]:
    """``rw train`` of examples/nanogpt_attention.py's one_layer on in-context Markov chains (S = 2, N = 4; the
    spec written into ``folder``) from its own start, population GD: the argv the checkpoint tests resume."""
    import json
    from pathlib import Path

    spec = Path(folder) / "icl.json"
    spec.write_text(json.dumps({"task": {"family": "icl_markov", "params": {"S": 2, "N": 4}}}))
    model = Path(__file__).resolve().parents[1] / "examples" / "nanogpt_attention.py"
    return [
        "train", "--model", f"{model}:one_layer", "--spec", str(spec), "--init", "own", "--population",
        "--eta", eta, "--steps", str(steps), "--record-every", str(record_every),
    ]  # fmt: skip


#: The papers' models as the examples folder holds them (``--model examples/papers/FILE:ATTR``).
PAPERS = Path(__file__).resolve().parents[1] / "examples" / "papers"


def paper_example(file: str) -> ModuleType:
    """The module ``examples/papers/FILE`` loaded from its path, for tests that run the module itself (torch)
    as the oracle of the toolkit's trace of it."""
    spec = importlib.util.spec_from_file_location(file.removesuffix(".py"), PAPERS / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def beta_expectation(counts: tuple[tuple[int, int], ...], alpha: int) -> sp.Expr:
    """E over independent Beta(α, α) rows (S = 2) of Π_a π_a0^{n_a0} π_a1^{n_a1}, by integration (α an integer):
    the in-context Markov tasks' exact sequence weights written out by hand, ``counts`` the transition counts
    (n_a0, n_a1) of each row a."""
    x = sp.symbols("x", positive=True)
    density = (
        x ** (alpha - 1)
        * (1 - x) ** (alpha - 1)
        / sp.integrate(x ** (alpha - 1) * (1 - x) ** (alpha - 1), (x, 0, 1))
    )
    out = sp.Integer(1)
    for n0, n1 in counts:
        out *= sp.integrate(sp.expand(density * x**n0 * (1 - x) ** n1), (x, 0, 1))
    return out
