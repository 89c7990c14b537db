"""Balls of the certified engine: typed outcomes, rigorous JSON export, precision scope and sign decisions.

A ball [m ± r] (flint ``arb``) contains the exact real it stands for. Three outcomes come out of a
certified check: ``verified`` (every real in the balls satisfies the statement), ``refuted`` (none
does), ``inconclusive`` (the balls are too wide to tell); an inconclusive check is never a pass.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from fractions import Fraction

from flint import arb, ctx, fmpq

#: The precision range the engine accepts, in bits.
MIN_PREC, MAX_PREC = 16, 65536


class Outcome(StrEnum):
    """The result of a certified check; only ``VERIFIED`` is a pass.

    >>> Outcome.VERIFIED.passed, Outcome.INCONCLUSIVE.passed, Outcome.REFUTED.value
    (True, False, 'refuted')
    """

    VERIFIED = "verified"
    REFUTED = "refuted"
    INCONCLUSIVE = "inconclusive"

    @property
    def passed(self) -> bool:
        """True for ``VERIFIED`` only."""
        return self is Outcome.VERIFIED


@contextmanager
def precision(bits: int) -> Iterator[None]:
    """Run the body at ``bits`` of working precision (flint's global ``ctx.prec``), then restore it."""
    if isinstance(bits, bool) or not isinstance(bits, int) or not MIN_PREC <= bits <= MAX_PREC:
        raise ValueError(f"prec={bits!r} is out of range: must be an integer in [{MIN_PREC}, {MAX_PREC}]")
    saved = ctx.prec
    ctx.prec = bits
    try:
        yield
    finally:
        ctx.prec = saved


def exact_ball(value: Fraction | int) -> arb:
    """The ball of an exact rational (radius 0 when the binary expansion is finite at the working precision)."""
    q = Fraction(value)
    return arb(fmpq(q.numerator, q.denominator))


def is_exact_zero(x: arb) -> bool:
    """True when the ball is exactly {0} (midpoint 0, radius 0): the real it encloses is 0.

    >>> is_exact_zero(arb(0)), is_exact_zero(arb(0) * arb("1 +/- 1e-30")), is_exact_zero(arb("0 +/- 1e-30"))
    (True, True, False)
    """
    return x.is_exact() and x.is_zero()


def sign(x: arb) -> int | None:
    """The certified sign of the real in ``x`` (1, -1 or 0 for the exact ball {0}), None when undecided.

    >>> sign(arb(2)), sign(arb("-1 +/- 0.5")), sign(arb(0)), sign(arb("0 +/- 1e-9")) is None
    (1, -1, 0, True)
    """
    if x > 0:
        return 1
    if x < 0:
        return -1
    return 0 if is_exact_zero(x) else None


def relative_radius(x: arb) -> float:
    """rad / max(|mid|, 1): how wide a ball is, relative to its size (absolute below 1); inf if not finite."""
    if not x.is_finite():
        return math.inf
    return float(x.rad()) / max(abs(float(x.mid())), 1.0)


def ball_json(x: arb) -> dict[str, float]:
    """{"mid": m, "rad": r} with float64 m and r such that [m ± r] still contains the ball.

    m is the float nearest to the midpoint; r bounds |x - m| from above and is rounded up, so the
    exported ball encloses the exact value as the arb ball does.

    >>> b = ball_json(arb(1) / 3)
    >>> abs(b["mid"] - 1 / 3) <= b["rad"] < 1e-15
    True
    """
    if not x.is_finite():
        raise ValueError(f"cannot export a non-finite ball {x}")
    m = float(x.mid())
    if not math.isfinite(m):
        raise ValueError(f"the ball {x} is outside the float64 range")
    upper = abs(x - arb(m)).upper()
    r = 0.0 if upper.is_zero() else math.nextafter(float(upper), math.inf)
    return {"mid": m, "rad": r}
