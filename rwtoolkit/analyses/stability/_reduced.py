"""The reduced loss L(θ), θ = (V, w_tok, c), its GD map, and the invariant manifold linearised around.

Coordinates. The forward pass sees W only through w = W x̃_N (one query, at position N), and every
W-gradient is u·x̃_Nᵀ (Lemma B.1). So a perturbation of the full W splits into
  * w = W x̃_N: its token part w_tok and the part of its positional block inside span{p_1..p_N},
    c_j = p_jᵀ w_pos / μ (N numbers): these are the reduced coordinates;
  * everything else: W's action on the orthogonal complement of x̃_N (all columns of W that x̃_N does
    not reach, e.g. the token columns W11, W21) and the component of w_pos orthogonal to span{p_j}.
    These directions are *inert*: no logit depends on them and they receive zero gradient, so GD
    carries them unchanged (multiplier exactly 1) and they never change the model's output.
The same holds for the rows of V of tokens that are never a label (z reads V[y, ·] only) and for the
columns of V and entries of w_tok of tokens that never occur in an input: θ keeps V[y, k] for the
labels y and occurring tokens k only (``Coordinates.rows``, ``cols``; all K of each on a circle walk).
Hence the reduced coordinates represent every direction of the full (V, W) that can grow or matter.

Logits are logit_j = w_tok[s_j] + μ c_j (j < N) and logit_N = μ c_N (the query slot has no token);
with S = softmax(logits) and z = Σ_{j<N} S_j V[y, s_j], L(θ) = E[ℓ(z)], ℓ(z) = -log(z + ε).
Because ‖x̃_N‖² = μ, one GD step on (V, W) is, in these coordinates,
    G(θ) = θ - η D ∇L(θ),  D = diag(1 on V, μ on w_tok, 1 on c),
so the linearised map along a trajectory is J = I - η D ∇²L (the factor μ on w_tok is the metric the
full W induces; with D = I one would linearise a different algorithm).

Manifolds. Each is a *partition subspace*: the coordinates fall into classes, and the manifold is the
set of θ whose coordinates are equal within every class (a class never mixes V, w_tok and c).
  * Lemma D.3 (Theorem 4.1: circle walk, p ∈ {0, 1}, N = rK+1): V = α1·1_{K×K}, w_tok = α2'·1_K,
    c_1 = … = c_{N-1}, c_N free: four classes, proved invariant for every step (certificates D.3, 4.1).
  * Any other task (``find_manifold``): the classes of coordinates that are equal at every step of
    the exact trajectory of ``rwtoolkit.engines.exact.derive`` for the first few steps (compared to 50 digits).
    That the class space is invariant under the linearised map (the ``leak`` of ``exact_jacobians``
    vanishes) is proved exactly at the first steps for small tasks and checked in float64 at every step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp

from rwtoolkit.models import Arithmetic, ArithmeticLoss, ObjectArithmetic
from rwtoolkit.tasks import CircleWalk, FiniteTask, exact, is_numeric

if TYPE_CHECKING:  # torch is imported where the float loss is built, not at import
    import torch

#: Where a manifold comes from (``Coordinates.source``).
LEMMA_D3 = "Lemma D.3"
FOUND = "exact trajectory"
#: Exact GD steps ``find_manifold`` compares, and the digits it compares them to (two values that agree to
#: 10^-35 relative at 50 digits are taken as equal; the leak check then tests the invariance this implies).
FIND_STEPS, FIND_DIGITS, FIND_TOL = 3, 50, sp.Float("1e-35", 50)


@dataclass(frozen=True)
class Coordinates:
    """The layout of θ = (V[rows, cols] row-major, w_tok[cols], c) and the manifold's classes.

    ``rows``: the labels (rows of V the loss reads), ``cols``: the tokens that occur (columns of V and
    entries of w_tok); None means all K. ``classes``: the manifold's partition of the coordinate
    indices; None means Lemma D.3's four classes. ``vocab`` names tokens in ``name``.
    """

    K: int
    N: int
    rows: tuple[int, ...] | None = None
    cols: tuple[int, ...] | None = None
    classes: tuple[tuple[int, ...], ...] | None = None
    vocab: tuple[str, ...] | None = None
    source: str = LEMMA_D3

    @property
    def label_rows(self) -> tuple[int, ...]:
        return tuple(range(self.K)) if self.rows is None else self.rows

    @property
    def token_cols(self) -> tuple[int, ...]:
        return tuple(range(self.K)) if self.cols is None else self.cols

    @property
    def n_V(self) -> int:
        """Number of V coordinates, len(rows)·len(cols); they come first in θ."""
        return len(self.label_rows) * len(self.token_cols)

    @property
    def dim(self) -> int:
        return self.n_V + len(self.token_cols) + self.N

    def _token(self, k: int) -> str:
        return self.vocab[k] if self.vocab is not None else str(k)

    def name(self, i: int) -> str:
        """The model's name of coordinate i: "V[y,k]" (label y, token k), "w_tok[k]" or "c_j" (1-based).

        >>> Coordinates(3, 4).name(5), Coordinates(3, 4).name(9), Coordinates(3, 4).name(15)
        ('V[1,2]', 'w_tok[0]', 'c_4')
        """
        rows, cols = self.label_rows, self.token_cols
        if i < self.n_V:
            return f"V[{self._token(rows[i // len(cols)])},{self._token(cols[i % len(cols)])}]"
        if i < self.n_V + len(cols):
            return f"w_tok[{self._token(cols[i - self.n_V])}]"
        return f"c_{i - self.n_V - len(cols) + 1}"

    def metric(self, mu: float) -> np.ndarray:
        """The diagonal of D: 1 on V, μ on w_tok, 1 on c."""
        d = np.ones(self.dim)
        d[self.n_V : self.n_V + len(self.token_cols)] = mu
        return d

    def partition(self) -> tuple[tuple[int, ...], ...]:
        """The manifold's classes (Lemma D.3's four when ``classes`` is None)."""
        if self.classes is not None:
            return self.classes
        w0 = self.n_V
        c0 = w0 + len(self.token_cols)
        return (
            tuple(range(w0)),
            tuple(range(w0, c0)),
            tuple(range(c0, c0 + self.N - 1)),
            (self.dim - 1,),
        )

    def tangent_basis(self) -> sp.Matrix:
        """One indicator vector per class: the manifold is their span.

        >>> Coordinates(3, 4).tangent_basis().shape
        (16, 4)
        """
        classes = self.partition()
        B = sp.zeros(self.dim, len(classes))
        for col, members in enumerate(classes):
            for i in members:
                B[i, col] = 1
        return B

    def normal_basis(self) -> sp.Matrix:
        """Rational vectors spanning the orthogonal complement of the tangent space (dim - #classes columns)."""
        cols = self.tangent_basis().T.nullspace()
        return sp.Matrix.hstack(*cols)

    def theta_of(self, V: sp.Matrix, w_tok: list, c: list) -> list:
        """θ from a full K×K V, K entries of w_tok and N of c (keeps the active rows and columns)."""
        rows, cols = self.label_rows, self.token_cols
        return [V[y, k] for y in rows for k in cols] + [w_tok[k] for k in cols] + list(c)

    def classes_named(self) -> list[list[str]]:
        """The classes as lists of coordinate names (the JSON's ``manifold.classes``)."""
        return [[self.name(i) for i in members] for members in self.partition()]


def is_theorem41_case(task: object) -> bool:
    """A circle walk with p ∈ {0, 1} and N = rK + 1: Lemma D.3's manifold is proved invariant there."""
    return (
        isinstance(task, CircleWalk)
        and task.p in (sp.Integer(0), sp.Integer(1))
        and (task.N - 1) % task.K == 0
    )


def check_manifold_task(task: object) -> tuple[int, int]:
    """(K, r) for a circle walk with p ∈ {0, 1} and N = rK + 1 (Theorem 4.1), else a one-line ValueError."""
    if not isinstance(task, CircleWalk):
        raise ValueError(  # noqa: TRY004 - a usage error: the CLI turns ValueError into one line and exit 2
            f"task={task!r}: Lemma D.3's manifold is a property of circle walks with p in {{0, 1}} and "
            "N = rK+1 (Theorem 4.1) only"
        )
    if task.p not in (sp.Integer(0), sp.Integer(1)):
        raise ValueError(f"p={task.p} must be 0 or 1: the Theorem 4.1 manifold is invariant only there")
    if (task.N - 1) % task.K != 0:
        raise ValueError(f"N={task.N} must be rK+1 for K={task.K} (Theorem 4.1), e.g. N={task.K + 1}")
    return task.K, (task.N - 1) // task.K


def deterministic_walks(task: CircleWalk) -> FiniteTask:
    """The K walks of non-zero probability of a circle walk with p ∈ {0, 1}: s_j = s_1 ± (j-1), y = s_N.

    The same population as ``task.population()``, which enumerates all K·2^(N-1) walks first and so
    refuses N above about 20; this one has K inputs for every N.

    >>> deterministic_walks(CircleWalk(3, 4, 1)).population().tokens.tolist()
    [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    """
    if task.p not in (sp.Integer(0), sp.Integer(1)):
        raise ValueError(f"p={task.p} must be 0 or 1 for the deterministic walks")
    d = 1 if task.p == 1 else -1
    walks = [[(s + d * j) % task.K for j in range(task.N)] for s in range(task.K)]
    return FiniteTask(
        [w[:-1] for w in walks], [w[-1] for w in walks], [sp.Rational(1, task.K)] * task.K, K=task.K
    )


def population_task(task: CircleWalk | FiniteTask) -> CircleWalk | FiniteTask:
    """The task whose population GD runs on: the K deterministic walks at p ∈ {0, 1}, else ``task``."""
    if isinstance(task, CircleWalk) and task.p in (sp.Integer(0), sp.Integer(1)):
        return deterministic_walks(task)
    return task


def population_arrays(task: CircleWalk | FiniteTask) -> tuple[np.ndarray, np.ndarray, list[sp.Expr]]:
    """(tokens (n, N-1), labels (n,), exact probabilities) of the inputs of non-zero probability."""
    pop = population_task(task).population()
    probs = pop.exact_probs()
    if not all(is_numeric(q) for q in probs):
        raise ValueError("the task has symbolic probabilities: substitute numbers for its parameters")
    keep = [n for n, q in enumerate(probs) if q != 0]
    return pop.tokens[keep], pop.labels[keep], [probs[n] for n in keep]


def active_coordinates(task: CircleWalk | FiniteTask) -> Coordinates:
    """The coordinates of ``task`` with Lemma D.3's classes: the labels and tokens of its population.

    >>> from rwtoolkit.tasks import qa_task2
    >>> c = active_coordinates(qa_task2())
    >>> len(c.label_rows), len(c.token_cols), c.dim
    (2, 15, 64)
    """
    tokens, labels, _ = population_arrays(task)
    rows = tuple(sorted({int(y) for y in labels.tolist()}))
    cols = tuple(sorted({int(s) for s in tokens.ravel().tolist()}))
    K, N = task.K, tokens.shape[1] + 1
    vocab = getattr(task, "vocab", None)
    full = tuple(range(K))
    return Coordinates(
        K,
        N,
        rows=None if rows == full else rows,
        cols=None if cols == full else cols,
        vocab=None if vocab is None else tuple(vocab),
    )


def _classes_of(values: list[list[sp.Float]], blocks: list[range]) -> tuple[tuple[int, ...], ...]:
    """Group coordinates whose value sequences agree within ``FIND_TOL`` (relative), block by block."""
    classes: list[list[int]] = []
    for block in blocks:
        reps: list[int] = []
        members: list[list[int]] = []
        for i in block:
            for r, rep in enumerate(reps):
                if all(abs(a - b) <= FIND_TOL * (1 + abs(a)) for a, b in zip(values[i], values[rep])):
                    members[r].append(i)
                    break
            else:
                reps.append(i)
                members.append([i])
        classes += members
    return tuple(tuple(m) for m in classes)


def find_manifold(
    task: CircleWalk | FiniteTask,
    eta: object = 1,
    mu: object = 1,
    eps: object = "1/10",
    steps: int = FIND_STEPS,
) -> Coordinates:
    """The manifold the exact trajectory from zero init stays on, as the task's ``Coordinates``.

    Lemma D.3's classes for the Theorem 4.1 case; otherwise the classes of coordinates equal at every
    step t ≤ ``steps`` of ``rwtoolkit.engines.exact.derive`` (η, μ, ε exact). A trajectory with no two equal
    coordinates has no such manifold: a ValueError says so.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> find_manifold(CircleWalk(4, 5, "1/2")).classes_named()[1]
    ['w_tok[0]', 'w_tok[1]', 'w_tok[2]', 'w_tok[3]']
    """
    coords = active_coordinates(task)
    if is_theorem41_case(task):
        return coords
    from dataclasses import replace

    from rwtoolkit.engines.exact import derive

    values_eta, values_mu, values_eps = exact(eta, "eta"), exact(mu, "mu"), exact(eps, "eps")
    trajectory = derive(population_task(task), steps, eta=values_eta, eps=values_eps, mu=values_mu)
    series: list[list[sp.Float]] = [[] for _ in range(coords.dim)]
    for state in trajectory.states:
        theta = coords.theta_of(sp.Matrix(state.V), list(state.w_tok), list(state.c))
        for i, x in enumerate(theta):
            series[i].append(sp.N(x, FIND_DIGITS))
    w0, c0 = coords.n_V, coords.n_V + len(coords.token_cols)
    classes = _classes_of(series, [range(w0), range(w0, c0), range(c0, coords.dim)])
    if len(classes) == coords.dim:
        raise ValueError(
            f"{getattr(task, 'name', task)!r}: no two coordinates are equal along the exact trajectory "
            f"(t <= {steps}), so it stays on no symmetric manifold to linearise around"
        )
    return replace(coords, classes=classes, source=FOUND)


class _SympyArithmetic(ObjectArithmetic):
    """SymPy expressions in numpy object arrays (``rwtoolkit.models.ObjectArithmetic``) whose sums keep the common
    factor of their terms outside: Σ_j (e_j/Z) a_j is written (Σ_j e_j a_j)/Z (a numeric coefficient stays on the
    terms), so ``symbolic_loss`` is the compact expression whose Hessian ``exact_jacobians`` takes."""

    def sum(self, a: np.ndarray, axis: int | tuple[int, ...], keepdims: bool = False) -> Any:
        out = np.sum(a, axis=axis, keepdims=keepdims)
        return self.apply(_common_factor, out) if isinstance(out, np.ndarray) else _common_factor(out)


def _common_factor(expr: Any) -> sp.Expr:
    coefficient, rest = sp.gcd_terms(sp.sympify(expr), fraction=False).as_coeff_Mul()
    return coefficient * rest


#: The SymPy arithmetic the exact Jacobians' loss ``symbolic_loss`` is ``reduced_loss`` in.
SYMPY = _SympyArithmetic(
    "sympy", sp.sympify, exp=sp.exp, sign=lambda x: int(sp.sign(x)) if x.is_number else None, log=sp.log
)


def reduced_loss(
    arithmetic: Arithmetic,
    task: CircleWalk | FiniteTask,
    mu: Any,
    eps: Any,
    coords: Coordinates | None = None,
    population: tuple[np.ndarray, np.ndarray, Sequence[Any]] | None = None,
) -> Callable[[Any], Any]:
    """L(θ) = Σ_x P(x) ℓ(z_x(θ)) as a function of θ, an array of ``arithmetic`` in the order of ``Coordinates``.

    Lemma D.3's reduced map, written once against the arithmetic layer (``symbolic_loss``: SymPy;
    ``torch_loss``: torch, whose ``torch.func`` Hessians ``linearise`` takes): logits w_tok[s_j] + μ c_j at the key
    positions and μ c_N at the query slot (its token index points at a zero appended to w_tok), S their softmax,
    z = Σ_{j<N} S_j V[y, s_j], and ℓ the log-loss of ``rwtoolkit.models.ArithmeticLoss``. ``population``:
    (tokens, labels, weights) to sum over instead of the task's inputs and probabilities, e.g. orbit
    representatives with their weights |O| P(x_O) (``rwtoolkit.analyses.stability.orbit_sums``).
    ``tests/test_fast_paths_reference.py`` pins it to the full model's step (``rwtoolkit.models.OneLayer``).
    """
    tokens_np, labels_np, probs = population_arrays(task) if population is None else population
    coords = active_coordinates(task) if coords is None else coords
    R, Kc, N, nV = len(coords.label_rows), len(coords.token_cols), coords.N, coords.n_V
    col_of = np.zeros(task.K, dtype=np.int64)
    col_of[list(coords.token_cols)] = np.arange(Kc)
    row_of = np.zeros(task.K, dtype=np.int64)
    row_of[list(coords.label_rows)] = np.arange(R)
    tokens = col_of[np.asarray(tokens_np)]  # (n, N-1): the column of s_j
    slots = np.concatenate(
        [tokens, np.full((len(tokens), 1), Kc)], axis=1
    )  # (n, N): the query reads w_pad[Kc] = 0
    labels = row_of[np.asarray(labels_np)]  # (n,): the row of y
    pad = arithmetic.asarray(np.eye(Kc + 1, Kc, dtype=np.int64))  # w_pad = pad @ w_tok = (w_tok, 0)
    weights = arithmetic.asarray(list(probs))
    loss = ArithmeticLoss("log", eps, arithmetic)
    if not isinstance(pad, np.ndarray):  # torch: index with tensors
        import torch

        slots, tokens, labels = (torch.as_tensor(a) for a in (slots, tokens, labels))

    def L(theta: Any) -> Any:
        V = theta[:nV].reshape(R, Kc)
        logits = (pad @ theta[nV : nV + Kc])[slots] + mu * theta[nV + Kc :]  # (n, N)
        S = arithmetic.softmax(logits)
        z = arithmetic.sum(S[:, : N - 1] * V[labels[:, None], tokens], axis=1)  # (n,)
        return arithmetic.sum(weights * loss.value(z), axis=0)

    return L


def symbolic_loss(
    task: CircleWalk | FiniteTask, mu: sp.Expr, eps: sp.Expr, coords: Coordinates | None = None
) -> tuple[sp.Expr, list[sp.Symbol]]:
    """L(θ) = E[-log(z + ε)] as a SymPy expression in the symbols θ (``reduced_loss`` in ``SYMPY``).

    >>> from rwtoolkit.tasks import CircleWalk
    >>> L, theta = symbolic_loss(CircleWalk(3, 4, 1), sp.Integer(1), sp.Rational(1, 10))
    >>> len(theta), L.subs({s: 0 for s in theta})
    (16, log(10))
    """
    coords = active_coordinates(task) if coords is None else coords
    theta = list(sp.symbols(f"theta0:{coords.dim}", real=True))
    L = reduced_loss(SYMPY, task, sp.sympify(mu), sp.sympify(eps), coords)(SYMPY.asarray(theta))
    return sp.sympify(L), theta


def torch_loss(
    task: CircleWalk | FiniteTask,
    mu: float,
    eps: float,
    dtype: torch.dtype | None = None,
    coords: Coordinates | None = None,
    population: tuple[np.ndarray, np.ndarray, Sequence[Any]] | None = None,
) -> Callable[[torch.Tensor], torch.Tensor]:
    """The same L(θ) as a torch function of a flat θ (float64 by default), for torch.func Hessians
    (``reduced_loss`` in ``rwtoolkit.engines.numeric.TorchArithmetic``)."""
    import torch

    from rwtoolkit.engines.numeric import TorchArithmetic

    ar = TorchArithmetic(torch.float64 if dtype is None else dtype)
    return reduced_loss(ar, task, float(mu), float(eps), coords, population)
