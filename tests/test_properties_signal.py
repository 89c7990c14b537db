"""Properties of the token-average signal C = E[e_y x̄ᵀ] - E[e_y]E[x̄]ᵀ (docs/theory.md#signal), all exact.

- C = 0 ⇒ after one step every input's score vector f(X) is a multiple of E[e_y]: random finite tasks
  built so that x̄ is independent of y (each label sees permutations of the same base sequences), and
  circle walks with p ∈ {0, 1}, N = rK + 1.
- C ≠ 0 ⇒ V(1) is not of the form c·E[e_y]E[x̄]ᵀ: random finite tasks and circle walks whose signal
  (``rwtoolkit.engines.exact.signal_matrix``) is nonzero. (V(1) = -ηℓ'(0)(N-1)/N·E[e_y x̄ᵀ]; summing its rows
  shows c·E[e_y]E[x̄]ᵀ would force C = 0, provided ℓ'(0) ≠ 0, true for every loss drawn here.)
E[e_y] and E[x̄] are computed in the test from the task's arguments, independently of the packages.
"""

from __future__ import annotations

import pytest
import sympy as sp
from conftest import scaled
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from rwtoolkit.analyses.check.strategies import (
    balanced_circle_configs,
    circle_configs,
    custom_losses,
    epsilons,
    etas,
    exact_loss,
    finite_tasks,
    losses,
    mus,
    zero_signal_finite_tasks,
)
from rwtoolkit.engines.exact import derive, signal_matrix


def label_and_token_means(task) -> tuple[sp.Matrix, sp.Matrix]:
    """(E[e_y], E[x̄]) as exact K×1 columns, summed directly over the population's inputs."""
    pop = task.population()
    K, L = task.K, task.N - 1
    ey, xbar = sp.zeros(K, 1), sp.zeros(K, 1)
    for tokens, y, q in zip(pop.tokens.tolist(), pop.labels.tolist(), pop.exact_probs(), strict=True):
        ey[y] += q
        for s in tokens:
            xbar[s] += q / L
    return ey, xbar


def proportional(a: sp.Matrix, b: sp.Matrix) -> bool:
    """a ∥ b exactly: every 2x2 minor a_i b_j - a_j b_i expands to 0."""
    a, b = list(a), list(b)
    return all(sp.expand(a[i] * b[j] - a[j] * b[i]) == 0 for i in range(len(a)) for j in range(i + 1, len(a)))


loss_choices = st.one_of(losses(), custom_losses(), st.just("any"))


ZERO_SIGNAL = {"finite": zero_signal_finite_tasks(), "circle": balanced_circle_configs()}
NONZERO_SIGNAL = {"finite": finite_tasks(inputs=(2, 6), min_positive=2), "circle": circle_configs(N=(2, 6))}


@pytest.mark.parametrize("family", sorted(ZERO_SIGNAL))
@settings(max_examples=scaled(20))
@given(
    data=st.data(),
    eta=etas(),
    eps=epsilons(),
    mu=st.one_of(mus(), st.just("mu")),
    loss=loss_choices,
)
def test_zero_signal_makes_every_score_a_multiple_of_the_label_mean(family, data, eta, eps, mu, loss) -> None:
    task = data.draw(ZERO_SIGNAL[family], label="task").task()
    assert signal_matrix(task) == sp.zeros(task.K, task.K), "the strategy promised C = 0"
    ey, _ = label_and_token_means(task)
    state = derive(task, 1, eta=eta, eps=eps, mu=mu, loss=loss if loss == "any" else exact_loss(loss)).states[
        1
    ]
    event(f"labels with positive probability: {sum(1 for v in ey if v != 0)}")
    for n, f in enumerate(state.f):
        assert proportional(f, ey), f"input {n}: f(X) = {list(f)} is not a multiple of E[e_y] = {list(ey)}"


@pytest.mark.parametrize("family", sorted(NONZERO_SIGNAL))
@settings(max_examples=scaled(20))
@given(
    data=st.data(),
    eta=etas(),
    eps=epsilons(),
    mu=mus(),
    loss=st.one_of(losses(), custom_losses()),
)
def test_nonzero_signal_keeps_v1_off_the_rank_one_label_mean_form(family, data, eta, eps, mu, loss) -> None:
    task = data.draw(NONZERO_SIGNAL[family], label="task").task()
    C = signal_matrix(task)
    assume(C != sp.zeros(task.K, task.K))  # random tasks almost always carry a signal
    ey, xbar = label_and_token_means(task)
    R = ey * xbar.T  # E[e_y] E[x̄]ᵀ
    V1 = derive(task, 1, eta=eta, eps=eps, mu=mu, loss=exact_loss(loss)).states[1].V
    event(f"K={task.K}, N={task.N}")
    assert not proportional(V1.reshape(task.K * task.K, 1), R.reshape(task.K * task.K, 1)), (
        f"V(1) = {V1.tolist()} is c·E[e_y]E[x̄]ᵀ although C = {C.tolist()} ≠ 0"
    )
