"""The token-average signal C = E[e_y x̄ᵀ] - E[e_y]E[x̄]ᵀ of docs/theory.md#signal and where it vanishes.

At zero initialisation the attention is uniform, so the first GD step sees each input only through
its token average x̄ = (1/(N-1)) Σ_{i<N} x_i; C = 0 means that average carries no linear information
about the label. Circle walks use the transfer-matrix moments of ``rwtoolkit.engines.exact.engine._moments``; every other task
(and the independent check for circle walks) enumerates its exact population.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sympy as sp

from rwtoolkit.engines.exact.arithmetic._json import exact_json
from rwtoolkit.engines.exact.engine._moments import MAX_SYMBOLIC_N, label_token_offsets, signal_offset_polys
from rwtoolkit.io import write_text_atomic
from rwtoolkit.tasks import CircleWalk, FiniteTask, Population, check_int, exact, is_numeric, symbol

#: The JSON Schema that ``signal_json`` output (``rw signal --json``) follows.
#: Format name and version written into every signal JSON file.
SIGNAL_FORMAT, SIGNAL_FORMAT_VERSION = "rw-signal", 1
#: Largest N for which ``signal_report`` factors the entries of a circle walk with symbolic p:
#: factoring K = 8 polynomials of degree N-1 takes about 3 s at N = 64 and 15 s at N = 100.
MAX_FACTOR_N = 64
# Terminal width (characters) up to which ``SignalReport.render`` prints the full matrix.
_WIDTH = 160

_METHODS = ("auto", "structure", "enumerate")


def signal_matrix(task: CircleWalk | FiniteTask | Population, method: str = "auto") -> sp.Matrix:
    """C = E[e_y x̄ᵀ] - E[e_y] E[x̄]ᵀ (docs/theory.md#signal), K×K, exact, entries expanded.

    ``method``: "structure" (circle walks only) uses C = (1/(K(N-1))) Σ_{m=1}^{N-1} (Πᵀ)^m - (1/K²)·1 1ᵀ;
    "enumerate" sums over the exact population; "auto" picks "structure" for circle walks.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> signal_matrix(CircleWalk(3, 2, 1))
    Matrix([
    [-1/9, -1/9,  2/9],
    [ 2/9, -1/9, -1/9],
    [-1/9,  2/9, -1/9]])
    >>> signal_matrix(CircleWalk(3, 4, "p")) == signal_matrix(CircleWalk(3, 4, "p"), "enumerate")
    True
    """
    if method not in _METHODS:
        raise ValueError(f"method={method!r} must be one of {', '.join(_METHODS)}")
    if method == "structure" or (method == "auto" and isinstance(task, CircleWalk)):
        if not isinstance(task, CircleWalk):
            raise ValueError(f"method='structure' needs a CircleWalk, got {type(task).__name__}")
        offsets = signal_offsets(task)
        return sp.Matrix(task.K, task.K, lambda a, b: offsets[(a - b) % task.K])
    population = task if isinstance(task, Population) else task.population()
    return _enumerated_signal(population)


def signal_offsets(walk: CircleWalk) -> tuple[sp.Expr, ...]:
    """c_d with C_{ab} = c_{(a-b) mod K} (0-based): the K distinct entries of a circle walk's C.

    c_d = (1/(K(N-1))) Σ_{m=1}^{N-1} P(s_{i+m} - s_i ≡ d) - 1/K², an expanded polynomial in p.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> [sp.factor(c) for c in signal_offsets(CircleWalk(3, 3, "p"))]
    [-(3*p**2 - 3*p + 1)/9, (3*p**2 - 3*p + 1)/18, (3*p**2 - 3*p + 1)/18]
    """
    if not isinstance(walk, CircleWalk):
        raise ValueError(f"signal_offsets needs a CircleWalk, got {type(walk).__name__}")
    K, N = walk.K, walk.N
    return tuple(sp.expand(g / (N - 1) - sp.Rational(1, K * K)) for g in label_token_offsets(walk))


def _enumerated_signal(pop: Population) -> sp.Matrix:
    """C from the population: integer counts per probability class, then one exact sum per entry."""
    K, length = pop.K, pop.N - 1
    classes = len(pop.prob_values)
    # pair[k, a, b] = Σ over inputs of class k with label a of #{i : x_i = e_b}; (classes, K, K)
    pair = np.zeros((classes, K, K), dtype=np.int64)
    np.add.at(pair, (pop.prob_index[:, None], pop.labels[:, None], pop.tokens), 1)
    label_counts = np.zeros((classes, K), dtype=np.int64)  # (classes, K)
    np.add.at(label_counts, (pop.prob_index, pop.labels), 1)
    token_counts = pair.sum(axis=1)  # (classes, K): token occurrences over all positions
    q = pop.prob_values

    def weighted(counts: np.ndarray) -> sp.Expr:
        return sp.expand(sp.Add(*(q[k] * int(c) for k, c in enumerate(counts) if c)))

    label_mean = [weighted(label_counts[:, a]) for a in range(K)]
    token_mean = [weighted(token_counts[:, b]) / length for b in range(K)]
    return sp.Matrix(
        K,
        K,
        lambda a, b: sp.expand(weighted(pair[:, a, b]) / length - label_mean[a] * token_mean[b]),
    )


@dataclass(frozen=True)
class VanishingSet:
    """The exact set of parameter values in [0, 1] at which the signal C vanishes.

    ``symbol`` is the parameter (None when C has no free symbol: then ``all_p`` says whether C = 0).
    ``all_p`` is True when C is identically zero; otherwise ``points`` holds the distinct common real
    roots in [0, 1] of all entries, in increasing order, as exact SymPy numbers (Rational, radicals or
    CRootOf), and ``gcd`` is the monic gcd of the entries over Q.
    """

    symbol: sp.Symbol | None
    all_p: bool
    points: tuple[sp.Expr, ...]
    gcd: sp.Expr

    def __contains__(self, value: object) -> bool:
        if self.all_p:
            return True
        value = exact(value, "value")  # floats through their shortest repr, as everywhere else
        return any(sp.simplify(value - r) == 0 for r in self.points)

    def __str__(self) -> str:
        name = str(self.symbol) if self.symbol is not None else "p"
        if self.symbol is None:
            return "C = 0 (no free parameter)" if self.all_p else "C != 0 (no free parameter)"
        if self.all_p:
            return f"all {name} in [0, 1] (C is identically zero)"
        if not self.points:
            return f"empty: C != 0 for every {name} in [0, 1]"
        return "{" + ", ".join(str(r) for r in self.points) + "}"


def vanishing_set(
    obj: CircleWalk | FiniteTask | Population | sp.Matrix | tuple[int, int],
) -> VanishingSet:
    """The exact set of p ∈ [0, 1] where C(p) = 0: real roots in [0, 1] of the gcd of all entries.

    ``obj`` is a circle walk or ``(K, N)`` (p is taken as the symbol ``p`` even if the walk has a
    numeric p), any finite task or population, or a signal matrix; C may have at most one free symbol.

    >>> print(vanishing_set((4, 5)))
    {0, 1/2, 1}
    >>> print(vanishing_set((5, 7)))
    empty: C != 0 for every p in [0, 1]
    """
    if isinstance(obj, tuple):
        if len(obj) != 2:
            raise ValueError(f"give (K, N), got {obj!r}")
        obj = CircleWalk(check_int(obj[0], "K", 3), check_int(obj[1], "N", 2), "p")
    if isinstance(obj, CircleWalk):
        return _circle_vanishing_set(obj)
    matrix = obj if isinstance(obj, sp.MatrixBase) else signal_matrix(obj)
    entries = [e for e in (sp.expand(e) for e in matrix) if e != 0]
    free = sorted(set().union(*(e.free_symbols for e in matrix)), key=str)
    if len(free) > 1:
        raise ValueError(
            f"C depends on {len(free)} symbols {[str(s) for s in free]}; the vanishing set is "
            "computed for one parameter: substitute numbers for the others"
        )
    if not free:
        return VanishingSet(None, not entries, (), sp.Integer(0 if not entries else 1))
    x = free[0]
    if not entries:
        return VanishingSet(x, True, (), sp.Integer(0))
    gcd = None
    for e in entries:
        try:
            poly = sp.Poly(e, x, domain="QQ")
        except (sp.PolynomialError, sp.CoercionFailed):
            raise ValueError(
                f"the entry {e} of C is not a polynomial in {x} with rational coefficients; "
                "the exact vanishing set is computed for polynomial entries only"
            ) from None
        gcd = poly if gcd is None else gcd.gcd(poly)
        if gcd.degree() == 0:
            return VanishingSet(x, False, (), sp.Integer(1))
    return _roots_in_unit_interval(gcd, x)


def _circle_vanishing_set(walk: CircleWalk) -> VanishingSet:
    """Circle walks: the gcd of the K circulant entries c_d, taken in QQ[p] (no SymPy expressions)."""
    x = walk.p if isinstance(walk.p, sp.Symbol) else symbol("p")
    if walk.N > MAX_SYMBOLIC_N:
        raise ValueError(
            f"N={walk.N} is too large for the exact vanishing set in p: N must be <= {MAX_SYMBOLIC_N} "
            "(the entries are polynomials of degree N-1)"
        )
    polys = [c for c in signal_offset_polys(walk.K, walk.N) if c]
    if not polys:  # never happens for K >= 3 (see the README), but C = 0 would mean every p
        return VanishingSet(x, True, (), sp.Integer(0))
    gcd = polys[0]
    for c in polys[1:]:
        gcd = gcd.gcd(c)
        if gcd.degree() == 0:
            return VanishingSet(x, False, (), sp.Integer(1))
    return _roots_in_unit_interval(sp.Poly(gcd.as_expr(x), x, domain="QQ"), x)


def _roots_in_unit_interval(gcd: sp.Poly, x: sp.Symbol) -> VanishingSet:
    """The distinct real roots of ``gcd`` in [0, 1], exact, increasing."""
    if gcd.degree() == 0:
        return VanishingSet(x, False, (), sp.Integer(1))
    squarefree = gcd.monic().sqf_part()
    points = tuple(r for r in squarefree.real_roots() if bool(r >= 0) and bool(r <= 1))
    # Internal invariant: the roots kept agree with Sturm counting on the closed interval [0, 1].
    if len(points) != squarefree.count_roots(0, 1):
        raise RuntimeError(f"real roots {points} of {squarefree} disagree with Sturm counting on [0, 1]")
    return VanishingSet(x, False, points, gcd.monic().as_expr())


@dataclass(frozen=True)
class SignalReport:
    """C for one task with its factored entries and vanishing set: what ``rw signal`` prints.

    ``offsets`` / ``factored_offsets`` are the K distinct entries c_d (C_{ab} = c_{(a-b) mod K}) of a
    circle walk's C, else None. ``vanishing`` is over the symbol p for circle walks (whatever p the
    walk has; None when N > MAX_SYMBOLIC_N, where only a rational p is computed) and over the task's
    own parameter (if any) otherwise; ``vanishes`` says whether C = 0 at the task's own parameters.
    """

    task: str
    K: int
    N: int
    p: sp.Expr | None
    matrix: sp.Matrix
    factored: sp.Matrix
    offsets: tuple[sp.Expr, ...] | None
    factored_offsets: tuple[sp.Expr, ...] | None
    vanishing: VanishingSet | None
    vocab: tuple[str, ...] | None

    @property
    def vanishes(self) -> bool:
        """True when C is exactly the zero matrix (identically, for symbolic parameters)."""
        return all(sp.expand(e) == 0 for e in self.matrix)

    def render(self) -> str:
        """Human-readable text: the matrix (pretty), the factorisations and the vanishing set."""
        head = f"Token-average signal C = E[e_y xbar^T] - E[e_y] E[xbar]^T: task {self.task}, "
        head += f"K={self.K}, N={self.N}" + (f", p={self.p}" if self.p is not None else "")
        lines = [head, ""]
        symbolic = any(not is_numeric(e) for e in self.matrix)
        # The real matrix when it fits on a terminal line; else the circulant pattern of c_d.
        narrow = not symbolic and self.K * (2 + max(len(str(e)) for e in self.matrix)) <= _WIDTH
        if self.vocab is not None:
            lines += _labelled_lines(self.matrix, self.vocab)
        elif self.offsets is not None and not narrow:
            names = sp.symbols(f"c0:{self.K}")
            shown = sp.Matrix(self.K, self.K, lambda a, b: names[(a - b) % self.K])
            lines += [
                "C is circulant, C[a, b] = c_{(a-b) mod K} (0-based indices):",
                "",
                sp.pretty(shown, wrap_line=False),
                "",
            ]
            if symbolic:
                lines += ["factored:"] + [f"  c{d} = {c}" for d, c in enumerate(self.factored_offsets or ())]
            else:
                lines += [f"  c{d} = {c}  (~ {float(c):.17g})" for d, c in enumerate(self.offsets)]
        else:
            lines += [sp.pretty(self.matrix, wrap_line=False)]
            if symbolic:
                lines += ["", "factored nonzero entries:"]
                lines += [
                    f"  C[{a}, {b}] = {self.factored[a, b]}"
                    for a in range(self.K)
                    for b in range(self.K)
                    if self.matrix[a, b] != 0
                ]
        lines += ["", f"C is exactly zero: {'yes' if self.vanishes else 'no'}"]
        if self.task == "circle" and self.vanishing is None:
            lines += [
                f"vanishing set of C over p: not computed for N > {MAX_SYMBOLIC_N} (degree N-1 "
                "polynomials in p); the README states the rule for all K and N"
            ]
        elif self.task == "circle":
            lines += [f"vanishing set of C over p in [0, 1] for K={self.K}, N={self.N}: {self.vanishing}"]
        else:
            lines += [f"vanishing set: {self.vanishing}"]
        return "\n".join(lines)


def _labelled_lines(matrix: sp.Matrix, vocab: tuple[str, ...]) -> list[str]:
    """C of a task with a vocabulary, rows (label y) and columns (token) named by their words.

    A zero matrix is one line; otherwise the table of the rows and columns that hold a nonzero entry,
    then every nonzero entry C[label, token].

    >>> print("\\n".join(_labelled_lines(sp.zeros(2, 2), ("yes", "no"))))
    C = 0: all 2 × 2 entries C[label, token] are exactly 0 (labels and tokens: yes, no).
    >>> print("\\n".join(_labelled_lines(sp.Matrix([[sp.Rational(1, 4), 0], [0, 0]]), ("yes", "no"))))
    rows = label y, columns = token; the rows and columns not shown are all 0:
    <BLANKLINE>
    label \\ token  yes
    yes            1/4
    <BLANKLINE>
    nonzero entries (1 of 4), C[label, token]:
      C[yes, yes] = 1/4
    """
    K = matrix.rows
    nonzero = [(a, b) for a in range(K) for b in range(K) if matrix[a, b] != 0]
    if not nonzero:
        return [
            f"C = 0: all {K} × {K} entries C[label, token] are exactly 0 (labels and tokens: {', '.join(vocab)})."
        ]
    rows = sorted({a for a, _ in nonzero})
    cols = sorted({b for _, b in nonzero})
    corner = "label \\ token"
    first = max(len(corner), *(len(vocab[a]) for a in rows))
    widths = [max(len(vocab[b]), *(len(str(matrix[a, b])) for a in rows)) for b in cols]
    table = [f"{corner:<{first}}  " + "  ".join(f"{vocab[b]:>{w}}" for b, w in zip(cols, widths))]
    table += [
        f"{vocab[a]:<{first}}  " + "  ".join(f"{matrix[a, b]!s:>{w}}" for b, w in zip(cols, widths))
        for a in rows
    ]
    head = "rows = label y, columns = token" + (
        "; the rows and columns not shown are all 0:" if len(rows) < K or len(cols) < K else ":"
    )
    lines = [head, ""] + [t.rstrip() for t in table]
    lines += ["", f"nonzero entries ({len(nonzero)} of {K * K}), C[label, token]:"]
    lines += [f"  C[{vocab[a]}, {vocab[b]}] = {matrix[a, b]}" for a, b in nonzero]
    return lines


def signal_report(task: CircleWalk | FiniteTask) -> SignalReport:
    """Compute C, its factored entries and its exact vanishing set for ``task`` (``rw signal``).

    >>> from rwtoolkit.tasks import qa_task2
    >>> r = signal_report(qa_task2())
    >>> r.vanishes, str(r.vanishing)
    (True, 'C = 0 (no free parameter)')
    """
    cache: dict[sp.Expr, sp.Expr] = {}

    def factor(e: sp.Expr) -> sp.Expr:  # each distinct entry is factored once
        return cache[e] if e in cache else cache.setdefault(e, sp.factor(e))

    offsets = factored_offsets = None
    if isinstance(task, CircleWalk):
        if not is_numeric(task.p) and task.N > MAX_FACTOR_N:
            raise ValueError(
                f"N={task.N} is too large to factor the signal with symbolic p: N must be <= "
                f"{MAX_FACTOR_N} (K={task.K} polynomials of degree {task.N - 1}); give a rational p, "
                "or use signal_matrix / vanishing_set, which do not factor"
            )
        offsets = signal_offsets(task)
        factored_offsets = tuple(factor(c) for c in offsets)
        matrix = sp.Matrix(task.K, task.K, lambda a, b: offsets[(a - b) % task.K])
        vanishing = vanishing_set(task) if task.N <= MAX_SYMBOLIC_N else None
        p = task.p
    elif isinstance(task, FiniteTask):
        matrix = signal_matrix(task)
        vanishing = vanishing_set(matrix)
        p = None
    else:
        raise ValueError(f"signal_report needs a CircleWalk or FiniteTask, got {type(task).__name__}")
    return SignalReport(
        task=task.name,
        K=task.K,
        N=task.N,
        p=p,
        matrix=matrix,
        factored=matrix.applyfunc(factor),
        offsets=offsets,
        factored_offsets=factored_offsets,
        vanishing=vanishing,
        vocab=getattr(task, "vocab", None),
    )


def signal_json(report: SignalReport) -> dict[str, object]:
    """The report as a JSON-ready dict following ``signal.schema.json`` (exact strings + floats)."""

    def entry(value: sp.Expr, factored: sp.Expr) -> dict[str, object]:
        return {**exact_json(value), "factored": sp.sstr(factored)}

    vanishing = report.vanishing
    return {
        "format": SIGNAL_FORMAT,
        "version": SIGNAL_FORMAT_VERSION,
        "task": report.task,
        "K": report.K,
        "N": report.N,
        "p": None if report.p is None else exact_json(report.p),
        "vocab": None if report.vocab is None else list(report.vocab),
        "matrix": [
            [entry(report.matrix[a, b], report.factored[a, b]) for b in range(report.K)]
            for a in range(report.K)
        ],
        "circulant_offsets": None
        if report.offsets is None
        else [entry(c, f) for c, f in zip(report.offsets, report.factored_offsets or ())],
        "is_zero": report.vanishes,
        "vanishing_set": None
        if vanishing is None
        else {
            "symbol": None if vanishing.symbol is None else str(vanishing.symbol),
            "interval": [0, 1],
            "all": vanishing.all_p,
            "points": [exact_json(r) for r in vanishing.points],
            "gcd": sp.sstr(vanishing.gcd),
            "text": str(vanishing),
        },
    }


def write_signal_json(report: SignalReport, path: str | os.PathLike[str]) -> Path:
    """Write ``signal_json(report)`` to ``path`` atomically (temp file in the same folder, then replace)."""
    target = Path(path)
    folder = target.parent
    if not folder.is_dir():
        raise ValueError(f"--json {target}: the folder {folder} does not exist")
    text = json.dumps(signal_json(report), indent=1, allow_nan=False) + "\n"
    return write_text_atomic(text, target)
