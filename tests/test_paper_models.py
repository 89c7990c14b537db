"""The papers' own models as traced examples (issue 42, item 1): examples/papers/*.py.

The oracle is each module itself: its forward pass in float64 and one step of torch autograd on the population
objective written here with ``F.cross_entropy`` (every position, weighted by the sequences' exact probabilities);
the model under test is the toolkit's trace of the same factory, run by ``rwtoolkit.models.evaluate`` and
``gradient_steps`` in FLOAT64. Each factory is traced once (S = 2, L = 3) and shared.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import PAPERS, paper_example

from rwtoolkit.models import (
    FLOAT64,
    CrossEntropy,
    batch,
    evaluate,
    get_model,
    gradient_steps,
    rational_positions,
)
from rwtoolkit.tasks import binary_markov_task, icl_markov_task

#: factory -> the task it is checked on (S = 2, N = 4: L = 3).
BINARY, ICL = binary_markov_task("1/3", "3/5", 4), icl_markov_task(2, 4, 1)
FACTORIES = {
    "makkuva_markov.py:tied": BINARY,
    "makkuva_markov.py:untied": BINARY,
    "makkuva_markov.py:tied_no_norm": BINARY,
    "makkuva_markov.py:untied_no_norm": BINARY,
    "edelman_induction.py:two_layer": ICL,
    "nichani_causal.py:simplified": ICL,
}
ETA = 0.5


def _batch(task):
    pop = task.population()
    P = FLOAT64.asarray(rational_positions(pop.N, 1))
    return pop, batch(FLOAT64, pop.tokens, pop.labels, np.asarray(pop.float_probs()), pop.K, P)


@pytest.fixture(scope="module")
def traced():
    """target -> (the toolkit's traced model, the module, the population, the batch, the start); traced once."""
    cache: dict = {}

    def get(target: str):
        if target not in cache:
            file, attr = target.split(":")
            pop, data = _batch(FACTORIES[target])
            model = get_model(str(PAPERS / file) + ":" + attr)
            start = model.own_start(FLOAT64, data.inputs.sizes, "zero")
            module = getattr(paper_example(file), attr)(pop.K, pop.N - 1)
            cache[target] = (model, module, pop, data, start)
        return cache[target]

    return get


def _torch_objective(module, pop) -> torch.Tensor:
    """Σ_x π(x) · (1/L) Σ_i F.cross_entropy(logits_i, x_{i+1}), written independently of the toolkit."""
    tokens = torch.as_tensor(pop.tokens)
    targets = torch.as_tensor(np.concatenate([pop.tokens[:, 1:], pop.labels[:, None]], axis=1))
    logits = module(tokens)
    n, L, S = logits.shape
    per = F.cross_entropy(logits.reshape(n * L, S), targets.reshape(n * L), reduction="none").reshape(n, L)
    return (torch.as_tensor(np.asarray(pop.float_probs(), dtype=np.float64)) * per.mean(dim=1)).sum()


@pytest.mark.parametrize("target", list(FACTORIES))
def test_the_traced_paper_model_gives_the_modules_own_logits_at_its_start(traced, target):
    model, module, pop, data, start = traced(target)
    for name, p in module.named_parameters():
        np.testing.assert_array_equal(start[name], p.detach().numpy(), err_msg=name)
    ours = evaluate(model, FLOAT64, start, data, CrossEntropy("lm"), gradient=False)
    expected = module(torch.as_tensor(pop.tokens)).detach().numpy()
    assert ours.token_logits.shape == expected.shape == (len(pop.tokens), pop.N - 1, 2)
    np.testing.assert_allclose(np.asarray(ours.token_logits, dtype=np.float64), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(float(ours.loss), _torch_objective(module, pop).item(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("target", list(FACTORIES))
def test_one_gd_step_of_the_traced_model_is_torch_autograds_step_on_the_module(traced, target):
    model, module, pop, data, start = traced(target)
    _, after = list(gradient_steps(model, FLOAT64, start, data, CrossEntropy("lm"), ETA, 1))
    module.zero_grad()
    _torch_objective(module, pop).backward()
    for name, p in module.named_parameters():
        step = (p - ETA * p.grad).detach().numpy()
        np.testing.assert_allclose(after.params[name], step, rtol=0, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("norm", ["", "_no_norm"])
def test_the_tied_read_out_is_the_embedding_itself(traced, norm):
    tied, tied_module, pop, data, tied_start = traced(f"makkuva_markov.py:tied{norm}")
    untied, _, _, _, untied_start = traced(f"makkuva_markov.py:untied{norm}")
    assert set(untied_start) - set(tied_start) == {"a"}  # one parameter e, no second copy
    assert tied_module.a is None
    # the untied model with its read-out a set to e is the tied model, logits and gradient (e's collects both uses)
    as_tied = {**untied_start, **tied_start, "a": tied_start["e"]}
    loss = CrossEntropy("lm")
    ours, theirs = (
        evaluate(tied, FLOAT64, tied_start, data, loss),
        evaluate(untied, FLOAT64, as_tied, data, loss),
    )
    np.testing.assert_allclose(ours.token_logits, theirs.token_logits, rtol=0, atol=1e-15)
    np.testing.assert_allclose(
        ours.gradient["e"], theirs.gradient["e"] + theirs.gradient["a"], rtol=0, atol=1e-15
    )


def test_the_staged_training_moves_a1_with_a2_fixed_then_a2_alone_as_torch_does(traced):
    model, _, pop, data, start = traced("nichani_causal.py:simplified")
    example = paper_example("nichani_causal.py")
    module, stages = example.simplified(pop.K, pop.N - 1), example.STAGES(1, 1)
    assert stages == [(1, ["A1"]), (1, ["A2"])]
    states = [
        e.params
        for e in gradient_steps(model, FLOAT64, start, data, CrossEntropy("lm"), ETA, 2, stages=stages)
    ]
    for trained in ("A1", "A2"):  # torch: the step on the stage's parameter only
        module.zero_grad()
        _torch_objective(module, pop).backward()
        with torch.no_grad():
            getattr(module, trained).sub_(ETA * getattr(module, trained).grad)
    np.testing.assert_array_equal(states[1]["A2"], start["A2"])  # stage 1: A2 kept at β₀ I
    np.testing.assert_array_equal(states[2]["A1"], states[1]["A1"])  # stage 2: A1 kept
    assert np.abs(states[1]["A1"] - start["A1"]).max() > 1e-3  # A1 moved (its gradient is not zero at β₀ I)
    for name, p in module.named_parameters():
        np.testing.assert_allclose(states[2][name], p.detach().numpy(), rtol=0, atol=1e-12, err_msg=name)


def test_makkuvas_model_refuses_an_alphabet_other_than_binary():
    with pytest.raises(
        ValueError, match="S=3: the model of Makkuva et al. reads binary sequences; S must be 2"
    ):
        paper_example("makkuva_markov.py").tied(3, 4)
