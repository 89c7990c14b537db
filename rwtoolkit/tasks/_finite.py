"""User-given finite tasks (docs/theory.md#signal, #qa-tasks): token sequences, labels and exact probabilities."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import sympy as sp

from rwtoolkit.tasks._exact import check_in_unit_interval, exact, is_numeric
from rwtoolkit.tasks._population import Population
from rwtoolkit.tasks._task import sorted_symbols


class FiniteTask:
    """A task given by an explicit list of equal-length token sequences, labels and probabilities.

    Tokens and labels are ids in [0, K) or, when ``vocab`` is given, words of ``vocab``.
    Probabilities are exact (ints, Fractions, strings like "1/32", SymPy expressions) and must sum
    to 1 exactly. Each sequence has N-1 tokens: the query slot N is implicit.

    >>> t = FiniteTask([[0, 1], [1, 0]], [0, 1], ["1/2", "1/2"], K=2)
    >>> t.N, t.K, t.population().size
    (3, 2, 2)
    """

    def __init__(
        self,
        sequences: Sequence[Sequence[int | str]],
        labels: Sequence[int | str],
        probs: Sequence[object],
        K: int | None = None,
        vocab: Sequence[str] | None = None,
        name: str = "finite",
    ) -> None:
        if vocab is not None:
            vocab = tuple(vocab)
            if len(set(vocab)) != len(vocab):
                raise ValueError("vocab has repeated words")
            if K is not None and K != len(vocab):
                raise ValueError(f"K={K} differs from len(vocab)={len(vocab)}")
            K = len(vocab)
        if K is None:
            raise ValueError("give K (the vocabulary size) or vocab")
        if K < 1:
            raise ValueError(f"K={K} must be at least 1")
        if not len(sequences):
            raise ValueError("sequences is empty: a task needs at least one input")
        if not (len(sequences) == len(labels) == len(probs)):
            raise ValueError(
                f"sequences ({len(sequences)}), labels ({len(labels)}) and probs ({len(probs)}) "
                "must have the same length"
            )
        lengths = {len(s) for s in sequences}
        if len(lengths) != 1:
            raise ValueError(f"sequences must have equal length, got lengths {sorted(lengths)}")
        if 0 in lengths:
            raise ValueError("sequences must hold at least one token (N >= 2)")
        index = {w: i for i, w in enumerate(vocab)} if vocab is not None else None

        def to_id(item: int | str, what: str) -> int:
            if isinstance(item, str):
                if index is None or item not in index:
                    raise ValueError(f"{what} {item!r} is not in the vocabulary")
                return index[item]
            if isinstance(item, (bool, float)) or not isinstance(item, (int, np.integer)):
                raise ValueError(f"{what} {item!r} is not a token id")
            if not 0 <= int(item) < K:
                raise ValueError(f"{what} {item} is outside the vocabulary [0, {K})")
            return int(item)

        self.tokens = np.array(
            [[to_id(t, f"token at sequence {n}") for t in s] for n, s in enumerate(sequences)],
            dtype=np.int64,
        )
        self.labels = np.array([to_id(y, f"label {n}") for n, y in enumerate(labels)], dtype=np.int64)
        values = tuple(exact(q, f"probs[{n}]") for n, q in enumerate(probs))
        for n, q in enumerate(values):
            if is_numeric(q):
                check_in_unit_interval(q, f"probs[{n}]")
        total = sp.simplify(sp.Add(*values) - 1)
        if total != 0:
            raise ValueError(f"probs sum to {sp.simplify(total + 1)}, not 1")
        self.prob_values = values
        self.K = int(K)
        self.vocab = vocab
        self.name = name

    @property
    def N(self) -> int:
        """Sequence length including the query slot."""
        return int(self.tokens.shape[1]) + 1

    def population(self) -> Population:
        """The exact population: each given input with its probability (zero-probability ones dropped)."""
        keep = np.array([not (is_numeric(q) and q == 0) for q in self.prob_values], dtype=bool)
        kept = tuple(q for q, k in zip(self.prob_values, keep) if k)
        return Population(
            tokens=self.tokens[keep],
            labels=self.labels[keep],
            prob_index=np.arange(len(kept), dtype=np.int64),
            prob_values=kept,
            K=self.K,
        )

    def sample(
        self, n: int, seed: int | None = None, generator: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` i.i.d. inputs: (tokens (n, N-1), labels (n,)); pass ``seed`` or ``generator``."""
        rng = generator_from(seed, generator)
        if n < 1:
            raise ValueError(f"n={n} must be at least 1")
        pop = self.population()
        probs = pop.float_probs()
        picks = rng.choice(pop.size, size=n, p=probs / probs.sum())
        return pop.tokens[picks], pop.labels[picks]

    # the task protocol (rwtoolkit.tasks.Task)
    @property
    def symbols(self) -> tuple[sp.Symbol, ...]:
        """The free symbols of the probabilities, sorted by name (e.g. (q,) for ``majority_task(3, "q")``)."""
        return sorted_symbols(self.prob_values)

    @property
    def rotation_invariant(self) -> bool:
        """False: a finite task has no rooted population (its symmetries are found, not assumed)."""
        return False

    def population_size(self) -> int:
        """Inputs of ``population()``: the given inputs less those of probability exactly 0."""
        return sum(1 for q in self.prob_values if not (is_numeric(q) and q == 0))

    def rooted_population(self, limit: int = 0) -> Population:
        """Refused: a finite task is not taken to be rotation invariant (``rotation_invariant`` is False)."""
        raise ValueError(
            f"{self!r} has no rooted population: it is not a rotation-invariant task (a CircleWalk is)"
        )

    def bayes_scores(self, tokens: np.ndarray) -> np.ndarray:
        """P(y | X) for each row of ``tokens`` (n, N-1), float64 (n, K), from the exact joint law.

        >>> t = FiniteTask([[0], [0], [1]], [0, 1, 1], ["1/4", "1/4", "1/2"], K=2)
        >>> t.bayes_scores(np.array([[0], [1]])).tolist()
        [[0.5, 0.5], [0.0, 1.0]]
        """
        joint = self.population().joint_law()
        law = {key: np.array([float(v / sp.Add(*vals)) for v in vals]) for key, vals in joint.items()}
        return np.stack([law[tuple(row)] for row in np.asarray(tokens).tolist()])

    def describe(self) -> dict[str, object]:
        """The task in JSON: ``{"name", "K", "N", "inputs"}`` (the number of given inputs)."""
        return {"name": self.name, "K": self.K, "N": self.N, "inputs": int(len(self.labels))}

    def substitute(self, values: Mapping[sp.Symbol, sp.Expr]) -> FiniteTask:
        """The same task with symbols replaced by exact values (inputs of probability 0 are kept; the
        population drops them).

        >>> from rwtoolkit.tasks import majority_task, symbol
        >>> majority_task(3, "q").substitute({symbol("q"): sp.Rational(1, 2)}).prob_values[0]
        1/8
        """
        probs = [sp.expand(q.subs(dict(values))) for q in self.prob_values]
        return FiniteTask(
            self.tokens.tolist(), self.labels.tolist(), probs, K=self.K, vocab=self.vocab, name=self.name
        )

    def __repr__(self) -> str:
        return f"FiniteTask(name={self.name!r}, K={self.K}, N={self.N}, inputs={len(self.labels)})"


def generator_from(seed: int | None, generator: np.random.Generator | None) -> np.random.Generator:
    """One explicit source of randomness: a seed or a generator, never both and never neither."""
    if (seed is None) == (generator is None):
        raise ValueError("give exactly one of seed or generator")
    return generator if generator is not None else np.random.default_rng(seed)
