"""Stuck for every t: invariant subspaces of population GD, decided by one exact induction step.

Let 𝓜 = {θ = B α} be a linear subspace of a model's parameters (B rational) that contains the zero
initialisation. If every point of 𝓜 is mapped into 𝓜 by one GD step, for every step size η and every
differentiable loss ℓ, then GD from zero stays on 𝓜 for every t (induction on t). Since θ ∈ 𝓜, the step
θ − η ∇L(θ) is in 𝓜 for every η exactly when ∇L(θ) is, and

    ∇L(θ) = Σ_n w_n ℓ'(z_n) ∂z_n/∂θ = Σ_k ℓ'(ζ_k) G_k(α),   G_k = Σ_{n : z_n = ζ_k} w_n ∂z_n/∂θ,

grouping the inputs by their label score z_n as a *function* of α (ζ_1, ζ_2, ... distinct functions). For an
arbitrary ℓ' the values ℓ'(ζ_k) are arbitrary at a generic point (the ζ_k differ there), so 𝓜 is invariant
for every loss exactly when every G_k(α) lies in span(B) for every α (docs/theory.md#invariant-manifolds).

:func:`induction_step` decides this exactly: α are indeterminates, the model's forward pass and the tape's
gradient (``rwtoolkit.models``, the one definition of the model) run in the field of rational functions of α and of
the exponential atoms (``rwtoolkit.engines.exact.arithmetic._function_field``), and the component of each G_k outside
span(B) is a rational function that is zero or not. The outcome is

* ``proved``: every G_k is in span(B) identically: 𝓜 is invariant for every η, every loss, every point;
* ``refuted``: some G_k leaves span(B); the witness is a rational point α where the step with the log-loss
  leaves 𝓜 by a certified non-zero amount (ball arithmetic), or failing that a point where the ζ_k are
  certified distinct and G_k's component outside span(B) is certified non-zero (so a loss whose ℓ' is
  non-zero near ζ_k only moves θ off 𝓜);
* ``undecided``: the algebra does not apply (a logit with a constant term) or no witness point was
  certified. Never a pass.

The same pass decides what every point of 𝓜 predicts: whether f(X) is the same for every input
(``input_independent``: then no point of 𝓜 beats the best constant guess, accuracy ≤ max_y P(y), the task's
chance level) and whether all K label scores are equal (``labels_tied``: the prediction is the tie rule's,
label 0, accuracy P(y = 0), which is 1/K for a task with uniform labels).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction as PyFraction
from typing import Any

import numpy as np
from flint import arb, ctx, fmpq, fmpq_mat

from rwtoolkit.engines.exact.arithmetic._function_field import (
    Atoms,
    FieldArithmetic,
    FunctionField,
    is_zero,
    key_of,
)
from rwtoolkit.io import DECISION_WORDS, Verdict
from rwtoolkit.models import CrossEntropy, Model, ObjectArithmetic, Sizes, Tape, batch, objective_name
from rwtoolkit.tasks import Task

#: The outcomes of a decision, as ``DECISION_WORDS`` writes the one verdict vocabulary (a proof is never
#: inferred from an undecided check).
PROVED, REFUTED, UNDECIDED = map(DECISION_WORDS.word, (Verdict.PROVED, Verdict.REFUTED, Verdict.INCONCLUSIVE))
#: Rational points tried for a witness, and the precision (bits) of the ball evaluation.
WITNESS_POINTS = (
    (fmpq(1, 3), fmpq(-2, 7), fmpq(3, 5), fmpq(-5, 11), fmpq(2, 9), fmpq(7, 13), fmpq(-1, 4), fmpq(4, 17)),
    (fmpq(-3, 8), fmpq(5, 6), fmpq(-1, 5), fmpq(2, 3), fmpq(-7, 10), fmpq(1, 7), fmpq(3, 4), fmpq(-2, 5)),
    (fmpq(5, 4), fmpq(1, 9), fmpq(-4, 3), fmpq(3, 11), fmpq(1, 2), fmpq(-6, 7), fmpq(2, 13), fmpq(9, 10)),
)
WITNESS_PREC = 200
#: √μ at a witness point.
WITNESS_ROOT_MU = fmpq(6, 5)
#: ε of the log-loss −log(z + ε) a refutation's witness uses.
WITNESS_EPS = fmpq(1, 10)


@dataclass(frozen=True)
class _WitnessPoint:
    """One tried point: the exact α, and the balls of the field's variables (α, √μ) and atoms there."""

    alpha: list[fmpq]
    values: list[arb]

    @property
    def where(self) -> dict[str, Any]:
        """The point as a witness records it."""
        return {"alpha": [str(a) for a in self.alpha], "mu": str(WITNESS_ROOT_MU**2)}


