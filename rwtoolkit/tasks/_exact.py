"""Parsing of exact parameters: numbers become SymPy rationals, names become symbols."""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from numbers import Number

import sympy as sp

from rwtoolkit.io import exact_text

# Every symbol the toolkit creates is real: p, η, ε, μ are real parameters of the paper.
_SYMBOLS: dict[str, sp.Symbol] = {}


def symbol(name: str) -> sp.Symbol:
    """The real SymPy symbol called ``name`` (one object per name, so expressions compare equal)."""
    if name not in _SYMBOLS:
        _SYMBOLS[name] = sp.Symbol(name, real=True)
    return _SYMBOLS[name]


#: Names read as constants elsewhere (NaN, infinities, i, e, π): refused as a symbol's name.
NOT_SYMBOL_NAMES = frozenset({"nan", "NaN", "inf", "Inf", "infinity", "oo", "zoo", "I", "E", "pi"})


def check_symbol_names(identifiers: Iterable[str], name: str, value: object) -> None:
    """Refuse, in one line naming ``name``, a constant's name (``NOT_SYMBOL_NAMES``) among the ``identifiers``
    of ``value`` that would become symbols.

    >>> check_symbol_names(["p", "pi"], "p", "1-pi")
    Traceback (most recent call last):
    ValueError: p='1-pi': pi names a constant, not a symbol; give a number, or a symbol such as p
    """
    reserved = sorted(set(identifiers) & NOT_SYMBOL_NAMES)
    if reserved:
        raise ValueError(
            f"{name}={value!r}: {reserved[0]} names a constant, not a symbol; give a number, or a symbol such as p"
        )


def exact(value: object, name: str) -> sp.Expr:
    """Turn ``value`` into an exact SymPy number or expression.

    Accepted: int, Fraction (the exact numbers ``rwtoolkit.io.read_data_file`` reads from a file), SymPy
    expressions, strings such as ``"7/10"``, ``"0.1"`` (read as the decimal 1/10), ``"1e-400"`` or a
    symbol name such as ``"p"``, and floats, which are read through their shortest repr (0.1 -> 1/10),
    because that is what a person who typed 0.1 meant.

    >>> exact("7/10", "p"), exact(0.1, "eps"), exact("p", "p"), exact("1e-400", "alpha") == sp.Rational(1, 10**400)
    (7/10, 1/10, p, True)
    """
    if isinstance(value, sp.Basic):
        return value
    if isinstance(value, bool):
        raise ValueError(f"{name}={value!r} is not a number")
    if isinstance(value, int):
        return sp.Integer(value)
    if isinstance(value, Fraction):
        return sp.Rational(value.numerator, value.denominator)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{name}={value!r} is not a finite number")
        return sp.Rational(repr(value))
    if isinstance(value, Number):
        return sp.Rational(str(value))
    if isinstance(value, str):
        text = value.strip()
        if text.isidentifier():
            check_symbol_names([text], name, value)
            return symbol(text)
        try:
            number = exact_text(text)  # digits and exponent bounded: "1e-1000000000" is refused, not computed
        except ValueError as err:  # "1/0" must be a user error too
            raise ValueError(
                f"{name}={value!r} {err}: give an integer, a rational such as 7/10, "
                "a decimal such as 0.1, or a symbol name"
            ) from None
        return sp.Rational(number.numerator, number.denominator)
    raise ValueError(f"{name}={value!r} has unsupported type {type(value).__name__}")


def is_numeric(value: sp.Expr) -> bool:
    """True when ``value`` has no free symbols (so it can be compared and turned into a float)."""
    return not value.free_symbols


def check_in_unit_interval(value: sp.Expr, name: str) -> None:
    """Raise ``ValueError`` if a numeric ``value`` lies outside [0, 1]; symbols pass unchecked."""
    if is_numeric(value) and not (0 <= value <= 1):
        raise ValueError(f"{name}={value} is outside [0, 1]")
