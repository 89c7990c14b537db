"""The symmetry group of a task's population law, found exactly.

A symmetry is a triple g = (τ, λ, π): τ a permutation of the tokens 0..K-1, λ a permutation of the
labels 0..K-1 and π a permutation of the N-1 key positions 0..N-2 (the query slot never moves). It acts
on an input (s_0..s_{N-2}, y) by moving the token at position j to position π(j) and renaming it,
s'_{π(j)} = τ(s_j), y' = λ(y), and it is a symmetry of the task when the law is invariant: every input
of nonzero probability w has an image of probability w (inputs outside the population have
probability 0). The symmetries form a group G; ``task_symmetries`` finds all of it, exactly:

1. the law: the population's inputs of nonzero probability (identical inputs merged), each
   probability replaced by the id of its exact value; SymPy numbers are compared exactly, never as
   floats, and a symbolic law is refused;
2. free parts, which any symmetry may permute on their own and which act trivially on every input:
   tokens that never occur, labels that never occur, and "frozen" positions, whose token is the same
   in every input and occurs at no other position (moved together with their tokens). G is the
   direct product of their symmetric groups and of the group G0 of the rest, which is searched;
3. colour refinement: tokens, labels, positions and inputs get colours that every symmetry preserves
   (hashes of the multisets of their incidences and of the cells of the (position, token, label)
   statistics they lie in, refined until stable);
4. a search along a stabiliser chain (``_Search``): positions, tokens and labels are placed one at a
   time, a partial map is kept only while it preserves the colours and the statistics of the points
   placed so far (position pairs, (position, token), (position, position, token, token), (position,
   token, label), (position, label)), and every complete candidate is checked against the whole
   population. One symmetry per coset is found (never every element), so the order is the product
   of the orbit sizes and groups of millions of elements cost a few hundred checks.

Hash collisions can only merge colours or statistics (less pruning), never separate equal ones, and
every element is verified exactly, so the group found is exactly G. Only the task protocol is used
(``K``, ``N``, ``vocab``, ``population()``): no engine or task class is special-cased.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import sympy as sp

from rwtoolkit.tasks._population import Population
from rwtoolkit.tasks._task import Task

if (
    TYPE_CHECKING
):  # sympy.combinatorics is imported where a group is built (18 ms of every rwtoolkit.tasks import)
    from sympy.combinatorics import PermutationGroup

#: Largest ``P²·K²`` of the (position, position, token, token) statistics kept in memory (16 MiB).
_MAX_PAIR_TABLE = 2_000_000
#: Largest ``P·K·L`` of the (position, token, label) statistics kept in memory (16 MiB).
_MAX_TRIPLE_TABLE = 2_000_000
#: Largest ``n·P²`` of input visits spent on pair statistics.
_MAX_PAIR_VISITS = 40_000_000


# ----------------------------------------------------------------------------------------------
# Symmetries and groups


def _check_perm(values: Sequence[int], what: str) -> tuple[int, ...]:
    perm = tuple(int(v) for v in values)
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"Symmetry.{what}={perm} is not a permutation of 0..{len(perm) - 1}")
    return perm


def _cycles(perm: Sequence[int]) -> list[list[int]]:
    """The cycles of length > 1, each from its smallest point, in order of that point."""
    seen = [False] * len(perm)
    out = []
    for start in range(len(perm)):
        if seen[start] or perm[start] == start:
            continue
        cycle, k = [], start
        while not seen[k]:
            seen[k] = True
            cycle.append(k)
            k = perm[k]
        out.append(cycle)
    return out


def _cycle_text(perm: Sequence[int], names: Sequence[str]) -> str:
    return "".join("(" + " ".join(names[k] for k in c) + ")" for c in _cycles(perm))


def _position_text(perm: Sequence[int]) -> str:
    P = len(perm)
    if P >= 3:
        for c in range(1, P):
            if all(perm[j] == (j + c) % P for j in range(P)):
                step = f"+{c}" if c <= P // 2 else f"-{P - c}"
                return f"positions shifted j -> j{step} (mod {P})"
        if all(perm[j] == P - 1 - j for j in range(P)):
            return f"positions reversed j -> {P - 1}-j"
    return "positions " + _cycle_text(perm, [str(j) for j in range(P)])


@dataclass(frozen=True)
class Symmetry:
    """A relabelling (τ, λ, π) of tokens, labels and key positions, as tuples of images.

    ``tokens[k]`` is τ(k), ``labels[y]`` is λ(y), ``positions[j]`` is π(j) (0-based key positions).
    It maps an input (s_0..s_{N-2}, y) to s'_{π(j)} = τ(s_j), y' = λ(y).

    >>> g = Symmetry(tokens=(1, 2, 0), labels=(0, 1, 2), positions=(1, 2, 0))
    >>> g.act(np.array([[0, 0, 1]]), np.array([2]))  # s'_1 = τ(s_0), s'_2 = τ(s_1), s'_0 = τ(s_2)
    (array([[2, 1, 1]]), array([2]))
    >>> g.describe(("a", "b", "c")), g.compose(g.inverse()).is_identity
    ('tokens (a b c), positions shifted j -> j+1 (mod 3)', True)
    """

    tokens: tuple[int, ...]
    labels: tuple[int, ...]
    positions: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokens", _check_perm(self.tokens, "tokens"))
        object.__setattr__(self, "labels", _check_perm(self.labels, "labels"))
        object.__setattr__(self, "positions", _check_perm(self.positions, "positions"))
        if len(self.tokens) != len(self.labels):
            raise ValueError(
                f"Symmetry: tokens move {len(self.tokens)} ids and labels {len(self.labels)}; "
                "tokens and labels share the vocabulary 0..K-1"
            )

    @property
    def K(self) -> int:
        """The vocabulary size (tokens and labels)."""
        return len(self.tokens)

    @property
    def is_identity(self) -> bool:
        """True when τ, λ and π are all the identity."""
        return self == _identity(self.K, len(self.positions))

    def compose(self, other: Symmetry) -> Symmetry:
        """``self`` after ``other``: the symmetry x -> self(other(x))."""
        if (self.K, len(self.positions)) != (other.K, len(other.positions)):
            raise ValueError(
                f"cannot compose symmetries of different sizes: K={self.K}, {len(self.positions)} "
                f"positions and K={other.K}, {len(other.positions)} positions"
            )
        return Symmetry(
            tuple(self.tokens[k] for k in other.tokens),
            tuple(self.labels[y] for y in other.labels),
            tuple(self.positions[j] for j in other.positions),
        )

    def inverse(self) -> Symmetry:
        """The inverse symmetry (``g.compose(g.inverse())`` is the identity)."""
        return Symmetry(*(tuple(int(i) for i in np.argsort(p)) for p in self._parts()))

    def act(self, tokens: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The images of inputs: ``tokens`` (n, N-1) and ``labels`` (n,) -> (tokens', labels').

        Position j's token goes to position π(j), renamed by τ; each label y becomes λ(y).
        """
        tokens, labels = np.asarray(tokens), np.asarray(labels)
        P, K = len(self.positions), self.K
        if tokens.ndim != 2 or tokens.shape[1] != P or labels.shape != (tokens.shape[0],):
            raise ValueError(
                f"act needs tokens of shape (n, {P}) and labels of shape (n,), got {tokens.shape} "
                f"and {labels.shape}"
            )
        for what, ids in (("tokens", tokens), ("labels", labels)):
            if ids.size and (ids.min() < 0 or ids.max() >= K):
                raise ValueError(f"act: {what} must be ids in [0, {K})")
        out = np.empty_like(tokens)
        out[:, list(self.positions)] = np.asarray(self.tokens, dtype=tokens.dtype)[tokens]
        return out, np.asarray(self.labels, dtype=labels.dtype)[labels]

    def describe(self, vocab: Sequence[str] | None = None) -> str:
        """The symmetry in words, cycle notation with the vocabulary's names; parts that are the
        identity are left out ("identity" when all three are).

        >>> Symmetry((0, 2, 1), (0, 2, 1), (0, 1)).describe()
        'tokens and labels (1 2)'
        """
        names = [str(k) for k in range(self.K)] if vocab is None else [str(w) for w in vocab]
        if len(names) != self.K:
            raise ValueError(f"describe: vocab has {len(names)} words, the symmetry moves K={self.K} ids")
        ident = tuple(range(self.K))
        parts = []
        if self.tokens == self.labels and self.tokens != ident:
            parts.append("tokens and labels " + _cycle_text(self.tokens, names))
        else:
            if self.tokens != ident:
                parts.append("tokens " + _cycle_text(self.tokens, names))
            if self.labels != ident:
                parts.append("labels " + _cycle_text(self.labels, names))
        if self.positions != tuple(range(len(self.positions))):
            parts.append(_position_text(self.positions))
        return ", ".join(parts) or "identity"

    def _parts(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        return self.tokens, self.labels, self.positions


def _identity(K: int, P: int) -> Symmetry:
    return Symmetry(tuple(range(K)), tuple(range(K)), tuple(range(P)))


def _flat(g: Symmetry) -> tuple[int, ...]:
    """g as one permutation of K + K + P points: tokens, then labels (+K), then positions (+2K)."""
    K = g.K
    return g.tokens + tuple(K + y for y in g.labels) + tuple(2 * K + j for j in g.positions)


def _unflat(flat: Sequence[int], K: int) -> Symmetry:
    return Symmetry(
        tuple(flat[:K]), tuple(v - K for v in flat[K : 2 * K]), tuple(v - 2 * K for v in flat[2 * K :])
    )


def permutation_closure(
    generators: Sequence[tuple[int, ...]], degree: int, limit: int | None = None
) -> set[tuple[int, ...]] | None:
    """Every product of ``generators`` (permutations of 0..degree-1 as tuples of images): the group they
    generate; None as soon as it has more than ``limit`` elements.

    >>> sorted(permutation_closure([(1, 2, 0)], 3))
    [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    >>> permutation_closure([(1, 0, 2), (0, 2, 1)], 3, limit=5) is None
    True
    """
    identity = tuple(range(degree))
    seen = {identity}
    frontier = [identity]
    while frontier:
        fresh = []
        for h in frontier:
            for g in generators:
                e = tuple(g[i] for i in h)
                if e not in seen:
                    seen.add(e)
                    fresh.append(e)
                    if limit is not None and len(seen) > limit:
                        return None
        frontier = fresh
    return seen


def _closure(generators: Sequence[tuple[int, ...]], degree: int) -> set[tuple[int, ...]]:
    """``permutation_closure`` without a limit."""
    group = permutation_closure(generators, degree)
    if group is None:  # unreachable without a limit; keeps the type exact
        raise RuntimeError("permutation_closure returned None without a limit")
    return group


def _element_order(flat: Sequence[int]) -> int:
    return math.lcm(1, *(len(c) for c in _cycles(flat)))


@dataclass(frozen=True)
class TaskGroup:
    """The symmetry group of a task's law: generators, order, and its elements on demand.

    ``free_tokens`` / ``free_labels`` never occur in the law and ``free_positions`` are frozen (the
    same token in every input, a token found nowhere else): any symmetry may permute each of these
    sets on its own (a frozen position carries its token along), so each contributes a full
    symmetric group to ``order``; the generators end with those of these factors.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> G = task_symmetries(CircleWalk(3, 4, "3/10"))
    >>> G.order, G.describe(), G.as_permutation_group().order()
    (3, ['tokens and labels (0 1 2)'], 3)
    """

    K: int
    N: int
    generators: tuple[Symmetry, ...]
    order: int
    vocab: tuple[str, ...] | None = None
    free_tokens: tuple[int, ...] = ()
    free_labels: tuple[int, ...] = ()
    free_positions: tuple[int, ...] = ()

    def elements(self, limit: int = 1_000_000) -> list[Symmetry]:
        """Every element, identity first, then in lexicographic order of (tokens, labels, positions).

        Refuses a group of more than ``limit`` elements (its order is known without listing it).
        """
        if self.order > limit:
            raise ValueError(
                f"the group has {self.order} elements, above limit={limit}; use its generators, "
                "order or as_permutation_group() instead, or raise limit"
            )
        degree = 2 * self.K + self.N - 1
        flats = _closure([_flat(g) for g in self.generators], degree)
        return [_unflat(f, self.K) for f in sorted(flats)]

    def as_permutation_group(self) -> PermutationGroup:
        """The group as a SymPy ``PermutationGroup`` on K + K + (N-1) points: tokens 0..K-1, labels
        K..2K-1, positions 2K..2K+N-2."""
        from sympy.combinatorics import Permutation, PermutationGroup

        degree = 2 * self.K + self.N - 1
        perms = [Permutation(list(_flat(g))) for g in self.generators] or [Permutation(list(range(degree)))]
        return PermutationGroup(perms)

    def fixing_positions(self) -> TaskGroup:
        """The subgroup of the symmetries that move no key position (π the identity): what remains a
        symmetry of a model that sees the order of its positions (a causal layer, ``rwtoolkit.models.acting_group``).

        The pointwise stabiliser of the position points (SymPy), with a small generating set.

        >>> from rwtoolkit.tasks import CircleWalk
        >>> G = task_symmetries(CircleWalk(3, 4, 1))
        >>> G.order, G.fixing_positions().order, G.fixing_positions().describe()  # (1 2) needs π reversed
        (18, 3, ['tokens and labels (0 1 2)'])
        """
        K, degree = self.K, 2 * self.K + self.N - 1
        H = self.as_permutation_group().pointwise_stabilizer(list(range(2 * K, degree)))
        order = int(H.order())
        gens = [tuple(int(i) for i in g.array_form) for g in H.generators]
        gens = [g + tuple(range(len(g), degree)) for g in gens]
        nice = _nice_generators(gens, order, degree) if order > 1 else []
        return replace(self, generators=tuple(_unflat(g, K) for g in nice), order=order, free_positions=())

    def describe(self, vocab: Sequence[str] | None = None) -> list[str]:
        """One line per generator (``vocab`` defaults to the task's)."""
        words = self.vocab if vocab is None else vocab
        return [g.describe(words) for g in self.generators]

    def to_json(self) -> dict[str, object]:
        """The group in JSON: sizes, order, free parts, and each generator's images and description."""
        return {
            "K": self.K,
            "N": self.N,
            "order": self.order,
            "free_tokens": list(self.free_tokens),
            "free_labels": list(self.free_labels),
            "free_positions": list(self.free_positions),
            "generators": [
                {
                    "tokens": list(g.tokens),
                    "labels": list(g.labels),
                    "positions": list(g.positions),
                    "description": d,
                }
                for g, d in zip(self.generators, self.describe())
            ],
        }


# ----------------------------------------------------------------------------------------------
# The law as integer arrays


def _task_name(task: object) -> str:
    text = repr(task)
    return text if "\n" not in text and len(text) <= 100 else type(task).__name__


def row_keys(rows: np.ndarray, base: int) -> np.ndarray:
    """One exact key per row of ids in [0, base), for sorting and lookup: the row's number in base
    ``base`` when it fits in int64, else the row's bytes (a void key)."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if max(base, 2) ** rows.shape[1] < 2**62:
        code = np.zeros(rows.shape[0], np.int64)
        for column in rows.T:
            code = code * base + column
        return code
    return rows.view(np.dtype((np.void, 8 * rows.shape[1]))).ravel()


def _probability_classes(values: Sequence[object], name: str) -> tuple[list[int], list[sp.Expr]]:
    """The id of each exact value's class of equal values (-1 for exactly zero), and each class's value."""
    reps: list[sp.Expr] = []
    rational: dict[sp.Rational, int] = {}
    out = []
    for v in values:
        v = sp.sympify(v)
        if v.free_symbols:
            symbols = sorted(str(s) for s in v.free_symbols)
            raise ValueError(
                f"task_symmetries({name}): the law depends on symbols {symbols}; substitute numbers "
                "first, e.g. task.substitute({rwtoolkit.tasks.symbol('p'): sympy.Rational(1, 2)})"
            )
        if v.is_Rational:
            if v == 0:
                out.append(-1)
                continue
            if v not in rational:
                rational[v] = len(reps)
                reps.append(v)
            out.append(rational[v])
            continue
        if v.is_zero or sp.simplify(v) == 0:
            out.append(-1)
            continue
        for i, r in enumerate(reps):
            d = v - r
            if sp.simplify(d) == 0 or d.equals(0) is True:
                out.append(i)
                break
        else:
            out.append(len(reps))
            reps.append(v)
    return out, reps


def nonzero_law(
    task: object, K: int, N: int, name: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[sp.Expr]]:
    """(tokens (n, N-1), labels (n,), probability class (n,), each class's exact value) of the distinct
    inputs of nonzero probability (repeated inputs merged, their probabilities added)."""
    pop = task.population()  # type: ignore[attr-defined]
    tokens, labels = np.asarray(pop.tokens), np.asarray(pop.labels)
    if tokens.ndim != 2 or tokens.shape[1] != N - 1 or labels.shape != (tokens.shape[0],):
        raise ValueError(
            f"task_symmetries({name}): population() gave tokens of shape {tokens.shape} and labels of "
            f"shape {labels.shape}; expected (n, N-1) = (n, {N - 1}) and (n,)"
        )
    for what, ids in (("tokens", tokens), ("labels", labels)):
        if ids.size and (not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0 or ids.max() >= K):
            raise ValueError(f"task_symmetries({name}): population() {what} must be ids in [0, K={K})")
    if isinstance(pop, Population):
        index = np.asarray(pop.prob_index, dtype=np.int64)
        used = np.unique(index)
        classes = np.full(len(pop.prob_values), -1, dtype=np.int64)
        ids, reps = _probability_classes([pop.prob_values[i] for i in used], name)
        classes[used] = ids
        cls = classes[index]
        values: list[object] | None = None
    else:
        values = list(pop.exact_probs())
        if len(values) != len(labels):
            raise ValueError(
                f"task_symmetries({name}): exact_probs() has {len(values)} entries for {len(labels)} inputs"
            )
        ids, reps = _probability_classes(values, name)
        cls = np.asarray(ids, dtype=np.int64)
    tokens, labels = tokens.astype(np.int64), labels.astype(np.int64)
    keys = row_keys(np.concatenate([tokens, labels[:, None]], axis=1), K)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if len(first) < len(keys):  # repeated inputs: their probabilities add up
        probs = values if values is not None else pop.exact_probs()
        sums: list[sp.Expr] = [sp.Integer(0)] * len(first)
        for i, u in enumerate(inverse.ravel().tolist()):
            sums[u] += sp.sympify(probs[i])
        tokens, labels = tokens[first], labels[first]
        ids, reps = _probability_classes(sums, name)
        cls = np.asarray(ids, dtype=np.int64)
    keep = cls >= 0
    if not keep.any():
        raise ValueError(f"task_symmetries({name}): the population has no input of nonzero probability")
    return tokens[keep], labels[keep], cls[keep], reps


# ----------------------------------------------------------------------------------------------
# Invariants: colours and pair statistics (hashes of multisets; equal multisets give equal hashes)


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, elementwise on uint64 (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = np.asarray(x).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _combine(*parts: np.ndarray | int) -> np.ndarray:
    """A hash of the tuple of ``parts`` (broadcast together)."""
    h = np.zeros((), dtype=np.uint64)
    for part in parts:
        h = _mix(h ^ np.asarray(part).astype(np.uint64))
    return h


def _ranks(h: np.ndarray) -> np.ndarray:
    return np.unique(h, return_inverse=True)[1].ravel().astype(np.int64)


def _cells(X: np.ndarray, Y: np.ndarray, hx: np.ndarray, K: int, L: int) -> np.ndarray:
    """H[j, k, y]: the multiset hash of the inputs with s_j = k and label y (P, K, L)."""
    n, P = X.shape
    H = np.zeros(P * K * L, np.uint64)
    index = (np.arange(P)[None, :] * K + X) * L + Y[:, None]
    np.add.at(H, index.ravel(), np.repeat(hx, P))
    return H.reshape(P, K, L)


def _refine(
    X: np.ndarray, Y: np.ndarray, cls: np.ndarray, K: int, L: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Colours of tokens (K,), labels (L,), positions (P,) and inputs (n,) preserved by every symmetry.

    Each round hashes, for every element, its colour and the multiset of its incidences: an input
    sees its (position, token) pairs and its label; a token its (input, position) pairs; a position
    its (input, token) pairs; a label its inputs; and, when the table is small enough, each position,
    token and label also sees the cells (j, k, y) of the joint statistics H it lies in.
    """
    n, P = X.shape
    tc, lc, pc = np.zeros(K, np.int64), np.zeros(L, np.int64), np.zeros(P, np.int64)
    xc = cls.copy()
    use_cells = P * K * L <= _MAX_TRIPLE_TABLE and n * P <= _MAX_PAIR_VISITS
    sizes = tuple(len(np.unique(c)) for c in (tc, lc, pc, xc))
    for _ in range(2 * (K + L + P) + 4):
        hx = _mix(xc)
        token_colour = tc[X]  # (n, P)
        xn = _combine(xc, _combine(pc[None, :], token_colour).sum(axis=1), lc[Y])
        t_acc, l_acc = np.zeros(K, np.uint64), np.zeros(L, np.uint64)
        np.add.at(t_acc, X.ravel(), _combine(xc[:, None], pc[None, :]).ravel())
        p_acc = _combine(xc[:, None], token_colour).sum(axis=0)
        np.add.at(l_acc, Y, hx)
        if use_cells:
            H = _cells(X, Y, hx, K, L)
            jj, kk, yy = np.nonzero(H)
            h = H[jj, kk, yy]
            np.add.at(p_acc, jj, _combine(1, tc[kk], lc[yy], h))
            np.add.at(t_acc, kk, _combine(2, pc[jj], lc[yy], h))
            np.add.at(l_acc, yy, _combine(3, pc[jj], tc[kk], h))
        tc, lc, pc, xc = (
            _ranks(_combine(tc, t_acc)),
            _ranks(_combine(lc, l_acc)),
            _ranks(_combine(pc, p_acc)),
            _ranks(xn),
        )
        new = tuple(len(np.unique(c)) for c in (tc, lc, pc, xc))
        if new == sizes:
            break
        sizes = new
    return tc, lc, pc, xc


def _class_sizes_factorial(colours: np.ndarray) -> int:
    return math.prod(math.factorial(int(c)) for c in np.bincount(colours)) if len(colours) else 1


class _OutOfBudget(Exception):
    pass


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b))