@contextmanager
def _witness_precision() -> Iterator[None]:
    """Ball evaluation at ``WITNESS_PREC`` bits inside the block, the caller's precision restored after."""
    previous = ctx.prec
    ctx.prec = WITNESS_PREC
    try:
        yield
    finally:
        ctx.prec = previous


def _witness_points(atoms: Atoms, r: int) -> Iterator[_WitnessPoint]:
    """The points of ``WITNESS_POINTS`` for ``r`` coordinates α (read inside ``_witness_precision``)."""
    for point in WITNESS_POINTS:
        alpha = [point[i % len(point)] * (1 + i // len(point)) for i in range(r)]
        balls = [arb(a) for a in alpha] + [arb(WITNESS_ROOT_MU)]
        yield _WitnessPoint(alpha, balls + atoms.values(balls))


def rational(x: object) -> fmpq:
    """An exact rational (int, fmpq, Fraction, SymPy Rational, or its text) as an fmpq."""
    if isinstance(x, fmpq):
        return x
    if isinstance(x, int):
        return fmpq(x)
    f = PyFraction(str(x))
    return fmpq(f.numerator, f.denominator)


@dataclass(frozen=True)
class Subspace:
    """𝓜 = {θ = Σ_i α_i b_i}: a rational basis of flat parameter vectors, in the order of ``shapes``.

    The basis is kept in reduced row echelon form (so two equal subspaces have equal bases); ``names``
    says in words what each free coordinate α_i is; ``source`` where the subspace came from.

    >>> M = Subspace.from_vectors({"x": (3,)}, [[1, 1, 0], [2, 2, 0]], source="given")
    >>> M.dim, M.contains([3, 3, 0]), M.contains([1, 0, 0])
    (1, True, False)
    """

    shapes: dict[str, tuple[int, ...]]
    basis: tuple[tuple[fmpq, ...], ...]
    source: str = "given"
    names: tuple[str, ...] = ()

    @staticmethod
    def from_vectors(
        shapes: Mapping[str, tuple[int, ...]],
        vectors: Sequence[Sequence[object]],
        source: str = "given",
        names: Sequence[str] = (),
    ) -> Subspace:
        """The span of ``vectors`` (flat, rational), basis in reduced row echelon form."""
        shapes = {k: tuple(v) for k, v in shapes.items()}
        total = sum(int(np.prod(s)) for s in shapes.values())
        rows = [[rational(x) for x in v] for v in vectors]
        if any(len(r) != total for r in rows):
            raise ValueError(f"a spanning vector has the wrong length (the parameters have {total} entries)")
        basis: tuple[tuple[fmpq, ...], ...] = ()
        if rows:
            R, rank = fmpq_mat(rows).rref()
            basis = tuple(tuple(R[i, j] for j in range(total)) for i in range(rank))
        names = tuple(names) if len(names) == len(basis) else tuple(_describe(shapes, b) for b in basis)
        return Subspace(shapes, basis, source, names)

    @property
    def total(self) -> int:
        return sum(int(np.prod(s)) for s in self.shapes.values())

    @property
    def dim(self) -> int:
        return len(self.basis)

    def pivots(self) -> list[int]:
        return [next(j for j, x in enumerate(b) if x != 0) for b in self.basis]

    def residual(self, vector: Sequence[Any]) -> list[Any]:
        """vector − Σ_i vector[pivot_i] b_i: zero exactly when ``vector`` is in the subspace."""
        out = list(vector)
        for b, p in zip(self.basis, self.pivots()):
            coefficient = vector[p]
            if is_zero(coefficient):
                continue
            for j, x in enumerate(b):
                if x != 0:
                    out[j] = out[j] - coefficient * x
        return out

    def contains(self, vector: Sequence[object]) -> bool:
        return all(is_zero(r) for r in self.residual([rational(v) for v in vector]))

    def splits_by_parameter(self) -> bool:
        """Whether every basis vector lives in one parameter (then 𝓜 is invariant for per-parameter rates too)."""
        spans = _parameter_spans(self.shapes)
        return all(
            sum(any(b[j] != 0 for j in range(a, z)) for a, z in spans.values()) <= 1 for b in self.basis
        )

    def unflatten(self, vector: Sequence[Any]) -> dict[str, np.ndarray]:
        out = {}
        for name, (a, z) in _parameter_spans(self.shapes).items():
            arr = np.empty(z - a, dtype=object)
            arr[:] = list(vector[a:z])
            out[name] = arr.reshape(self.shapes[name])
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "dim": self.dim,
            "parameters": {k: list(v) for k, v in self.shapes.items()},
            "coordinates": list(self.names),
            "basis": [{str(j): str(x) for j, x in enumerate(b) if x != 0} for b in self.basis],
        }


def _parameter_spans(shapes: Mapping[str, tuple[int, ...]]) -> dict[str, tuple[int, int]]:
    spans, start = {}, 0
    for name, shape in shapes.items():
        size = int(np.prod(shape))
        spans[name] = (start, start + size)
        start += size
    return spans


def _describe(shapes: Mapping[str, tuple[int, ...]], b: Sequence[fmpq]) -> str:
    """A basis vector in words: its non-zero entries by parameter name and index (the first few)."""
    parts = []
    for name, (a, z) in _parameter_spans(shapes).items():
        entries = [(j - a, b[j]) for j in range(a, z) if b[j] != 0]
        if not entries:
            continue
        shape = shapes[name]
        shown = ", ".join(f"{x}·{name}{list(np.unravel_index(i, shape))}" for i, x in entries[:3])
        parts.append(shown + (f", … ({len(entries)} entries)" if len(entries) > 3 else ""))
    return "; ".join(parts)


@dataclass
class Induction:
    """The outcome of :func:`induction_step` on one subspace (``to_json`` for reports)."""

    outcome: str
    subspace: Subspace
    classes: int
    per_parameter_rates: bool
    input_independent: bool | None
    labels_tied: bool | None
    chance_level: fmpq
    seconds: float
    witness: dict[str, Any] | None = None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    #: The token-average signal with θ's attention on 𝓜 (``token_signal``): "zero" (proved), "non-zero"
    #: (a certified witness in ``signal_witness``) or "undecided"; None when the pass did not reach it.
    signal: str | None = None
    signal_witness: dict[str, Any] | None = None
    #: The objective decided for (a model with next-token logits: its cross-entropy, ``"lm"`` or ``"last"``);
    #: None: every loss ℓ of the label score.
    objective: str | None = None

    @property
    def stuck_for_all_t(self) -> bool:
        """Proved invariant (0 ∈ 𝓜 always) and every point of 𝓜 predicts the same for every input."""
        return self.outcome == PROVED and bool(self.input_independent)

    def line(self) -> str:
        """One sentence for a report."""
        if self.outcome == PROVED:
            at = (
                "every point predicts the same label for every input (at chance)"
                if self.input_independent
                else "but its points' predictions depend on the input"
            )
            rates = "per-parameter rates too" if self.per_parameter_rates else "one rate for all parameters"
            loss = (
                "every loss"
                if self.objective is None
                else f"its objective (cross-entropy {self.objective!r})"
            )
            return (
                f"invariant (proved): one GD step maps the {self.subspace.dim}-dimensional subspace into itself "
                f"for every η ({rates}) and {loss}; with θ(0) = 0 on it, GD stays on it for every t; {at}"
            )
        if self.outcome == REFUTED:
            return f"not invariant (refuted, witness at α = {self.witness and self.witness['alpha']}): {self.reason}"
        return f"undecided: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "line": self.line(),
            "stuck_for_all_t": self.stuck_for_all_t,
            "subspace": self.subspace.to_json(),
            "score_classes": self.classes,
            "per_parameter_rates": self.per_parameter_rates,
            "input_independent": self.input_independent,
            "labels_tied": self.labels_tied,
            "chance_level": str(self.chance_level),
            "witness": self.witness,
            "reason": self.reason,
            "signal": self.signal,
            "signal_witness": self.signal_witness,
            **({} if self.objective is None else {"objective": self.objective}),
            **self.details,
        }


