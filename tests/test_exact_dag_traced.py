"""Two exact steps of the traced nanoGPT-style example in the generic exact engine's DAG arithmetic (issue 41):
the same values as plain PyTorch float64 autograd, and the same exact values from the JAX port's trace.

The float reference is independent of the toolkit: the example's own ``nn.Module`` at the same dyadic start,
the language-model cross-entropy written with ``F.cross_entropy``, full-batch GD by ``backward()``. The JAX
trace computes the gradient's sums in another order (its reductions), so its program is another DAG; the two
are proved equal by canonical forms modulo the field axioms the orders differ by (``Canonical``).
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

from rwtoolkit.engines.exact import DAG, DagNode, derive_model
from rwtoolkit.engines.exact.arithmetic._dag import dag_entry
from rwtoolkit.models import get_model
from rwtoolkit.tasks import icl_markov_task

torch = pytest.importorskip("torch")
pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parent.parent
TASK = icl_markov_task(2, 4, 1)  # in-context Markov chains, S = 2, sequence length 3: 16 sequences
STEPS = 2
#: |exact − float64| of every parameter and loss: the float64 run's rounding over two steps (measured 2e-18).
TOLERANCE = 1e-13


@pytest.fixture(scope="module")
def runs():
    """The exact trajectories of the PyTorch example and of its JAX port, from --init gaussian."""
    torch_model = get_model("examples/nanogpt_attention.py:one_layer")
    jax_model = get_model("examples/nanogpt_attention_jax.py:one_layer")
    return (
        derive_model(TASK, torch_model, STEPS, init="gaussian"),
        derive_model(TASK, jax_model, STEPS, init="gaussian"),
    )


def _module(S: int, L: int):
    spec = importlib.util.spec_from_file_location(
        "nanogpt_example", ROOT / "examples" / "nanogpt_attention.py"
    )
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example.one_layer(S, L).double()


def _torch_descent(start: dict[str, np.ndarray]) -> tuple[list[dict[str, np.ndarray]], list[float]]:
    """θ(0..STEPS) and L(θ(t)) of full-batch GD (η = 1) on the lm objective in plain torch float64."""
    import torch.nn.functional as F

    population = TASK.population()
    tokens = torch.tensor(population.tokens)
    targets = torch.cat([tokens[:, 1:], torch.tensor(population.labels).reshape(-1, 1)], dim=1)
    weights = torch.tensor([float(q) for q in population.exact_probs()], dtype=torch.float64)
    module = _module(2, tokens.shape[1])
    params = dict(module.named_parameters())
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(torch.as_tensor(start[name]))
    thetas, losses = [], []
    for t in range(STEPS + 1):
        module.zero_grad()
        logits = module(tokens)  # (n, L, S)
        per_position = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")  # (n, L)
        loss = (weights * per_position.mean(dim=1)).sum()
        thetas.append({k: p.detach().numpy().copy() for k, p in params.items()})
        losses.append(float(loss.detach()))
        if t < STEPS:
            loss.backward()
            with torch.no_grad():
                for p in params.values():
                    p -= p.grad
    return thetas, losses


def test_two_exact_steps_from_a_gaussian_start_are_the_float64_pytorch_steps(runs):
    exact, _ = runs
    start = {k: DAG.to_float(v) for k, v in exact.states[0].params.items()}
    thetas, losses = _torch_descent(start)
    for t in range(STEPS + 1):
        state = exact.states[t]
        assert abs(DAG.to_float(np.array([state.loss], dtype=object))[0] - losses[t]) <= TOLERANCE, t
        for name, value in state.params.items():
            assert np.abs(DAG.to_float(value) - thetas[t][name]).max() <= TOLERANCE, (t, name)
    assert any(isinstance(x, DagNode) for x in exact.states[STEPS].params["lm_head.weight"].ravel())


class Canonical:
    """Canonical forms of DAG values modulo the commutativity and associativity of + and ·, x − y = x + (−1)·y,
    x / y = x · y⁻¹ and the arithmetic of rational constants (sums as multisets of terms with one rational
    constant, products as multisets of factors with integer exponents and one rational coefficient). Each rewrite
    is a field identity, so equal forms are equal reals; unequal forms prove nothing."""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.shapes: list[tuple] = []
        self.of_entry: dict[int, int] = {}

    def _intern(self, shape: tuple) -> int:
        if shape not in self.ids:
            self.ids[shape] = len(self.shapes)
            self.shapes.append(shape)
        return self.ids[shape]

    def _rational(self, q: fmpq) -> int:
        return self._intern(("q", int(q.p), int(q.q)))

    def _parts(self, i: int, kind: str) -> tuple[fmpq, Counter]:
        shape = self.shapes[i]
        if shape[0] == kind:
            return fmpq(shape[1], shape[2]), Counter(dict(shape[3]))
        if shape[0] == "q":
            q = fmpq(shape[1], shape[2])
            return (q, Counter()) if kind == "+" or q != 0 else (q, Counter())
        return fmpq(0 if kind == "+" else 1), Counter({i: 1})

    def _make(self, kind: str, c: fmpq, parts: Counter) -> int:
        parts = Counter({k: v for k, v in parts.items() if v})
        if not parts or (kind == "*" and c == 0):
            return self._rational(c)
        if c == (0 if kind == "+" else 1) and list(parts.values()) == [1]:
            return next(iter(parts))
        return self._intern((kind, int(c.p), int(c.q), tuple(sorted(parts.items()))))

    def form(self, x: object) -> int:
        if not isinstance(x, DagNode):
            return self._rational(x if isinstance(x, fmpq) else fmpq(x))  # type: ignore[arg-type]
        pending, stack = set(), [x.i]
        while stack:
            j = stack.pop()
            if j in self.of_entry or j in pending:
                continue
            pending.add(j)
            _, a, b, _ = dag_entry(j)
            stack.extend(c for c in (a, b) if c >= 0)
        for j in sorted(pending):  # program order: operands first
            op, a, b, leaf = dag_entry(j)
            if op == "leaf":
                self.of_entry[j] = self._rational(leaf)
                continue
            A, B = self.of_entry[a], self.of_entry.get(b)
            if op == "+":
                (c1, t1), (c2, t2) = self._parts(A, "+"), self._parts(B, "+")
                self.of_entry[j] = self._make("+", c1 + c2, t1 + t2)
            elif op in ("*", "/", "neg"):
                c1, f1 = self._parts(A, "*")
                c2, f2 = (fmpq(-1), Counter()) if op == "neg" else self._parts(B, "*")
                if op == "/":
                    c2, f2 = 1 / c2, Counter({k: -v for k, v in f2.items()})
                f1.update(f2)
                self.of_entry[j] = self._make("*", c1 * c2, f1)
            else:  # exp, log, sqrt of a canonical operand
                self.of_entry[j] = self._intern((op, A))
        return self.of_entry[x.i]


def test_the_jax_port_gives_the_same_exact_values_as_the_pytorch_trace(runs):
    from_torch, from_jax = runs
    canonical = Canonical()
    identical = proved = 0
    for t in range(STEPS + 1):
        a, b = from_torch.states[t], from_jax.states[t]
        values = [(a.loss, b.loss), *zip(a.token_logits.ravel(), b.token_logits.ravel(), strict=True)]
        for name in from_torch.parameter_names:
            values += zip(a.params[name].ravel(), b.params[name].ravel(), strict=True)
        for x, y in values:
            if x is y or x == y:  # one program entry, or one rational
                identical += 1
                continue
            assert canonical.form(x) == canonical.form(y), t
            proved += 1
    assert identical > 0 and proved > 0  # the forward passes coincide entry by entry, the gradients' sums not
