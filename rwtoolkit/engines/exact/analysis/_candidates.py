"""Candidate invariant subspaces, found without being told: a task's symmetry, and the exact trajectory's span.

Route (a), symmetry (:func:`fixed_subspace`). A symmetry (τ, λ, π) of the task (``rwtoolkit.tasks.task_symmetries``:
tokens renamed by τ, labels by λ, key positions moved by π, the population law unchanged) acts on the
parameters through the model's axes (``Model.parameter_axes``): a label axis by the permutation matrix of λ, a token
axis by τ's, an embedding axis by O = diag(T_τ, Q_π) with Q_π = P Π Pᵀ/μ + (I − P Pᵀ/μ) the orthogonal map
taking p_j to p_π(j) (PᵀP = μI, the query p_N fixed). The loss is invariant, L(g·θ) = L(θ), so its gradient
is equivariant and the fixed subspace Fix(G) = {θ : g·θ = θ for all g} is mapped into itself by every GD
step, for every loss (docs/theory.md#invariant-manifolds). :func:`rwtoolkit.engines.exact.analysis.induction_step` then
proves it, independently of this argument.

Route (b), trajectory (:func:`trajectory_subspace`). The span of θ(1..T) of the trajectory from zero (μ = 1,
the log-loss), its basis read at 60 digits and rationalised (a guess: the induction step
decides; a wrong guess is refuted, never accepted).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction as PyFraction
from typing import Any

import mpmath
import numpy as np
from flint import fmpq

from rwtoolkit.engines.exact.analysis._invariance import Subspace, positions, rational
from rwtoolkit.models import Model, Sizes, acting_group, coordinate_permutation
from rwtoolkit.tasks import Task, orbit_labels

#: Digits the trajectory is read at, the pivot tolerance and the largest denominator of a rationalised entry.
SPAN_DIGITS, SPAN_TOL, SPAN_DENOMINATOR = 60, mpmath.mpf("1e-40"), 10**6
#: The μ of the trajectories whose union is spanned (P = √μ·I_N).
SPAN_MU = (1, 2, 3)


def _orbit_basis(permutations: Sequence[np.ndarray], total: int) -> list[list[int]]:
    """The indicator vectors of the coordinates' orbits under ``permutations`` (a basis of their fixed space),
    the orbits of ``rwtoolkit.tasks.orbit_labels``, in the order of their smallest coordinate."""
    label = orbit_labels(list(permutations), total)
    return [(label == orbit).astype(int).tolist() for orbit in np.unique(label)]


def fixed_subspace(model: Model, task: Task, group: Any) -> Subspace:
    """Fix(G): the parameters every generator of ``group`` (an ``rwtoolkit.tasks.TaskGroup``) leaves unchanged.

    At P = √μ·I_N every symmetry permutes the coordinates, so Fix(G) is spanned by the indicators of the
    coordinates' orbits (one free coordinate per orbit).

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk, task_symmetries
    >>> task = CircleWalk(3, 4, 1)
    >>> fixed_subspace(get_model("one_layer"), task, task_symmetries(task)).dim
    12

    A model that sees the order of its positions keeps only the symmetries that fix them
    (``rwtoolkit.models.acting_group``).
    """
    group = acting_group(model, group)
    K, N = task.K, task.N
    sizes = Sizes(K=K, M=N, N=N)
    total = model.parameter_count(sizes)
    perms = [coordinate_permutation(model, g, K, N) for g in group.generators]
    described = "; ".join(group.describe(getattr(task, "vocab", None))) or "the identity only"
    return Subspace.from_vectors(
        model.shapes(sizes), _orbit_basis(perms, total), source=f"symmetry: {described}"
    )


def head_count(model: Model, sizes: Sizes) -> int:
    """The size of the model's head axis at ``sizes`` (1 for a model without one)."""
    for name, roles in model.parameter_axes(sizes).items():
        if "head" in roles:
            return model.shapes(sizes)[name][roles.index("head")]
    return 1


def identical_heads(model: Model, task: Task) -> Subspace | None:
    """The parameters where every head is the same (fixed by the cyclic shift of the heads), or None with one head.

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> identical_heads(get_model("multi_head", H=3), CircleWalk(3, 4, 1)).dim  # one head's V and W
    58
    """
    K, N = task.K, task.N
    sizes = Sizes(K=K, M=N, N=N)
    H = head_count(model, sizes)
    if H == 1:
        return None

    class _Identity:
        tokens = labels = tuple(range(K))
        positions = tuple(range(N - 1))

    total = model.parameter_count(sizes)
    shift = coordinate_permutation(model, _Identity(), K, N, heads=[(h + 1) % H for h in range(H)])
    return Subspace.from_vectors(
        model.shapes(sizes), _orbit_basis([shift], total), source=f"identical heads (the {H} heads permuted)"
    )