def _population(task: Task) -> tuple[np.ndarray, np.ndarray, list[fmpq]]:
    pop = task.population()
    probs = pop.exact_probs()
    keep, weights = [], []
    for n, q in enumerate(probs):
        if not getattr(q, "is_Rational", False) and not isinstance(q, int):
            raise ValueError(
                f"{task.name}: the population has a symbolic probability {q}; substitute numbers for its parameters"
            )
        if q != 0:
            keep.append(n)
            weights.append(rational(q))
    return np.asarray(pop.tokens)[keep], np.asarray(pop.labels)[keep], weights


def chance_level(task: Task) -> fmpq:
    """max_y P(y): the accuracy of the best constant prediction."""
    _, labels, weights = _population(task)
    per: dict[int, fmpq] = {}
    for y, w in zip(labels.tolist(), weights):
        per[y] = per.get(y, fmpq(0)) + w
    return max(per.values())


def positions(N: int) -> np.ndarray:
    """The positional embeddings the subspaces' coordinates refer to: P = I_N (M = N), read as √μ·I_N."""
    P = np.empty((N, N), dtype=object)
    P.fill(fmpq(0))
    for j in range(N):
        P[j, j] = fmpq(1)
    return P


def induction_step(task: Task, model: Model, subspace: Subspace, objective: str | None = None) -> Induction:
    """Decide whether one GD step maps ``subspace`` into itself for every η and every loss (module docstring).

    A model with next-token logits (``Model.TOKEN_LOGITS``, a sequence model) trains on its cross-entropy
    objective (``objective``, by default ``"lm"``: ``rwtoolkit.models.objective_name``), a loss of all its logits,
    not of one label score: for it the step is decided for that objective (its exact gradient,
    ``rwtoolkit.models.CrossEntropy``, in the function field), for every η. Its prediction and its objective are
    softmaxes of logits built from its attention's softmaxes, which the function field cannot take (an atom is
    the exponential of a polynomial): a cheap pass (:func:`exponentials_nest`) says so first, and the outcome is
    undecided with that reason, before the field's work.

    The positions are P = √μ·I_N with √μ an indeterminate too, so a proof holds for every μ > 0 at once (and,
    since the dynamics depend on P only through PᵀP = μI, for every orthogonal P of equal norms μ,
    docs/theory.md#reduction). The subspace's coordinates are those of P = I_N (:func:`positions`).

    >>> from rwtoolkit.models import get_model
    >>> from rwtoolkit.tasks import CircleWalk
    >>> model, task = get_model("key_query", d=1), CircleWalk(3, 3, "1/2")
    >>> sizes = Sizes(K=3, M=3, N=3)
    >>> shapes = model.shapes(sizes)
    >>> V_only = [[int(j == i) for j in range(model.parameter_count(sizes))] for i in range(9)]
    >>> induction_step(task, model, Subspace.from_vectors(shapes, V_only)).outcome
    'proved'
    """
    start = time.perf_counter()
    objective = objective_name(model, objective)
    tokens, labels, weights = _population(task)
    K, N = task.K, task.N
    shapes = model.shapes(Sizes(K=K, M=N, N=N))
    if dict(shapes) != dict(subspace.shapes):
        raise ValueError(f"the subspace's parameters {subspace.shapes} are not the model's {shapes}")
    r = subspace.dim
    names = [f"a{i}" for i in range(r)] + ["s"]  # s = √μ
    common: dict[str, Any] = {
        "per_parameter_rates": subspace.splits_by_parameter(),
        "chance_level": chance_level(task),
        "subspace": subspace,
        "objective": objective,
    }
    loss = None if objective is None else CrossEntropy(objective, log=_unread_log)

    def run(
        arithmetic: FieldArithmetic, field_: FunctionField
    ) -> tuple[Tape, dict[str, Any], Any, Any, tuple[Any, Any]]:
        alpha = field_.variables()[:r]
        root_mu = field_.variables()[r]
        P = np.empty((N, N), dtype=object)
        P.fill(fmpq(0))
        for j in range(N):
            P[j, j] = root_mu
        flat = []
        for j in range(subspace.total):
            value: Any = fmpq(0)
            for i, b in enumerate(subspace.basis):
                if b[j] != 0:
                    value = alpha[i] * b[j] + value
            flat.append(value)
        params = subspace.unflatten(flat)
        data = batch(arithmetic, tokens, labels, weights, K, P)
        tape = Tape(arithmetic)
        inputs = {name: tape.input(value) for name, value in params.items()}
        out = model.forward(tape, inputs, data.inputs)
        # the objective's read-out and cotangent (its softmaxes recorded in the first pass too)
        seeded = (None, None) if loss is None else loss.apply(arithmetic, out, data, gradient=True)[1:]
        return tape, inputs, out, data, seeded

    def undecided(reason: str) -> Induction:
        return Induction(
            UNDECIDED,
            classes=0,
            input_independent=None,
            labels_tied=None,
            seconds=time.perf_counter() - start,
            reason=reason,
            **common,
        )

    if objective is not None:
        nested = exponentials_nest(model, subspace, tokens, labels, weights, K, N)
        if nested:
            return undecided(nested)
    # pass 1: the logits as polynomials in α, for the exponential atoms
    field1 = FunctionField(names)
    first = FieldArithmetic(field1, None)
    run(first, field1)
    try:
        atoms = Atoms(first.recorded, r + 1)
    except ValueError as error:
        return undecided(str(error))
    field2 = FunctionField(names + atoms.names())
    arithmetic = FieldArithmetic(field2, atoms)
    try:
        tape, inputs, out, data, (seeded, seed) = run(arithmetic, field2)
    except ValueError as error:  # a logit with an exponential inside: two_layer's layer 2 reads layer 1
        return undecided(
            f"{error}: exponentials nest (a logit is built from another softmax), and the function field "
            "of the induction step has an atom only for the exponential of a polynomial"
        )
    f = out.f.value
    rows = np.arange(data.size)
    z = f[rows, data.labels]
    groups: dict[tuple[str, str], list[int]] = {}
    for n, value in enumerate(z.tolist()):
        groups.setdefault(key_of(value), []).append(n)
    input_independent = all(is_zero(f[n, k] - f[0, k]) for n in range(1, data.size) for k in range(K))
    labels_tied = all(is_zero(f[n, k] - f[n, 0]) for n in range(data.size) for k in range(1, K))
    order = list(shapes)
    components = []
    if objective is not None:  # the objective's gradient, one component
        grads = tape.gradient(seeded, seed, inputs)
        flat = [x for name in order for x in np.asarray(grads[name], dtype=object).ravel().tolist()]
        components.append((list(range(data.size)), subspace.residual(flat)))
    for members in groups.values() if objective is None else ():
        seed = arithmetic.zeros(tuple(f.shape))
        for n in members:
            seed[n, data.labels[n]] = data.weights[n]
        grads = tape.gradient(out.f, seed, inputs)
        flat = [x for name in order for x in np.asarray(grads[name], dtype=object).ravel().tolist()]
        components.append((members, subspace.residual(flat)))
    outside = [(members, res) for members, res in components if not all(is_zero(x) for x in res)]
    signal, signal_witness = (
        (None, None)  # no attention S over the N positions (a sequence model)
        if out.S is None
        else token_signal(field2, atoms, r, out.S.value, data, tokens, weights, K)
    )
    common.update(
        classes=len(groups),
        input_independent=input_independent,
        labels_tied=labels_tied,
        signal=signal,
        signal_witness=signal_witness,
    )
    if not outside:
        return Induction(PROVED, seconds=time.perf_counter() - start, **common)
    if objective is not None:
        witness, reason = _objective_witness(field2, atoms, r, outside[0][1], subspace, objective)
    else:
        witness, reason = _witness(field2, atoms, r, z, components, outside, subspace)
    outcome = REFUTED if witness is not None else UNDECIDED
    return Induction(outcome, seconds=time.perf_counter() - start, witness=witness, reason=reason, **common)


