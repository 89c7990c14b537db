"""Hypothesis strategies for the toolkit's configurations, for the project's tests and for yours.

Every strategy draws exact values (``Fraction``) so the same draw feeds ``rwtoolkit.engines.exact`` (exact) and a
float implementation (``float(value)``, one rounding).

- ``circle_configs``: K in 3..7, N in 2..9, p rational in [0, 1] (0, 1/2 and 1 are drawn often);
  ``balanced_circle_configs``: p ∈ {0, 1} and N = rK + 1 (Theorem 4.1).
- ``etas`` (0, 2], ``epsilons`` (0, 1], ``mus`` (0, 10]: positive rationals with small denominators.
- ``embeddings(N, mu)``: sine (M > N), onehot (M = N) or random orthogonal (N ≤ M ≤ 64), all with
  ‖p_i‖² = μ.
- ``losses``: "log" | "squared" | "exp"; ``exact_loss`` gives the same ℓ for ``rwtoolkit.engines.exact.derive``;
  ``custom_losses``/``any_losses`` add a user callable ℓ (for claims about any loss).
- ``schedules``: learning-rate schedules η(t) (constant, 1/(1+t) decay, step decay, cyclic, a list).
- ``finite_tasks``: small ``FiniteTask`` specs (random vocabularies, lengths, labels, rational
  probabilities); ``zero_signal_finite_tasks``: the same but with a token average independent of y.
- ``check_configs``: one whole configuration (task, P with ‖p_i‖² = μ, η, ε, loss, dtype) as a
  ``rwtoolkit.analyses.check.CheckConfig``, what ``rwtoolkit.analyses.check.assert_matches_exact`` takes.
- ``invalid_inputs``: deliberately bad arguments, each with the error the README documents for it.

>>> from hypothesis import find
>>> find(circle_configs(), lambda c: c.p == 1).p
Fraction(1, 1)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TypedDict, Unpack

import sympy as sp
from hypothesis import strategies as st

from rwtoolkit.analyses.check._config import CheckConfig, build_config
from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, positional_embeddings
from rwtoolkit.io import deprecated_attributes as _deprecated_attributes
from rwtoolkit.tasks import LOSSES as BUILTIN_LOSSES
from rwtoolkit.tasks import CircleWalk, FiniteTask, check_loss

#: Default ranges for circle walks and embedding widths.
K_MIN, K_MAX = 3, 7
N_MIN, N_MAX = 2, 9
M_MAX = 64
LOSSES = tuple(BUILTIN_LOSSES)


# ---------------------------------------------------------------------------------------------
# numbers
# ---------------------------------------------------------------------------------------------
@st.composite
def _rational(draw, low: Fraction, high: Fraction, max_denominator: int, open_low: bool) -> Fraction:
    d = draw(st.integers(1, max_denominator))
    lo = math.ceil(low * d)
    if open_low and Fraction(lo, d) == low:
        lo += 1
    hi = math.floor(high * d)
    if lo > hi:  # no multiple of 1/d inside: fall back to the upper end, always allowed
        return high
    return Fraction(draw(st.integers(lo, hi)), d)


def rationals(
    low: Fraction | int, high: Fraction | int, max_denominator: int = 12, open_low: bool = False
) -> st.SearchStrategy[Fraction]:
    """Fractions n/d in [low, high] (or (low, high] with ``open_low``), d ≤ ``max_denominator``.

    One composite defined once (``st.composite`` reads a function's source when it wraps it, so a
    composite defined inside would be parsed again at every call).
    """
    return _rational(Fraction(low), Fraction(high), max_denominator, open_low)


def probabilities(max_denominator: int = 12) -> st.SearchStrategy[Fraction]:
    """p ∈ [0, 1] rational; the special points 0, 1/2 and 1 are drawn with high probability."""
    special = st.sampled_from([Fraction(0), Fraction(1, 2), Fraction(1)])
    generic = rationals(0, 1, max_denominator)
    return st.one_of(generic, special, generic)  # a generic p two times in three


def etas(high: Fraction | int = 2) -> st.SearchStrategy[Fraction]:
    """Learning rates η ∈ (0, high], default (0, 2]."""
    return rationals(0, high, 8, open_low=True)


def epsilons() -> st.SearchStrategy[Fraction]:
    """ε ∈ (0, 1] for the log-loss -log(z + ε)."""
    return rationals(0, 1, 10, open_low=True)


def mus(high: Fraction | int = 10) -> st.SearchStrategy[Fraction]:
    """μ = ‖p_i‖² ∈ (0, high], default (0, 10]."""
    return rationals(0, high, 4, open_low=True)


# ---------------------------------------------------------------------------------------------
# tasks
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CircleConfig:
    """A circle-walk task (K nodes, walks of N - 1 tokens, clockwise probability p) given exactly."""

    K: int
    N: int
    p: Fraction

    def task(self) -> CircleWalk:
        return CircleWalk(self.K, self.N, self.p)


@st.composite
def circle_configs(
    draw,
    K: tuple[int, int] = (K_MIN, K_MAX),
    N: tuple[int, int] = (N_MIN, N_MAX),
    p: st.SearchStrategy[Fraction] | None = None,
    max_rooted_walks: int | None = None,
) -> CircleConfig:
    """Circle walks with K, N in the given ranges; ``max_rooted_walks`` caps 2^(N-1) for exact work."""
    k = draw(st.integers(*K))
    n_hi = N[1] if max_rooted_walks is None else min(N[1], max_rooted_walks.bit_length())
    n = draw(st.integers(N[0], n_hi))
    return CircleConfig(k, n, draw(probabilities() if p is None else p))


@st.composite
def balanced_circle_configs(draw, K: tuple[int, int] = (K_MIN, K_MAX), N_max: int = N_MAX) -> CircleConfig:
    """p ∈ {0, 1} and N = rK + 1 (r ≥ 1): every walk visits each node r times (Theorem 4.1)."""
    k = draw(st.integers(*K))
    r = draw(st.integers(1, max(1, (N_max - 1) // k)))
    return CircleConfig(k, r * k + 1, draw(st.sampled_from([Fraction(0), Fraction(1)])))


@dataclass(frozen=True)
class FiniteTaskSpec:
    """Arguments of a ``FiniteTask``: token ids (or words of ``vocab``), labels, exact probabilities."""

    K: int
    sequences: tuple[tuple[int, ...], ...]
    labels: tuple[int, ...]
    probs: tuple[Fraction, ...]
    vocab: tuple[str, ...] | None = None

    @property
    def N(self) -> int:
        return len(self.sequences[0]) + 1

    def task(self) -> FiniteTask:
        if self.vocab is None:
            return FiniteTask(
                [list(s) for s in self.sequences], list(self.labels), list(self.probs), K=self.K
            )
        words = self.vocab
        return FiniteTask(
            [[words[i] for i in s] for s in self.sequences],
            [words[y] for y in self.labels],
            list(self.probs),
            vocab=words,
        )


_WORDS = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6)


def _normalise(weights: Sequence[int]) -> tuple[Fraction, ...]:
    total = sum(weights)
    return tuple(Fraction(w, total) for w in weights)


@st.composite
def finite_tasks(
    draw,
    K: tuple[int, int] = (2, 5),
    N: tuple[int, int] = (2, 5),
    inputs: tuple[int, int] = (1, 6),
    zero_probabilities: bool = True,
    min_positive: int = 1,
) -> FiniteTaskSpec:
    """A random finite task: vocabulary size, length, sequences, labels and rational probabilities.

    Half the time the task is built from a random vocabulary of words. With ``zero_probabilities``
    some inputs may get probability 0 (they are dropped from the population); at least
    ``min_positive`` inputs keep a positive probability.
    """
    k = draw(st.integers(*K))
    n = draw(st.integers(*N))
    size = draw(st.integers(max(inputs[0], min_positive), max(inputs[1], min_positive)))
    seq = st.tuples(*[st.integers(0, k - 1)] * (n - 1))
    sequences = tuple(draw(st.lists(seq, min_size=size, max_size=size)))
    labels = tuple(draw(st.lists(st.integers(0, k - 1), min_size=size, max_size=size)))
    weights = draw(st.lists(st.integers(0 if zero_probabilities else 1, 9), min_size=size, max_size=size))
    for i in range(min_positive):  # no filter (no retries): lift the first inputs to a positive weight
        weights[i] = max(weights[i], 1)
    vocab = None
    if draw(st.booleans()):
        vocab = tuple(draw(st.lists(_WORDS, min_size=k, max_size=k, unique=True)))
    return FiniteTaskSpec(k, sequences, labels, _normalise(weights), vocab)


@st.composite
def zero_signal_finite_tasks(
    draw, K: tuple[int, int] = (2, 5), N: tuple[int, int] = (2, 5), bases: tuple[int, int] = (1, 3)
) -> FiniteTaskSpec:
    """A finite task whose token average x̄ is independent of the label, so the signal C is 0.

    Construction: base sequences b with probabilities P(b), a label law q(y) (drawn over a random
    subset of labels); the task holds (π_{b,y}(b), y) with probability P(b)q(y), where π_{b,y} is a
    random permutation of positions. A permutation keeps x̄, so x̄ | y has the law of x̄(b) for all y.
    """
    k = draw(st.integers(*K))
    n = draw(st.integers(*N))
    n_base = draw(st.integers(*bases))
    seq = st.tuples(*[st.integers(0, k - 1)] * (n - 1))
    base = draw(st.lists(seq, min_size=n_base, max_size=n_base))
    base_p = _normalise(draw(st.lists(st.integers(1, 5), min_size=n_base, max_size=n_base)))
    ys = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True))
    q = _normalise(draw(st.lists(st.integers(1, 5), min_size=len(ys), max_size=len(ys))))
    sequences, labels, probs = [], [], []
    for b, pb in zip(base, base_p):
        for y, qy in zip(ys, q):
            sequences.append(tuple(draw(st.permutations(b))))
            labels.append(y)
            probs.append(pb * qy)
    return FiniteTaskSpec(k, tuple(sequences), tuple(labels), tuple(probs))


# ---------------------------------------------------------------------------------------------
# model and training
# ---------------------------------------------------------------------------------------------
class _ModelOptions(TypedDict, total=False):
    """The ``ModelConfig`` fields an ``Embedding`` leaves to the caller of ``Embedding.model``."""

    normalize_attention: bool
    relu_width: int | None
    gram: str


@dataclass(frozen=True)
class Embedding:
    """Positional embeddings of one kind with ‖p_i‖² = ``mu`` (``ModelConfig.pos``/``M``/``mu``)."""

    kind: str
    M: int
    mu: Fraction
    seed: int = 0

    def model(self, K: int, N: int, **kwargs: Unpack[_ModelOptions]) -> ModelConfig:
        return ModelConfig(K=K, N=N, M=self.M, pos=self.kind, mu=float(self.mu), pos_seed=self.seed, **kwargs)


@st.composite
def embeddings(
    draw, N: int, mu: Fraction, kinds: Sequence[str] = ("sine", "onehot", "random"), M_max: int = M_MAX
) -> Embedding:
    """sine (N < M ≤ M_max), onehot (M = N) or random orthogonal (N ≤ M ≤ M_max), all with ‖p_i‖² = μ."""
    kind = draw(st.sampled_from(list(kinds)))
    if kind == "onehot":
        return Embedding(kind, N, mu)
    M = draw(st.integers(N + 1 if kind == "sine" else N, max(M_max, N + 1)))
    return Embedding(kind, M, mu, draw(st.integers(0, 2**16)) if kind == "random" else 0)


def losses() -> st.SearchStrategy[str]:
    """The built-in losses: log = -log(z+ε), squared = (1-z)², exp = exp(-z) (README, rwtoolkit.engines.numeric)."""
    return st.sampled_from(LOSSES)


@dataclass(frozen=True)
class CustomLoss:
    """A user loss ℓ(z) = log(1 + exp(-a·z)) + b·(z - 1)², a, b > 0: smooth, neither built in nor convex in V.

    Called with a torch tensor it is ``TrainConfig.loss``; ``symbolic`` is the same ℓ for ``derive``.
    """

    a: Fraction
    b: Fraction

    @property
    def __name__(self) -> str:  # TrainConfig records callables by name
        return f"custom_a{self.a}_b{self.b}".replace("/", "_")

    def __call__(self, z):
        import torch

        return torch.log1p(torch.exp(-float(self.a) * z)) + float(self.b) * (z - 1) ** 2

    def symbolic(self, z: sp.Expr) -> sp.Expr:
        return sp.log(1 + sp.exp(-sp.Rational(self.a) * z)) + sp.Rational(self.b) * (z - 1) ** 2


def custom_losses() -> st.SearchStrategy[CustomLoss]:
    """``CustomLoss`` with a ∈ (0, 2], b ∈ (0, 1]."""
    return st.builds(CustomLoss, rationals(0, 2, 4, open_low=True), rationals(0, 1, 4, open_low=True))


def any_losses() -> st.SearchStrategy[str | CustomLoss]:
    """A built-in loss name or a ``CustomLoss`` (for claims that hold for any differentiable ℓ)."""
    return st.one_of(losses(), custom_losses())


def exact_loss(loss: str | CustomLoss) -> str | Callable[[sp.Expr], sp.Expr]:
    """The ``loss`` argument of the exact engine (``rwtoolkit.engines.exact.derive``, ``make_loss``) for the same ℓ: a
    built-in name is itself (one table, ``rwtoolkit.tasks.LOSSES``), a ``CustomLoss`` its SymPy ℓ.

    >>> exact_loss("squared"), exact_loss(CustomLoss(Fraction(1), Fraction(1, 2))).__name__
    ('squared', 'symbolic')
    """
    if isinstance(loss, CustomLoss):
        return loss.symbolic
    check_loss(loss, callables=False)
    return loss


# Kept one release (docs/changelog.md): symbolic_loss and symbolic_any_loss are exact_loss.
__getattr__ = _deprecated_attributes(
    "rwtoolkit.analyses.check.strategies",
    {
        old: ("rwtoolkit.analyses.check.strategies.exact_loss", lambda: exact_loss)
        for old in ("symbolic_loss", "symbolic_any_loss")
    },
)


@dataclass(frozen=True)
class Schedule:
    """A learning-rate schedule η(t) > 0, t = 0-based index of the update (``TrainConfig.eta``)."""

    kind: str
    values: tuple[Fraction, ...]
    period: int = 1

    def exact(self, t: int) -> Fraction:
        """η(t) as an exact rational."""
        if self.kind == "constant":
            return self.values[0]
        if self.kind == "decay":  # η0 / (1 + t)
            return self.values[0] / (1 + t)
        if self.kind == "step":  # η0 · γ^(t // period)
            return self.values[0] * self.values[1] ** (t // self.period)
        return self.values[t % len(self.values)]  # "cyclic": the listed values in turn

    def __call__(self, t: int) -> float:
        return float(self.exact(t))


@st.composite
def schedules(draw, high: Fraction | int = 2) -> Schedule:
    """Constant, 1/(1+t) decay, step decay or cyclic schedules with every η(t) ∈ (0, high]."""
    kind = draw(st.sampled_from(["constant", "decay", "step", "cyclic"]))
    if kind == "step":
        gamma = draw(rationals(Fraction(1, 4), 1, 4, open_low=False))
        return Schedule(kind, (draw(etas(high)), gamma), draw(st.integers(1, 4)))
    if kind == "cyclic":
        return Schedule(kind, tuple(draw(st.lists(etas(high), min_size=2, max_size=4))))
    return Schedule(kind, (draw(etas(high)),))


# ---------------------------------------------------------------------------------------------
# invalid inputs
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InvalidCase:
    """A call that must raise ``ValueError`` whose message matches ``pattern`` (the documented error)."""

    what: str
    call: Callable[[], object] = field(repr=False)
    pattern: str
    kind: str = ""

    def check(self) -> str:
        """Run the call; return the message if it raised the documented ValueError, else fail."""
        try:
            self.call()
        except ValueError as err:
            message = str(err)
            if not re.search(self.pattern, message):  # raised, not asserted: python -O keeps the check
                raise AssertionError(
                    f"{self.what}: message {message!r} does not match {self.pattern!r}"
                ) from err
            if "\n" in message.strip():
                raise AssertionError(f"{self.what}: the message is not one line: {message!r}") from err
            return message
        raise AssertionError(f"{self.what}: no ValueError was raised")


def _circle(K=3, N=3, p=Fraction(1, 2)) -> CircleWalk:
    return CircleWalk(K, N, p)


def _train_call(
    model_kw: dict | None = None, cfg_kw: dict | None = None, task: CircleWalk | FiniteTask | None = None
) -> Callable[[], object]:
    task = _circle() if task is None else task
    model = {"K": task.K, "N": task.N, "M": task.N + 2, **(model_kw or {})}
    cfg = {"steps": 1, "population": True, **(cfg_kw or {})}
    from rwtoolkit.engines.numeric import (
        train,  # torch, loaded by the call (rwtoolkit.analyses.check imports it only where it is used)
    )

    return lambda: train(task, ModelConfig(**model), TrainConfig(**cfg), progress=False)


class _DeriveNumbers(TypedDict, total=False):
    """The exact numbers of ``derive`` (read by ``rwtoolkit.tasks.exact``: numbers, "7/10" or symbol names)."""

    eta: object
    eps: object
    mu: object


def _derive_call(
    steps: int = 1, loss: str = "log", **numbers: Unpack[_DeriveNumbers]
) -> Callable[[], object]:
    """``derive`` on a circle walk with ``steps``, ``loss`` or the exact numbers (eta, eps, mu) given; loss and
    rotate default to derive's own ("log", True), spelled out so that every argument is typed."""
    from rwtoolkit.engines.exact import derive  # imported late: only the invalid-input property needs it

    return lambda: derive(_circle(), steps, loss=loss, rotate=True, **numbers)


