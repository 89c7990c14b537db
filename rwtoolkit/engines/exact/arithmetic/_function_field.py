"""Rational functions over FLINT polynomials, and the arithmetic of a model at a generic point of a subspace.

The invariance engine (``rwtoolkit.engines.exact.analysis``, docs/theory.md#invariant-manifolds) evaluates a model at
θ = B α, with the free coordinates α as indeterminates. Every logit is then a polynomial in α with no
constant term, so each exponential is a product of powers of *atoms* E_m = exp(m(α)/L_m), one per monomial
m of the logits (L_m the common denominator of m's coefficients). By Ax's theorem (the exponentials of
Q-linearly independent polynomials without constant term are algebraically independent over the rational
functions of α), the α and the E are independent indeterminates: an expression built from them by
+ − × ÷ is zero for every α exactly when its rational function in (α, E) is zero. :class:`Fraction` is
that rational function, reduced (polynomial gcd) with a monic denominator, so equality is ``==`` and zero
is a zero numerator: exact decisions, no rounding anywhere.

>>> field = FunctionField(["a0", "a1"])
>>> a0, a1 = field.variables()
>>> ((a0 + a1) * (a0 - a1) / (a0 - a1)) == a0 + a1
True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from math import lcm
from typing import Any

import numpy as np
from flint import arb, fmpq, fmpq_mpoly, fmpq_mpoly_ctx

from rwtoolkit.engines.exact.arithmetic._fractions import reduce_fraction
from rwtoolkit.models import ObjectArithmetic

Scalar = int | fmpq


class Fraction:
    """n/d with n, d FLINT polynomials in lowest terms and d monic: a canonical rational function."""

    __slots__ = ("n", "d")

    def __init__(self, n: fmpq_mpoly, d: fmpq_mpoly) -> None:
        self.n, self.d = n, d

    @staticmethod
    def make(n: fmpq_mpoly, d: fmpq_mpoly) -> Fraction:
        if d.is_zero():
            raise ZeroDivisionError("a rational function divided by zero")
        return Fraction(*reduce_fraction(n, d))

    # field operations (scalars are ints and fmpq) --------------------------------------------------
    def __add__(self, other: Fraction | Scalar) -> Fraction:
        if isinstance(other, Fraction):
            if self.d == other.d:
                return Fraction.make(self.n + other.n, self.d)
            return Fraction.make(self.n * other.d + other.n * self.d, self.d * other.d)
        if other == 0:
            return self
        return Fraction(self.n + other * self.d, self.d)

    __radd__ = __add__

    def __neg__(self) -> Fraction:
        return Fraction(-self.n, self.d)

    def __sub__(self, other: Fraction | Scalar) -> Fraction:
        return self + (-other)

    def __rsub__(self, other: Scalar) -> Fraction:
        return (-self) + other

    def __mul__(self, other: Fraction | Scalar) -> Fraction | Scalar:
        if isinstance(other, Fraction):
            return Fraction.make(self.n * other.n, self.d * other.d)
        if other == 0:
            return fmpq(0)
        return Fraction(self.n * other, self.d)

    __rmul__ = __mul__

    def __truediv__(self, other: Fraction | Scalar) -> Fraction:
        if isinstance(other, Fraction):
            return Fraction.make(self.n * other.d, self.d * other.n)
        if other == 0:
            raise ZeroDivisionError("a rational function divided by zero")
        return Fraction(self.n / fmpq(other), self.d)

    def __rtruediv__(self, other: Scalar) -> Fraction | Scalar:
        if other == 0:
            return fmpq(0)
        return Fraction.make(self.d * other, self.n)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Fraction):
            return bool(self.n == other.n and self.d == other.d)
        if isinstance(other, (int, fmpq)):
            return bool(self.d.is_one() and self.n == other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.key())

    def key(self) -> tuple[str, str]:
        """A hashable canonical key (the reduced numerator and denominator as text)."""
        return str(self.n), str(self.d)

    def is_zero(self) -> bool:
        return bool(self.n.is_zero())

    def __repr__(self) -> str:
        return f"({self.n})/({self.d})" if not self.d.is_one() else f"{self.n}"


def is_zero(x: Fraction | Scalar) -> bool:
    """Whether an element (a rational function or a rational constant) is identically zero."""
    return x.is_zero() if isinstance(x, Fraction) else x == 0


def key_of(x: Fraction | Scalar) -> tuple[str, str]:
    """A canonical hashable key of an element (equal keys: equal functions)."""
    return x.key() if isinstance(x, Fraction) else (str(fmpq(x)), "1")


class FunctionField:
    """The field Q(α, E): polynomial variables named ``names`` (α first, then the atoms E)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.ctx = fmpq_mpoly_ctx.get(self.names if self.names else ("unused",), "lex")
        self.one = self.ctx.from_dict({(0,) * self.ctx.nvars(): 1})

    def variables(self) -> list[Fraction]:
        return [Fraction(g, self.one) for g in self.ctx.gens()][: len(self.names)]

    def polynomial(self, terms: dict[tuple[int, ...], fmpq]) -> Fraction | fmpq:
        """Σ coefficient · monomial as an element (a constant stays an fmpq)."""
        terms = {e: c for e, c in terms.items() if c != 0}
        if not terms:
            return fmpq(0)
        if set(terms) == {(0,) * self.ctx.nvars()}:
            return fmpq(terms[(0,) * self.ctx.nvars()])
        return Fraction(self.ctx.from_dict(terms), self.one)

    def linear(self, coefficients: Sequence[fmpq]) -> Fraction | fmpq:
        """Σ_i c_i α_i over the first variables."""
        nv = self.ctx.nvars()
        terms = {tuple(int(i == j) for j in range(nv)): fmpq(c) for i, c in enumerate(coefficients)}
        return self.polynomial(terms)

    def evaluate(self, x: Fraction | Scalar, point: Sequence[arb]) -> arb:
        """The value of an element at ``point`` (one ball per variable), in ball arithmetic."""
        if not isinstance(x, Fraction):
            return arb(fmpq(x))
        return _evaluate_polynomial(x.n, point) / _evaluate_polynomial(x.d, point)


