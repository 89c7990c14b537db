"""Fast rigorous ball arithmetic in float64: midpoint-radius arrays whose every entry contains the exact real.

``FloatBalls`` holds two float64 numpy arrays of one shape, ``mid`` and ``rad`` (rad ≥ 0); each entry is the ball
[mid − rad, mid + rad]. Every operation returns balls that contain the exact real value of the operation applied to
every real in the input balls (S. M. Rump, "Fast and parallel interval arithmetic", BIT 39 (1999)): the midpoint is
the float result of the operation on the midpoints, the radius bounds the spread of the inputs' radii through the
operation plus the rounding error of the midpoint, and the radius is itself computed in floats so that its own
rounding is covered. :data:`FLOAT_BALLS` is the ``rwtoolkit.models.ExtendedArithmetic`` of these arrays (name
``"float-balls"``): the generic loop (``rwtoolkit.models.evaluate``, ``gradient_steps``) runs in it as in any
arithmetic, one numpy call per array operation instead of one Python call per element (the ``arb`` object arrays
of ``ball_arithmetic``).

The method and why it is sound (round-to-nearest float64, unit roundoff u = 2⁻⁵³, smallest subnormal η = 2⁻¹⁰⁷⁴):

- One rounded operation. For a real x whose float result is y = fl(x) (no overflow): |y − x| ≤ u|y| for a sum
  (a sum that lands in the subnormal range is exact), and |y − x| ≤ u|y| + η/2 for a product or quotient.
- The radius of + − × ÷ with a point constant and of the matrix product (Rump's midpoint-radius product):
  rad(a ± b) = r_a + r_b + u|mid|; rad(a·b) = |m_a| r_b + r_a (|m_b| + r_b) + u|mid| + η/2;
  rad(A @ B) = |A_m| r_B + r_A (|B_m| + r_B) + γ_k |A_m||B_m| + k η, with k the inner size and γ_k = ku/(1 − ku)
  the bound |fl(xᵀy) − xᵀy| ≤ γ_k |x|ᵀ|y| that holds for ANY order of summation and with or without fused
  multiply-adds (numpy's pairwise sums and the BLAS may use any); a sum over n entries has γ_(n−1) Σ|m| likewise.
- The radius computed in floats. Each radius above is a sum of products of non-negative floats; computed in
  round-to-nearest with j operations its float value Z satisfies (exact radius) ≤ Z (1 + u)^j + m η, where m counts
  the products that may underflow, and a product whose inputs are themselves rounded is only multiplied by
  non-negative terms whose own error is relative. ``_up(Z, j, m)`` returns fl(fl(Z (1 + (2j + 4) u)) + (m + 2) η),
  which is ≥ Z (1 + u)^j + m η: fl(Z f) ≥ Z f (1 − u) − η/2 and fl(p + T) ≥ (p + T)(1 − u), with
  (1 + (2j + 4)u)(1 − u)² ≥ (1 + u)^j for j < 10⁷ (every j here is below 10⁶).
- Division by a ball: the reciprocal of a ball not containing 0 is the interval [1/hi, 1/lo] of its endpoints (1/x
  is monotone), each endpoint rounded outward by one ``nextafter`` of the round-to-nearest result (nextafter(fl(x),
  ±∞) lies beyond x, in every range, subnormals included); then a product. A divisor ball containing 0, a logarithm
  of a ball reaching 0 or below, and any overflow give the ball of the whole line (mid 0, rad ∞): an enclosure of
  nothing certain, never a wrong one.
- exp without trusting libm: x = k ln 2 + r with k = rint(x / ln 2), ln 2 as a 42-bit HI (k·HI exact) plus LO and a
  bound δ on ln 2 − HI − LO (from flint ``arb`` at 200 bits, at import); |r| ≤ ρ = 0.3466 and r's rounding error
  ≤ 0.7u + 1076(2u|LO| + δ). exp(r) is the Taylor polynomial of degree 13 in Horner form: its rounding error is at
  most Σ_i γ_(2i+2) ρ^i / i! (Higham, Accuracy and Stability, §5.1; the +2 covers the coefficients 1/i! rounded to
  floats), the Lagrange remainder ρ^14 e^ρ / 14!, and r's error adds e^ρ (e^ε − 1); over exp(r) ≥ e^(−ρ) this is
  a relative bound C_EXP ≈ 7u (``EXP_RELATIVE``). Then 2^k as two exact powers of two built from their bits
  (IEEE multiplication by a power of two is exact unless the result is subnormal, then off by ≤ η/2). exp is
  exactly 1 at an exact 0. The image of a ball: exp is increasing, so exp([m − r, m + r]) ⊂ exp(m)·[e^(−r), e^r],
  and e^r − 1 ≤ r + r² for r ≤ 1; a wider ball takes exp at its two endpoints.
- log without trusting libm: x = m 2^e by ``frexp`` (exact), m in [1/√2, √2), log m = 2 atanh(s),
  s = (m − 1)/(m + 1) (m − 1 exact), |s| ≤ 0.1716, the series 2s Σ_(j≤10) s^(2j)/(2j + 1) in Horner form (the
  remainder ≤ 2|s| w^11 / (23 (1 − w)), w = s², below 10⁻¹⁸ relative); the rounding of s (γ_2, amplified at most
  by 2/(1 − s²) ≤ 2.07), of the series (γ_(2j+2) per term) and of the final product give a relative bound below
  6u, taken as 8u (``LOG_RELATIVE``); then e ln 2 as e·HI (exact) + e·LO with δ|e|, and u per rounded sum. The image
  of a ball [m − r, m + r] with m − r > 0: |log(m ± t) − log m| ≤ r / (m − r) (log z ≤ z − 1).
- sqrt: IEEE 754 prescribes a correctly rounded square root and numpy's ``sqrt`` is it, so √x is within u·fl(√x)
  of fl(√x), and the ends of [√lo, √hi] are rounded outward by ``nextafter`` (the part ≥ 0 of a ball that
  straddles 0, as the arb engine's ``nonnegative_part``).
- A rational constant (int, Fraction, fmpq, "p/q") becomes its nearest float (``float`` of a Fraction is
  correctly rounded) with radius u|f| + η/2, and radius 0 where the float is exactly the rational.

What the soundness assumes of the machine: numpy's float64 operations in IEEE 754 round-to-nearest (numpy's
default; no other rounding mode set, no flush-to-zero of subnormals), and a matrix product whose every entry is
some dot product of its row and column (any order, fused multiply-adds allowed; no Strassen-like fast algorithm:
OpenBLAS, MKL and numpy's own loops are such). It does not trust libm: exp and log are computed here from +, −, ×,
÷, ``rint`` and ``frexp``, which are exact or correctly rounded.

What it does not do: erf and π (GELU) are not implemented; the ``arb`` ball engine (``ball_arithmetic``) runs
GELU. Relative radii at points, measured on 10⁵ points over the float range: exp ≤ 2.1e-15, log ≤ 1.2e-15
(tests/test_float_balls.py pins 1e-14).

Besides the arithmetic: ``point`` (radius 0 at float data), ``hull`` (``FloatBalls.from_bounds``: a ball around
[lo, hi]), ``widest_radius``, ``norm2_upper`` (a rigorous upper bound of the 2-norm of the radii or of a float
array), ``to_arb`` / ``from_arb`` (object arrays of flint ``arb``, the enclosure kept by outward rounding).

>>> x = FLOAT_BALLS.asarray(["1/3", 2])
>>> y = FLOAT_BALLS.exp(x)
>>> bool(y.mid[1] - y.rad[1] <= 7.38905609893065 <= y.mid[1] + y.rad[1])
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np
from flint import arb, fmpq

from rwtoolkit.engines.balls._balls import precision
from rwtoolkit.engines.balls._engine import Undecided

#: The unit roundoff of round-to-nearest float64.
U = 2.0**-53
#: The smallest positive subnormal float64.
ETA = 2.0**-1074
_INF = np.inf


#: The most terms of one sum or dot product: ``_up``'s bound (1 + (2j + 4)u)(1 − u)² ≥ (1 + u)^j needs j < 10⁷.
_MAX_TERMS = 10**6


def _float_up(q: Fraction) -> float:
    """The smallest float ≥ the rational ``q`` (``float`` of a Fraction is correctly rounded)."""
    f = float(q)
    return f if Fraction(f) >= q else math.nextafter(f, math.inf)


@functools.lru_cache(maxsize=4096)
def gamma(n: int) -> float:
    """γ_n = n u / (1 − n u), rounded up: the relative error bound of n rounded operations in any order."""
    if n <= 0:
        return 0.0
    if n >= _MAX_TERMS:
        raise ValueError(
            f"float-balls: a sum or dot product of {n} terms; the rounding bounds hold below {_MAX_TERMS}"
        )
    u = Fraction(1, 2**53)
    return _float_up(n * u / (1 - n * u))


def _constants() -> tuple[float, float, float, float, float]:
    """ln 2 = HI + LO + δ-bounded rest, and the relative error bounds of ``_exp_point`` and ``_log_point``."""
    u = Fraction(1, 2**53)
    hi = Fraction(math.floor(0.6931471805599453 * 2**42), 2**42)  # 42 bits: k·HI is exact for |k| < 2^11
    with precision(200):
        ln2 = arb(2).log()
        rest = ln2 - arb(fmpq(hi.numerator, hi.denominator))
        lo = float(rest.mid())
        man, exp = abs(rest - arb(lo)).upper().man_exp()  # an exact upper bound of |ln 2 − HI − LO|
    delta = Fraction(int(man)) * Fraction(2) ** int(exp)
    # exp: r = x − k ln2, |r| ≤ ρ; Horner of the degree-13 Taylor polynomial; the remainder; r's rounding
    rho = Fraction(3466, 10000)
    n = 13
    e_rho = sum((rho**i / math.factorial(i) for i in range(40)), Fraction(0)) + Fraction(1, 10**30)
    horner = sum((Fraction(gamma(2 * i + 2)) * rho**i / math.factorial(i) for i in range(n + 1)), Fraction(0))
    remainder = rho ** (n + 1) / math.factorial(n + 1) * e_rho
    abs_lo = abs(Fraction(lo))
    eps_r = Fraction(7, 10) * u + 1076 * (2 * u * abs_lo + delta)
    r_error = e_rho * 2 * eps_r  # e^ρ (e^ε − 1) ≤ 2 e^ρ ε for ε < 1
    absolute = horner + remainder + r_error
    e_minus_rho = 1 / e_rho
    exp_relative = absolute / (e_minus_rho - absolute)
    log_constant = u * abs_lo + delta  # per unit of |e|: e·LO's rounding and ln 2's rest
    return float(hi), lo, _float_up(exp_relative), _float_up(log_constant), _float_up(Fraction(8) * u)


LN2_HI, LN2_LO, EXP_RELATIVE, _LOG_PER_E, LOG_RELATIVE = _constants()
_INV_LN2 = 1.4426950408889634
_EXP_DEGREE = 13
_EXP_COEFFS = [1.0 / math.factorial(i) for i in range(_EXP_DEGREE + 1)]
_LOG_TERMS = 10
_LOG_COEFFS = [1.0 / (2 * j + 1) for j in range(_LOG_TERMS + 1)]
#: exp(x) for x above this is reported as the whole line (it overflows float64 near 709.78).
_EXP_MAX = 709.78
#: exp(x) below this is in (0, η/2): the float 0 with radius η.
_EXP_MIN = -745.2


_F = TypeVar("_F", bound=Callable[..., Any])


def _quiet(fn: _F) -> _F:
    """``fn`` with numpy's floating-point warnings off: overflow and 0·∞ are expected here, and their balls become
    the whole line (``FloatBalls._checked``)."""

    @functools.wraps(fn)
    def quiet(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return quiet  # type: ignore[return-value]


def _up(z: Any, j: int, m: int) -> Any:
    """An upper bound of a radius whose float value ``z`` ≥ 0 came from ``j`` rounded operations, ``m`` of them
    products that may underflow (the module text: exact ≤ z (1 + u)^j + m η ≤ the result)."""
    return z * (1.0 + (2 * j + 4) * U) + (m + 2) * ETA


def _down(x: Any) -> Any:
    """A float ≤ the real that ``x`` (a round-to-nearest result) rounded."""
    return np.nextafter(x, -_INF)


def _upper(x: Any) -> Any:
    """A float ≥ the real that ``x`` (a round-to-nearest result) rounded."""
    return np.nextafter(x, _INF)


def _pow2(k: np.ndarray) -> np.ndarray:
    """2^k for integer k in [−1022, 1023], built from its bits (exact)."""
    return ((k.astype(np.int64) + 1023) << 52).view(np.float64)


def _exp_point(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """y, e with |exp(x) − y| ≤ e for every float x (the module text); y = ∞ where exp(x) overflows."""
    xc = np.clip(x, _EXP_MIN, _EXP_MAX)
    k = np.rint(xc * _INV_LN2)
    r = (xc - k * LN2_HI) - k * LN2_LO
    p = np.full(r.shape, _EXP_COEFFS[-1])
    for c in _EXP_COEFFS[-2::-1]:
        p = p * r + c
    ki = k.astype(np.int64)
    k1 = ki >> 1
    y = (p * _pow2(k1)) * _pow2(ki - k1)
    e = _up(EXP_RELATIVE * y, 1, 2)
    y = np.where(x > _EXP_MAX, _INF, np.where(x < _EXP_MIN, 0.0, y))
    e = np.where(x == 0, 0.0, np.where(x < _EXP_MIN, ETA, e))
    y = np.where(x == 0, 1.0, y)
    return y, e


def _log_point(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """y, e with |log(x) − y| ≤ e for every float x > 0 (the module text)."""
    m, ex = np.frexp(x)
    small = m < 0.7071067811865476
    m = np.where(small, 2.0 * m, m)
    ex = (ex - small).astype(np.float64)
    s = (m - 1.0) / (m + 1.0)
    w = s * s
    p = np.full(w.shape, _LOG_COEFFS[-1])
    for c in _LOG_COEFFS[-2::-1]:
        p = p * w + c
    q = (2.0 * s) * p
    t = ex * LN2_LO + q
    y = ex * LN2_HI + t
    e = _up(U * (np.abs(y) + np.abs(t)) + LOG_RELATIVE * np.abs(q) + np.abs(ex) * _LOG_PER_E, 4, 1)
    e = np.where(x == 1.0, 0.0, e)  # log 1 = 0 exactly
    return y, e


class FloatBalls:
    """Balls [mid − rad, mid + rad] in two float64 arrays of one shape (the module text); numpy's operators,
    indexing and shape methods, every result an enclosure.

    >>> a = FloatBalls(np.array([1.0, 2.0]), np.array([0.0, 0.5]))
    >>> (a * 3).mid.tolist(), bool((a * 3).rad[1] >= 1.5)
    ([3.0, 6.0], True)
    """

    __slots__ = ("mid", "rad")
    __array_ufunc__ = None  # numpy defers to FloatBalls' reflected operators: ndarray * FloatBalls works

    def __init__(self, mid: Any, rad: Any = None) -> None:
        self.mid = np.array(mid, dtype=np.float64)
        self.rad = np.zeros(self.mid.shape) if rad is None else np.array(rad, dtype=np.float64)
        if self.rad.shape != self.mid.shape:
            self.rad = np.array(np.broadcast_to(self.rad, self.mid.shape))
        if np.any(self.rad < 0) or np.isnan(self.rad).any():
            raise ValueError("FloatBalls: rad must be >= 0 everywhere")

    @classmethod
    def _make(cls, mid: Any, rad: Any) -> FloatBalls:
        out = object.__new__(cls)
        out.mid, out.rad = mid, rad
        return out

    @classmethod
    def _checked(cls, mid: Any, rad: Any) -> FloatBalls:
        """The balls, where a midpoint or radius is not finite (overflow, a pole) the whole line (mid 0, rad ∞)."""
        # the sums are ∞ or NaN where an entry is (or where they overflow: then the slow check finds nothing)
        if not math.isfinite(float(np.add.reduce(mid, axis=None)) + float(np.add.reduce(rad, axis=None))):
            bad = ~(np.isfinite(mid) & np.isfinite(rad))
            mid = np.where(bad, 0.0, mid)
            rad = np.where(bad, _INF, rad)
        return cls._make(mid, rad)

    @classmethod
    @_quiet
    def from_bounds(cls, lo: Any, hi: Any) -> FloatBalls:
        """The smallest-radius float ball found that contains every [lo, hi] (floats, lo ≤ hi)."""
        lo = np.asarray(lo, dtype=np.float64)
        hi = np.asarray(hi, dtype=np.float64)
        mid = 0.5 * lo + 0.5 * hi
        wide = np.maximum(hi - mid, mid - lo)  # a difference of floats rounds to 0 only where it is 0
        rad = np.where(wide == 0, 0.0, _upper(wide))
        return cls._checked(mid, rad)

    # shape --------------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(np.shape(self.mid))

    @property
    def ndim(self) -> int:
        return int(np.ndim(self.mid))

    @property
    def size(self) -> int:
        return int(np.size(self.mid))

    def __len__(self) -> int:
        return len(self.mid)

    def __repr__(self) -> str:
        return f"FloatBalls(mid={self.mid!r}, rad={self.rad!r})"

    def __getitem__(self, index: Any) -> FloatBalls:
        return FloatBalls._make(self.mid[index], self.rad[index])

    def __setitem__(self, index: Any, value: Any) -> None:
        v = _balls(value)
        self.mid[index] = v.mid
        self.rad[index] = v.rad

    def reshape(self, *shape: Any) -> FloatBalls:
        return FloatBalls._make(self.mid.reshape(*shape), self.rad.reshape(*shape))

    def swapaxes(self, a: int, b: int) -> FloatBalls:
        return FloatBalls._make(self.mid.swapaxes(a, b), self.rad.swapaxes(a, b))

    def transpose(self, *axes: Any) -> FloatBalls:
        return FloatBalls._make(self.mid.transpose(*axes), self.rad.transpose(*axes))

    @property
    def T(self) -> FloatBalls:
        return self.transpose()

    def copy(self) -> FloatBalls:
        return FloatBalls._make(np.array(self.mid), np.array(self.rad))

    @_quiet
    def sum(self, axis: Any = None, keepdims: bool = False) -> FloatBalls:
        """The sum over ``axis`` (None: all), its rounding γ_(n−1) Σ|mid| covered."""
        mid = np.sum(self.mid, axis=axis, keepdims=keepdims)
        n = (
            self.size
            if axis is None
            else math.prod(self.mid.shape[a] for a in ((axis,) if isinstance(axis, int) else axis))
        )
        if n <= 1:
            return FloatBalls._make(
                np.asarray(mid), np.asarray(np.sum(self.rad, axis=axis, keepdims=keepdims))
            )
        z = np.sum(self.rad, axis=axis, keepdims=keepdims) + gamma(n - 1) * np.sum(
            np.abs(self.mid), axis=axis, keepdims=keepdims
        )
        return FloatBalls._checked(np.asarray(mid), np.asarray(_up(z, n + 1, 2)))

    # arithmetic ---------------------------------------------------------------------------------
    def __float__(self) -> float:
        """The midpoint of a one-entry ball (as ``float`` of an ``arb``)."""
        return float(np.asarray(self.mid).reshape(-1)[0]) if self.size == 1 else float(self.mid)

    def __abs__(self) -> FloatBalls:
        """|x|: the ball (|mid|, rad) contains it, as ||x| − |mid|| ≤ |x − mid|."""
        return FloatBalls._make(np.abs(self.mid), self.rad)

    def __neg__(self) -> FloatBalls:
        return FloatBalls._make(-self.mid, self.rad)

    def __pos__(self) -> FloatBalls:
        return self

    def __add__(self, other: Any) -> FloatBalls:
        return _add(self, other, 1.0)

    def __radd__(self, other: Any) -> FloatBalls:
        return _add(self, other, 1.0)

    def __sub__(self, other: Any) -> FloatBalls:
        return _add(self, other, -1.0)

    def __rsub__(self, other: Any) -> FloatBalls:
        return _add(-self, other, 1.0)

    def __mul__(self, other: Any) -> FloatBalls:
        return _mul(self, other)

    def __rmul__(self, other: Any) -> FloatBalls:
        return _mul(self, other)

    @_quiet
    def __truediv__(self, other: Any) -> FloatBalls:
        p = _point(other)
        if p is not None:
            mid = self.mid / p
            return FloatBalls._checked(mid, _up(self.rad / np.abs(p) + U * np.abs(mid), 3, 3))
        return _mul(self, _reciprocal(_balls(other)))

    def __rtruediv__(self, other: Any) -> FloatBalls:
        return _mul(_reciprocal(self), other)

    def __matmul__(self, other: Any) -> FloatBalls:
        return _matmul(self, other)

    def __rmatmul__(self, other: Any) -> FloatBalls:
        return _matmul(other, self)

    # bounds ---------------------------------------------------------------------------------------
    @_quiet
    def lower(self) -> np.ndarray:
        """A float lower bound of every entry."""
        return _down(self.mid - self.rad)

    @_quiet
    def upper(self) -> np.ndarray:
        """A float upper bound of every entry."""
        return _upper(self.mid + self.rad)

    def contains(self, x: Any) -> np.ndarray:
        """Whether each float ``x`` lies in its ball (elementwise)."""
        x = np.asarray(x, dtype=np.float64)
        return (self.lower() <= x) & (x <= self.upper())


def _point(x: Any) -> np.ndarray | float | None:
    """``x`` as exact float64 data when it is one (a float, a small int, a float or small-int array), else None."""
    if isinstance(x, FloatBalls):
        return None
    if isinstance(x, (float, np.floating)):
        return float(x)
    if isinstance(x, (bool, np.bool_)):
        return float(x)
    if isinstance(x, (int, np.integer)):
        return float(x) if abs(int(x)) <= 2**53 else None
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "f":
            return x.astype(np.float64, copy=False)
        if x.dtype.kind in "iub":
            if x.size and np.abs(x).max() > 2**53:
                return None
            return x.astype(np.float64)
    return None


def _balls(x: Any) -> FloatBalls:
    """Any operand as balls: FloatBalls as they are, float data as points, rationals converted (``asarray``)."""
    if isinstance(x, FloatBalls):
        return x
    p = _point(x)
    if p is not None:
        a = np.asarray(p, dtype=np.float64)
        return FloatBalls._make(a, np.zeros(a.shape))
    return FLOAT_BALLS.asarray(x)


@_quiet
def _add(a: FloatBalls, other: Any, sign: float) -> FloatBalls:
    p = _point(other)
    if p is not None:
        mid = a.mid + p if sign > 0 else a.mid - p
        return FloatBalls._checked(mid, _up(a.rad + U * np.abs(mid), 2, 1))
    b = _balls(other)
    mid = a.mid + b.mid if sign > 0 else a.mid - b.mid
    return FloatBalls._checked(mid, _up(a.rad + b.rad + U * np.abs(mid), 3, 1))


@_quiet
def _mul(a: FloatBalls, other: Any) -> FloatBalls:
    p = _point(other)
    if p is not None:
        mid = a.mid * p
        return FloatBalls._checked(mid, _up(a.rad * np.abs(p) + U * np.abs(mid), 3, 3))
    b = _balls(other)
    mid = a.mid * b.mid
    z = np.abs(a.mid) * b.rad + a.rad * (np.abs(b.mid) + b.rad) + U * np.abs(mid)
    return FloatBalls._checked(mid, _up(z, 5, 4))


@_quiet
def _reciprocal(b: FloatBalls) -> FloatBalls:
    """1/b: the interval of the endpoints' reciprocals, outward; the whole line where b contains 0."""
    m = np.abs(b.mid)
    lo = _down(m - b.rad)
    hi = _upper(m + b.rad)
    bad = ~(lo > 0)
    safe_lo = np.where(bad, 1.0, lo)
    out = FloatBalls.from_bounds(_down(1.0 / hi), _upper(1.0 / safe_lo))
    mid = np.where(b.mid < 0, -out.mid, out.mid)
    mid = np.where(bad, 0.0, mid)
    rad = np.where(bad, _INF, out.rad)
    return FloatBalls._make(mid, rad)