class _Search:
    """The search of the reduced law (no free tokens, labels or positions) along a stabiliser chain.

    The points are the positions 0..P-1, the tokens P..P+K-1 and the labels P+K..P+K+L-1, taken in
    ``points`` order (a base: positions, tokens and labels interleaved). A partial map is kept only
    while it preserves the colours and, on the points placed so far, the statistics T (position,
    token), PP (position pairs), M (position, position, token, token), H (position, token, label) and
    J (position, label). For each level i, from the last to the first, the search finds the orbit of
    points[i] under the subgroup fixing points[:i]: for each candidate image b not yet in the orbit,
    one depth-first search with points[:i] fixed and points[i] -> b either finds a symmetry (a coset
    representative, kept as a generator) or proves that there is none. The order is the product of
    the orbit sizes (orbit-stabiliser, level by level), and no element is listed.
    """

    def __init__(self, X: np.ndarray, Y: np.ndarray, cls: np.ndarray, K: int, L: int) -> None:
        self.X, self.Y, self.cls, self.K, self.L = X, Y, cls, K, L
        self.n, self.P = X.shape
        self.tc, self.lc, self.pc, self.xc = _refine(X, Y, cls, K, L)
        self.pairs = _class_sizes_factorial(self.pc) * _class_sizes_factorial(self.tc)
        self.budget: int | None = None
        self.spent = 0

    def prepare(self) -> None:
        """The statistics, the base and the lookup table (after the work estimate)."""
        X, Y, n, P, K, L = self.X, self.Y, self.n, self.P, self.K, self.L
        hx = _mix(self.xc)
        tcol = self.tc[X]
        self.T = np.zeros((P, K), np.uint64)
        np.add.at(self.T, (np.broadcast_to(np.arange(P), X.shape).ravel(), X.ravel()), np.repeat(hx, P))
        J = np.zeros((L, P), np.uint64)
        np.add.at(J, Y, _combine(self.xc[:, None], tcol))
        self.J = J.T.copy()
        pair_visits_ok = n * P * P <= _MAX_PAIR_VISITS
        self.PP: np.ndarray | None = None
        if pair_visits_ok and P > 0:
            self.PP = np.stack(
                [_combine(self.xc[:, None], tcol[:, [j]], tcol, X[:, [j]] == X).sum(axis=0) for j in range(P)]
            ).reshape(P, P)
        self.M: np.ndarray | None = None
        if pair_visits_ok and P * P * K * K <= _MAX_PAIR_TABLE:
            M = np.zeros(P * P * K * K, np.uint64)
            weights = np.repeat(hx, P)
            for j in range(P):
                flat = ((j * P + np.arange(P)[None, :]) * K + X[:, [j]]) * K + X
                np.add.at(M, flat.ravel(), weights)
            self.M = M.reshape(P, P, K, K)
        self.H = _cells(X, Y, hx, K, L) if P * K * L <= _MAX_TRIPLE_TABLE else None
        # the base: positions, tokens and labels interleaved, each kind smallest colour class first;
        # tokens linked to those before them
        pos_sizes, tok_sizes = np.bincount(self.pc, minlength=1), np.bincount(self.tc, minlength=1)
        lab_sizes = np.bincount(self.lc, minlength=1)
        pos_order = sorted(range(P), key=lambda j: (pos_sizes[self.pc[j]], j))
        lab_order = sorted(range(L), key=lambda y: (lab_sizes[self.lc[y]], y))
        linked = (self.M != 0).any(axis=(0, 1)) if self.M is not None else np.zeros((K, K), bool)
        tok_order: list[int] = []
        left = set(range(K))
        while left:
            k = min(left, key=lambda k: (-int(linked[k, tok_order].sum()), tok_sizes[self.tc[k]], k))
            tok_order.append(k)
            left.remove(k)
        kinds = [pos_order, [P + k for k in tok_order], [P + K + y for y in lab_order]]
        self.points = [q for i in range(max(P, K, L)) for order in kinds for q in order[i : i + 1]]
        self.D = len(self.points)
        colour = np.concatenate([self.pc, P + self.tc, P + K + self.lc])  # kinds never share a colour
        self.cands = [np.flatnonzero(colour == colour[q]).tolist() for q in range(self.D)]
        self.base = max(K, L)
        keys = row_keys(np.concatenate([X, Y[:, None]], axis=1), self.base)
        self.order = np.argsort(keys, kind="stable")
        self.sorted_keys = keys[self.order]

    def spend(self, units: int) -> None:
        self.spent += units
        if self.budget is not None and self.spent > self.budget:
            raise _OutOfBudget

    def run(self) -> tuple[int, list[tuple[int, ...]]]:
        """(the order of the group, generators as permutations of the points)."""
        gens: list[tuple[int, ...]] = []
        order = 1
        for level in reversed(range(self.D)):
            q = self.points[level]
            prefix = set(self.points[:level])
            orbit = _orbit(q, gens)
            for b in self.cands[q]:
                if b in orbit or b in prefix:
                    continue
                g = self._first(level, b)
                if g is not None:
                    gens.append(g)
                    orbit = _orbit(q, gens)
            order *= len(orbit)
        return order, gens

    def _first(self, start: int, b: int) -> tuple[int, ...] | None:
        """Depth-first: points[:start] fixed, points[start] -> b; the first symmetry found, or None."""
        self.img = list(range(self.D))
        self.taken = [True] * self.D
        self.placed: list[list[int]] = [[], [], []]  # positions, tokens, labels placed (reduced ids)
        for q in self.points[start:]:
            self.img[q], self.taken[q] = -1, False
        for q in self.points[:start]:
            self._place(q)
        level = start
        stack = [iter([b])]
        while True:
            q = self.points[level]
            for c in stack[-1]:
                if self.taken[c]:
                    continue
                self.spend(64)
                if not self._fits(q, c):
                    continue
                self.img[q], self.taken[c] = c, True
                if level + 1 == self.D:
                    if self._verify():
                        return tuple(self.img)
                    self.img[q], self.taken[c] = -1, False
                    continue
                self._place(q)
                level += 1
                stack.append(iter(self.cands[self.points[level]]))
                break
            else:
                stack.pop()
                if level == start:
                    return None
                level -= 1
                q = self.points[level]
                self._unplace(q)
                self.taken[self.img[q]], self.img[q] = False, -1

    def _kind(self, q: int) -> tuple[int, int]:
        if q < self.P:
            return 0, q
        if q < self.P + self.K:
            return 1, q - self.P
        return 2, q - self.P - self.K

    def _place(self, q: int) -> None:
        kind, i = self._kind(q)
        self.placed[kind].append(i)

    def _unplace(self, q: int) -> None:
        kind, _ = self._kind(q)
        self.placed[kind].pop()

    def _images(self, kind: int) -> list[int]:
        offset = (0, self.P, self.P + self.K)[kind]
        return [self.img[offset + i] - offset for i in self.placed[kind]]

    def _fits(self, q: int, c: int) -> bool:
        """The statistics of q -> c against the points already placed."""
        kind, i = self._kind(q)
        t = self._kind(c)[1]
        A, B, C = self.placed
        pA, pB, pC = self._images(0), self._images(1), self._images(2)
        ix = np.ix_
        if kind == 0:  # position i -> t
            A1, pA1 = A + [i], pA + [t]
            if self.PP is not None and not (
                _same(self.PP[i, A1], self.PP[t, pA1]) and _same(self.PP[A1, i], self.PP[pA1, t])
            ):
                return False
            if B and not _same(self.T[i, B], self.T[t, pB]):
                return False
            if C and not _same(self.J[i, C], self.J[t, pC]):
                return False
            if B and self.M is not None and not _same(self.M[i][ix(A1, B, B)], self.M[t][ix(pA1, pB, pB)]):
                return False
            return not (B and C and self.H is not None) or _same(self.H[i][ix(B, C)], self.H[t][ix(pB, pC)])
        if kind == 1:  # token i -> t
            if not A:
                return True
            if not _same(self.T[A, i], self.T[pA, t]):
                return False
            B1, pB1 = B + [i], pB + [t]
            if self.M is not None and not _same(self.M[ix(A, A, [i], B1)], self.M[ix(pA, pA, [t], pB1)]):
                return False
            return not (C and self.H is not None) or _same(self.H[ix(A, [i], C)], self.H[ix(pA, [t], pC)])
        if not A:  # label i -> t
            return True
        if not _same(self.J[A, i], self.J[pA, t]):
            return False
        return not (B and self.H is not None) or _same(self.H[ix(A, B, [i])], self.H[ix(pA, pB, [t])])

    def _verify(self) -> bool:
        """Exactly: every input's image is an input of the same probability (a few inputs first)."""
        P, K = self.P, self.K
        pi = np.asarray(self.img[:P], dtype=np.int64)
        tau = np.asarray(self.img[P : P + K], dtype=np.int64) - P
        lam = np.asarray(self.img[P + K :], dtype=np.int64) - P - K
        for rows in (slice(0, 256), slice(None)):
            self.spend(min(self.n, 256) if rows.stop else self.n)
            X, Y = self.X[rows], self.Y[rows]
            image = np.empty((len(Y), P + 1), np.int64)
            image[:, pi] = tau[X]
            image[:, P] = lam[Y]
            keys = row_keys(image, self.base)
            at = np.minimum(np.searchsorted(self.sorted_keys, keys), self.n - 1)
            if not (self.sorted_keys[at] == keys).all():
                return False
            if not (self.cls[self.order[at]] == self.cls[rows]).all():
                return False
            if self.n <= 256:
                return True
        return True


