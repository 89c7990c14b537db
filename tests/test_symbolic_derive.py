"""rwtoolkit.engines.exact.derive: closed forms, the reduction against an explicit P, rotation against enumeration."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import sympy as sp

import rwtoolkit.engines.exact.engine._groups
from rwtoolkit.engines.exact import (
    derive,
    explicit_weights,
    has_equal_attention,
    is_circulant,
    is_lemma_d3_form,
    is_proportional_to_ones,
    is_rank_one,
    w_token_columns_zero,
)
from rwtoolkit.engines.exact.arithmetic._decide import is_zero
from rwtoolkit.engines.exact.engine._groups import _correct_fraction, _unique_rows, argmax_set
from rwtoolkit.engines.exact.engine._population import population_inputs, rooted_walks
from rwtoolkit.tasks import CircleWalk, qa_task1, qa_task2, symbol


def _all_zero(exprs) -> bool:
    return all(is_zero(e) is True for e in exprs)


@pytest.mark.parametrize(("K", "N"), [(3, 4), (4, 5), (5, 3)])
def test_first_value_step_matches_closed_form_in_symbolic_p(K, N):
    # Lemma C.1 for the log-loss: V(1) = (η/(εNK)) Σ_{i=1}^{N-1} (Πᵀ)^{N-i}, Π from rwtoolkit.tasks by matrix powers.
    eta, eps = symbol("eta"), symbol("eps")
    task = CircleWalk(K, N, "p")
    PiT = task.transition_matrix().T
    closed = eta / (eps * N * K) * sum((PiT ** (N - i) for i in range(1, N)), sp.zeros(K, K))
    V1 = derive(task, 1, eta="eta", eps="eps").states[1].V
    assert all(sp.cancel(V1[i] - closed[i]) == 0 for i in range(K * K))


def test_first_step_leaves_w_at_zero_and_v1_circulant_for_symbolic_p():
    tr = derive(CircleWalk(5, 4, "p"), 1)
    s1 = tr.states[1]
    assert list(s1.w_tok) == [0] * 5 and list(s1.c) == [0] * 4  # W(1) x̃_N = 0, hence W(1) = 0
    assert is_circulant(s1.V)
    assert [sp.expand(a) for a in s1.mean_attention] == [sp.Rational(1, 4)] * 4


@pytest.mark.parametrize(("K", "N"), [(3, 4), (3, 7)])
@pytest.mark.parametrize("rotate", [True, False])
def test_p_one_stays_on_the_lemma_d3_manifold_for_any_loss(K, N, rotate):
    # Theorem 4.1 with ℓ abstract: V(t) ∝ 1, equal attention on 1..N-1, accuracy 1/K, for t <= 3.
    tr = derive(CircleWalk(K, N, 1), 3, eta="eta", mu="mu", loss="any", rotate=rotate)
    for state in tr.states:
        assert is_proportional_to_ones(state)
        assert has_equal_attention(state)
        assert has_equal_attention(state.S)
        assert is_lemma_d3_form(state)
        assert state.accuracy == sp.Rational(1, K)
    assert tr.states[3].V[0, 0].has(sp.Function("dell"))  # the loss really stayed abstract


def test_qa_task2_first_value_is_rank_one_and_task1_is_not():
    # docs/theory.md#signal: Task 2's two inputs share their bag of words, so V(1) = c E[e_y] E[x̄]ᵀ.
    assert is_rank_one(derive(qa_task2(), 1, mu=1).states[1].V)
    check = is_rank_one(derive(qa_task1(), 1, mu=1).states[1].V)
    assert not check and check.decided and check.witness is not None


def _compare_states(a, b, per_input: bool) -> None:
    assert a.V == b.V
    assert list(a.w_tok) == list(b.w_tok) and list(a.c) == list(b.c)
    scalars = [a.loss - b.loss, a.accuracy - b.accuracy]
    scalars += [x - y for x, y in zip(a.mean_attention + a.mean_f, b.mean_attention + b.mean_f, strict=True)]
    scalars += [x - y for x, y in zip(a.mean_logits, b.mean_logits, strict=True)]
    assert _all_zero(scalars)
    if per_input:
        assert a.logits == b.logits
        assert _all_zero(
            [x - y for ra, rb in zip(a.S, b.S, strict=True) for x, y in zip(ra, rb, strict=True)]
        )
        assert _all_zero(
            [x - y for fa, fb in zip(a.f, b.f, strict=True) for x, y in zip(fa, fb, strict=True)]
        )


@pytest.mark.parametrize("p", ["3/10", "1/2"])
def test_rotation_reduction_equals_full_enumeration(p):
    task = CircleWalk(3, 4, p)
    rot, full = derive(task, 2, mu="1/2"), derive(task, 2, mu="1/2", rotate=False)
    assert rot.inputs.size * 3 == full.inputs.size == task.population().size
    for a, b in zip(rot.states, full.states, strict=True):
        _compare_states(a, b, per_input=True)


def test_rotation_reduction_equals_full_enumeration_symbolic_p():
    task = CircleWalk(4, 4, "p")
    rot, full = derive(task, 2), derive(task, 2, rotate=False)
    for t in (0, 1, 2):
        a, b = rot.states[t], full.states[t]
        assert all(sp.cancel(a.V[i] - b.V[i]) == 0 for i in range(16))
        assert all(
            sp.cancel(x - y) == 0
            for x, y in zip(list(a.c) + list(a.w_tok), list(b.c) + list(b.w_tok), strict=True)
        )


def test_grouped_expectations_match_per_input_sums():
    # mean attention and mean f of the grouped engine against plain sums over the per-input lists.
    tr = derive(CircleWalk(3, 5, "2/5"), 2, mu="3/2")
    s2 = tr.states[2]
    probs = tr.task.population().exact_probs()
    for j in range(5):
        assert is_zero(sum(q * row[j] for q, row in zip(probs, s2.S, strict=True)) - s2.mean_attention[j])
    for k in range(3):
        assert is_zero(sum(q * f[k] for q, f in zip(probs, s2.f, strict=True)) - s2.mean_f[k])


# --- the reduction against an explicit P and SymPy differentiation ---------------------------------


def _rational_orthogonal(M: int) -> sp.Matrix:
    """Cayley transform (I - A)(I + A)^-1 of a skew-symmetric rational A: orthogonal with rational entries."""
    A = sp.zeros(M, M)
    for i in range(M):
        for j in range(i + 1, M):
            A[i, j] = sp.Rational(i + 2 * j + 1, 5)
            A[j, i] = -A[i, j]
    Q = (sp.eye(M) - A) * (sp.eye(M) + A).inv()
    assert Q.T * Q == sp.eye(M)
    return Q


def _explicit_gd(task: CircleWalk, P: sp.Matrix, steps: int, eta, eps):
    """Full-coordinate GD: L(V, W) built explicitly, gradients by SymPy differentiation (docs/theory.md#model)."""
    pop = task.population()
    K, N, M = task.K, task.N, P.rows
    Vs = sp.Matrix(K, K, lambda i, j: sp.Symbol(f"v{i}_{j}"))
    Ws = sp.Matrix(K + M, K + M, lambda i, j: sp.Symbol(f"w{i}_{j}"))
    loss_terms, logit_exprs = [], []
    for n in range(pop.size):
        X = sp.zeros(K, N)
        for i, tok in enumerate(pop.tokens[n]):
            X[int(tok), i] = 1
        Xt = X.col_join(P)
        logits = Xt.T * Ws * Xt[:, N - 1]  # (N, 1)
        S = logits.applyfunc(sp.exp) / sum(logits.applyfunc(sp.exp))
        z = (Vs * X * S)[int(pop.labels[n])]
        loss_terms.append(pop.exact_probs()[n] * -sp.log(z + eps))
        logit_exprs.append(logits)
    L = sp.Add(*loss_terms)
    gV = [sp.diff(L, v) for v in Vs]
    gW = [sp.diff(L, w) for w in Ws]
    V, W = sp.zeros(K, K), sp.zeros(K + M, K + M)
    history = []
    for _ in range(steps + 1):
        values = dict(zip(list(Vs) + list(Ws), list(V) + list(W), strict=True))
        history.append((V, W, [lg.xreplace(values) for lg in logit_exprs]))
        V = V - eta * sp.Matrix(K, K, [g.xreplace(values) for g in gV])
        W = W - eta * sp.Matrix(K + M, K + M, [g.xreplace(values) for g in gW])
    return history


@pytest.fixture(scope="module")
def explicit_run():
    """Three explicit GD steps on CircleWalk(3, 3, 1/3) with M = 4 > N = 3 rational embeddings, μ = 4."""
    task, eta, eps = CircleWalk(3, 3, "1/3"), sp.Rational(1, 2), sp.Rational(1, 10)
    P = 2 * _rational_orthogonal(4)[:, :3]
    return task, P, _explicit_gd(task, P, 3, eta, eps), derive(task, 3, eta=eta, eps=eps, mu=4, rotate=False)


@pytest.mark.slow  # the explicit SymPy model and its derivatives take about 25 s
def test_reduction_matches_explicit_positional_embeddings_and_autodiff(explicit_run):
    task, P, history, tr = explicit_run
    for (V, W, logits), state in zip(history[:3], tr.states[:3], strict=True):
        assert V == state.V
        assert W == explicit_weights(state, P)
        assert w_token_columns_zero(W, K=3)
        assert [list(lg) for lg in logits] == state.logits
    assert any(x != 0 for x in tr.states[2].c)  # the positional part was exercised


@pytest.mark.slow  # the explicit SymPy model and its derivatives take about 25 s
def test_third_step_matches_explicit_model_to_forty_digits(explicit_run):
    # Step 3 sees exp(logits(2)); both sides are exact, compared at 50 digits with tolerance 1e-40
    # (a formula error would show at O(1e-3); exact equality of such exp sums is not needed here).
    task, P, history, tr = explicit_run
    V3, W3, _ = history[3]
    state = tr.states[3]
    W3r = explicit_weights(state, P)
    diffs = [V3[i] - state.V[i] for i in range(9)] + [W3[i] - W3r[i] for i in range(49)]
    assert max(abs(sp.N(d, 50)) for d in diffs) < sp.Float("1e-40")
    assert any(abs(sp.N(w, 20)) > sp.Float("1e-6") for w in list(W3r))


def test_refuses_too_large_configurations_with_an_estimate():
    with pytest.raises(ValueError, match=r"2\^\(N-1\)"):
        derive(CircleWalk(3, 40, "1/2"), 1)
    with pytest.raises(ValueError, match="must be >= 0"):
        derive(CircleWalk(3, 4, "1/2"), -1)
    with pytest.raises(ValueError, match="eps=0 must be > 0"):
        derive(CircleWalk(3, 4, "1/2"), 1, eps=0)


def test_log_loss_refuses_arguments_below_minus_eps():
    from rwtoolkit.engines.exact.engine._derive import make_loss

    with pytest.raises(ValueError, match="undefined at z = -1"):
        make_loss("log", sp.Rational(1, 10)).value(sp.Integer(-1))


def test_population_order_of_rooted_walks_matches_rwtasks():
    task = CircleWalk(4, 5, "1/3")
    tr = derive(task, 0)
    pop = task.population()
    rooted = tr.inputs
    rotated = np.concatenate([(rooted.tokens + r) % 4 for r in range(4)])
    assert np.array_equal(rotated, pop.tokens)
    assert np.array_equal(np.concatenate([(rooted.labels + r) % 4 for r in range(4)]), pop.labels)


def test_argmax_set_ranks_exact_numbers_keeps_ties_and_refuses_symbols():
    """The maximal entries in index order, all of them on a tie; None once a comparison involves a symbol."""
    n = [sp.Integer(v) for v in (3, 1, 2)]
    assert argmax_set(n) == [0]
    assert argmax_set([n[1], n[2], n[0]]) == [2]
    assert argmax_set([n[0], n[1], n[0], n[2]]) == [0, 2]  # a tie keeps both, in order
    assert argmax_set([sp.sqrt(2), sp.Rational(7, 5), sp.sqrt(2)]) == [0, 2]  # √2 > 1.4, decided exactly
    p = sp.Symbol("p")
    assert argmax_set([p]) == [0] and argmax_set([p, p, p]) == [0, 1, 2]  # identical: a tie whatever p is
    assert argmax_set([p, p + 1]) is None  # p + 1 > p for every p, but symbolic comparisons are not ranked
    assert argmax_set([sp.Integer(1), p]) is None


@pytest.mark.parametrize(("K", "values"), [(2, (0, 1, 2)), (3, (0, 1, 2)), (4, (0, 1))])
@pytest.mark.parametrize("relabel", ["identity", "rotations", "all"])
def test_correct_fraction_in_symbols_is_the_count_of_relabellings_whose_smallest_argmax_is_the_label(
    K, values, relabel
):
    """The Piecewise form, at every assignment of the scores, counts what a smallest-argmax vote gives
    over the relabelled inputs (scores moved by λ, label λ(y)): the identity, the K rotations, or all of S_K."""
    f = list(sp.symbols(f"f0:{K}"))
    perms = {
        "identity": [tuple(range(K))],
        "rotations": [tuple((k + r) % K for k in range(K)) for r in range(K)],
        "all": list(itertools.permutations(range(K))),
    }[relabel]
    for y in range(K):
        expr = _correct_fraction(f, y, tuple(perms))
        assert expr.free_symbols <= set(f)
        for point in itertools.product(values, repeat=K):
            count = 0
            for lam in perms:
                moved = [0] * K
                for k in range(K):
                    moved[lam[k]] = point[k]  # the relabelled input's scores
                count += moved.index(max(moved)) == lam[y]  # smallest argmax = relabelled label
            assert expr.subs(dict(zip(f, point, strict=True))) == count, (K, y, relabel, point)
    if K == 2 and relabel == "identity":  # one comparison: the condition itself, not an And of one
        one = sp.Piecewise((1, sp.GreaterThan(f[0], f[1], evaluate=False)), (0, True))
        assert _correct_fraction(f, 0, ((0, 1),)) == one


@pytest.mark.parametrize(
    ("low", "high", "cols"),
    [
        (0, 3, 4),  # small non-negative entries: packed into one integer per row
        (0, 2**30, 2),  # base 2³⁰ + 1, base² < 2⁶²: packed
        (0, 2**31 - 1, 2),  # base 2³¹, base² = 2⁶² exactly: numpy's row sort
        (0, 2**33, 2),  # base² far above 2⁶³: numpy's row sort
        (-2, 3, 3),  # negative entries: numpy's row sort
        (0, 1, 1),  # a single column of zeros: one group
    ],
)
def test_unique_rows_groups_as_numpy_unique_on_rows(low, high, cols):
    """The first index of each distinct row and each row's group, in numpy's lexicographic order."""
    rng = np.random.default_rng(5)
    key = rng.integers(low, high, size=(40, cols), endpoint=True)
    key[7] = key[3]  # at least one repeated row
    key[-1] = high  # the largest entry present (the base is max + 1)
    key[-2] = high
    key[-2, -1] = high - 1  # two rows whose packed integers differ by 1, exact only in int64
    _, first_np, inverse_np = np.unique(key, axis=0, return_index=True, return_inverse=True)
    first, inverse = _unique_rows(key)
    assert first.tolist() == first_np.tolist() and inverse.tolist() == inverse_np.reshape(-1).tolist()
    assert inverse.shape == (40,)
    empty_first, empty_inverse = _unique_rows(np.zeros((0, cols), dtype=np.int64))
    assert empty_first.tolist() == [] and empty_inverse.tolist() == []


def test_summed_inputs_say_whether_they_are_rotation_averaged_and_refuse_too_many_rooted_walks():
    """Rooted walks (2^(N-1) of them, K rotations each) or a whole population; the 2²² limit names N."""
    task = CircleWalk(4, 5, "1/3")
    rooted, whole = rooted_walks(task), population_inputs(task.population())
    assert rooted.rotation is True and whole.rotation is False
    assert (rooted.size, rooted.population_size) == (16, 64)  # 2^4 rooted walks, 4 rotations each
    assert (whole.size, whole.population_size) == (64, 64)
    message = (
        "CircleWalk(K=3, N=24): exact expectations enumerate 2^(N-1) = 8.39e+06 rooted walks, above the "
        "limit 4194304; use N <= 23 or rwtoolkit.engines.numeric for sampled training"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        rooted_walks(CircleWalk(3, 24, "1/2"))  # 2^23 = 8388608 rooted walks


def test_the_rooted_walk_limit_accepts_exactly_its_value(monkeypatch):
    """2^(N-1) rooted walks equal to the limit are enumerated; one more step is refused (limit lowered to 16)."""
    monkeypatch.setattr(rwtoolkit.engines.exact.engine._population, "MAX_INPUTS", 16)
    assert rooted_walks(CircleWalk(3, 5, "1/2")).size == 16  # 2^4 = 16 walks: at the limit
    message = (
        "CircleWalk(K=3, N=6): exact expectations enumerate 2^(N-1) = 32 rooted walks, above the limit 16; "
        "use N <= 5 or rwtoolkit.engines.numeric for sampled training"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        rooted_walks(CircleWalk(3, 6, "1/2"))


def test_the_group_work_limit_counts_three_terms_per_group_position_with_gradients(monkeypatch):
    """K = 3, N = 3 from zero init: 4 distinct (label, token multiset) rooted inputs, N-1+K = 5, ×3 for gradients."""
    # rooted walks 012, 010, 021, 020: labels 2, 0, 1, 0 with token multisets {0,1}, {0,1}, {0,2}, {0,2}
    monkeypatch.setattr(rwtoolkit.engines.exact.engine._groups, "MAX_WORK", 60)
    assert len(derive(CircleWalk(3, 3, "1/2"), 1).states) == 2  # 4 × 5 × 3 = 60 terms: at the limit
    monkeypatch.setattr(rwtoolkit.engines.exact.engine._groups, "MAX_WORK", 59)
    message = (
        "this step needs about 60 exact group-position terms (4 distinct inputs x (N-1+K) = 5), above the "
        "limit 59: use fewer steps, smaller K or N, or rwtoolkit.engines.numeric"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        derive(CircleWalk(3, 3, "1/2"), 1)


def test_the_group_work_limit_counts_one_term_per_group_position_without_gradients(monkeypatch):
    """The last state's pass needs no gradients: 4 groups × 5 = 20 terms (groups as above)."""
    monkeypatch.setattr(rwtoolkit.engines.exact.engine._groups, "MAX_WORK", 20)
    assert derive(CircleWalk(3, 3, "1/2"), 0).states[0].accuracy == sp.Rational(
        1, 3
    )  # all scores tie: label 0
    monkeypatch.setattr(rwtoolkit.engines.exact.engine._groups, "MAX_WORK", 19)
    with pytest.raises(
        ValueError, match=r"^this step needs about 20 exact group-position terms \(4 distinct"
    ):
        _ = derive(CircleWalk(3, 3, "1/2"), 0).states[0].loss