def _evaluate_polynomial(p: fmpq_mpoly, point: Sequence[arb]) -> arb:
    total = arb(0)
    for exponents, c in p.to_dict().items():
        term = arb(c)
        for v, e in zip(point, exponents):
            if e:
                term *= v**e
        total += term
    return total


def monomials(x: Fraction | Scalar, variables: int) -> dict[tuple[int, ...], fmpq]:
    """The monomials of a polynomial element in its first ``variables`` variables (ValueError otherwise)."""
    if not isinstance(x, Fraction):
        return {(0,) * variables: fmpq(x)} if x != 0 else {}
    if not x.d.is_one():
        raise ValueError("a logit is not a polynomial in the free coordinates")
    out = {}
    for exponents, c in x.n.to_dict().items():
        if any(exponents[variables:]):
            raise ValueError("a logit depends on an exponential atom")
        out[tuple(exponents[:variables])] = c
    return out


class Atoms:
    """The atoms E_m = exp(m(α)/L_m) of a set of logits: monomial m → (variable index, L_m)."""

    def __init__(self, logits: Iterable[Fraction | Scalar], variables: int) -> None:
        scale: dict[tuple[int, ...], int] = {}
        for x in logits:
            for m, c in monomials(x, variables).items():
                if not any(m):
                    if c != 0:
                        raise ValueError("a logit has a non-zero constant term (the subspace is not linear)")
                    continue
                scale[m] = lcm(scale.get(m, 1), int(c.q))
        self.variables = variables
        self.monomials = sorted(scale)
        self.scale = scale
        self.index = {m: variables + i for i, m in enumerate(self.monomials)}

    def names(self) -> list[str]:
        return [f"E{i}" for i in range(len(self.monomials))]

    def exp(self, field: FunctionField, x: Fraction | Scalar) -> Fraction | fmpq:
        """exp(x) for a logit x as a Laurent monomial in the atoms (exactly: Σ c_m m = Σ (c_m L_m) m/L_m)."""
        nv = field.ctx.nvars()
        up, down = [0] * nv, [0] * nv
        for m, c in monomials(x, self.variables).items():
            if not any(m):
                continue  # the zero constant (checked when the atoms were made)
            power = c * self.scale[m]
            if power.q != 1:  # the atom scale makes every exponent an integer
                raise ValueError(
                    f"logit monomial {m} has exponent {power}, not an integer multiple of its atom"
                )
            (up if power > 0 else down)[self.index[m]] += abs(int(power.p))
        numerator = field.ctx.from_dict({tuple(up): 1})
        if not any(down):
            return Fraction(numerator, field.one) if any(up) else fmpq(1)
        return Fraction(numerator, field.ctx.from_dict({tuple(down): 1}))

    def values(self, alpha: Sequence[arb]) -> list[arb]:
        """The atoms' values at a point α (balls): exp(m(α)/L_m)."""
        out = []
        for m in self.monomials:
            term = arb(1)
            for a, e in zip(alpha, m):
                if e:
                    term *= a**e
            out.append((term / self.scale[m]).exp())
        return out


def _element(value: Any) -> Fraction | fmpq:
    """An element from a fraction, an fmpq, an integer (numpy's too) or a Python ``Fraction``."""
    if isinstance(value, (Fraction, fmpq)):
        return value
    if isinstance(value, (int, np.integer)):
        return fmpq(int(value))
    if hasattr(value, "numerator") and hasattr(value, "denominator"):
        return fmpq(int(value.numerator), int(value.denominator))
    raise TypeError(f"not an exact rational: {value!r}")


def _sign(x: Any) -> int | None:
    if isinstance(x, Fraction):
        return None  # a function of α: no single sign
    return (x > 0) - (x < 0)


def _no_float(x: Any) -> float:
    raise ValueError("a generic point has no float value")


class FieldArithmetic(ObjectArithmetic):
    """The ``rwtoolkit.models`` arithmetic of a :class:`FunctionField`: object arrays of fractions and fmpq constants.

    ``exp`` maps a logit to its atoms' monomial (``atoms``); with ``atoms=None`` it records its argument and
    returns 1 (the first pass, which only collects the logits). Comparisons are undecided (``sign`` None on a
    fraction), so ``predict`` is None.
    """

    def __init__(self, field: FunctionField, atoms: Atoms | None) -> None:
        self.field, self.atoms = field, atoms
        self.recorded: list[Fraction | Scalar] = []
        super().__init__("function field", _element, exp=self._exp_element, sign=_sign, to_float=_no_float)

    def _exp_element(self, x: Fraction | Scalar) -> Fraction | fmpq:
        if self.atoms is None:
            self.recorded.append(x)
            return fmpq(1)
        return self.atoms.exp(self.field, x)