_NOT_POSITIVE = st.one_of(rationals(-3, 0, 4), st.sampled_from([0.0, -1.0, math.nan, math.inf, -math.inf]))


def _not_positive_float(draw) -> float:
    return float(draw(_NOT_POSITIVE))


#: The kinds of invalid input ``invalid_inputs`` draws (one argument wrong at a time).
INVALID_KINDS = (
    "circle_K",
    "circle_N",
    "circle_p",
    "eta",
    "eps",
    "mu",
    "sine_M",
    "onehot_M",
    "random_M",
    "loss",
    "schedule",
    "model_K",
    "steps",
    "derive_eta",
    "derive_eps",
    "derive_mu",
    "derive_steps",
    "derive_loss",
    "finite_sum",
    "finite_token",
    "finite_lengths",
    "finite_word",
    "finite_negative",
)


@st.composite
def invalid_inputs(draw, kinds: Sequence[str] = INVALID_KINDS) -> InvalidCase:
    """One deliberately invalid argument (a kind from ``kinds``) with its documented error."""
    which = draw(st.sampled_from(list(kinds)))
    return replace(draw(_invalid_case(which)), kind=which)


@st.composite
def _invalid_case(draw, which: str) -> InvalidCase:
    if which == "circle_K":
        K = draw(st.integers(-5, 2))
        return InvalidCase(
            f"CircleWalk(K={K})", lambda: CircleWalk(K, 3, "1/2"), rf"^K={K} is out of range: K must be >= 3"
        )
    if which == "circle_N":
        N = draw(st.integers(-5, 1))
        return InvalidCase(
            f"CircleWalk(N={N})", lambda: CircleWalk(3, N, "1/2"), rf"^N={N} is out of range: N must be >= 2"
        )
    if which == "circle_p":
        p = draw(
            st.one_of(
                rationals(-3, 0, 6, open_low=False).filter(lambda v: v < 0),
                rationals(1, 4, 6).filter(lambda v: v > 1),
            )
        )
        return InvalidCase(
            f"CircleWalk(p={p})", lambda: CircleWalk(3, 3, p), rf"^p={sp.Rational(p)} is outside \[0, 1\]"
        )
    if which in ("eta", "eps"):
        value = _not_positive_float(draw)
        return InvalidCase(
            f"TrainConfig({which}={value})",
            _train_call(cfg_kw={which: value}),
            rf"^{which}=.* must be a finite number > 0",
        )
    if which == "mu":
        value = _not_positive_float(draw)
        return InvalidCase(
            f"mu={value}",
            _train_call(model_kw={"mu": value}),
            r"^mu=.* must be a finite number > 0",
        )
    if which == "sine_M":
        M = draw(st.integers(1, 3))  # N = 3: M < N fails the shared M check, M = N the sine check
        pattern = r"^pos='sine' needs M > N" if M == 3 else rf"^M={M} is out of range: M must be >= N=3"
        return InvalidCase(f"sine M={M}", _train_call(model_kw={"M": M, "pos": "sine"}), pattern)
    if which == "onehot_M":
        M = draw(st.integers(4, 9))
        return InvalidCase(
            f"onehot M={M}", _train_call(model_kw={"M": M, "pos": "onehot"}), r"^pos='onehot' needs M = N"
        )
    if which == "random_M":
        M = draw(st.integers(1, 2))
        return InvalidCase(
            f"random M={M}",
            _train_call(model_kw={"M": M, "pos": "random"}),
            rf"^M={M} is out of range: M must be >= N=3",
        )
    if which == "loss":
        name = draw(
            st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8).filter(lambda s: s not in LOSSES)
        )
        return InvalidCase(
            f"loss={name!r}",
            _train_call(cfg_kw={"loss": name}),
            rf"^loss='{name}' is not one of log, squared, exp",
        )
    if which == "schedule":
        bad_t = draw(st.integers(0, 3))
        value = _not_positive_float(draw)
        return InvalidCase(
            f"eta({bad_t})={value}",
            _train_call(cfg_kw={"steps": 4, "eta": lambda t: value if t == bad_t else 0.5}),
            rf"^eta\({bad_t}\) = .* is out of range: the learning rate must be a finite number > 0",
        )
    if which == "model_K":
        K = draw(st.integers(1, 9).filter(lambda k: k != 3))
        return InvalidCase(
            f"ModelConfig(K={K}) for a K=3 task",
            _train_call(model_kw={"K": K}),
            rf"^K={K} differs from the task's vocabulary size K=3",
        )
    if which == "steps":
        steps = draw(st.integers(-9, -1))
        return InvalidCase(
            f"steps={steps}", _train_call(cfg_kw={"steps": steps}), rf"^steps={steps} must be an integer >= 0"
        )
    if which in ("derive_eta", "derive_eps", "derive_mu"):
        name = which.split("_")[1]
        value = draw(rationals(-3, 0, 4))
        return InvalidCase(
            f"derive({name}={value})",
            _derive_call(**{name: value}),
            rf"^{name}={sp.Rational(value)} must be > 0",
        )
    if which == "derive_steps":
        steps = draw(st.integers(-9, -1))
        return InvalidCase(
            f"derive(steps={steps})",
            _derive_call(steps=steps),
            rf"^steps={steps} is out of range: steps must be >= 0",
        )
    if which == "derive_loss":
        name = draw(
            st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8).filter(
                lambda s: s not in (*BUILTIN_LOSSES, "any")
            )
        )
        return InvalidCase(
            f"derive(loss={name!r})",
            _derive_call(loss=name),
            rf"^loss='{name}' is not one of log, squared, exp, any \(or a callable\)",
        )
    spec = draw(finite_tasks(K=(2, 4), N=(2, 4), inputs=(2, 4), zero_probabilities=False))
    seqs, labels, probs = [list(s) for s in spec.sequences], list(spec.labels), list(spec.probs)
    if which == "finite_sum":
        # scale every probability by s ≠ 1, keeping each in [0, 1]: the total becomes s
        top = max(probs)
        scale = draw(rationals(0, 1 / top, 6, open_low=True).filter(lambda v: v != 1))
        probs = [q * scale for q in probs]
        return InvalidCase(
            "probs not summing to 1",
            lambda: FiniteTask(seqs, labels, probs, K=spec.K),
            rf"^probs sum to {sp.Rational(scale)}, not 1",
        )
    if which == "finite_token":
        bad = draw(st.integers(spec.K, spec.K + 5))
        seqs[-1][-1] = bad
        return InvalidCase(
            f"token {bad} with K={spec.K}",
            lambda: FiniteTask(seqs, labels, probs, K=spec.K),
            rf"token at sequence {len(seqs) - 1} {bad} is outside the vocabulary \[0, {spec.K}\)",
        )
    if which == "finite_lengths":
        seqs[-1] = seqs[-1] + [0] * draw(st.integers(1, 3))
        return InvalidCase(
            "unequal lengths",
            lambda: FiniteTask(seqs, labels, probs, K=spec.K),
            r"^sequences must have equal length",
        )
    if which == "finite_word":
        vocab = [f"w{i}" for i in range(spec.K)]
        word = draw(_WORDS)
        return InvalidCase(
            f"label word {word!r}",
            lambda: FiniteTask(
                [[vocab[i] for i in s] for s in seqs],
                [word] + [vocab[y] for y in labels[1:]],
                probs,
                vocab=vocab,
            ),
            rf"^label 0 '{word}' is not in the vocabulary",
        )
    # finite_negative: one probability below 0, the others rescaled so that the sum is still 1
    probs[0] = -draw(rationals(0, 1, 6, open_low=True))
    rest = sum(probs[1:])
    probs[1:] = [q * (1 - probs[0]) / rest for q in probs[1:]]
    return InvalidCase(
        "negative probability",
        lambda: FiniteTask(seqs, labels, probs, K=spec.K),
        rf"^probs\[0\]={sp.Rational(probs[0])} is outside \[0, 1\]",
    )


