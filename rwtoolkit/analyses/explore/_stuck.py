"""Exact checks of the stuck manifold (docs/theory.md#statements, #signal) on any finite task, from ``rwtoolkit.engines.exact.derive``.

After one GD step from zero init, V(1) = -η ℓ'(0) E[e_y (X·1/N)ᵀ]; when C = 0 this is a multiple of
E[e_y] E[x̄]ᵀ, so every input's score vector f(X) is a multiple of m = E[e_y]. The stuck manifold is
"all inputs share one score vector": then every input gets the same prediction. We follow it for
several steps with ℓ' abstract (the undefined function ``dell`` of ``derive(loss="any")``), so a
"shared at every step" verdict holds for every differentiable loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from rwtoolkit.engines.exact import DELL, derive  # DELL: the abstract ℓ' of derive(loss="any")
from rwtoolkit.tasks import CircleWalk, FiniteTask, exact

#: Digits used when a numeric witness separates two score vectors, and the size below which a
#: difference counts as "not separated" (50 digits leave > 20 digits of margin for these sizes).
WITNESS_DIGITS, WITNESS_FLOOR = 50, sp.Float("1e-30")


@dataclass(frozen=True)
class OneStep:
    """f(X) after one exact GD step for every input, compared with m = E[e_y].

    ``parallel_to_mean_label``: every f(X) is a multiple of m; ``identical``: all f(X) are equal;
    ``witness``: for a failure, an input index n and a label pair (a, b) with f_a m_b ≠ f_b m_a
    (or the two inputs whose f differ)."""

    parallel_to_mean_label: bool
    identical: bool
    mean_label: list[sp.Expr]
    witness: str

    @property
    def shared(self) -> bool:
        """All inputs share one score direction, the one of E[e_y] (the C = 0 prediction)."""
        return self.parallel_to_mean_label


def mean_label(task: CircleWalk | FiniteTask) -> list[sp.Expr]:
    """m = E[e_y], exact (K entries)."""
    pop = task.population()
    m = [sp.Integer(0)] * pop.K
    for y, q in zip(pop.labels.tolist(), pop.exact_probs()):
        m[y] += q
    return [sp.expand(v) for v in m]


def one_step_check(task: CircleWalk | FiniteTask, eta: object = 1, mu: object = "mu") -> OneStep:
    """Whether every f(X) after one exact GD step from zero is a multiple of E[e_y] (any loss: ℓ'(0)
    stays the symbol dell(0)). The entries are linear in dell(0), so ``expand`` decides exactly.

    >>> from rwtoolkit.tasks import qa_task2, qa_task1
    >>> one_step_check(qa_task2()).shared, one_step_check(qa_task1()).shared
    (True, False)
    """
    state = derive(task, 1, eta=eta, mu=mu, loss="any").states[1]
    m = mean_label(task)
    K = len(m)
    fs = state.f
    parallel, witness = True, ""
    for n, f in enumerate(fs):
        for a in range(K):
            for b in range(a + 1, K):
                if sp.expand(f[a] * m[b] - f[b] * m[a]) != 0:
                    parallel = False
                    witness = (
                        f"input {n}: f[{a}]·m[{b}] - f[{b}]·m[{a}] = {sp.factor(f[a] * m[b] - f[b] * m[a])}"
                    )
                    break
            if not parallel:
                break
        if not parallel:
            break
    identical = True
    for n, f in enumerate(fs[1:], start=1):
        if any(sp.expand(f[k] - fs[0][k]) != 0 for k in range(K)):
            identical = False
            if not witness:
                witness = f"inputs 0 and {n} have different f (both multiples of E[e_y])"
            break
    return OneStep(parallel, identical, m, witness)


@dataclass(frozen=True)
class Manifold:
    """Whether all inputs share one score vector f at t = 0..steps (ℓ' abstract).

    ``shared[t]`` is True (exactly equal as expressions in dell, μ), False (a witness loss separates
    two inputs: ℓ = -log(z+ε), see ``witness``) or None (not decided: equal to 30 digits for that loss
    but not identical as expressions)."""

    steps: int
    shared: list[bool | None]
    witness: str

    @property
    def invariant(self) -> bool | None:
        """True when f is shared at every step, False when some step separates inputs, else None."""
        if all(s is True for s in self.shared):
            return True
        if any(s is False for s in self.shared):
            return False
        return None

    @property
    def first_break(self) -> int | None:
        """The first step at which two inputs get different score vectors (None if none)."""
        return next((t for t, s in enumerate(self.shared) if s is False), None)


def _separated(a: sp.Expr, b: sp.Expr, eps: sp.Expr) -> sp.Float | None:
    """|a - b| under the witness loss ℓ' = -1/(z+ε) and μ = 1 when it exceeds the floor, else None."""
    z = sp.Dummy("z")
    concrete = (a - b).replace(DELL, sp.Lambda(z, -1 / (z + eps)))
    concrete = concrete.subs({s: 1 for s in concrete.free_symbols})  # μ (and η if symbolic) -> 1
    value = sp.Abs(concrete).evalf(WITNESS_DIGITS)
    return value if value.is_number and value > WITNESS_FLOOR else None


def manifold_check(
    task: CircleWalk | FiniteTask, steps: int, eta: object = 1, eps: object = "1/10", mu: object = "mu"
) -> Manifold:
    """Follow exact GD for ``steps`` steps with ℓ' abstract and test "all f(X) equal" at each step.

    Equal expressions prove the property for every loss; a difference that stays above 1e-30 at 50
    digits once ℓ' = -1/(z+ε) (the paper's loss, ε from the spec) and μ = 1 are substituted proves
    that the manifold is left (for that loss).

    >>> from rwtoolkit.tasks import CircleWalk
    >>> manifold_check(CircleWalk(3, 4, 1), 2).shared
    [True, True, True]
    """
    eps_value = exact(eps, "eps")
    trajectory = derive(task, steps, eta=eta, eps=eps_value, mu=mu, loss="any")
    shared: list[bool | None] = []
    witness = ""
    for state in trajectory.states:
        fs = state.f
        verdict: bool | None = True
        for n, f in enumerate(fs[1:], start=1):
            if f == fs[0]:
                continue
            gaps = [(k, _separated(f[k], fs[0][k], eps_value)) for k in range(f.rows)]
            gaps = [(k, g) for k, g in gaps if g is not None]
            if gaps:
                k, gap = gaps[0]
                verdict = False
                if not witness:
                    witness = (
                        f"step {state.t}: inputs 0 and {n} differ in f[{k}] by {float(gap):.3g} "
                        f"for ℓ = -log(z+{eps_value}), μ = 1"
                    )
                break
            verdict = None
        shared.append(verdict)
        if verdict is False:
            break  # the manifold is left; later steps are off it too or no longer meaningful
    return Manifold(steps, shared, witness)
