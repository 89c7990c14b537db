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

      P(x_1..x_N) = (1/S)^r Π_a [Π_b α^(n_ab)] / (Sα)^(n_a),    x^(n) = x (x + 1) ⋯ (x + n − 1),

  with n_ab the number of transitions a -> b in the sequence, n_a = Σ_b n_ab and r = 1 root (x_1). Exact
  for rational α. With ``parents`` it is the in-context causal graph of Nichani, Damian, Lee (2024): each
  position i = 2..N−1 has a parent p(i) < i or none (a root, uniform), x_i ~ π(x_{p(i)}, ·), and the
  label's parent is the last token, the query: y = x_N ~ π(x_{N−1}, ·) (the authors' ``InContextTree``,
  ``problems.py``). The same formula holds with the transitions counted along the graph, x_{p(i)} -> x_i,
  and r the number of roots; the chain p(i) = i − 1 is the default.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
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


def _parents(parents: object, N: int) -> tuple[int, ...]:
    """``parents`` checked: N − 2 integers, entry k the parent of position k + 2 (1-based), in 0..k + 1."""
    if parents is None:
        return tuple(range(1, N - 1))  # the chain: p(i) = i − 1
    if isinstance(parents, (str, bytes)) or not isinstance(parents, Sequence):
        raise ValueError(
            f"parents={parents!r} must be a list of N-2 = {N - 2} integers (the parents of positions 2..N-1, "
            "0 for a root)"
        )
    if len(parents) != N - 2:
        raise ValueError(
            f"parents has {len(parents)} entries, expected N-2 = {N - 2} (the parents of positions 2..N-1, "
            "0 for a root)"
        )
    out = []
    for k, p in enumerate(parents):
        i = k + 2  # the position whose parent this is
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
            raise ValueError(
                f"parents[{k}]={p!r} must be an integer in 0..{i - 1} (the parent of position {i})"
            )
        if not 0 <= p < i:
            raise ValueError(
                f"parents[{k}]={p} is out of range: the parent of position {i} is in 0..{i - 1} (0: a root)"
            )
        out.append(int(p))
    return tuple(out)


def icl_markov_task(S: int, N: int, alpha: object = 1, parents: Sequence[int] | None = None) -> FiniteTask:
    """In-context Markov chains: each row of the chain drawn from Dirichlet(α, ..., α), x_1 uniform; with
    ``parents``, the in-context causal graph of Nichani et al. (module docstring).

    ``parents``: N − 2 integers, the 1-based parent of positions 2, ..., N − 1 (0: a root, drawn uniform); the
    label x_N's parent is always N − 1, the query. Default the chain (1, 2, ..., N − 2), exactly the in-context
    Markov chain. The probabilities are the Pólya-urn products of the module docstring (exact for rational α > 0).

    >>> t = icl_markov_task(2, 3)
    >>> t.population().exact_probs()[0]  # x = 0, 0, 0 with α = 1: (1/2)·(1·2)/(2·3)
    1/6
    >>> t = icl_markov_task(2, 4, parents=[1, 1])  # x_2, x_3 children of x_1; y child of x_3
    >>> t.population().exact_probs()[0]  # x = 0, 0, 0, 0: three transitions 0 -> 0, (1/2)·(1·2·3)/(2·3·4)
    1/8
    """
    S = check_int(S, "S", 2)
    N = check_int(N, "N", 2)
    a = exact_expr(alpha, "alpha")
    if is_numeric(a) and not a > 0:
        raise ValueError(f"alpha={a} must be > 0")
    _size(S, N, "icl_markov_task")  # before the parents: a huge N is refused before anything is built
    graph = _parents(parents, N)
    # The parent of each 0-based position 1..N-1 (None: a root): the graph's, then the label's, the query N - 2.
    parent = [None if p == 0 else p - 1 for p in graph] + [N - 2]
    roots = 1 + sum(1 for p in parent if p is None)

    def probability(x: tuple[int, ...]) -> sp.Expr:
        counts = [[0] * S for _ in range(S)]
        for i, p in enumerate(parent, start=1):
            if p is not None:
                counts[x[p]][x[i]] += 1
        q = sp.Rational(1, S) ** roots
        for row in counts:
            for n in row:
                q *= _rising(a, n)
            q /= _rising(S * a, sum(row))
        return q if is_numeric(q) else sp.simplify(q)  # a product of rationals is exact as it is

    return _task(S, N, probability, "icl_markov")
