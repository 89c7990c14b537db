"""An exact finite law over (token sequence, label): the object both packages take expectations over."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from rwtoolkit.tasks._exact import is_numeric


@dataclass(frozen=True)
class Population:
    """Every input of a finite task with its exact probability (token ids and labels 0-based).

    ``tokens[n, i]`` is the token id at (1-based) position i+1 of input n, i = 0..N-2; the query slot
    N carries no token. Probabilities are stored as ``prob_values[prob_index[n]]`` because circle walks
    have only N distinct walk probabilities and storing one SymPy object per walk would not scale.
    """

    tokens: np.ndarray  # (n, N-1) int64 token ids in [0, K)
    labels: np.ndarray  # (n,) int64 label ids in [0, K)
    prob_index: np.ndarray  # (n,) int64 index into prob_values
    prob_values: tuple[sp.Expr, ...]  # distinct exact probabilities
    K: int  # vocabulary size; labels share the vocabulary

    @property
    def size(self) -> int:
        """The number of inputs n."""
        return int(self.tokens.shape[0])

    @property
    def N(self) -> int:
        """Sequence length including the query slot (tokens has N-1 columns)."""
        return int(self.tokens.shape[1]) + 1

    def exact_probs(self) -> list[sp.Expr]:
        """The probability of each input as an exact SymPy expression."""
        return [self.prob_values[i] for i in self.prob_index]

    def joint_law(self) -> dict[tuple[int, ...], list[sp.Expr]]:
        """Exact P(X, y) per distinct input X (token tuple): K entries, one per label y.

        The conditional law of y given X is each row divided by its sum; the label law is the column sums.

        >>> from rwtoolkit.tasks import qa_task1
        >>> law = qa_task1().population().joint_law()
        >>> sum(sum(row) for row in law.values())
        1
        """
        joint: dict[tuple[int, ...], list[sp.Expr]] = {}
        for row, y, prob in zip(self.tokens.tolist(), self.labels.tolist(), self.exact_probs()):
            joint.setdefault(tuple(row), [sp.Integer(0)] * self.K)[y] += prob
        return joint

    def float_probs(self) -> np.ndarray:
        """The probability of each input as float64; requires every probability to be numeric."""
        symbolic = [v for v in self.prob_values if not is_numeric(v)]
        if symbolic:
            names = sorted({str(s) for v in symbolic for s in v.free_symbols})
            raise ValueError(
                f"the population's probabilities depend on symbols {names}; substitute numbers "
                "first (e.g. CircleWalk(K, N, p='1/2')) to get float probabilities"
            )
        values = np.array([float(v) for v in self.prob_values], dtype=np.float64)
        return values[self.prob_index]

    def one_hot(self, dtype: type = np.float64) -> np.ndarray:
        """Token matrices X without the query column, as a (n, K, N-1) array of one-hot columns."""
        n, length = self.tokens.shape
        out: np.ndarray = np.zeros((n, self.K, length), dtype=dtype)
        out[np.arange(n)[:, None], self.tokens, np.arange(length)[None, :]] = 1
        return out