def _unread_log(a: np.ndarray) -> np.ndarray:
    """The logarithms of a cross-entropy's value, never read by the induction step (it reads the gradient, which
    needs none: MATH §14): zeros, so the function field, which has no logarithm, can seed the reverse pass."""
    out = np.empty(np.shape(a), dtype=object)
    out.fill(fmpq(0))
    return out


class _Nested(ValueError):
    """Raised by the probe of :func:`exponentials_nest` where the function field cannot go on."""


class _Depth:
    """An element of the probe of :func:`exponentials_nest`: an exact constant ``c``, or a value that depends on
    the free coordinates (``c`` None) with ``depth`` the nesting of exponentials of such values in it (0: a
    rational function of α). A sum or product of two α-dependent values counts as α-dependent (a cancellation
    is not seen), so the probe may call nested what the field would take, never the other way round."""

    __slots__ = ("c", "depth")

    def __init__(self, c: fmpq | None, depth: int = 0) -> None:
        self.c, self.depth = c, depth

    @staticmethod
    def of(x: Any) -> _Depth:
        if isinstance(x, _Depth):
            return x
        if isinstance(x, fmpq):
            return _Depth(x)
        if isinstance(x, (int, np.integer)):
            return _Depth(fmpq(int(x)))
        return _Depth(
            fmpq(int(x.numerator), int(x.denominator))
        )  # a Python Fraction: a float constant's rational

    def __add__(self, other: Any) -> _Depth:
        b = _Depth.of(other)
        if self.c is not None and b.c is not None:
            return _Depth(self.c + b.c)
        if self.c == 0:
            return b
        if b.c == 0:
            return self
        return _Depth(None, max(self.depth, b.depth))

    __radd__ = __add__

    def __neg__(self) -> _Depth:
        return _Depth(None if self.c is None else -self.c, self.depth)

    def __sub__(self, other: Any) -> _Depth:
        return self + (-_Depth.of(other))

    def __rsub__(self, other: Any) -> _Depth:
        return _Depth.of(other) + (-self)

    def __mul__(self, other: Any) -> _Depth:
        b = _Depth.of(other)
        if self.c is not None and b.c is not None:
            return _Depth(self.c * b.c)
        if self.c == 0 or b.c == 0:
            return _Depth(fmpq(0))
        return _Depth(None, max(self.depth, b.depth))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> _Depth:
        b = _Depth.of(other)
        if b.c == 0:
            raise ZeroDivisionError("the probe divided by an exact zero")
        if self.c is not None and b.c is not None:
            return _Depth(self.c / b.c)
        if self.c == 0:
            return self
        return _Depth(None, max(self.depth, b.depth))

    def __rtruediv__(self, other: Any) -> _Depth:
        return _Depth.of(other) / self

    def __pow__(self, e: int) -> _Depth:
        return _Depth(None if self.c is None else self.c**e, self.depth) if e else _Depth(fmpq(1))

    def __repr__(self) -> str:
        return f"_Depth({self.c}, {self.depth})"