@_quiet
def _matmul(a: Any, b: Any) -> FloatBalls:
    """Rump's midpoint-radius product (the module text)."""
    pa, pb = _point(a), _point(b)
    A = None if pa is not None else _balls(a)
    B = None if pb is not None else _balls(b)
    if A is not None and not A.rad.any():  # a point: its radius term is 0
        pa, A = A.mid, None
    if B is not None and not B.rad.any():
        pb, B = B.mid, None
    Am = np.asarray(pa if A is None else A.mid)
    Bm = np.asarray(pb if B is None else B.mid)
    k = int(Am.shape[-1])
    mid = Am @ Bm
    absA, absB = np.abs(Am), np.abs(Bm)
    z = gamma(k) * (absA @ absB)
    if B is not None:
        z = z + absA @ B.rad
    if A is not None:
        z = z + A.rad @ (absB if B is None else absB + B.rad)
    return FloatBalls._checked(np.asarray(mid), np.asarray(_up(z, k + 4, 4 * k + 4)))


def _whole_where(bad: np.ndarray, mid: np.ndarray, rad: np.ndarray) -> FloatBalls:
    if bad.any():
        mid = np.where(bad, 0.0, mid)
        rad = np.where(bad, _INF, rad)
    return FloatBalls._checked(mid, rad)