def trajectory_subspace(
    model: Model,
    task: Task,
    steps: int = 4,
    eta: object = 1,
    eps: object = "1/10",
    objective: str | None = None,
) -> Subspace | None:
    """The span of θ(1..steps) of GD from zero with the log-loss, rationalised; None without a rational basis.

    A model with next-token logits trains on its cross-entropy objective instead (``objective``, by default
    ``"lm"``: ``rwtoolkit.models.objective_name``).

    The trajectories (μ = 1, 2, 3, P = √μ·I_N) run in 60-digit arithmetic (``mpmath``) through the model's
    one definition (``rwtoolkit.models.descend``): the basis is a guess, proved or refuted by the induction step.

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> trajectory_subspace(get_model("one_layer"), CircleWalk(3, 4, 1), steps=4).dim
    3
    """
    from rwtoolkit.models import (
        ArithmeticLoss,
        CrossEntropy,
        ObjectArithmetic,
        batch,
        descend,
        objective_name,
    )

    objective = objective_name(model, objective)
    P = positions(task.N)  # the coordinates of the induction step
    pop = task.population()
    with mpmath.workdps(SPAN_DIGITS):

        def convert(x: Any) -> mpmath.mpf:
            if isinstance(x, mpmath.mpf):
                return x
            q = rational(x)
            return mpmath.mpf(int(q.p)) / int(q.q)

        ar = ObjectArithmetic(
            "mpmath",
            convert,
            exp=mpmath.exp,
            sign=lambda x: (x > 0) - (x < 0),
            to_float=float,
            sqrt=mpmath.sqrt,
            log=mpmath.log,
        )
        sizes = Sizes(K=task.K, M=P.shape[0], N=task.N)
        shapes = model.shapes(sizes)
        weights = [convert(q) for q in pop.exact_probs()]
        rows = []
        for mu in SPAN_MU:  # P = √μ·I_N at several μ: a span that holds for every μ must hold for these
            data = batch(ar, pop.tokens, pop.labels, weights, task.K, ar.asarray(P) * mpmath.sqrt(mu))
            start = model.zeros(ar, sizes)
            loss = ArithmeticLoss("log", convert(eps), ar) if objective is None else CrossEntropy(objective)
            states = descend(model, ar, start, data, loss, convert(eta), steps)
            rows += [
                [x for name in shapes for x in np.asarray(st.params[name], dtype=object).ravel().tolist()]
                for st in states[1:]
            ]
        basis = _numeric_rref(rows)
        exact_rows = []
        for row in basis:
            out = []
            for x in row:
                q = PyFraction(mpmath.nstr(x, SPAN_DIGITS - 5)).limit_denominator(SPAN_DENOMINATOR)
                if abs(mpmath.mpf(q.numerator) / q.denominator - x) > mpmath.mpf("1e-35"):
                    return None
                out.append(fmpq(q.numerator, q.denominator))
            exact_rows.append(out)
    return Subspace.from_vectors(
        shapes, exact_rows, source=f"trajectory: span of θ(1..{steps}) at μ = 1, 2, 3"
    )


def _numeric_rref(rows: list[list[mpmath.mpf]]) -> list[list[mpmath.mpf]]:
    """Reduced row echelon form at the working precision, rows below ``SPAN_TOL`` (relative) dropped."""
    A = [list(r) for r in rows]
    if not A:
        return []
    scale = max((abs(x) for r in A for x in r), default=mpmath.mpf(0))
    if scale == 0:
        return []
    out: list[list[mpmath.mpf]] = []
    col = 0
    ncols = len(A[0])
    while A and col < ncols:
        pivot = max(range(len(A)), key=lambda i: abs(A[i][col]))
        if abs(A[pivot][col]) <= SPAN_TOL * scale:
            col += 1
            continue
        row = A.pop(pivot)
        row = [x / row[col] for x in row]
        A = [[x - r[col] * y for x, y in zip(r, row)] for r in A]
        out = [[x - o[col] * y for x, y in zip(o, row)] for o in out]
        out.append(row)
        col += 1
    return out
