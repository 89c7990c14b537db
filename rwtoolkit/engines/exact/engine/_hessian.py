"""The exact gradient and Hessian of a registered model's population loss at one point (forward over reverse).

``rwtoolkit.models.hessian`` differentiates the model's one definition (``rwtoolkit.models.evaluate``: the tape's
reverse pass) in forward mode, carrying every unit direction e_j at once (``rwtoolkit.models.DualArithmetic``):
the gradient's tangents are the columns H e_j of the Hessian. Here it runs in ``SYMPY``, exact SymPy numbers
in numpy object arrays, because the tape's gradient is a composition of +, −, ×, ÷ and exp, each of which a
dual number differentiates exactly (exp(a + bδ) = eᵃ + eᵃ b δ); nothing is approximated. The point may hold
exact logarithms (a bias log π_k, so that exp gives back the rational π_k): SymPy keeps them exact, and
exp(log ρ) is ρ again (the exact engine's named exponential atoms would keep it as an atom).

The loss is the toolkit's ℓ(z) = −log(z + ε) on z = f_y, with ε ≥ 0 (ε = 0: the cross-entropy).

>>> from rwtoolkit.models import get_model
>>> from rwtoolkit.tasks import binary_markov_task
>>> import numpy as np
>>> model, task = get_model("one_layer"), binary_markov_task("1/2", "1/2", 2)
>>> D = 2 + 2
>>> point = {"V": np.full((2, 2), 1, dtype=object), "W": np.zeros((D, D), dtype=object)}
>>> gradient, H = exact_hessian(model, task, point, np.eye(2, dtype=int))
>>> H.shape, H == H.T
((20, 20), True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy as sp

from rwtoolkit.models import ArithmeticLoss, Model, ObjectArithmetic, Sizes, batch, evaluate, flatten, hessian
from rwtoolkit.tasks import Task


def _sign(x: Any) -> int | None:
    value = sp.sign(x)
    return int(value) if value.is_number else None


#: Exact SymPy numbers (rationals, and exp and log of them, kept exact) in numpy object arrays.
SYMPY = ObjectArithmetic("sympy", sp.sympify, exp=sp.exp, sign=_sign, to_float=float, log=sp.log)


def exact_hessian(
    model: Model, task: Task, point: Mapping[str, Any], P: Any, eps: Any = 0
) -> tuple[sp.Matrix, sp.Matrix]:
    """(∇L, H) at ``point`` (exact entries by parameter name, the model's shapes), positions ``P`` (M, N).

    θ is flattened in the model's ``shapes`` order. Entries are SymPy numbers: rational where every
    exponential the model meets has a rational value (exp(log ρ) = ρ), else exact expressions in those
    exponentials. Raises ValueError for a point whose shapes are not the model's.
    """
    pop = task.population()
    P = np.asarray(P, dtype=object)
    shapes = model.shapes(Sizes(K=pop.K, M=P.shape[0], N=pop.N))
    for name, shape in shapes.items():
        if name not in point or tuple(np.shape(point[name])) != tuple(shape):
            raise ValueError(f"the point's {name!r} must have shape {shape} (the model's parameters)")
    data = batch(SYMPY, pop.tokens, pop.labels, pop.exact_probs(), pop.K, SYMPY.asarray(P))
    params = {name: SYMPY.asarray(point[name]) for name in shapes}
    loss = ArithmeticLoss("log", sp.sympify(eps), SYMPY)
    g = evaluate(model, SYMPY, params, data, loss).gradient
    assert g is not None
    H = hessian(model, SYMPY, params, data, loss)
    return sp.Matrix(list(flatten({name: g[name] for name in shapes}))), sp.Matrix(H.tolist())


def hessian_inertia(H: sp.Matrix) -> tuple[int, int, int]:
    """(positive, zero, negative) eigenvalue counts of a symmetric rational matrix, exactly.

    The characteristic polynomial (python-flint ``fmpq_mat.charpoly``) of a real symmetric matrix has only
    real roots, so Descartes' rule of signs counts them exactly: the sign changes of its coefficients
    are the positive roots, those of p(−x) the negative ones, and the lowest non-zero coefficient's
    index is the multiplicity of 0.

    >>> hessian_inertia(sp.Matrix([[2, 1, 0], [1, 2, 0], [0, 0, 0]])), hessian_inertia(sp.Matrix([[0, 1], [1, 0]]))
    ((2, 1, 0), (1, 0, 1))
    """
    from flint import fmpq, fmpq_mat

    if H.shape[0] != H.shape[1] or H != H.T:
        raise ValueError(f"hessian_inertia: the matrix ({H.shape[0]}×{H.shape[1]}) is not symmetric")
    if not all(x.is_Rational for x in H):
        raise ValueError("hessian_inertia: an entry is not rational (the point's logarithms did not cancel)")
    n = H.shape[0]
    if n == 0:
        return 0, 0, 0
    A = fmpq_mat(n, n, [fmpq(int(x.p), int(x.q)) for x in H])
    poly = A.charpoly()
    coefficients = [poly[i] for i in range(poly.degree() + 1)]
    zero = next(i for i, c in enumerate(coefficients) if c != 0)

    def changes(cs: list[Any]) -> int:
        signs = [c > 0 for c in cs if c != 0]
        return sum(a != b for a, b in zip(signs, signs[1:], strict=False))

    tail = coefficients[zero:]
    return changes(tail), zero, changes([c * (-1) ** i for i, c in enumerate(tail)])