@_quiet
def _exp(a: FloatBalls) -> FloatBalls:
    r = a.rad
    if not r.size or float(r.max()) <= 1.0:
        y, e = _exp_point(a.mid)
        spread = r + r * r  # e^r − 1 ≤ r + r² for r ≤ 1
        z = e + (y + e) * spread
        rad = np.where(z == 0, 0.0, _up(z, 6, 2))  # z = 0: an exact 0 in, the exact 1 out
        return FloatBalls._checked(y, rad)
    ylo, elo = _exp_point(_down(a.mid - r))
    yhi, ehi = _exp_point(_upper(a.mid + r))
    return FloatBalls.from_bounds(np.maximum(_down(ylo - elo), 0.0), _upper(yhi + ehi))


@_quiet
def _log(a: FloatBalls) -> FloatBalls:
    lo = _down(a.mid - a.rad)
    bad = ~(lo > 0)
    x = np.where(bad, 1.0, a.mid)
    y, e = _log_point(x)
    z = e + a.rad / np.where(bad, 1.0, lo)
    rad = np.where(z == 0, 0.0, _up(z, 2, 1))  # z = 0: an exact 1 in, the exact 0 out
    return _whole_where(bad, y, rad)


@_quiet
def _sqrt(a: FloatBalls) -> FloatBalls:
    if not a.rad.any():
        m = a.mid
        bad = m < 0
        mid = np.sqrt(np.where(bad, 0.0, m))
        return _whole_where(bad, mid, U * mid)
    hi = _upper(a.mid + a.rad)
    lo = np.maximum(_down(a.mid - a.rad), 0.0)
    bad = hi < 0
    hi = np.where(bad, 0.0, hi)
    out = FloatBalls.from_bounds(np.maximum(_down(np.sqrt(lo)), 0.0), _upper(np.sqrt(hi)))
    return _whole_where(bad, out.mid, out.rad)


