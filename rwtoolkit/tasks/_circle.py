"""Random walks on a K-cycle (docs/theory.md#task). Nodes are 0-based here: node k is the spec's node k+1."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import sympy as sp

from rwtoolkit.tasks._exact import check_in_unit_interval, exact, is_numeric
from rwtoolkit.tasks._finite import generator_from
from rwtoolkit.tasks._population import Population
from rwtoolkit.tasks._task import sorted_symbols

#: Largest exact population (number of walks K·2^(N-1)) that ``CircleWalk.population`` builds.
#: At this size the token array alone takes about 8·N MiB; beyond it, sample instead.
MAX_EXACT_WALKS = 2**20


def check_int(value: object, name: str, low: int) -> int:
    """``value`` as an int >= ``low``, or a ValueError naming the argument and the allowed range."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")
    if value < low:
        raise ValueError(f"{name}={value} is out of range: {name} must be >= {low}")
    return int(value)


def circle_transition_matrix(K: int, p: sp.Expr) -> sp.Matrix:
    """Π of the K-cycle walk, π_ij = p·1{j ≡ i+1} + (1-p)·1{j ≡ i-1} (row = current state), for any exact p.

    The one construction of Π: ``CircleWalk.transition_matrix`` and ``lazy_circle_walk`` use it.

    >>> circle_transition_matrix(3, sp.Symbol("p"))
    Matrix([
    [    0,     p, 1 - p],
    [1 - p,     0,     p],
    [    p, 1 - p,     0]])
    """
    Pi = sp.zeros(K, K)
    for i in range(K):
        Pi[i, (i + 1) % K] += p
        Pi[i, (i - 1) % K] += 1 - p
    return Pi