class _Probe(ObjectArithmetic):
    """The arithmetic of :class:`_Depth` elements; ``stopped`` is the reason it stopped (a model's program may
    reword the error it raised, with the op and the user's line)."""

    def __init__(self) -> None:
        self.stopped = ""
        super().__init__("function field", _Depth.of, exp=self._exp_element, sign=self._sign_element)

    def _stop(self, why: str) -> _Nested:
        self.stopped = why
        return _Nested(why)

    def _exp_element(self, x: Any) -> _Depth:
        x = _Depth.of(x)
        if x.c is not None:
            if x.c != 0:
                raise ValueError("a logit has a non-zero constant term (the subspace is not linear)")
            return _Depth(fmpq(1))
        if x.depth:
            raise self._stop(
                "exponentials nest on the subspace (a softmax reads logits built from another softmax: the "
                "prediction's and the objective's from the attention's), and the function field of the induction "
                "step has an atom only for the exponential of a polynomial"
            )
        return _Depth(None, 1)

    def _sign_element(self, x: Any) -> int:
        x = _Depth.of(x)
        if x.c is None:
            raise self._stop(
                "a ReLU's input depends on the free coordinates: it has no one sign on the subspace"
            )
        return (x.c > 0) - (x.c < 0)


def exponentials_nest(
    model: Model,
    subspace: Subspace,
    tokens: np.ndarray,
    labels: np.ndarray,
    weights: Sequence[fmpq],
    K: int,
    N: int,
) -> str:
    """Why the function field cannot run ``model`` with its objective at a generic point of ``subspace``, or "".

    One forward pass and the objective's softmaxes in a probe arithmetic whose elements are an exact constant or
    "depends on α" with the nesting depth of exponentials (:class:`_Depth`, no polynomial algebra: milliseconds
    where the field takes minutes before it meets the nested exponential): the reason where an exponential's
    argument already holds an exponential of α, or a ReLU's input depends on α. An exact arithmetic's refusal
    (GELU, layer norm: one line naming the ball engine) is raised as it is.
    """
    arithmetic = _Probe()
    free = [any(b[j] != 0 for b in subspace.basis) for j in range(subspace.total)]
    params = subspace.unflatten([_Depth(None) if f else _Depth(fmpq(0)) for f in free])
    P = np.empty((N, N), dtype=object)
    P.fill(_Depth(fmpq(0)))
    for j in range(N):
        P[j, j] = _Depth(None)  # √μ
    data = batch(arithmetic, tokens, labels, list(weights), K, P)
    tape = Tape(arithmetic)
    inputs = {name: tape.input(value) for name, value in params.items()}
    try:
        out = model.forward(tape, inputs, data.inputs)
        objective = objective_name(model, None)
        if objective is not None:
            CrossEntropy(objective, log=_unread_log).apply(arithmetic, out, data, gradient=True)
    except ValueError as error:
        if arithmetic.stopped:  # the probe's reason, as the model's program words it (its op and line)
            return str(error)
        raise
    return ""


