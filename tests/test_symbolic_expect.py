"""rwsymbolic._expect against plain per-input sums: exact_sum on both arithmetics, the group pass off zero init.

The oracles are independent of the engine: ``fractions.Fraction`` sums, and a per-input evaluation of the
reduced model written out here (logits x_jᵀ w_tok + μ c_j, softmax, f = V X S, z = e_yᵀ f), its loss
differentiated by SymPy for the gradients (docs/theory.md#reduction).
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import sympy as sp

from rwsymbolic._expect import exact_sum
from rwsymbolic._fastq import ARITHMETIC_ENV


@pytest.mark.parametrize("arithmetic", ["sympy", "flint"])
def test_exact_sum_equals_fraction_sums_with_and_without_other_terms(monkeypatch, arithmetic):
    """Rational terms summed exactly (0, 1, 2, 3, 5 and 8 of them, an odd count pairs one term over), symbols kept."""
    monkeypatch.setenv(ARITHMETIC_ENV, arithmetic)
    rng = random.Random(12)
    x, y = sp.symbols("x y")
    for n in (0, 1, 2, 3, 5, 8):
        fracs = [Fraction(rng.randint(-(10**12), 10**12), rng.randint(1, 10**9)) for _ in range(n)]
        terms = [sp.Rational(f.numerator, f.denominator) for f in fracs]
        total = sum(fracs, Fraction(0))
        expected = sp.Rational(total.numerator, total.denominator)
        assert exact_sum(terms) == expected, (arithmetic, n)
        mixed = [x, *terms[: n // 2], 3 * y, *terms[n // 2 :]]
        assert sp.expand(exact_sum(mixed) - (expected + x + 3 * y)) == 0, (arithmetic, n)
    assert exact_sum([x]) == x and exact_sum([x, y]) == x + y
    assert exact_sum([sp.Rational(1, 2), x]) == x + sp.Rational(1, 2)
