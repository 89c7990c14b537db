"""Markov-chain tasks: next-token prediction on a fixed chain, and on chains drawn in context from a prior.

Both are exact finite tasks over the alphabet 0..S-1 (the tokens are the vocabulary, ``vocab`` = "0".."S-1"):
a sequence x_1..x_N is drawn, the model sees x_1..x_{N-1} and the label is the next token y = x_N (the
query slot N carries no token, docs/theory.md#model).

* ``markov_task``: a fixed chain of order k, P(x_{i+1} | x_{i-k+1..i}) = ``transition[context][b]``, the
  first k tokens from ``initial`` (uniform by default). ``binary_markov_task`` is the binary (p, q)
  source of Makkuva et al. (switch 0 -> 1 w.p. p, 1 -> 0 w.p. q), started in its stationary law
  (q, p)/(p + q).
* ``icl_markov_task``: in-context Markov chains (Edelman et al.): each row of the transition matrix is
  drawn from a symmetric Dirichlet(α) prior, x_1 is uniform, and the sequence follows that chain. The
  population probability is the expectation over the prior, a finite product by the Pólya-urn formula:

      P(x_1..x_N) = (1/S) Π_a [Π_b α^(n_ab)] / (Sα)^(n_a),    x^(n) = x (x + 1) ⋯ (x + n − 1),

  with n_ab the number of transitions a -> b in the sequence and n_a = Σ_b n_ab. Exact for rational α.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import sympy as sp

from rwtoolkit.tasks._circle import check_int
from rwtoolkit.tasks._exact import check_in_unit_interval, is_numeric
from rwtoolkit.tasks._finite import FiniteTask
from rwtoolkit.tasks._graph import MAX_FINITE_INPUTS, check_length, exact_expr, power_above


def _size(S: int, N: int, name: str) -> None:
    """Refuse S^N sequences above ``MAX_FINITE_INPUTS`` by comparing sizes, before computing S^N."""
    check_length(N)
    if power_above(S, N, MAX_FINITE_INPUTS):
        raise ValueError(
            f"S={S}, N={N}: {name} has S^N = {S}^{N} sequences, above the limit of {MAX_FINITE_INPUTS} "
            "for exact enumeration; choose a smaller S or N"
        )


def _task(S: int, N: int, probability, name: str) -> FiniteTask:
    sequences, labels, probs = [], [], []
    for x in itertools.product(range(S), repeat=N):
        q = probability(x)
        if q == 0:
            continue
        sequences.append(list(x[:-1]))
        labels.append(x[-1])
        probs.append(q)
    return FiniteTask(sequences, labels, probs, vocab=tuple(str(a) for a in range(S)), name=name)


def markov_task(
    transition: Sequence[Sequence[object]], N: int, k: int = 1, initial: Sequence[object] | None = None
) -> FiniteTask:
    """Next-token prediction on a fixed Markov chain of order ``k`` over S tokens (module docstring).

    ``transition``: S^k rows of S probabilities, one row per context (x_{i-k+1}, ..., x_i) in lexicographic
    order, each summing to 1; ``initial``: S^k probabilities of the first k tokens (default uniform).

    >>> t = markov_task([["1/2", "1/2"], ["1/4", "3/4"]], N=3)
    >>> t.vocab, t.N, sum(t.population().exact_probs())
    (('0', '1'), 3, 1)
    """
    k = check_int(k, "k", 1)
    N = check_int(N, "N", k + 1)
    if not isinstance(transition, (list, tuple)) or not all(
        isinstance(row, (list, tuple)) for row in transition
    ):
        raise ValueError("transition must be a list of rows of probabilities (S^k rows of S)")
    S = len(transition[0]) if transition else 0
    if S < 2 or any(len(row) != S for row in transition):
        raise ValueError(
            f"transition must have S^k rows of S probabilities (S >= 2, k = {k}): got rows of lengths "
            f"{sorted({len(r) for r in transition})}"
        )
    _size(S, N, "markov_task")  # by arithmetic, before any row is read (N >= k + 1)
    contexts = S**k  # S^k <= S^N, bounded above
    if len(transition) != contexts:
        raise ValueError(
            f"transition must have S^k rows of S probabilities (S >= 2, k = {k}): got {len(transition)} rows "
            f"of {S}, expected S^k = {contexts}"
        )
    rows = [
        [exact_expr(v, f"transition[{i}][{b}]") for b, v in enumerate(row)]
        for i, row in enumerate(transition)
    ]
    for i, row in enumerate(rows):
        for b, v in enumerate(row):
            if is_numeric(v):
                check_in_unit_interval(v, f"transition[{i}][{b}]")
        total = sp.simplify(sp.Add(*row))
        if is_numeric(total) and total != 1:
            raise ValueError(f"transition[{i}] sums to {total}, not 1")
    if initial is not None and len(initial) != contexts:
        raise ValueError(f"initial has {len(initial)} probabilities, expected S^k = {contexts}")
    start = (
        [sp.Rational(1, contexts)] * contexts
        if initial is None
        else [exact_expr(v, "initial") for v in initial]
    )

    def index(context: Sequence[int]) -> int:
        out = 0
        for a in context:
            out = out * S + a
        return out

    def probability(x: tuple[int, ...]) -> sp.Expr:
        q = start[index(x[:k])]
        for i in range(k, N):
            q = q * rows[index(x[i - k : i])][x[i]]
        return q

    return _task(S, N, probability, "markov")


def binary_markov_task(p: object, q: object, N: int) -> FiniteTask:
    """The binary (p, q) source of Makkuva et al.: 0 -> 1 w.p. p, 1 -> 0 w.p. q, started stationary.

    The stationary law is (q, p)/(p + q) (p + q > 0); p + q > 1 is the regime of their bad local minimum.

    >>> t = binary_markov_task("3/5", "4/5", N=3)
    >>> t.population().exact_probs()[0]  # x = 0, 0, 0: π_0 (1 - p)²
    16/175
    """
    p, q = exact_expr(p, "p"), exact_expr(q, "q")
    for name, v in (("p", p), ("q", q)):
        if is_numeric(v):
            check_in_unit_interval(v, name)
    if is_numeric(p + q) and p + q == 0:
        raise ValueError("p + q = 0: the chain never moves and has no unique stationary law; give p + q > 0")
    stationary = [q / (p + q), p / (p + q)]
    task = markov_task([[1 - p, p], [q, 1 - q]], N, k=1, initial=stationary)
    return FiniteTask(
        task.tokens.tolist(),
        task.labels.tolist(),
        list(task.prob_values),
        vocab=task.vocab,
        name="binary_markov",
    )


def _rising(x: sp.Expr, n: int) -> sp.Expr:
    out = sp.Integer(1)
    for i in range(n):
        out *= x + i
    return out


def icl_markov_task(S: int, N: int, alpha: object = 1) -> FiniteTask:
    """In-context Markov chains: each row of the chain drawn from Dirichlet(α, ..., α), x_1 uniform.

    The probabilities are the Pólya-urn products of the module docstring (exact for rational α > 0).

    >>> t = icl_markov_task(2, 3)
    >>> t.population().exact_probs()[0]  # x = 0, 0, 0 with α = 1: (1/2)·(1·2)/(2·3)
    1/6
    """
    S = check_int(S, "S", 2)
    N = check_int(N, "N", 2)
    a = exact_expr(alpha, "alpha")
    if is_numeric(a) and not a > 0:
        raise ValueError(f"alpha={a} must be > 0")
    _size(S, N, "icl_markov_task")

    def probability(x: tuple[int, ...]) -> sp.Expr:
        counts = [[0] * S for _ in range(S)]
        for i in range(1, len(x)):
            counts[x[i - 1]][x[i]] += 1
        q = sp.Rational(1, S)
        for row in counts:
            for n in row:
                q *= _rising(a, n)
            q /= _rising(S * a, sum(row))
        return q if is_numeric(q) else sp.simplify(q)  # a product of rationals is exact as it is

    return _task(S, N, probability, "icl_markov")
