"""The symmetry engine on traced models (issue 41, items 2 and 6): ``stuck_proof`` from zero on the nanoGPT-style
examples (examples/nanogpt_attention.py, traced from PyTorch) states what stays put and proves it, or says in one
line why it cannot; every claim is checked against the torch module itself (autograd, float64).

What stays put: the examples have no biases before the unembedding, so every parameter reaches the logits through
a product with another and every gradient vanishes at θ = 0: GD from zero never moves, at chance (the uniform
prediction) for every t. The symmetry's subspace (token embedding rows and unembedding rows tied along the orbits of
the token relabellings that fix the positions and rename labels as tokens) is invariant too (checked here by a
torch GD step from a point on it), but its induction step is undecided: the prediction's softmax reads logits built
from the attention's softmax (nested exponentials).
"""

from __future__ import annotations

import importlib.util
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rwtoolkit.engines.exact import stuck_proof  # noqa: E402
from rwtoolkit.engines.exact.analysis import Subspace, induction_step  # noqa: E402
from rwtoolkit.models import SequenceModel, get_model  # noqa: E402
from rwtoolkit.tasks import CircleWalk, make_task  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "nanogpt_attention.py"

#: The tasks of the issue: in-context Markov chains (S = 2, sequence length 4), the binary (p, q) source, the
#: circle walk.
TASKS = {
    "icl_markov": lambda: make_task("icl_markov", {"S": 2, "N": 4}),
    "binary_markov": lambda: make_task("binary_markov", {"p": "1/3", "q": "1/4", "N": 4}),
    "circle": lambda: CircleWalk(3, 4, 1),
}


def _module(factory: str, S: int, L: int):
    spec = importlib.util.spec_from_file_location("nanogpt_attention_under_test", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, factory)(S, L)


def _torch_objective(net, task):
    """The 'lm' objective written here with torch alone: Σ_x π(x) (1/L) Σ_i CE(logits_i, x_{i+1})."""
    pop = task.population()
    tokens = torch.as_tensor(np.asarray(pop.tokens), dtype=torch.int64)
    labels = torch.as_tensor(np.asarray(pop.labels), dtype=torch.int64)
    weights = torch.tensor([float(Fraction(str(q))) for q in pop.exact_probs()], dtype=torch.float64)
    targets = torch.cat([tokens[:, 1:], labels[:, None]], dim=1)
    logits = net(tokens)
    n, L, S = logits.shape
    ce = torch.nn.functional.cross_entropy(logits.reshape(-1, S), targets.reshape(-1), reduction="none")
    return (weights * ce.reshape(n, L).mean(1)).sum()


def _gd_step(net, task, eta: float = 1.0) -> dict[str, torch.Tensor]:
    net.zero_grad()
    _torch_objective(net, task).backward()
    with torch.no_grad():
        return {name: (p - eta * p.grad).clone() for name, p in net.named_parameters()}


@pytest.mark.parametrize("factory", ["one_layer", "two_layer"])
@pytest.mark.parametrize("name", sorted(TASKS))
def test_stuck_proof_from_zero_proves_every_parameter_of_a_traced_model_stays_at_zero(factory, name):
    task = TASKS[name]()
    model = get_model(f"{EXAMPLE}:{factory}")
    result = stuck_proof(task, model)
    assert result["verdict"] == "stuck for all t (proved)"
    assert result["objective"] == "lm"
    assert result["why"].startswith("every parameter stays at 0")
    assert result["trajectory"]["outcome"] == "proved" and result["trajectory"]["subspace"]["dim"] == 0
    assert result["trajectory"]["input_independent"] is True
    assert (
        result["symmetry"]["outcome"] == "undecided" and "exponentials nest" in result["symmetry"]["reason"]
    )
    assert result["ball_check"]["escape_step"] is None
    # independently: torch autograd of the module at θ = 0 on the weighted objective is zero, the step stays at 0,
    # and the prediction at the last position is uniform (chance)
    net = _module(factory, task.K, task.N - 1)
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
    after = _gd_step(net, task)
    assert all(float(v.abs().max()) == 0.0 for v in after.values())
    pop = task.population()
    last = net(torch.as_tensor(np.asarray(pop.tokens), dtype=torch.int64))[:, -1].softmax(-1)
    assert torch.allclose(last, torch.full_like(last, 1 / task.K), atol=1e-15)