# ---------------------------------------------------------------------------------------------
# whole configurations for checking an implementation
# ---------------------------------------------------------------------------------------------
TASK_KINDS = ("circle", "finite", "any", "sequence")
#: The sequence lengths N (the model reads L = N − 1 tokens) of the sequence tasks a check draws.
SEQUENCE_N = (3, 5)


@st.composite
def sequence_tasks(draw, N: tuple[int, int] = SEQUENCE_N) -> FiniteTask:
    """A sequence task over S = 2 symbols with N in the range: in-context Markov chains (each row of the chain
    drawn from Dirichlet(1, 1), ``rwtoolkit.tasks.icl_markov_task``) or the binary (p, q) source
    (``binary_markov_task``, p and q in (0, 1) with denominators up to 6); named by its parameters."""
    from rwtoolkit.tasks import binary_markov_task, icl_markov_task

    n = draw(st.integers(*N), label="N")
    if draw(st.sampled_from(["icl_markov", "binary_markov"]), label="family") == "icl_markov":
        return _named(icl_markov_task(2, n, 1), f"icl_markov(S=2, N={n}, alpha=1)")
    p = draw(rationals(0, 1, 6, open_low=True).filter(lambda x: x < 1), label="p")
    q = draw(rationals(0, 1, 6, open_low=True).filter(lambda x: x < 1), label="q")
    return _named(binary_markov_task(p, q, n), f"binary_markov(p={p}, q={q}, N={n})")


