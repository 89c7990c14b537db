"""Named exponentials: exp(a) of a nested exact expression kept as a positive symbol while the engine works.

From step 3 on, the logits contain exponentials of earlier steps, and the attention exp(l_j - l_N)
nests them one level deeper per step. SymPy asks its assumption system about every factor it
multiplies (is it zero, real, positive?) and answers those questions for numbers by evaluating the
whole expression tree, which repeats every shared subexpression: the cost grows exponentially with
the step. The engine therefore names each such exponential once: ``exp_atom(a)`` returns a positive
``Dummy`` standing for exp(a) and records ``a``. Expressions stay exact (the dummy *is* exp(a));
they are rational functions of the named atoms, on which SymPy's arithmetic is cheap.

The engine names every exponential it creates, exp(rational) included, so no number it builds is
a SymPy "number" whose properties SymPy would settle by evaluation.

Three consumers read the names back: ``expand_atoms`` rebuilds the plain SymPy expression (what the
public ``StepState`` attributes return), ``AtomPrinter`` prints exp(a) in place of each name (the exact
strings of the oracle JSON), and ``rwtoolkit.engines.exact.arithmetic._decide.enclose`` evaluates the atoms as exponentials
(rigorous intervals, for signs and floats).
"""

from __future__ import annotations

import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.printing.str import StrPrinter

#: atom -> its exponent a (the atom stands for exp(a)); one atom per distinct exponent.
_DEFINITION: dict[sp.Dummy, sp.Expr] = {}
_ATOM_OF: dict[sp.Expr, sp.Dummy] = {}
_EXPANDED: dict[sp.Dummy, sp.Expr] = {}


def exp_atom(arg: sp.Expr) -> sp.Expr:
    """exp(arg) as a named atom (1 when ``arg`` is structurally 0); the same ``arg`` gives the same atom.

    >>> a = exp_atom(exp_atom(sp.Rational(1, 3)) - 1)
    >>> a.is_positive, expand_atoms(a)
    (True, exp(-1 + exp(1/3)))
    >>> exp_atom(sp.Integer(0)), expand_atoms(exp_atom(sp.Rational(1, 2)))
    (1, exp(1/2))
    """
    arg = sp.sympify(arg)
    if arg == 0:
        return sp.S.One
    atom = _ATOM_OF.get(arg)
    if atom is None:
        atom = sp.Dummy(f"e{len(_DEFINITION)}", positive=True)
        _DEFINITION[atom] = arg
        _ATOM_OF[arg] = atom
    return atom


def definition(atom: sp.Basic) -> sp.Expr | None:
    """The exponent a of a named atom exp(a), or None for any other object."""
    return _DEFINITION.get(atom)


#: id(node) -> (node, symbols that are not atoms, atoms, contains exp or an atom, contains an
#: applied undefined function or a Piecewise).
_SCANNED: dict[int, tuple[sp.Basic, frozenset, frozenset, bool, bool]] = {}


def _scan(node: sp.Basic) -> tuple[frozenset, frozenset, bool, bool]:
    """(user symbols, named atoms, nests exp, not a plain number) of ``node``, each shared subexpression
    visited once.

    SymPy's ``free_symbols`` and ``has`` walk the expression as a tree, repeating every shared
    subexpression; on late steps that repetition is the whole cost.
    """
    hit = _SCANNED.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1], hit[2], hit[3], hit[4]
    out: tuple[frozenset, frozenset, bool, bool]
    if node in _DEFINITION:
        inner = _scan(_DEFINITION[node])
        out = (inner[0], frozenset((node,)), True, inner[3])
    elif node.is_Symbol:
        out = (frozenset((node,)), frozenset(), False, False)
    elif not node.args:
        out = (frozenset(), frozenset(), False, False)
    else:
        parts = [_scan(a) for a in node.args]
        out = (
            frozenset().union(*(p[0] for p in parts)),
            frozenset().union(*(p[1] for p in parts)),
            isinstance(node, sp.exp) or any(p[2] for p in parts),
            isinstance(node, (AppliedUndef, sp.Piecewise)) or any(p[3] for p in parts),
        )
    _SCANNED[id(node)] = (node, *out)
    return out


def record_plain(expr: sp.Basic, symbols: frozenset) -> sp.Basic:
    """Record, without walking it, that ``expr`` is a plain expression in ``symbols``: no atom, exp or
    undefined function (the builder knows, e.g. a polynomial or fraction built from FLINT's terms).

    Large sums of fractions are scanned term by term afterwards; each recorded body is then looked up
    instead of walked again.

    >>> p = sp.Symbol("p")
    >>> body = record_plain(sp.Add(p**2, 3 * p, 1), frozenset((p,)))
    >>> has_atoms(body), free_symbols(body) == {p}
    (False, True)
    """
    _SCANNED[id(expr)] = (expr, frozenset(symbols), frozenset(), False, False)
    return expr


def has_atoms(expr: sp.Basic) -> bool:
    """True when ``expr`` contains a named atom."""
    return bool(_scan(sp.sympify(expr))[1])


def free_symbols(expr: sp.Basic) -> frozenset:
    """The free symbols of ``expr`` that are not named atoms (the symbols a user gave), atoms' included."""
    return _scan(sp.sympify(expr))[0]


def has_undefined(expr: sp.Basic) -> bool:
    """True when ``expr`` contains an applied undefined function (an abstract loss) or a Piecewise."""
    return _scan(sp.sympify(expr))[3]


def expand_atoms(expr: object) -> sp.Expr:
    """The plain SymPy expression: every named atom replaced by exp of its (expanded) exponent."""
    expr = sp.sympify(expr)
    atoms = _scan(expr)[1]
    if not atoms:
        return expr
    return expr.xreplace({a: _expanded(a) for a in atoms})


def _expanded(atom: sp.Dummy) -> sp.Expr:
    if atom not in _EXPANDED:
        _EXPANDED[atom] = sp.exp(expand_atoms(_DEFINITION[atom]))
    return _EXPANDED[atom]


class AtomPrinter(StrPrinter):
    """SymPy's string printer that writes exp(a) for each named atom (strings parse back exactly).

    ``order="none"`` prints terms as stored: the default ordering costs minutes on large expressions.
    """

    def __init__(self) -> None:
        super().__init__({"order": "none"})
        self._memo: dict[sp.Dummy, str] = {}

    def _print_Dummy(self, expr: sp.Dummy) -> str:
        arg = _DEFINITION.get(expr)
        if arg is None:
            return super()._print_Dummy(expr)
        if expr not in self._memo:
            self._memo[expr] = f"exp({self._print(arg)})"
        return self._memo[expr]