def _orbit(point: int, gens: Sequence[Sequence[int]]) -> set[int]:
    orbit, frontier = {point}, [point]
    while frontier:
        fresh = {g[q] for q in frontier for g in gens} - orbit
        orbit |= fresh
        frontier = sorted(fresh)
    return orbit


def _sci(x: int) -> str:
    """A count in short scientific notation: 3.2e9, 5e6, 120."""
    if x < 1000:
        return str(x)
    exponent = len(str(x)) - 1
    mantissa = f"{x / 10**exponent:.1f}".rstrip("0").rstrip(".")
    return f"{mantissa}e{exponent}"


#: Groups up to this order are listed to choose their generators among all elements.
_LIST_ORDER = 20_000


def _nice_generators(gens: list[tuple[int, ...]], order: int, degree: int) -> list[tuple[int, ...]]:
    """A small generating set, deterministic: elements of the largest order first (then
    lexicographic), each kept only if not yet generated, then any made redundant by later ones
    dropped. The candidates are all elements for a group of order up to ``_LIST_ORDER``, else the
    given generators and their pairwise products."""
    from sympy.combinatorics import Permutation, PermutationGroup

    identity = tuple(range(degree))
    small = order <= _LIST_ORDER

    def generated(chosen: list[tuple[int, ...]]) -> int:
        if small:
            return len(_closure(chosen, degree))
        return int(
            PermutationGroup([Permutation(list(c)) for c in chosen] or [Permutation(list(identity))]).order()
        )

    if small:
        pool = _closure(gens, degree)
    else:
        pool = set(gens) | {tuple(a[i] for i in c) for a in gens for c in gens}
    candidates = sorted((e for e in pool if e != identity), key=lambda e: (-_element_order(e), e))
    chosen: list[tuple[int, ...]] = []
    span: set[tuple[int, ...]] = {identity}
    group = PermutationGroup([Permutation(list(identity))])
    for e in candidates:
        if (len(span) if small else group.order()) == order:
            break
        if small:
            if e not in span:
                chosen.append(e)
                span = _closure(chosen, degree)
        elif not group.contains(Permutation(list(e))):
            chosen.append(e)
            group = PermutationGroup([Permutation(list(c)) for c in chosen])
    for e in list(reversed(chosen)):
        rest = [c for c in chosen if c != e]
        if generated(rest) == order:
            chosen = rest
    return chosen