@pytest.mark.parametrize("name", ["icl_markov", "circle"])
def test_the_symmetric_subspace_of_a_traced_model_is_the_tied_token_rows_and_a_torch_gd_step_keeps_it(name):
    """The task's relabellings that fix the positions and rename labels as tokens move the rows of wte and lm_head
    only; on these tasks they are transitive on the tokens, so Fix(G) ties all rows of each: its dimension is the
    total less 2 (S − 1) d, it holds a point built by hand, and a torch GD step from that point keeps the rows tied
    (within 1e-12)."""
    task = TASKS[name]()
    model = get_model(f"{EXAMPLE}:one_layer")
    result = stuck_proof(task, model)
    S, d = task.K, 4
    fixed = result["symmetry"]["subspace"]
    shapes = {k: tuple(v) for k, v in fixed["parameters"].items()}
    total = sum(math.prod(s) for s in shapes.values())
    assert fixed["dim"] == total - 2 * (S - 1) * d
    assert all(g["positions"] == list(range(task.N - 1)) for g in result["group"]["generators"])
    assert all(g["tokens"] == g["labels"] for g in result["group"]["generators"])
    rng = np.random.default_rng(3)
    point = {k: rng.integers(-4, 5, size=s) / 8 for k, s in shapes.items()}
    for key in ("wte.weight", "lm_head.weight"):
        point[key][:] = point[key][0]  # every token's row the same
    basis = [tuple(Fraction(x) for x in b) for b in _basis(fixed, total)]
    flat = [Fraction(float(x)) for k in shapes for x in point[k].ravel()]
    assert Subspace.from_vectors(shapes, basis).contains(flat)
    net = _module("one_layer", S, task.N - 1)
    with torch.no_grad():
        for key, p in net.named_parameters():
            p.copy_(torch.as_tensor(point[key]))
    after = _gd_step(net, task, eta=0.5)
    for key in ("wte.weight", "lm_head.weight"):
        assert float((after[key] - after[key][0]).abs().max()) < 1e-12
    # more: with the rows tied the model sees no token and predicts one distribution per position, and the
    # targets' law is invariant under the transitive relabellings, so every point of Fix(G) is stationary
    assert max(float((after[k] - torch.as_tensor(point[k])).abs().max()) for k in shapes) < 1e-12
    # while a point off it (the rows untied) moves, and its rows do not stay tied
    with torch.no_grad():
        net.wte.weight[0] += 0.25
    off = _gd_step(net, task, eta=0.5)
    assert float((off["lm_head.weight"] - off["lm_head.weight"][0]).abs().max()) > 1e-6


def _basis(subspace_json: dict, total: int) -> list[list[Fraction]]:
    rows = []
    for b in subspace_json["basis"]:
        row = [Fraction(0)] * total
        for j, x in b.items():
            row[int(j)] = Fraction(x)
        rows.append(row)
    return rows


def test_stuck_proof_of_a_traced_relu_model_proves_zero_and_says_why_the_symmetric_subspace_is_undecided():
    task = TASKS["icl_markov"]()
    result = stuck_proof(task, get_model(f"{EXAMPLE}:with_mlp"))
    assert result["verdict"] == "stuck for all t (proved)" and result["why"].startswith(
        "every parameter stays at 0"
    )
    reason = result["symmetry"]["reason"]
    assert reason.startswith("relu at ") and "nanogpt_attention.py" in reason and "no one sign" in reason
    net = _module("with_mlp", task.K, task.N - 1)
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
    assert all(float(v.abs().max()) == 0.0 for v in _gd_step(net, task).values())


def test_stuck_proof_of_a_traced_model_with_layer_norm_is_refused_in_one_line_naming_the_ball_engine():
    with pytest.raises(ValueError) as err:
        stuck_proof(TASKS["binary_markov"](), get_model(f"{EXAMPLE}:with_layer_norm"))
    message = str(err.value)
    assert "\n" not in message and message.startswith("layer_norm at ") and "use the ball engine" in message


class _Bias:
    """A sequence program whose logits are a bias b (S,) at every position."""

    def __init__(self, S: int) -> None:
        self.parameters, self.initial, self.axes = {"b": (S,)}, {"b": np.zeros(S)}, {"b": ("token",)}

    def run(self, tape, params, tokens):
        return tape.add(tape.ar.zeros(tokens.shape + (len(self.initial["b"]),)), params["b"])


def test_induction_step_refutes_a_subspace_the_objective_leaves_with_a_witness_torch_confirms():
    """{b = (a, 0)} on the binary (p, q) source: the 'lm' gradient along b_1 is E[p_1 − 1{t = 1}] = 1/(1 + e^a) − π_1,
    non-zero at the witness; torch's gradient at the witness point gives the same value."""
    task = TASKS["binary_markov"]()
    model = SequenceModel(lambda S, L: _Bias(S), name="bias")
    sub = Subspace.from_vectors({"b": (2,)}, [[1, 0]])
    result = induction_step(task, model, sub)
    assert result.outcome == "refuted" and result.objective == "lm"
    witness = result.witness
    assert witness is not None and witness["entry"] == "b[1]"
    a = float(Fraction(witness["alpha"][0]))
    b = torch.tensor([a, 0.0], dtype=torch.float64, requires_grad=True)
    pop = task.population()
    tokens = torch.as_tensor(np.asarray(pop.tokens), dtype=torch.int64)

    class Net(torch.nn.Module):
        def forward(self, ids):
            return b.expand(ids.shape[0], ids.shape[1], 2)

    _torch_objective(Net(), task).backward()
    assert tokens.shape[1] == task.N - 1
    value = float(witness["residual"].split("+/-")[0].strip(" []"))
    assert abs(float(b.grad[1]) - value) < 1e-9 and abs(value) > 1e-3
