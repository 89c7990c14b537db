"""``rw stability --model``: the generic stuck-manifold report of a registered model (rwtoolkit.analyses.stability._generic).

Oracles, each independent of the code under test:
  * central finite differences of the GD map θ ↦ θ − η∇L(θ) (the tape gradient, no jacrev): step h = 1e-5,
    truncation O(h²·‖∇³L‖) ~ 1e-10 and rounding O(ε/h) ~ 1e-11 per entry, so 1e-7 absolute on entries of size
    ~1 leaves a margin of 1000;
  * the merged model's gradient G = ∂L/∂W at (V*(t), W = 0): for key_query the off-manifold block is
    I − η [[0, G], [Gᵀ, 0]] per head row, so its spectral radius is 1 + η σ_max(G) (1e-12 relative: a few
    hundred roundings on a number of size 1).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from rwtoolkit.analyses.stability import off_manifold_jacobian
from rwtoolkit.analyses.stability._generic import _population
from rwtoolkit.engines.numeric import TensorLoss, TorchArithmetic
from rwtoolkit.io import load_schema
from rwtoolkit.models import evaluate, get_model, rational_positions
from rwtoolkit.tasks import CircleWalk

ARGS = ["stability", "--model", "key_query", "--K", "3", "--N", "4", "--p", "3/10", "--steps", "6"]
FD_STEP, FD_ATOL = 1e-5, 1e-7


def _setup(task: CircleWalk, d: int = 2):
    model, ar, loss = get_model("key_query", d=d), TorchArithmetic(torch.float64), TensorLoss("log", 0.1)
    P = np.asarray(rational_positions(task.N, 1), dtype=np.float64)
    return model, ar, loss, _population(task, ar, P), task.K + P.shape[0]


def test_rw_stability_key_query_report(tmp_path, capsys):
    import jsonschema

    from rwtoolkit.cli.main import main

    args = ARGS + ["--sigmas", "1e-6", "--seeds", "1"]
    assert main(args + ["--json", str(tmp_path / "a.json")]) == 0
    assert main(args + ["--json", str(tmp_path / "b.json")]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith(
        "rw stability --model key_query d=2 K=3 N=4 p=3/10: unstable zero manifold (off-manifold growth"
    )
    a = (tmp_path / "a.json").read_bytes()
    assert a == (tmp_path / "b.json").read_bytes()
    report = json.loads(a)
    jsonschema.validate(report, load_schema("stability"))
    assert report["model"] == {"name": "key_query", "d": 2}
    assert report["manifold"]["parameters"] == ["W_K", "W_Q"]
    res = report["results"][0]
    assert res["max_leak"] == 0.0 and res["off_dim"] == 2 * 2 * 7
    assert res["steps"][0]["radius"] == 1.0  # V(0) = 0: the Hessian vanishes exactly
    # The oracle: radius of A_t = 1 + η σ_max(G_t), G_t the merged model's W-gradient on the trajectory.
    task = CircleWalk(3, 4, "3/10")
    model, ar, loss, data, D = _setup(task)
    from rwtoolkit.models import descend

    states = descend(model, ar, model.zeros(ar, data.inputs.sizes), data, loss, 1.0, 6)
    merged = get_model("one_layer")
    for t, row in enumerate(res["steps"]):
        G = evaluate(merged, ar, {"V": states[t].params["V"], "W": ar.zeros((D, D))}, data, loss).gradient[
            "W"
        ]
        expected = 1 + float(torch.linalg.matrix_norm(G, ord=2))
        assert row["radius"] == pytest.approx(expected, rel=1e-12)
        assert row["sigma_max"] == pytest.approx(expected, rel=1e-12)  # A_t is symmetric
    assert report["verdict"]["kind"] == "unstable" and report["verdict"]["log_growth"] > 1


def _gd_map(model, ar, data, loss, names, shapes, x):
    params, start = {}, 0
    for n in names:
        size = int(np.prod(shapes[n]))
        params[n] = x[start : start + size].reshape(shapes[n])
        start += size
    g = evaluate(model, ar, params, data, loss).gradient
    return x - torch.cat([g[n].reshape(-1) for n in names])


@pytest.mark.parametrize("where", ["on-manifold", "off-manifold"])
def test_off_manifold_jacobian_is_the_finite_difference_jacobian(where):
    task = CircleWalk(3, 4, "3/10")
    model, ar, loss, data, D = _setup(task)
    shapes = model.shapes(data.inputs.sizes)
    rng = np.random.default_rng(0)
    params = {n: ar.asarray(0.5 * rng.standard_normal(s)) for n, s in shapes.items()}
    if where == "on-manifold":
        params = {**params, "W_K": ar.zeros(shapes["W_K"]), "W_Q": ar.zeros(shapes["W_Q"])}
    A, B = off_manifold_jacobian(model, ar, params, data, loss, 1.0, ["W_K", "W_Q"])
    names = ["V", "W_K", "W_Q"]
    x0 = torch.cat([params[n].reshape(-1) for n in names])
    nV = 9
    fd = torch.zeros(len(x0) - nV, len(x0), dtype=torch.float64)
    for i in range(len(x0)):
        e = torch.zeros_like(x0)
        e[i] = FD_STEP
        plus, minus = (_gd_map(model, ar, data, loss, names, shapes, x0 + s * e) for s in (1, -1))
        fd[:, i] = (plus - minus)[nV:] / (2 * FD_STEP)
    torch.testing.assert_close(A, fd[:, nV:], rtol=0, atol=FD_ATOL)
    torch.testing.assert_close(B, fd[:, :nV], rtol=0, atol=FD_ATOL)
    if where == "on-manifold":
        assert not B.any()  # the manifold is invariant: the GD map's Jacobian is block triangular


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--model", "one_layer", "--K", "3", "--N", "4", "--p", "1", "--head-dim", "2"],
            "--head-dim is out of place",
        ),
        (["--K", "3", "--N", "4", "--p", "1", "--head-dim", "3"], "--model one_layer has no head dimension"),
        (["--model", "key_query", "--K", "3", "--N", "4", "--p", "1", "--head-dim", "0"], "--head-dim"),
        (["--model", "key_query", "--K", "3", "--N", "4", "--p", "1", "--steps", "1"], "--steps"),
        (["--model", "key_query", "--K", "3", "--N", "4"], "p is a symbol"),
        (["--model", "key_query", "--task", "qa1", "--steps", "2000"], "multiply-adds"),
        (["--model", "key_query", "--K", "3", "--N", "4", "--p", "1", "--sigmas", "2"], "sigmas"),
    ],
    ids=[
        "head-dim-one-layer",
        "head-dim-default-model",
        "head-dim-0",
        "steps",
        "symbolic-p",
        "work",
        "sigma",
    ],
)
def test_rw_stability_model_bad_input_is_one_line_exit_2(extra, message, capsys):
    from rwtoolkit.cli.main import main

    assert main(["stability"] + extra) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_rw_stability_model_png_draws_the_generic_report(tmp_path, capsys):
    from rwtoolkit.cli.main import main

    png, js = tmp_path / "kq.png", tmp_path / "kq.json"
    argv = ["stability", "--model", "key_query", "--K", "3", "--N", "4", "--p", "1", "--steps", "30"]
    assert main(argv + ["--sigmas", "1e-4", "--seeds", "1", "--png", str(png), "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {png}" in out and out.startswith("rw stability --model key_query d=2 K=3 N=4 p=1: ")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


# --- the symmetric manifold (--manifold symmetry): Fix(G) of the task's group, for models that move every
# parameter from zero. Oracles: the group's permutations themselves (Fix(G) is what they fix), rwtoolkit.engines.exact's
# fixed_subspace for the dimension (the same rwtoolkit.tasks.orbit_labels, which tests/test_stability_orbits.py checks
# against a plain union-find; this pins the Helmert construction to it), and central finite differences of
# the GD map for the off-manifold block (same FD_STEP / FD_ATOL reasoning as above).


def _symmetric(name: str, task: CircleWalk):
    from rwtoolkit.analyses.stability._manifold import symmetric_manifold
    from rwtoolkit.models import acting_group, coordinate_permutation
    from rwtoolkit.tasks import task_symmetries

    model = get_model(name)
    manifold = symmetric_manifold(model, task)
    group = acting_group(model, task_symmetries(task))
    perms = [coordinate_permutation(model, g, task.K, task.N) for g in group.generators]
    return model, manifold, perms


@pytest.mark.parametrize("name", ["two_layer", "learned_positions", "one_layer", "multi_head"])
def test_symmetric_manifold_is_the_fixed_subspace_with_an_orthonormal_complement(name):
    from rwtoolkit.engines.exact import fixed_subspace
    from rwtoolkit.tasks import task_symmetries

    task = CircleWalk(3, 4, 1)
    model, m, perms = _symmetric(name, task)
    n = m.on.shape[0]
    assert m.on.shape[1] + m.off.shape[1] == n
    assert m.on.shape[1] == fixed_subspace(model, task, task_symmetries(task)).dim
    np.testing.assert_allclose(np.hstack([m.on, m.off]).T @ np.hstack([m.on, m.off]), np.eye(n), atol=1e-14)
    for perm in perms:  # g·θ moves coordinate i to perm[i]: a fixed vector has v[perm] = v
        np.testing.assert_array_equal(m.on[perm], m.on)
        assert not np.array_equal(m.off[perm], m.off)  # the complement is moved (else G would act trivially)


def test_two_layer_keeps_only_the_symmetries_that_fix_the_positions():
    """Layer 1 is causal: a symmetry that moves the key positions is not one of the model. On the full
    group's fixed subspace the GD Jacobian leaks off it; on the acting group's it does not."""
    from rwtoolkit.analyses.stability._manifold import Manifold
    from rwtoolkit.models import coordinate_permutation, descend
    from rwtoolkit.tasks import task_symmetries

    task = CircleWalk(3, 4, 1)
    model, m, _ = _symmetric("two_layer", task)
    ar, loss = TorchArithmetic(torch.float64), TensorLoss("log", 0.1)
    data = _population(task, ar, np.eye(task.N))
    state = descend(model, ar, model.zeros(ar, data.inputs.sizes), data, loss, 1.0, 3)[-1].params
    assert off_manifold_jacobian(model, ar, state, data, loss, 1.0, m)[1].abs().max() < 1e-12
    full = task_symmetries(task)  # order 18, positions shifted with the tokens
    perms = [coordinate_permutation(model, g, 3, 4) for g in full.generators]
    fixed = [i for i in range(m.on.shape[0]) if all(p[i] == i for p in perms)]
    assert full.order == 18 and len(fixed) < m.on.shape[0]
    # a point fixed by the full group: its on-part averaged over the full orbits; J maps it off Fix(full)
    from rwtoolkit.tasks import orbit_labels

    label = orbit_labels(perms, m.on.shape[0])
    x = torch.cat([state[k].reshape(-1) for k in state])
    mean = torch.zeros_like(x).index_add_(0, torch.as_tensor(label), x)
    count = torch.zeros_like(x).index_add_(0, torch.as_tensor(label), torch.ones_like(x))
    x = (mean / count)[torch.as_tensor(label)]
    point, start = {}, 0
    for k, v in state.items():
        point[k], start = x[start : start + v.numel()].reshape(v.shape), start + v.numel()
    onehot = np.eye(m.on.shape[0])
    basis = {lab: [i for i in range(len(label)) if label[i] == lab] for lab in set(label.tolist())}
    on = np.stack([onehot[idx].sum(0) / np.sqrt(len(idx)) for idx in basis.values()], 1)
    q, _ = np.linalg.qr(np.hstack([on, np.eye(len(label))]))
    off = q[:, on.shape[1] :]
    wrong = Manifold("symmetry", on, off, [], "the full group, not the model's")
    assert off_manifold_jacobian(model, ar, point, data, loss, 1.0, wrong)[1].abs().max() > 1e-3


def test_symmetric_off_block_is_the_finite_difference_jacobian():
    from rwtoolkit.models import descend

    task = CircleWalk(3, 4, "1/2")
    model, m, _ = _symmetric("two_layer", task)
    ar, loss = TorchArithmetic(torch.float64), TensorLoss("log", 0.1)
    data = _population(task, ar, np.eye(task.N))
    params = descend(model, ar, model.zeros(ar, data.inputs.sizes), data, loss, 1.0, 4)[-1].params
    A, B = off_manifold_jacobian(model, ar, params, data, loss, 1.0, m)
    names, shapes = list(params), {k: tuple(v.shape) for k, v in params.items()}
    x0 = torch.cat([params[k].reshape(-1) for k in names])
    J = torch.zeros(len(x0), len(x0), dtype=torch.float64)
    for i in range(len(x0)):
        e = torch.zeros_like(x0)
        e[i] = FD_STEP
        plus, minus = (_gd_map(model, ar, data, loss, names, shapes, x0 + s * e) for s in (1, -1))
        J[:, i] = (plus - minus) / (2 * FD_STEP)
    Q, P = (torch.as_tensor(b) for b in (m.off, m.on))
    torch.testing.assert_close(A, Q.T @ J @ Q, rtol=0, atol=FD_ATOL * 10)  # ×10: sums over up to 6 entries
    assert float((Q.T @ J @ P).abs().max()) < FD_ATOL * 10 and float(B.abs().max()) < 1e-12


def test_rw_stability_learned_positions_symmetric_manifold_is_stuck_and_bounds_the_escape(tmp_path, capsys):
    import jsonschema

    from rwtoolkit.cli.main import main

    argv = ["stability", "--model", "learned_positions", "--K", "3", "--N", "4", "--p", "1", "--steps", "20"]
    argv += ["--sigmas", "1e-8", "--seeds", "2"]
    assert main(argv + ["--json", str(tmp_path / "a.json")]) == 0
    assert main(argv + ["--json", str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "unstable symmetry manifold" in out and "the trajectory on it is stuck" in out
    a = (tmp_path / "a.json").read_bytes()
    assert a == (tmp_path / "b.json").read_bytes()
    report = json.loads(a)
    jsonschema.validate(report, load_schema("stability"))
    res = report["results"][0]
    assert report["manifold"]["kind"] == "symmetry" and res["positions"] == "sqrt(mu) I_N"
    assert res["stuck"] and res["score_spread"] <= 1e-9 and res["max_leak"] < 1e-12
    assert report["manifold"]["off_dim"] == 58 + 16 - 17  # V, W, dP entries minus dim Fix(G) = 17
    # first order: ‖δ(T)‖ ≤ σ_max(Φ_T)‖δ(0)‖; at σ = 1e-8 the second-order terms are ~1e-8 relative
    bound = np.exp(res["steps"][-1]["log_sigma_Phi"])
    for growth in res["escape"]["gaussian"][0]["final_growth"]:
        assert 1 < growth <= bound * (1 + 1e-6)


def test_rw_stability_two_layer_learns_on_its_symmetric_manifold(capsys):
    from rwtoolkit.cli.main import main

    argv = ["stability", "--model", "two_layer", "--K", "3", "--N", "4", "--p", "1", "--steps", "5"]
    assert main(argv + ["--sigmas", "1e-6", "--seeds", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "symmetry manifold" in out[0] and "the trajectory on it learns" in out[0]
    assert out[1].startswith("  escapes: at t = 3")  # stuck_proof's certified ball check agrees


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--model", "two_layer", "--manifold", "zero"],
            "--manifold zero: GD from zero moves every parameter",
        ),
        (
            ["--model", "two_layer", "--manifold", "orbit"],
            "--manifold='orbit' must be one of auto, zero, symmetry",
        ),
        (["--manifold", "symmetry"], "--manifold symmetry applies with --model"),
    ],
    ids=["zero-none", "unknown", "paper-model"],
)
def test_rw_stability_manifold_bad_input_is_one_line_exit_2(extra, message, capsys):
    from rwtoolkit.cli.main import main

    assert main(["stability", "--K", "3", "--N", "4", "--p", "1", "--steps", "3"] + extra) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
