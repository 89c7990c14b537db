"""The sequence model and the cross-entropy objectives (issue 41, items 4-6; MATH §14), in every arithmetic.

A hand-written sequence program (a one-layer, one-head, attention-only nanoGPT-style model written with the
tape's primitives) runs through the generic loop ``rwtoolkit.models.gradient_steps`` in the exact arithmetic, torch
float64 and balls. The oracles are independent: the objectives' values and gradients are torch's
``F.cross_entropy`` per position weighted by the exact probabilities, differentiated by autograd, and the GD
trajectories a plain torch autograd loop of the same network.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
import torch
import torch.nn.functional as F
from flint import fmpq

from rwtoolkit.models import (
    CrossEntropy,
    SequenceModel,
    Tape,
    batch,
    evaluate,
    get_model,
    objective_name,
    rational_positions,
)
from rwtoolkit.tasks import binary_markov_task

#: The head dimension: 1/√2 is irrational, so the scores' scale is the float's dyadic rational.
D = 2


class TinyGPT:
    """One layer, one head, attention only, written as nanoGPT writes it: token and positional embeddings
    (gathered rows), bias-free query, key, value and output maps, scores scaled by 1/√d (the float
    1/√2 = 0.7071067811865476 as the exact dyadic rational it is), a causal mask, the residual, an
    unembedding with a bias. A ``SequenceProgram``."""

    def __init__(self, S: int, L: int, d: int = D, seed: int = 0, scale: float = 0.5) -> None:
        self.S, self.L, self.d = S, L, d
        self.parameters = {
            "E": (S, d),
            "P": (L, d),
            "W_Q": (d, d),
            "W_K": (d, d),
            "W_V": (d, d),
            "W_O": (d, d),
            "U": (d, S),
            "b": (S,),
        }
        rng = np.random.default_rng(seed)
        self.initial = {name: rng.normal(0.0, scale, size=shape) for name, shape in self.parameters.items()}
        self.axes = {
            "E": ("token", None),
            "P": ("position", None),
            "W_Q": (None, None),
            "W_K": (None, None),
            "W_V": (None, None),
            "W_O": (None, None),
            "U": (None, "token"),
            "b": ("token",),
        }
        self.inv_sqrt_d = Fraction(1 / math.sqrt(d))

    def run(self, tape: Tape, params, tokens: np.ndarray):
        n, L = tokens.shape
        h = tape.reshape(tape.gather(params["E"], tokens.reshape(-1, 1), axis=0), (n, L, self.d))
        h = tape.add(h, params["P"])
        q, k, v = (tape.matmul(h, params[w]) for w in ("W_Q", "W_K", "W_V"))
        scores = tape.scale(tape.matmul(q, tape.swap(k)), tape.ar.asarray(self.inv_sqrt_d))
        attention = tape.softmax(scores, mask=np.tril(np.ones((L, L), dtype=bool)))
        h = tape.add(h, tape.matmul(tape.matmul(attention, v), params["W_O"]))
        return tape.add(tape.matmul(h, params["U"]), params["b"])


def tiny_model() -> SequenceModel:
    return SequenceModel(lambda S, L: TinyGPT(S, L), name="tiny_gpt")


def torch_logits(params: dict[str, torch.Tensor], tokens: torch.Tensor, d: int = D) -> torch.Tensor:
    """The same network in plain torch (nanoGPT's spelling), independent of the tape."""
    L = tokens.shape[1]
    h = params["E"][tokens] + params["P"]
    q, k, v = h @ params["W_Q"], h @ params["W_K"], h @ params["W_V"]
    scores = (q @ k.transpose(-1, -2)) * (1 / math.sqrt(d))
    causal = torch.tril(torch.ones(L, L, dtype=torch.bool))
    attention = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    h = h + (attention @ v) @ params["W_O"]
    return h @ params["U"] + params["b"]


def torch_objective(
    logits: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor, last: bool
) -> torch.Tensor:
    """Σ_x π(x) · mean over positions of F.cross_entropy (the last position only with ``last``)."""
    n, L, S = logits.shape
    per = F.cross_entropy(logits.reshape(n * L, S), targets.reshape(n * L), reduction="none").reshape(n, L)
    per = per[:, -1:] if last else per
    return (weights * per.mean(dim=1)).sum()


def population(task):
    pop = task.population()
    targets = np.concatenate([pop.tokens[:, 1:], pop.labels[:, None]], axis=1)
    return pop, targets


def float_batch(task):
    from rwtoolkit.models import FLOAT64

    pop = task.population()
    P = FLOAT64.asarray(rational_positions(pop.N, 1))
    return batch(FLOAT64, pop.tokens, pop.labels, np.asarray(pop.float_probs()), pop.K, P)


@pytest.mark.parametrize("name", ["lm", "last"])
def test_cross_entropy_value_and_gradient_equal_torch_cross_entropy_weighted_by_the_exact_probabilities(name):
    from rwtoolkit.models import FLOAT64

    task = binary_markov_task("1/3", "3/5", 4)
    model = tiny_model()
    data = float_batch(task)
    start = model.initial(FLOAT64, data.inputs.sizes)
    ours = evaluate(model, FLOAT64, start, data, CrossEntropy(name))
    pop, targets = population(task)
    params = {k: torch.tensor(v, requires_grad=True) for k, v in start.items()}
    logits = torch_logits(params, torch.tensor(pop.tokens))
    weights = torch.tensor([float(q) for q in pop.exact_probs()], dtype=torch.float64)
    theirs = torch_objective(logits, torch.tensor(targets), weights, last=name == "last")
    theirs.backward()
    assert abs(float(ours.loss) - theirs.item()) < 1e-12
    for key, tensor in params.items():
        assert np.abs(ours.gradient[key] - tensor.grad.numpy()).max() < 1e-12, key
    assert np.abs(ours.token_logits - logits.detach().numpy()).max() < 1e-12
    # the prediction is the softmax of the last position's logits; a sequence model has no attention S
    assert np.abs(ours.f - torch.softmax(logits[:, -1], -1).detach().numpy()).max() < 1e-12
    assert ours.S is None and ours.logits is None


def test_last_is_lm_restricted_to_the_last_position():
    """'last' against an independent formula: −Σ π log softmax(logits_L)[label], its gradient nonzero only at L."""
    from rwtoolkit.models import FLOAT64

    task = binary_markov_task("1/3", "3/5", 4)
    model = tiny_model()
    data = float_batch(task)
    start = model.initial(FLOAT64, data.inputs.sizes)
    last = evaluate(model, FLOAT64, start, data, CrossEntropy("last"))
    pop = task.population()
    weights = np.asarray(pop.float_probs())
    lg = last.token_logits[:, -1, :]
    logp = lg - np.log(np.exp(lg).sum(axis=1, keepdims=True))
    assert abs(last.loss - -(weights * logp[np.arange(pop.size), pop.labels]).sum()) < 1e-12
    # its cotangent at the logits: π (softmax − e_label) at L, zero before
    tape = Tape(FLOAT64)
    inputs = {k: tape.input(v) for k, v in start.items()}
    out = model.forward(tape, inputs, data.inputs)
    _, seeded, seed = CrossEntropy("last").apply(FLOAT64, out, data, True)
    assert seeded is out.token_logits
    assert not seed[:, :-1].any()
    expected = weights[:, None] * (np.exp(logp) - np.eye(2)[pop.labels])
    assert np.abs(seed[:, -1] - expected).max() < 1e-15


def exact_values(value) -> bool:
    """Every entry an fmpq, a node of the exact DAG arithmetic (exact by construction) or a SymPy expression
    without a float."""
    from rwtoolkit.engines.exact import DagNode

    entries = value.ravel().tolist() if isinstance(value, np.ndarray) else [value]
    return all(
        isinstance(x, (fmpq, DagNode)) or (isinstance(x, sp.Basic) and not x.atoms(sp.Float)) for x in entries
    )


def torch_descent(
    task, start: dict[str, np.ndarray], steps: int, last: bool = False
) -> list[dict[str, np.ndarray]]:
    """θ(0..steps) of full-batch GD in plain torch float64 autograd (η = 1): the independent reference."""
    pop, targets = population(task)
    weights = torch.tensor([float(q) for q in pop.exact_probs()], dtype=torch.float64)
    tokens, targets_t = torch.tensor(pop.tokens), torch.tensor(targets)
    params = {k: torch.tensor(np.asarray(v, dtype=np.float64)) for k, v in start.items()}
    out = [{k: v.numpy().copy() for k, v in params.items()}]
    for _ in range(steps):
        for v in params.values():
            v.requires_grad_(True)
        torch_objective(torch_logits(params, tokens), targets_t, weights, last).backward()
        with torch.no_grad():
            params = {k: (v - v.grad).detach() for k, v in params.items()}
        out.append({k: v.numpy().copy() for k, v in params.items()})
    return out


def test_exact_gd_from_zero_equals_torch_float64_gd_stays_exact_and_the_balls_enclose_it():
    from rwtoolkit.engines import select
    from rwtoolkit.engines.exact.arithmetic._models import EXACT
    from rwtoolkit.engines.numeric import ModelConfig, TrainConfig

    task = binary_markov_task("1/3", "3/5", 3)
    model = tiny_model()
    engine = select(model, "exact", "zero")
    assert engine.name == "generic exact engine"
    traj = engine.load()(task, model=model, steps=2)
    reference = torch_descent(
        task, {k: np.zeros(s) for k, s in model.shapes(traj.batch.inputs.sizes).items()}, 2
    )
    [run] = select(model, "torch", "zero").load()(
        [
            (
                task,
                ModelConfig(K=2, N=3, M=4, registered=model),
                TrainConfig(steps=2, population=True, record_params=True),
            )
        ]
    )
    balls = select(model, "balls", "zero").load()(task, model, 2)
    for t in range(3):
        params = traj.states[t].params
        for key, value in params.items():
            assert exact_values(value), (t, key)
            assert np.abs(EXACT.to_float(value) - reference[t][key]).max() < 1e-12, (t, key)
            assert np.abs(run.value(t, key) - reference[t][key]).max() < 1e-12, (t, key)
            ball = balls.records[t].state.params[key]
            assert all(holds(b, x) for b, x in zip(ball.ravel(), value.ravel(), strict=True)), (t, key)
        assert exact_values(traj.states[t].loss)
        assert holds(balls.records[t].train_loss, traj.states[t].loss)
    assert np.abs(reference[2]["b"]).max() > 1e-3  # the read-out's bias moved: the test compares a motion
    assert traj.readout_names == ("loss", "accuracy", "mean_f") and run.config["objective"] == "lm"


def test_exact_gd_from_the_programs_own_start_equals_torch_and_the_balls_enclose_it():
    """One step from the program's float64 start (entering as its dyadic rationals): every logit an exponential
    atom; exact = plain torch within 1e-12, and the ball engine's trajectory holds the exact values."""
    from rwtoolkit.engines import select
    from rwtoolkit.engines.exact.arithmetic._models import EXACT

    task = binary_markov_task("1/3", "3/5", 3)
    model = tiny_model()
    traj = select(model, "exact", "own").load()(task, model=model, steps=1, init="own")
    sizes = traj.batch.inputs.sizes
    start = traj.states[0].params
    assert all(
        Fraction(int(start[k].ravel()[0].p), int(start[k].ravel()[0].q))
        == Fraction(model.program(sizes).initial[k].ravel()[0])
        for k in start
    )
    reference = torch_descent(task, model.program(sizes).initial, 1)
    balls = select(model, "balls", "own").load()(task, model, 1, init="own")
    for t in range(2):
        for key, value in traj.states[t].params.items():
            assert exact_values(value), (t, key)
            exact = EXACT.to_float(value)
            assert np.abs(exact - reference[t][key]).max() < 1e-12, (t, key)
            ball = balls.records[t].state.params[key]
            assert all(holds(b, x) for b, x in zip(ball.ravel(), value.ravel(), strict=True)), (t, key)
        assert holds(balls.records[t].train_loss, traj.states[t].loss)


def _dyadic(part: tuple) -> fmpq:
    sign, man, exp, _ = part
    q = fmpq(man * 2**exp) if exp >= 0 else fmpq(man, 2**-exp)
    return -q if sign else q


def holds(ball, exact) -> bool:
    """Whether the ball meets a certified 256-bit enclosure of the exact value (the exact engine's own
    interval evaluation of its atoms): a wrong ball misses an interval 2^-250 wide."""
    from flint import arb, ctx

    from rwtoolkit.engines.exact.arithmetic._decide import enclose

    lo, hi = enclose(sp.sympify(exact), 256)._mpi_
    previous, ctx.prec = ctx.prec, 2048
    try:
        return bool(ball.overlaps(arb(_dyadic(lo)).union(arb(_dyadic(hi)))))
    finally:
        ctx.prec = previous


def test_a_model_without_next_token_logits_refuses_the_cross_entropy_objectives():
    with pytest.raises(
        ValueError, match=r"^--objective lm: model one_layer gives a prediction f, no next-token"
    ):
        objective_name(get_model("one_layer"), "lm")
    with pytest.raises(ValueError, match=r"^--objective='all' is not one of lm, last$"):
        objective_name(tiny_model(), "all")
    assert objective_name(tiny_model(), None) == "lm" and objective_name(get_model("key_query"), None) is None


def test_the_exact_estimate_of_a_sequence_model_grows_linearly_and_the_sympy_arithmetic_keeps_its_limit():
    """The generic engine runs a sequence model in the DAG arithmetic, whose passes cost the same at every step
    (nothing is simplified): its estimate grows linearly in the steps and no step limit refuses first. Forced
    into the SymPy arithmetic (nested exponentials) it refuses beyond 2 steps, naming the ball engine."""
    from rwtoolkit.engines.exact import derive_model, derive_model_job

    task = binary_markov_task("1/3", "3/5", 3)
    with pytest.raises(ValueError, match=r"at most 2 steps from a non-zero start.*ball engine"):
        derive_model(task, tiny_model(), 3, init="own", arithmetic="sympy")
    with pytest.raises(ValueError, match=r"^--init own: model key_query has no start of its own"):
        derive_model_job(task, get_model("key_query"), 1, init="own")
    zero = derive_model_job(task, tiny_model(), 2).estimate.seconds
    own = [derive_model_job(task, tiny_model(), s, init="own").estimate.seconds for s in (1, 2, 20)]
    assert zero < 2 and own[0] < 2
    assert own[2] - own[1] == pytest.approx(18 * (own[1] - own[0]), rel=1e-9)


class TinyGPTWithoutBias(TinyGPT):
    """TinyGPT without the read-out bias: every parameter enters the logits in a product of two zeros at zero."""

    def __init__(self, S: int, L: int) -> None:
        super().__init__(S, L)
        for table in (self.parameters, self.initial, self.axes):
            del table["b"]

    def run(self, tape: Tape, params, tokens: np.ndarray):
        return super().run(tape, {**params, "b": tape.ar.zeros((self.S,))}, tokens)


class TwoLayerTinyGPT(TinyGPT):
    """TinyGPT's attention applied twice (the same maps): two softmaxes in series."""

    def run(self, tape: Tape, params, tokens: np.ndarray):
        n, L = tokens.shape
        h = tape.reshape(tape.gather(params["E"], tokens.reshape(-1, 1), axis=0), (n, L, self.d))
        h = tape.add(h, params["P"])
        for _ in range(2):
            q, k, v = (tape.matmul(h, params[w]) for w in ("W_Q", "W_K", "W_V"))
            scores = tape.scale(tape.matmul(q, tape.swap(k)), tape.ar.asarray(self.inv_sqrt_d))
            attention = tape.softmax(scores, mask=np.tril(np.ones((L, L), dtype=bool)))
            h = tape.add(h, tape.matmul(tape.matmul(attention, v), params["W_O"]))
        return tape.add(tape.matmul(h, params["U"]), params["b"])


def test_the_estimates_from_zero_read_whether_the_model_stays_at_zero():
    """Without a bias every gradient at zero is 0 (torch autograd), the trajectory stays at 0, and its steps cost
    the stuck rates (exact: 1.6e-7 s per multiply-add measured; balls: STUCK_FACTOR of the counted operations),
    not the rates of a model whose bias moves."""
    from rwtoolkit.engines.balls import ball_estimate
    from rwtoolkit.engines.exact import derive_model_job
    from rwtoolkit.models import Sizes, forward_operations, stays_at_zero

    task = binary_markov_task("1/3", "3/5", 3)
    pop, targets = population(task)
    weights = torch.tensor(pop.float_probs(), dtype=torch.float64)
    for program, moves in ((TinyGPTWithoutBias(2, 2), False), (TinyGPT(2, 2), True)):
        params = {
            k: torch.zeros(shape, dtype=torch.float64, requires_grad=True)
            for k, shape in program.parameters.items()
        }
        full = {**params, "b": params.get("b", torch.zeros(2, dtype=torch.float64))}
        torch_objective(
            torch_logits(full, torch.as_tensor(pop.tokens)), torch.as_tensor(targets), weights, False
        ).backward()
        assert any(bool(p.grad.abs().max() > 0) for p in params.values()) == moves
        model = SequenceModel(lambda S, L, program=program: program, name="t")
        assert stays_at_zero(model, task.population()) is not moves
    stuck = SequenceModel(lambda S, L: TinyGPTWithoutBias(S, L), name="no_bias")
    assert (
        derive_model_job(task, stuck, 40).estimate.seconds
        < 0.6
        < derive_model_job(task, tiny_model(), 40).estimate.seconds
    )
    sizes = Sizes(K=2, M=4, N=3)
    per_op = [ball_estimate(task, m, 40) / forward_operations(m, sizes) for m in (stuck, tiny_model())]
    assert per_op[0] < 0.5 * per_op[1]


def test_each_attention_layer_nests_the_sympy_estimate_one_level_deeper_and_the_dag_one_not():
    """Two softmaxes in series: counted by forward_exponentials, and one step from a non-zero start in the SymPy
    arithmetic estimated at over 40 times one layer's (measured on the traced examples, binary_markov N = 3:
    one_layer 8.4 s, two_layer's state 0 alone 19.7 s and its state 1 over 280 s); in the DAG arithmetic, which
    simplifies nothing, the steps cost what their multiply-adds count."""
    from rwtoolkit.engines.exact import model_job_estimate
    from rwtoolkit.engines.exact.engine._cost import sequence_multiply_adds
    from rwtoolkit.models import Sizes, forward_exponentials

    task = binary_markov_task("1/3", "3/5", 3)
    two = SequenceModel(lambda S, L: TwoLayerTinyGPT(S, L), name="two")
    sizes = Sizes(K=2, M=4, N=3)
    assert (forward_exponentials(tiny_model(), sizes), forward_exponentials(two, sizes)) == (1, 2)
    models = (tiny_model(), two)
    sympy = [model_job_estimate(task, m, 1, "own", arithmetic="sympy").seconds for m in models]
    assert sympy[1] > 40 * sympy[0]
    dag = [
        model_job_estimate(task, m, 2, "own").seconds - model_job_estimate(task, m, 1, "own").seconds
        for m in models
    ]
    ops = [sequence_multiply_adds(task, m) for m in models]
    assert dag[1] / dag[0] == pytest.approx(ops[1] / ops[0])


def test_select_gives_every_arithmetics_generic_engine_for_a_sequence_model():
    from rwtoolkit.engines import GENERIC, select

    for arithmetic in ("exact", "torch", "balls"):
        for start in ("zero", "any"):
            assert select(tiny_model(), arithmetic, start) is GENERIC[arithmetic]
    assert select(get_model("one_layer"), "exact", "zero").name == "reduced exact engine"


def test_rw_derive_runs_a_sequence_model_of_your_own(tmp_path, monkeypatch, capsys):
    """b(1) by hand: from zero every logit is 0, so ∂L/∂b = 1/2 − (the targets' law), the stationary law
    (q, p)/(p + q) = (9/14, 5/14) at every position, and b(1) = η (9/14 − 1/2, 5/14 − 1/2) = (1/7, −1/7)."""
    import inspect
    import json

    from rwtoolkit.cli.main import main

    source = "from __future__ import annotations\n\nimport math\nfrom fractions import Fraction\n\nimport numpy as np\n\n"
    source += "from rwtoolkit.models import SequenceModel, Tape\n\n"
    source += "D = 2\n\n\n" + inspect.getsource(TinyGPT)
    source += '\n\nmodel = SequenceModel(lambda S, L: TinyGPT(S, L), name="tiny_gpt")\n'
    (tmp_path / "tiny.py").write_text(source)
    (tmp_path / "task.json").write_text(
        json.dumps({"task": {"family": "binary_markov", "params": {"p": "1/3", "q": "3/5", "N": 3}}})
    )
    monkeypatch.chdir(tmp_path)
    assert main("derive --model tiny.py:model --spec task.json --mu 1 --steps 1".split()) == 0
    out = capsys.readouterr().out
    assert "objective=lm" in out and "b = 1/7\n    -1/7" in out.split("t = 1")[1]
    argv = "derive --model tiny.py:model --spec task.json --mu 1 --init own --steps 100000 --max-seconds 60"
    assert main(argv.split()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "above --max-seconds 60 (at most --steps " in err and "ball engine" in err
