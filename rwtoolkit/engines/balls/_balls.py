"""Balls of the certified engine: typed outcomes, rigorous JSON export, precision scope and sign decisions.

A ball [m ± r] (flint ``arb``) contains the exact real it stands for. Three verdicts of the one vocabulary
(``rwtoolkit.io.Verdict``) come out of a certified check: holds at the sizes checked, written ``verified``
(every real in the balls satisfies the statement), ``refuted`` (none does), ``inconclusive`` (the balls are
too wide to tell; never a pass) (``rwtoolkit.io.CERTIFIED_WORDS``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal, Inexact, localcontext
from fractions import Fraction

from flint import arb, ctx, fmpq

#: The smallest working precision the engine accepts, in bits.
MIN_PREC = 16
#: The largest working precision the engine accepts, in bits.
MAX_PREC = 65536


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
    """rad / max(|mid|, 1): how wide a ball is, relative to its size (absolute below 1); inf if not finite.

    A ball beyond the float64 range gets its ratio in ball arithmetic (or inf), never NaN.

    >>> round(relative_radius(arb(3, 0.75)), 6), relative_radius(arb(10) ** 400) < 1e-15
    (0.25, True)
    >>> relative_radius(arb("0 +/- inf")), relative_radius(arb("nan")), relative_radius(arb(2) ** 2**70)
    (inf, inf, inf)
    """
    if not x.is_finite():
        return math.inf
    rad, mid = float(x.rad()), abs(float(x.mid()))
    if math.isfinite(rad) and math.isfinite(mid):
        return rad / max(mid, 1.0)
    value = float((x.rad() / abs(x.mid()).max(arb(1))).upper())
    return value if math.isfinite(value) else math.inf


#: The exported form of a ball that no float64 ball [mid ± rad] encloses (see ``ball_json``).
UNBOUNDED = {"mid": None, "rad": None, "unbounded": True}


def ball_json(x: arb) -> dict:
    """{"mid": m, "rad": r} with float64 m and r such that [m ± r] still contains the ball.

    m is the float nearest to the midpoint; r bounds |x - m| from above and is rounded up, so the
    exported ball encloses the exact value as the arb ball does. A ball that no float64 pair encloses
    (not finite: a NaN midpoint or an infinite radius, as at a precision too low for the run; or a
    midpoint or radius beyond the float64 range) is exported as ``UNBOUNDED``,
    {"mid": null, "rad": null, "unbounded": true}: the enclosure is the whole real line, never NaN or inf.

    >>> b = ball_json(arb(1) / 3)
    >>> abs(b["mid"] - 1 / 3) <= b["rad"] < 1e-15
    True
    >>> ball_json(arb("nan")), ball_json(arb("0 +/- inf")) == ball_json(arb(10) ** 400) == UNBOUNDED
    ({'mid': None, 'rad': None, 'unbounded': True}, True)
    """
    if x.is_finite():
        m = float(x.mid())
        if math.isfinite(m):
            upper = abs(x - arb(m)).upper()
            r = 0.0 if upper.is_zero() else math.nextafter(float(upper), math.inf)
            if math.isfinite(r):
                return {"mid": m, "rad": r}
    return dict(UNBOUNDED)


def _significant_digits(mid: Decimal, rad: Decimal) -> int:
    """Digits that resolve the ball: one below the radius's leading digit, between 3 and 12 (12 for a point)."""
    if rad == 0:
        return 12
    size = max(abs(mid), rad)
    return min(12, max(3, size.adjusted() - rad.adjusted() + 2))


def _decimal_text(value: Decimal) -> str:
    """A short decimal: fixed notation for magnitudes 1e-4..1e12, else scientific; no trailing zeros."""
    value = value.normalize()
    if value == 0:
        return "0"
    return format(value, "f") if -5 < value.adjusted() < 12 else format(value, "e")


def interval_text(ball: dict | None) -> str:
    """The exported ball ``ball_json(x)`` as an explicit interval "[lower, upper]", both ends rounded outward.

    The ends mid - rad and mid + rad are computed exactly from the float64 pair, then rounded down and
    up to a few significant digits (``_significant_digits``: more for a tighter ball), so the printed
    interval still contains the exact value. An unbounded ball prints as "(-∞, +∞)", a missing one
    (None) as "—".

    >>> interval_text({"mid": 0.5, "rad": 2**-10}), interval_text({"mid": 0.0, "rad": 1.25})
    ('[0.49902, 0.50098]', '[-1.25, 1.25]')
    >>> interval_text(ball_json(arb(0))), interval_text(ball_json(arb(1) / 4)), interval_text(UNBOUNDED)
    ('[0, 0]', '[0.25, 0.25]', '(-∞, +∞)')
    >>> interval_text(ball_json(arb(2) / 3 * 10**-20))
    '[6.66666666666e-21, 6.66666666667e-21]'
    """
    if ball is None:
        return "—"
    if ball.get("unbounded"):
        return "(-∞, +∞)"
    mid, rad = Decimal(ball["mid"]), Decimal(ball["rad"])  # exact: every float64 is a finite decimal
    with localcontext(Context(prec=2200, traps=[Inexact])):  # float64 sums need < 1200 digits: exact
        lo, hi = mid - rad, mid + rad
    digits = _significant_digits(mid, rad)
    lo = Context(prec=digits, rounding=ROUND_FLOOR).plus(lo)
    hi = Context(prec=digits, rounding=ROUND_CEILING).plus(hi)
    return f"[{_decimal_text(lo)}, {_decimal_text(hi)}]"


def ball_interval(x: arb) -> str:
    """``interval_text(ball_json(x))``: how an enclosure is printed in messages and reports.

    >>> ball_interval(arb("0.6 +/- 0.0517")), ball_interval(arb("nan"))
    ('[0.548, 0.652]', '(-∞, +∞)')
    """
    return interval_text(ball_json(x))