def _free_generators(
    points: Sequence[int], K: int, P: int, part: str, carried: Sequence[int] = ()
) -> list[Symmetry]:
    """Generators of the symmetric group on ``points`` (a transposition and a full cycle)."""
    if len(points) < 2:
        return []
    cycles = [list(points[:2])] + ([list(points)] if len(points) > 2 else [])
    out = []
    for cycle in cycles:
        tokens, labels, positions = list(range(K)), list(range(K)), list(range(P))
        target = {"tokens": tokens, "labels": labels, "positions": positions}[part]
        for a, b in zip(cycle, cycle[1:] + cycle[:1]):
            target[a] = b
        if carried:  # frozen positions carry their tokens along
            where = {p: c for p, c in zip(points, carried)}
            for a, b in zip(cycle, cycle[1:] + cycle[:1]):
                tokens[where[a]] = where[b]
        out.append(Symmetry(tuple(tokens), tuple(labels), tuple(positions)))
    return out


def task_symmetries(task: Task, max_work: int = 5_000_000) -> TaskGroup:
    """Every symmetry (τ, λ, π) of a task's exact population law, as a ``TaskGroup``.

    Uses only the task protocol (``K``, ``N``, ``vocab``, ``population()``); the law must be numeric
    (a symbolic one is refused: substitute numbers first). Tokens and labels that never occur, and
    frozen positions (one token in every input, found nowhere else), are free: each set adds its
    symmetric group (``TaskGroup.free_tokens``, ``free_labels``, ``free_positions``). The rest is
    searched (module docstring). The work is estimated first: the candidate (τ, π) pairs that the
    colour classes leave, times the number n of inputs. Above ``max_work`` the pair-pruned search
    still runs, under a budget of ``max_work`` (a visited node counts 64, a candidate checked
    against the population up to n), and a ``ValueError`` giving the estimate ends it if that runs
    out.

    >>> from rwtoolkit.tasks import CircleWalk, first_of_two_task
    >>> G = task_symmetries(CircleWalk(3, 4, "1/2"))
    >>> G.order, G.describe()
    (6, ['tokens and labels (0 1 2)', 'tokens and labels (1 2)'])
    >>> task_symmetries(first_of_two_task(3)).describe()
    ['labels (a b), positions reversed j -> 2-j', 'tokens (a b), positions reversed j -> 2-j']
    """
    name = _task_name(task)
    if isinstance(max_work, bool) or not isinstance(max_work, (int, np.integer)) or max_work < 1:
        raise ValueError(f"task_symmetries: max_work={max_work!r} must be a positive integer")
    K, N = getattr(task, "K", None), getattr(task, "N", None)
    integral = (int, np.integer)
    if (
        not callable(getattr(task, "population", None))
        or not isinstance(K, integral)
        or not isinstance(N, integral)
        or isinstance(K, bool)
        or isinstance(N, bool)
    ):
        raise ValueError(
            f"task_symmetries: {name} is not a task (rwtoolkit.tasks.Task: K, N and population() are needed)"
        )
    K, N = int(K), int(N)
    if K < 1 or N < 2:
        raise ValueError(f"task_symmetries({name}): K={K} and N={N} must be at least 1 and 2")
    vocab = getattr(task, "vocab", None)
    vocab = tuple(str(w) for w in vocab) if vocab is not None else None
    if vocab is not None and len(vocab) != K:
        raise ValueError(f"task_symmetries({name}): vocab has {len(vocab)} words for K={K}")
    X, Y, cls, _ = nonzero_law(task, K, N, name)
    P = N - 1

    # free parts: absent tokens and labels, frozen positions (a constant token found nowhere else)
    present = np.zeros((P, K), bool)
    present[np.broadcast_to(np.arange(P), X.shape).ravel(), X.ravel()] = True
    constant = (X == X[0]).all(axis=0)
    frozen = [j for j in range(P) if constant[j] and present[:, X[0, j]].sum() == 1]
    frozen_tokens = [int(X[0, j]) for j in frozen]
    free_tokens = np.flatnonzero(~present.any(axis=0)).tolist()
    used_labels = np.zeros(K, bool)
    used_labels[Y] = True
    free_labels = np.flatnonzero(~used_labels).tolist()
    moving_pos = [j for j in range(P) if j not in set(frozen)]
    moving_tok = [k for k in range(K) if present[:, k].any() and k not in set(frozen_tokens)]
    label_ids = np.flatnonzero(used_labels).tolist()
    tok_index = np.full(K, -1, np.int64)
    tok_index[moving_tok] = np.arange(len(moving_tok))
    lab_index = np.full(K, -1, np.int64)
    lab_index[label_ids] = np.arange(len(label_ids))

    search = _Search(tok_index[X[:, moving_pos]], lab_index[Y], cls, len(moving_tok), len(label_ids))
    estimate = search.pairs * search.n
    if estimate > max_work:
        search.budget = int(max_work)
    search.prepare()
    try:
        reduced_order, reduced_gens = search.run()
    except _OutOfBudget:
        raise ValueError(
            f"task_symmetries({name}): ~{_sci(estimate)} candidate checks ({_sci(search.pairs)} "
            f"candidate (tau, pi) pairs x n={search.n} inputs), above max_work={_sci(int(max_work))}, "
            "and the pruned search ran out of that budget; use a smaller task (fewer tokens or a "
            "smaller N) or raise max_work"
        ) from None

    degree = 2 * K + P
    to_full = [2 * K + j for j in moving_pos] + moving_tok + [K + y for y in label_ids]
    lifted = []
    for g in reduced_gens:
        full = list(range(degree))
        for q, image in enumerate(g):
            full[to_full[q]] = to_full[image]
        lifted.append(tuple(full))
    generators = [_unflat(g, K) for g in _nice_generators(lifted, reduced_order, degree)]
    generators += _free_generators(free_tokens, K, P, "tokens")
    generators += _free_generators(free_labels, K, P, "labels")
    generators += _free_generators(frozen, K, P, "positions", carried=frozen_tokens)
    order = reduced_order * math.prod(math.factorial(len(s)) for s in (free_tokens, free_labels, frozen))
    return TaskGroup(
        K=K,
        N=N,
        generators=tuple(generators),
        order=order,
        vocab=vocab,
        free_tokens=tuple(free_tokens),
        free_labels=tuple(free_labels),
        free_positions=tuple(frozen),
    )