def _rational(x: Any) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    if isinstance(x, str):
        return Fraction(x.strip())
    if isinstance(x, fmpq):
        return Fraction(int(x.p), int(x.q))
    if hasattr(x, "p") and hasattr(x, "q"):  # SymPy Rational
        return Fraction(int(x.p), int(x.q))
    raise ValueError(f"float-balls: cannot read {x!r} as an exact rational or a float")


def _element(x: Any) -> tuple[float, float]:
    """(mid, rad) of one scalar: a float exactly, a rational as its nearest float and a radius covering it."""
    if isinstance(x, (float, np.floating)):
        return float(x), 0.0
    if isinstance(x, arb):
        ball = from_arb(np.array([x], dtype=object))
        return float(ball.mid[0]), float(ball.rad[0])
    q = _rational(x)
    try:
        f = float(q)
    except OverflowError:
        return 0.0, math.inf
    if Fraction(f) == q:
        return f, 0.0
    return f, float(_up(np.float64(U * abs(f)), 1, 1))


class FloatBallArithmetic:
    """The ``rwtoolkit.models.ExtendedArithmetic`` of :class:`FloatBalls` (the module text): ``FLOAT_BALLS``.

    >>> ar = FLOAT_BALLS
    >>> s = ar.softmax(ar.asarray([[0, "1/2"]]))
    >>> bool(abs(float(s.mid[0, 0]) - 0.3775406687981454) < 1e-15 and s.rad[0, 0] < 1e-15)
    True
    """

    name = "float-balls"
    exact = False

    def asarray(self, values: Any) -> FloatBalls:
        """Balls of nested lists or arrays of floats (exact), ints, Fractions, fmpq, "p/q" strings, arb balls."""
        if isinstance(values, FloatBalls):
            return values
        p = _point(values)
        if p is not None:
            a = np.array(p, dtype=np.float64)
            return FloatBalls._make(a, np.zeros(a.shape))
        raw = np.asarray(values, dtype=object)
        mid = np.empty(raw.shape)
        rad = np.empty(raw.shape)
        for index, value in np.ndenumerate(raw):
            mid[index], rad[index] = _element(value)
        return FloatBalls._make(mid, rad)

    def zeros(self, shape: Sequence[int]) -> FloatBalls:
        return FloatBalls._make(np.zeros(tuple(shape)), np.zeros(tuple(shape)))

    def exp(self, a: Any) -> FloatBalls:
        return _exp(_balls(a))

    def log(self, a: Any) -> FloatBalls:
        return _log(_balls(a))

    def sqrt(self, a: Any) -> FloatBalls:
        """√ of the part ≥ 0 of each ball (the protocol's domain); a ball entirely < 0 gives the whole line."""
        return _sqrt(_balls(a))

    def erf(self, a: Any) -> FloatBalls:
        raise ValueError(
            "gelu: the float-balls arithmetic has no certified erf; use the arb ball engine "
            "(rwtoolkit.engines.balls.ball_arithmetic)"
        )

    def pi(self) -> FloatBalls:
        raise ValueError(
            "gelu: the float-balls arithmetic has no certified pi; use the arb ball engine "
            "(rwtoolkit.engines.balls.ball_arithmetic)"
        )

    def _shifted(self, a: FloatBalls, keep: np.ndarray | None) -> FloatBalls:
        """a − c with c the float max of each row's (kept) midpoints: softmax(a − c) = softmax(a) exactly."""
        m = a.mid if keep is None else np.where(keep, a.mid, -_INF)
        c = m.max(axis=-1, keepdims=True)
        if keep is None:
            return a - c
        return FloatBalls._make(np.where(keep, a.mid, c), np.where(keep, a.rad, 0.0)) - c

    def softmax(self, a: Any) -> FloatBalls:
        e = _exp(self._shifted(_balls(a), None))
        return e / e.sum(axis=-1, keepdims=True)

    def masked_softmax(self, a: Any, mask: np.ndarray) -> FloatBalls:
        """The softmax over the kept entries; the left-out entries exactly 0."""
        A = _balls(a)
        keep = np.broadcast_to(np.asarray(mask, dtype=bool), A.shape)
        e = _exp(self._shifted(A, keep))
        e = FloatBalls._make(np.where(keep, e.mid, 0.0), np.where(keep, e.rad, 0.0))
        out = e / e.sum(axis=-1, keepdims=True)
        return FloatBalls._make(np.where(keep, out.mid, 0.0), np.where(keep, out.rad, 0.0))

    def log_softmax(self, a: Any) -> FloatBalls:
        shifted = self._shifted(_balls(a), None)
        return shifted - _log(_exp(shifted).sum(axis=-1, keepdims=True))

    def concat(self, arrays: Sequence[Any], axis: int) -> FloatBalls:
        parts = [_balls(x) for x in arrays]
        return FloatBalls._make(
            np.concatenate([p.mid for p in parts], axis=axis),
            np.concatenate([p.rad for p in parts], axis=axis),
        )

    def sum(self, a: Any, axis: int | tuple[int, ...], keepdims: bool = False) -> FloatBalls:
        return _balls(a).sum(axis=axis, keepdims=keepdims)

    def apply(self, fn: Callable[[Any], Any], a: Any) -> Any:
        return fn(a)

    def sign(self, x: Any) -> int | None:
        """The certified sign of one ball (-1, 0 for an exact 0, 1), or None where it straddles 0."""
        b = _balls(x)
        m, r = float(np.asarray(b.mid).reshape(-1)[0]), float(np.asarray(b.rad).reshape(-1)[0])
        if m > r:
            return 1
        if -m > r:
            return -1
        return 0 if m == 0 and r == 0 else None

    def positive(self, a: Any) -> FloatBalls:
        """1 where an entry is certainly > 0, 0 where certainly ≤ 0 (< 0, or an exact 0); ``Undecided`` naming
        the entry where a ball straddles 0 (a ReLU's input)."""
        A = _balls(a)
        on = A.mid > A.rad
        off = (-A.mid > A.rad) | ((A.mid == 0) & (A.rad == 0))
        open_ = ~(on | off)
        if open_.any():
            index = tuple(int(i) for i in np.argwhere(open_)[0])
            m, r = float(A.mid[index]), float(A.rad[index])
            raise Undecided(
                f"a ReLU input straddles 0 (entry {index} ∈ [{m - r:.3g}, {m + r:.3g}])",
                settled=bool(r <= 2.0**-64 * max(1.0, abs(m))),
            )
        on_f = on.astype(np.float64)
        return FloatBalls._make(on_f, np.zeros(on_f.shape))

    def to_float(self, a: Any) -> np.ndarray:
        return np.array(_balls(a).mid, dtype=np.float64)

    def predict(self, f: Any) -> np.ndarray | None:
        """The smallest index among the maximal entries of each row, or None where the balls cannot decide it:
        the row's largest midpoint must be certainly above every other entry."""
        F = _balls(f)
        best = np.argmax(F.mid, axis=-1)
        rows = np.arange(F.shape[0])
        d = F - F[rows, best][:, None]
        below = d.mid < -d.rad
        below[rows, best] = True
        return best if bool(below.all()) else None


