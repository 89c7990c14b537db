"""Benchmark: V(1) of Lemma C.1 with symbolic p by transfer matrices, against population enumeration.

V(1) = -η ℓ'(0) E[e_y (X·1/N)ᵀ] = (η/(εNK)) Σ_{m=1}^{N-1} (Πᵀ)^m for the log-loss. The structured path
(rwtoolkit.engines.exact.label_token_sum) costs O(N·K) polynomial operations; enumeration sums over K·2^(N-1) walks.
Target: K = 8, N = 64 with symbolic p in under 10 s. Run by hand:

    .venv/bin/python benchmarks/symbolic_v1.py
"""

from __future__ import annotations

import math
import time

import sympy as sp

from rwtoolkit.engines.exact import label_token_sum, signal_matrix, signal_report, vanishing_set
from rwtoolkit.engines.exact.engine._moments import _displacement_laws, _offset_sums
from rwtoolkit.tasks import CircleWalk, symbol


def _clear_caches() -> None:
    """Time every run from scratch: the structured path caches displacement laws per (K, N, p)."""
    _displacement_laws.cache_clear()
    _offset_sums.cache_clear()


def structured_v1(K: int, N: int) -> tuple[float, sp.Matrix]:
    """Seconds to get V(1) with symbolic p, η, ε, and the matrix."""
    _clear_caches()
    eta, eps = symbol("eta"), symbol("eps")
    start = time.perf_counter()
    V1 = label_token_sum(CircleWalk(K, N, "p")) * eta / (eps * N)
    return time.perf_counter() - start, V1


def enumerated_label_token_sum(K: int, N: int) -> tuple[float, sp.Matrix]:
    """Seconds for E[e_y (X·1)ᵀ] by enumerating the population (via the signal's enumeration path)."""
    start = time.perf_counter()
    C = signal_matrix(CircleWalk(K, N, "p"), "enumerate")
    # E[e_y x̄ᵀ] = C + (1/K²)11ᵀ; E[e_y (X·1)ᵀ] = (N-1)·E[e_y x̄ᵀ]
    total = ((C + sp.ones(K, K) / K**2) * (N - 1)).applyfunc(sp.expand)
    return time.perf_counter() - start, total


def main() -> None:
    K, N = 8, 64
    seconds, V1 = structured_v1(K, N)
    eta, eps = symbol("eta"), symbol("eps")
    # Sanity (exact): every column of Σ_{m<N} (Πᵀ)^m sums to N-1 because Π is stochastic.
    column = sp.expand(sum(V1[:, 0]) * eps * N * K / eta)
    assert column == N - 1, column
    print(
        f"V(1), symbolic p (and η, ε), K={K}, N={N}: {seconds:.3f} s (target < 10 s); "
        f"entry degree {sp.Poly(V1[1, 0] * eps / eta, symbol('p')).degree()} in p"
    )

    _clear_caches()
    start = time.perf_counter()
    report = signal_report(CircleWalk(K, N, "p"))
    print(
        f"signal report (C, factored entries, vanishing set), K={K}, N={N}: "
        f"{time.perf_counter() - start:.2f} s; vanishing set: {report.vanishing}"
    )
    start = time.perf_counter()
    vs = vanishing_set((K, 65))
    print(f"vanishing set alone, K={K}, N=65: {time.perf_counter() - start:.2f} s -> {vs}")

    print("\nenumeration baseline (K·2^(N-1) walks), symbolic p, and the structured path at the same size:")
    rows = []
    for n in (12, 15, 18):  # N = 18 is the largest population rwtoolkit.tasks builds for K = 8 (2^20 walks)
        t_enum, total = enumerated_label_token_sum(K, n)
        t_struct, V1n = structured_v1(K, n)
        same = (V1n * symbol("eps") * n / symbol("eta") - total).applyfunc(sp.expand) == sp.zeros(K, K)
        rows.append((n, t_enum))
        print(
            f"  N={n:3d}: {K * 2 ** (n - 1):8d} walks, enumeration {t_enum:7.2f} s, "
            f"structured {t_struct:.4f} s, equal exactly: {same}"
        )
    n1, t1 = rows[-1]
    # Enumeration work is linear in the walk count K·2^(N-1) (fixed SymPy overhead aside), so the
    # largest measured size is scaled by 2^(N - n1); memory grows the same way (N int64 per walk).
    extrapolated = t1 * 2.0 ** (N - n1)
    print(
        f"enumeration extrapolated to N={N} (time ∝ walks): {extrapolated:.3g} s ≈ "
        f"{extrapolated / 3.15e7:.3g} years, and {K * 2 ** (N - 1):.3g} walks "
        f"(~{K * 2 ** (N - 1) * N * 8 / 2**60:.3g} EiB of tokens), far above "
        "rwtoolkit.tasks.MAX_EXACT_WALKS = 2^20"
    )
    assert math.isfinite(extrapolated)


if __name__ == "__main__":
    main()