def _objective_witness(
    field_: FunctionField, atoms: Atoms, r: int, residual: list[Any], subspace: Subspace, objective: str
) -> tuple[dict[str, Any] | None, str]:
    """A certified point where the objective's gradient has a component outside 𝓜 (so the step leaves it for
    every η > 0), or None."""
    with _witness_precision():
        for point in _witness_points(atoms, r):
            for j, x in enumerate(residual):
                if is_zero(x):
                    continue
                v = field_.evaluate(x, point.values)
                if not v.contains(0):
                    entry = _entry_name(subspace, j)
                    return (
                        {
                            **point.where,
                            "loss": f"cross-entropy {objective!r}",
                            "entry": entry,
                            "residual": v.str(10, radius=True),
                        },
                        f"the gradient of the objective ({objective!r}) has the component {v.str(6)} ≠ 0 along "
                        f"{entry} outside the subspace (certified)",
                    )
    return (
        None,
        "the objective's gradient leaves the subspace as a function, but no tried point certified it",
    )


def token_signal(
    field_: FunctionField,
    atoms: Atoms,
    r: int,
    S: np.ndarray,
    data: Any,
    tokens: np.ndarray,
    weights: Sequence[fmpq],
    K: int,
) -> tuple[str, dict[str, Any] | None]:
    """Whether the token-average signal with θ's attention vanishes at every point θ of the subspace.

    C(θ) = E[e_y (X S_θ)ᵀ] − E[e_y] E[X S_θ]ᵀ (K×K), X S_θ = Σ_{j<N} S_j(θ) e_{s_j}: the signal of
    docs/theory.md#signal with the attention of θ instead of the uniform one (the first step's). The inputs
    are grouped by their attended token average a(X) = X S_θ as a function of α (its exact form in the
    field; inputs are never summed across, so no common denominators build up). Then
    C = Σ_groups c_g a_gᵀ with the exact vectors c_g = Σ_{X ∈ g} P(X)(e_y − E[e_y]):

    * "zero" (proved) when every c_g vanishes;
    * "non-zero" when some entry of C is certified non-zero at a rational point (ball arithmetic; the
      point is the witness);
    * "undecided" otherwise (the a_g may be linearly dependent functions).
    """
    n = len(weights)
    mean = [fmpq(0)] * K
    for y, w in zip(data.labels.tolist(), weights, strict=True):
        mean[y] += w
    groups: dict[tuple[tuple[str, str], ...], tuple[list[Any], list[fmpq]]] = {}
    for i in range(n):
        attended: list[Any] = [fmpq(0)] * K
        for j, s in enumerate(tokens[i].tolist()):
            attended[s] = S[i, j] + attended[s]
        key = tuple(key_of(a) for a in attended)
        entry = groups.setdefault(key, (attended, [fmpq(0)] * K))
        y = int(data.labels[i])
        for k in range(K):
            entry[1][k] += weights[i] * ((1 if k == y else 0) - mean[k])
    live = [(a, c) for a, c in groups.values() if any(x != 0 for x in c)]
    if not live:
        return "zero", None
    with _witness_precision():
        for point in _witness_points(atoms, r):
            for y in range(K):
                for k in range(K):
                    total = arb(0)
                    for attended, c in live:
                        if c[y] != 0:
                            total += arb(c[y]) * field_.evaluate(attended[k], point.values)
                    if not total.contains(0):
                        return "non-zero", {
                            **point.where,
                            "entry": [y, k],
                            "value": total.str(10, radius=True),
                        }
    return "undecided", None