#: The float64 ball arithmetic (``"float-balls"``).
FLOAT_BALLS = FloatBallArithmetic()


def point(x: Any) -> FloatBalls:
    """Balls of radius 0 at float64 data ``x``."""
    a = np.array(x, dtype=np.float64)
    return FloatBalls._make(a, np.zeros(a.shape))


def hull(lo: Any, hi: Any) -> FloatBalls:
    """Balls containing [lo, hi] entrywise (floats, lo ≤ hi): ``FloatBalls.from_bounds``; one line where lo > hi."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    wrong = ~(lo <= hi)
    if wrong.any():
        index = tuple(int(i) for i in np.argwhere(wrong)[0]) if wrong.ndim else ()
        raise ValueError(f"hull: lo must be <= hi entrywise, entry {index} has lo > hi (or NaN)")
    return FloatBalls.from_bounds(lo, hi)


def widest_radius(a: Any) -> float:
    """The largest radius of ``a`` (0.0 for an empty array)."""
    r = _balls(a).rad
    return float(r.max()) if r.size else 0.0


@_quiet
def norm2_upper(x: Any) -> float:
    """An upper bound of the Euclidean norm of the radii of ``x`` (FloatBalls), or of ``x`` itself (a float
    array), the float rounding covered: the entries scaled by an exact power of two, the sum of squares with
    ``_up``, √ correctly rounded and rounded up once more."""
    v = np.abs(x.rad if isinstance(x, FloatBalls) else np.asarray(x, dtype=np.float64)).reshape(-1)
    if not v.size:
        return 0.0
    top = float(v.max())
    if top == 0.0:
        return 0.0
    if not math.isfinite(top):
        return math.inf
    _, e = math.frexp(top)  # top < 2^e, −1073 ≤ e ≤ 1024
    half = e // 2
    # v 2^−e in two exact powers of two (each within the float range): exact, or off by ≤ η/2 per step where an
    # entry falls below the smallest normal; then Σ (v 2^−e)² ≤ n, each square and sum rounded (``_up``)
    scaled = (v * 2.0 ** (-half)) * 2.0 ** (half - e)
    n = int(v.size)
    if n >= _MAX_TERMS:
        raise ValueError(f"norm2_upper: {n} entries; the rounding bounds hold below {_MAX_TERMS}")
    s = float(_up(np.float64(np.sum(scaled * scaled)), n + 2, 4 * n))
    root = math.nextafter(math.sqrt(s), math.inf)  # IEEE sqrt is correctly rounded: one step up covers it
    return math.nextafter((root * 2.0 ** (e - half)) * 2.0**half, math.inf)


def to_arb(a: Any) -> np.ndarray:
    """An object array of flint ``arb`` balls containing each ball of ``a`` (float mid exact, radius rounded up)."""
    A = _balls(a)
    out = np.empty(A.shape, dtype=object)
    for index in np.ndindex(*A.shape):
        out[index] = arb(float(A.mid[index]), float(A.rad[index]))
    return out


def from_arb(x: Any) -> FloatBalls:
    """Float balls containing each ``arb`` of an object array (or one ``arb``): the ends rounded outward."""
    raw = np.asarray(x, dtype=object)
    lo = np.empty(raw.shape)
    hi = np.empty(raw.shape)
    for index, value in np.ndenumerate(raw):
        b = value if isinstance(value, arb) else arb(value)
        if not b.is_finite():
            lo[index], hi[index] = -math.inf, math.inf
            continue
        lower, upper = b.lower(), b.upper()
        f, g = float(lower), float(upper)
        if arb(f) > lower:
            f = math.nextafter(f, -math.inf)
        if arb(g) < upper:
            g = math.nextafter(g, math.inf)
        lo[index], hi[index] = f, g
    return FloatBalls.from_bounds(lo, hi)


__all__ = [
    "ETA",
    "EXP_RELATIVE",
    "FLOAT_BALLS",
    "LOG_RELATIVE",
    "U",
    "FloatBallArithmetic",
    "FloatBalls",
    "from_arb",
    "gamma",
    "hull",
    "norm2_upper",
    "point",
    "to_arb",
    "widest_radius",
]