def _named(task: FiniteTask, name: str) -> FiniteTask:
    """``task`` under ``name`` (what a check's configuration prints)."""
    return FiniteTask(
        task.tokens.tolist(), task.labels.tolist(), list(task.prob_values), vocab=task.vocab, name=name
    )


def _draw_check_config(
    draw: Callable,
    the_task: CircleWalk | FiniteTask,
    dtype: str,
    loss_names: Sequence[str],
    kinds: Sequence[str] = ("sine", "onehot", "random"),
    M_max: int = M_MAX,
) -> CheckConfig:
    """The rest of a ``CheckConfig`` for ``the_task``, drawn in a fixed order: μ, the embedding, η, ε, the loss."""
    mu = draw(mus(), label="mu")
    emb = draw(embeddings(the_task.N, mu, kinds, M_max), label="embedding")
    P = positional_embeddings(emb.kind, emb.M, the_task.N, float(mu), emb.seed)
    eta = draw(etas(), label="eta")
    eps = draw(epsilons(), label="eps")
    loss = draw(st.sampled_from(list(loss_names)), label="loss")
    return build_config(the_task, mu, eta, eps, emb.kind, seed=emb.seed, loss=loss, dtype=dtype, P=P)


@st.composite
def check_configs(
    draw,
    task: str = "circle",
    K: tuple[int, int] = (3, 5),
    N: tuple[int, int] = (2, 5),
    dtype: str = "float64",
    loss_names: Sequence[str] = ("log",),
    kinds: Sequence[str] = ("sine", "onehot", "random"),
    M_max: int = M_MAX,
) -> CheckConfig:
    """A ``CheckConfig``: a circle walk (K, N in the ranges) or a small finite task (``task="finite"``,
    K ≤ 4, N ≤ 4, up to 5 inputs; ``"any"``: either), μ, an embedding with ‖p_i‖² = μ, η, ε, a loss; or a
    sequence task (``"sequence"``, ``sequence_tasks``) and η ≤ 1, for a sequence model (``for_model`` then
    gives its objective and start)."""
    if task not in TASK_KINDS:
        raise ValueError(f"task={task!r} is not one of {', '.join(TASK_KINDS)}")
    kind = draw(st.sampled_from(["circle", "finite"])) if task == "any" else task
    if kind == "sequence":  # a sequence model: no P, μ, ε or ℓ; its objective comes with the model
        the_task = draw(sequence_tasks(), label="task")
        eta = draw(etas(1), label="eta")
        return build_config(the_task, 1, eta, 1, "onehot", M=the_task.N, dtype=dtype)
    if kind == "circle":
        the_task = draw(circle_configs(K=K, N=N), label="task").task()
    else:
        the_task = draw(
            finite_tasks(K=(2, min(4, K[1])), N=(2, min(4, N[1])), inputs=(1, 5)), label="task"
        ).task()
    return _draw_check_config(draw, the_task, dtype, loss_names, kinds, M_max)


@st.composite
def balanced_check_configs(
    draw,
    K: tuple[int, int] = (3, 5),
    N_max: int = N_MAX,
    dtype: str = "float64",
    loss_names: Sequence[str] = ("log",),
) -> CheckConfig:
    """A ``CheckConfig`` on a circle walk with p ∈ {0, 1} and N = rK + 1 (the setting of Theorem 4.1)."""
    the_task = draw(balanced_circle_configs(K=K, N_max=N_max), label="task").task()
    return _draw_check_config(draw, the_task, dtype, loss_names)