class CircleWalk:
    """Walks s_1..s_N on the K-cycle: s_1 uniform, each step +1 w.p. p and -1 w.p. 1-p.

    Tokens are s_1..s_{N-1}, the label is y = s_N. ``p`` may be a number (read exactly, see
    ``rwtoolkit.tasks.exact``) or a SymPy symbol / symbol name for symbolic work.

    >>> w = CircleWalk(3, 3, "1/2")
    >>> w.population().size, w.opt
    (12, 1/2)
    """

    def __init__(self, K: int, N: int, p: object) -> None:
        self.K = check_int(K, "K", 3)
        self.N = check_int(N, "N", 2)
        self.p = exact(p, "p")
        check_in_unit_interval(self.p, "p")
        self.name = "circle"
        self.vocab: tuple[str, ...] | None = None  # token k is node k

    @property
    def walk_count(self) -> int:
        """K·2^(N-1): the number of walks before zero-probability ones are dropped."""
        return self.K * 2 ** (self.N - 1)

    def transition_matrix(self) -> sp.Matrix:
        """Π with π_ij = p·1{j ≡ i+1} + (1-p)·1{j ≡ i-1} (row = current state), exact."""
        return circle_transition_matrix(self.K, self.p)

    def transition_matrix_float(self) -> np.ndarray:
        """Π as a float64 array (requires numeric p)."""
        self._require_numeric("transition_matrix_float")
        return np.array(self.transition_matrix().tolist(), dtype=np.float64)

    @property
    def opt(self) -> sp.Expr:
        """OPT = max{p, 1-p}, the Bayes accuracy."""
        return sp.Max(self.p, 1 - self.p)

    def bayes_scores(self, tokens: np.ndarray) -> np.ndarray:
        """f_OPT(X) = Πᵀ x_{N-1} for each row of ``tokens`` (n, N-1): row s_{N-1} of Π, shape (n, K)."""
        return self.transition_matrix_float()[np.asarray(tokens)[:, -1]]

    def population(self, limit: int = MAX_EXACT_WALKS) -> Population:
        """All walks with their exact probabilities (1/K)·p^#cw·(1-p)^#ccw; zero-probability walks dropped.

        Input r·n + i is input i of ``rooted_population()`` rotated by r (node k -> k + r mod K).
        Refuses populations above ``limit`` walks, naming the count and suggesting sampling.
        """
        if self.walk_count > limit:
            raise ValueError(
                f"CircleWalk(K={self.K}, N={self.N}): the exact population has "
                f"K*2^(N-1) = {self.K}*2^{self.N - 1} = {float(self.walk_count):.3g} walks, above the "
                f"limit of {limit}; use sample(n, seed=...) for a sampled training set "
                "(or rwtoolkit.engines.exact's structured expectations for exact work)"
            )
        rooted = self.rooted_population()
        shifts = np.arange(self.K, dtype=np.int64)[:, None, None]  # (K, 1, 1) rotation r

        def rotate(ids: np.ndarray) -> np.ndarray:
            return ((ids[None] + shifts) % self.K).reshape(-1, *ids.shape[1:])

        return Population(
            tokens=rotate(rooted.tokens),
            labels=rotate(rooted.labels[:, None])[:, 0],
            prob_index=np.tile(rooted.prob_index, self.K),
            prob_values=rooted.prob_values,
            K=self.K,
        )

    def rooted_population(self, limit: int = MAX_EXACT_WALKS) -> Population:
        """The walks that start at node 0, with their joint probabilities (which sum to 1/K).

        The population is their K rotations, so rotation-equivariant expectations need only these
        2^(N-1) walks (zero-probability ones dropped when p ∈ {0, 1}).
        """
        steps = self.N - 1
        if 2**steps > limit:
            raise ValueError(
                f"CircleWalk(K={self.K}, N={self.N}): the walks from one start number 2^(N-1) = "
                f"{float(2**steps):.3g}, above the limit of {limit}; use sample(n, seed=...) instead"
            )
        codes = np.arange(2**steps, dtype=np.int64)
        clockwise = (codes[:, None] >> np.arange(steps)[None, :]) & 1  # (2^(N-1), N-1) 1 = +1 step
        n_cw = clockwise.sum(axis=1)
        if is_numeric(self.p) and self.p in (0, 1):
            keep = n_cw == (steps if self.p == 1 else 0)
            clockwise, n_cw = clockwise[keep], n_cw[keep]
        moves = 2 * clockwise - 1
        walks = (
            np.concatenate([np.zeros((len(moves), 1), np.int64), np.cumsum(moves, axis=1)], axis=1) % self.K
        )
        p, K = self.p, self.K
        values = tuple(p**a * (1 - p) ** (steps - a) / K for a in range(steps + 1))
        return Population(
            tokens=walks[:, :-1].copy(), labels=walks[:, -1].copy(), prob_index=n_cw, prob_values=values, K=K
        )

    def sample(
        self, n: int, seed: int | None = None, generator: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` walks: (tokens (n, N-1), labels (n,)), vectorised; pass ``seed`` or ``generator``."""
        self._require_numeric("sample")
        n = check_int(n, "n", 1)
        rng = generator_from(seed, generator)
        starts = rng.integers(0, self.K, size=n)
        moves = np.where(rng.random((n, self.N - 1)) < float(self.p), 1, -1)
        offsets = np.concatenate([np.zeros((n, 1), np.int64), np.cumsum(moves, axis=1)], axis=1)
        walks = (starts[:, None] + offsets) % self.K
        return walks[:, :-1], walks[:, -1]

    # the task protocol (rwtoolkit.tasks.Task)
    @property
    def symbols(self) -> tuple[sp.Symbol, ...]:
        """The free symbols of p, e.g. (p,) for ``CircleWalk(3, 4, "p")``, () for a number."""
        return sorted_symbols([self.p])

    @property
    def rotation_invariant(self) -> bool:
        """True: s -> s+1 (mod K) preserves the law; ``rooted_population()`` holds one walk per orbit."""
        return True

    def population_size(self) -> int:
        """Inputs of ``population()`` without building it: K·2^(N-1), or K when p ∈ {0, 1}.

        >>> CircleWalk(3, 4, "1/2").population_size(), CircleWalk(3, 4, 1).population_size()
        (24, 3)
        """
        deterministic = is_numeric(self.p) and self.p in (0, 1)
        return self.K if deterministic else self.walk_count

    def describe(self) -> dict[str, object]:
        """The task in JSON: ``{"name": "circle", "K", "N", "p"}`` with p exact as a string."""
        return {"name": "circle", "K": self.K, "N": self.N, "p": str(self.p)}

    def substitute(self, values: Mapping[sp.Symbol, sp.Expr]) -> CircleWalk:
        """The walk with p's symbols replaced by exact values.

        >>> from rwtoolkit.tasks import symbol
        >>> CircleWalk(3, 4, "p").substitute({symbol("p"): sp.Rational(1, 3)})
        CircleWalk(K=3, N=4, p=1/3)
        """
        return CircleWalk(self.K, self.N, sp.expand(self.p.subs(dict(values))))

    def _require_numeric(self, what: str) -> None:
        if not is_numeric(self.p):
            raise ValueError(f"{what} needs a numeric p, got p={self.p}")

    def __repr__(self) -> str:
        return f"CircleWalk(K={self.K}, N={self.N}, p={self.p})"