def _entry_name(subspace: Subspace, j: int) -> str:
    for name, (a, zz) in _parameter_spans(subspace.shapes).items():
        if a <= j < zz:
            return f"{name}{list(int(i) for i in np.unravel_index(j - a, subspace.shapes[name]))}"
    raise IndexError(j)


def _witness(
    field_: FunctionField,
    atoms: Atoms,
    r: int,
    z: np.ndarray,
    components: list[tuple[list[int], list[Any]]],
    outside: list[tuple[list[int], list[Any]]],
    subspace: Subspace,
) -> tuple[dict[str, Any] | None, str]:
    """A certified point where the step leaves 𝓜 (the log-loss first, then a bump loss), or None."""
    with _witness_precision():
        for point in _witness_points(atoms, r):
            values, where = point.values, point.where
            zeta = [field_.evaluate(z[members[0]], values) for members, _ in components]
            # (1) the log-loss: ℓ'(z) = −1/(z + ε); the step leaves 𝓜 where Σ_k ℓ'(ζ_k) G_k has a non-zero residual
            total = [arb(0)] * subspace.total
            usable = all((zk + WITNESS_EPS) > 0 for zk in zeta)
            if usable:
                for zk, (_, res) in zip(zeta, components):
                    d = -1 / (zk + WITNESS_EPS)
                    total = [t + d * field_.evaluate(x, values) for t, x in zip(total, res)]
                for j, t in enumerate(total):
                    if not t.contains(0):
                        return (
                            {
                                **where,
                                "loss": f"log, eps = {WITNESS_EPS}",
                                "entry": _entry_name(subspace, j),
                                "residual": t.str(10, radius=True),
                            },
                            f"with the log-loss the gradient's component along {_entry_name(subspace, j)} outside "
                            f"the subspace is {t.str(6)} ≠ 0 (certified)",
                        )
            # (2) any loss: separated scores and a non-zero component of one class
            separated = all(
                not (zeta[a] - zeta[b]).contains(0) for a in range(len(zeta)) for b in range(a + 1, len(zeta))
            )
            if separated:
                for k, (_, res) in enumerate(components):
                    if not any(not is_zero(x) for x in res):
                        continue
                    for j, x in enumerate(res):
                        v = field_.evaluate(x, values)
                        if not v.contains(0):
                            return (
                                {
                                    **where,
                                    "loss": f"any loss with ℓ' ≠ 0 near z = {zeta[k].str(8)} and ℓ' = 0 near the "
                                    f"other {len(zeta) - 1} scores",
                                    "entry": _entry_name(subspace, j),
                                    "residual": v.str(10, radius=True),
                                },
                                f"the inputs with score ζ_{k} push {_entry_name(subspace, j)} off the subspace by "
                                f"{v.str(6)} (certified; the scores are certified distinct)",
                            )
    return None, (
        f"{len(outside)} score class(es) have a gradient component outside the subspace as functions, "
        f"but no tried point certified it"
    )
