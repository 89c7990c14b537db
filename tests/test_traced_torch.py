"""A PyTorch module traced onto the tape (issue 41, item 2): rwtoolkit.models.traced.trace_torch / program_factory.

The oracle is the module itself: its forward pass (float64) and torch autograd's gradient; the traced program runs
on the tape in float64 and in the exact arithmetic of rwtoolkit.engines.exact (fmpq rationals, SymPy).
"""

from __future__ import annotations

import importlib.util
import inspect
from fractions import Fraction
from itertools import product
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from flint import fmpq

torch = pytest.importorskip("torch")

from rwtoolkit.engines.exact import EXACT  # noqa: E402
from rwtoolkit.models import FLOAT64, Tape  # noqa: E402
from rwtoolkit.models.traced import Node, TracedProgram, program_factory, trace_torch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
S, L = 3, 3


def _example():
    spec = importlib.util.spec_from_file_location(
        "nanogpt_attention", ROOT / "examples" / "nanogpt_attention.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXAMPLE = _example()
FACTORIES = {
    "one_layer": EXAMPLE.one_layer,
    "two_layer": EXAMPLE.two_layer,
    "with_mlp": EXAMPLE.with_mlp,
    "with_layer_norm": EXAMPLE.with_layer_norm,
}
#: Every sequence of length L over S tokens: the population (n = 27, the trace was made at n = 2).
TOKENS = np.array(list(product(range(S), repeat=L)), dtype=np.int64)


@pytest.fixture(scope="module")
def traced():
    """name -> (module, program), each factory traced once."""
    out = {}
    for name, factory in FACTORIES.items():
        module = factory(S, L)
        out[name] = (module, program_factory(factory)(S, L))
    return out


def _float_run(program, values, tokens):
    tape = Tape(FLOAT64)
    params = {name: tape.input(np.asarray(value, dtype=np.float64)) for name, value in values.items()}
    return tape, params, program.run(tape, params, tokens)


def _exact_run(program, values, tokens):
    tape = Tape(EXACT)
    params = {
        name: tape.input(
            EXACT.asarray(np.vectorize(Fraction, otypes=[object])(np.asarray(value, dtype=np.float64)))
        )
        for name, value in values.items()
    }
    return program.run(tape, params, tokens)


def _module_at(module, values):
    """The module with its parameters set to ``values`` (float64)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.as_tensor(values[name]))
    return module


@pytest.mark.parametrize("name", list(FACTORIES))
def test_traced_program_gives_the_module_logits_on_any_batch_size(traced, name):
    module, program = traced[name]
    for tokens in (TOKENS, TOKENS[:1], TOKENS[5:7]):
        _, _, out = _float_run(program, program.initial, tokens)
        expected = module(torch.as_tensor(tokens)).detach().numpy()
        assert out.shape == tokens.shape + (S,)
        np.testing.assert_allclose(out.value, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_tape_gradient_of_the_traced_program_equals_torch_autograd(traced, name):
    module, program = traced[name]
    cotangent = np.random.default_rng(7).standard_normal(TOKENS.shape + (S,))
    tape, params, out = _float_run(program, program.initial, TOKENS)
    grads = tape.gradient(out, cotangent, params)
    module.zero_grad()
    (module(torch.as_tensor(TOKENS)) * torch.as_tensor(cotangent)).sum().backward()
    for pname, p in module.named_parameters():
        np.testing.assert_allclose(grads[pname], p.grad.numpy(), rtol=0, atol=1e-10, err_msg=pname)


def test_parameters_keep_the_module_names_and_its_initial_values(traced):
    module, program = traced["two_layer"]
    named = dict(module.named_parameters())
    assert list(program.parameters) == list(named)
    assert "blocks.1.attn.query.weight" in program.parameters
    for pname, p in named.items():
        assert program.parameters[pname] == tuple(p.shape)
        assert program.initial[pname].dtype == np.float64
        np.testing.assert_array_equal(program.initial[pname], p.detach().numpy())


def test_axes_name_the_token_and_position_tables_and_the_unembedding(traced):
    _, program = traced["one_layer"]
    assert program.axes["wte.weight"] == ("token", None)
    assert program.axes["wpe.weight"] == ("position", None)
    assert program.axes["lm_head.weight"] == ("token", None)  # rows: the logits' last axis
    assert program.axes["blocks.0.attn.query.weight"] == (None, None)


def test_exact_logits_from_zero_are_exactly_uniform(traced):
    _, program = traced["one_layer"]
    zero = {pname: np.zeros(shape) for pname, shape in program.parameters.items()}
    out = _exact_run(program, zero, TOKENS)
    assert all(value == 0 for value in out.value.flat)


@pytest.mark.parametrize("name", ["one_layer", "with_mlp"])
def test_exact_logits_at_a_dyadic_start_are_the_float_logits(traced, name):
    module, program = traced[name]
    dyadic = {pname: np.round(value * 8) / 8 for pname, value in program.initial.items()}
    out = _exact_run(program, dyadic, TOKENS)
    # exact: rationals and exponentials of rationals, no float inside (1/√2 entered as the rational it holds);
    # with_mlp: each ReLU's sign decided exactly
    assert not any(sp.sympify(value).has(sp.Float) for value in out.value.flat)
    expected = _module_at(module, dyadic)(torch.as_tensor(TOKENS)).detach().numpy()
    np.testing.assert_allclose(EXACT.to_float(out.value), expected, rtol=0, atol=1e-12)
    _module_at(module, program.initial)


def test_exact_gradient_from_zero_equals_torch_autograd(traced):
    module, program = traced["one_layer"]
    zero = {pname: np.zeros(shape) for pname, shape in program.parameters.items()}
    tape = Tape(EXACT)
    params = {pname: tape.input(EXACT.zeros(shape)) for pname, shape in program.parameters.items()}
    out = program.run(tape, params, TOKENS)
    cotangent = np.random.default_rng(3).integers(-4, 5, TOKENS.shape + (S,))
    grads = tape.gradient(out, EXACT.asarray(cotangent), params)
    _module_at(module, zero)
    module.zero_grad()
    (module(torch.as_tensor(TOKENS)) * torch.as_tensor(cotangent, dtype=torch.float64)).sum().backward()
    for pname, p in module.named_parameters():
        np.testing.assert_allclose(EXACT.to_float(grads[pname]), p.grad.numpy(), rtol=0, atol=1e-12)
    _module_at(module, program.initial)


class _Einsum(torch.nn.Module):
    """Attention spelled with einsum, a positional nn.Parameter sliced to T, triu and a bias read-out (minGPT)."""

    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Parameter(torch.randn(S, 4, dtype=torch.float64))
        self.pos = torch.nn.Parameter(torch.randn(1, 8, 4, dtype=torch.float64))
        self.W = torch.nn.Parameter(torch.randn(4, 4, dtype=torch.float64))
        self.out = torch.nn.Linear(4, S).double()

    def forward(self, idx):
        B, T = idx.shape
        x = self.tok[idx] + self.pos[:, :T, :]
        scores = torch.einsum("btd,de,bse->bts", x, self.W, x) / 2.0
        scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), float("-inf"))
        y = (torch.softmax(scores, dim=-1) @ x).reshape(-1, 4)
        return self.out(y).view(B, T, S)


class _Flash(torch.nn.Module):
    """nanoGPT's flash path: F.scaled_dot_product_attention(is_causal=True), and a one-hot skip connection."""

    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(S, 4).double()
        self.head = torch.nn.Linear(4, S, bias=False).double()

    def forward(self, idx):
        x = self.wte(idx).unsqueeze(1)
        y = torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True).squeeze(1)
        return self.head(torch.nn.functional.one_hot(idx, 4).double() + y)


@pytest.mark.parametrize("cls", [_Einsum, _Flash])
def test_the_fields_other_spellings_trace_to_the_module_values_and_gradients(cls):
    torch.manual_seed(0)
    module = cls()
    program = trace_torch(module, S, L)
    cotangent = np.random.default_rng(5).standard_normal(TOKENS.shape + (S,))
    tape, params, out = _float_run(program, program.initial, TOKENS)
    grads = tape.gradient(out, cotangent, params)
    logits = module(torch.as_tensor(TOKENS))
    np.testing.assert_allclose(out.value, logits.detach().numpy(), rtol=0, atol=1e-12)
    (logits * torch.as_tensor(cotangent)).sum().backward()
    for pname, p in module.named_parameters():
        np.testing.assert_allclose(grads[pname], p.grad.numpy(), rtol=0, atol=1e-10, err_msg=pname)


class _Sorted(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(S, S)

    def forward(self, idx):
        x = self.wte(idx)
        return torch.sort(x, dim=-1).values  # the op outside the table


def test_torch_sort_in_forward_is_refused_naming_the_op_and_its_line():
    lines, first = inspect.getsourcelines(_Sorted.forward)
    line = first + next(i for i, text in enumerate(lines) if "torch.sort" in text)
    with pytest.raises(ValueError) as refused:
        trace_torch(_Sorted(), S, L)
    message = str(refused.value)
    assert "\n" not in message
    assert f"torch op 'sort' at tests/test_traced_torch.py:{line} is not in the op table" in message


@pytest.mark.parametrize("name", ["with_layer_norm", "gelu"])
def test_exact_arithmetic_refuses_gelu_and_layer_norm_naming_the_ball_engine(traced, name):
    if name == "gelu":
        module = torch.nn.Sequential(
            torch.nn.Embedding(S, 4), torch.nn.GELU(), torch.nn.Linear(4, S)
        ).double()
        program, op = trace_torch(module, S, L), "gelu"
    else:
        program, op = traced[name][1], "layer_norm"
    with pytest.raises(ValueError, match=rf"^{op} at .*ball engine") as refused:
        _exact_run(program, program.initial, TOKENS[:2])
    assert "\n" not in str(refused.value)


def test_program_factory_refuses_a_factory_returning_neither_a_module_nor_a_jax_pair():
    with pytest.raises(ValueError, match=r"^<lambda>\(2, 3\) returned int: expected a torch.nn.Module"):
        program_factory(lambda S, L: 3)(2, 3)


def _hand_program(nodes, constants=()):
    return TracedProgram(
        parameters={"E": (2, 2)},
        initial={"E": np.eye(2)},
        constants=list(constants),
        nodes=nodes,
        output=1 + 1 + len(constants) + len(nodes) - 1,
        axes={"E": ("token", None)},
    )


def test_an_op_outside_the_table_is_refused_in_one_line_naming_it_and_its_line():
    with pytest.raises(
        ValueError, match=r"^traced op 'sort' at m\.py:7 is not in the op table \(docs/guide/"
    ):
        _hand_program([Node("sort", (0,), {}, "m.py:7")])


def test_masked_scores_reaching_an_op_other_than_softmax_are_refused():
    causal = ~np.tril(np.ones((2, 2), bool))
    program = _hand_program(
        [
            Node("embedding", (0, 1), {}, "m.py:1"),
            Node("masked_fill", (3, 2), {"value": float("-inf")}, "m.py:2"),
            Node("exp", (4,), {}, "m.py:3"),
        ],
        [causal],
    )
    tape = Tape(FLOAT64)
    with pytest.raises(ValueError, match=r"^exp at m\.py:3: reads the masked_fill\(-inf\) scores of m\.py:2"):
        program.run(tape, {"E": tape.input(np.eye(2))}, np.array([[0, 1]]))


def test_masked_fill_minus_infinity_leaves_entries_out_of_the_softmax_exactly():
    causal = ~np.tril(np.ones((2, 2), bool))
    program = _hand_program(
        [
            Node("embedding", (0, 1), {}, "m.py:1"),
            Node("masked_fill", (3, 2), {"value": float("-inf")}, "m.py:2"),
            Node("softmax", (4,), {"axis": -1}, "m.py:3"),
        ],
        [causal],
    )
    tape = Tape(EXACT)
    out = program.run(tape, {"E": tape.input(EXACT.asarray([[3, 3], [5, 5]]))}, np.array([[0, 1]]))
    assert out.value[0, 0].tolist() == [1, 0]  # the first position sees itself alone: exactly 1 and 0
    assert out.value[0, 1].tolist() == [Fraction(1, 2), Fraction(1, 2)]


def test_masked_fill_with_a_finite_value_fills_the_exact_rational_it_holds():
    causal = ~np.tril(np.ones((2, 2), bool))
    program = _hand_program(
        [Node("embedding", (0, 1), {}, "m.py:1"), Node("masked_fill", (3, 2), {"value": 0.1}, "m.py:2")],
        [causal],
    )
    tape = Tape(EXACT)
    out = program.run(tape, {"E": tape.input(EXACT.asarray([[3, 4], [5, 6]]))}, np.array([[0, 1]]))
    tenth = Fraction(0.1)  # 3602879701896397 / 2**55, not 1/10
    assert out.value[0].tolist() == [[3, fmpq(tenth.numerator, tenth.denominator)], [5, 6]]


def test_importing_the_traced_package_loads_neither_torch_nor_jax():
    import subprocess
    import sys

    code = "import sys, rwtoolkit.models.traced; print(sorted({'torch', 'jax', 'numpy'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


class _Branching(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(S, S)

    def forward(self, idx):
        if idx[0, 0] > 0:  # control flow on the token values: no one program for every input
            return self.wte(idx)
        return 2 * self.wte(idx)


def test_a_forward_that_branches_on_the_tokens_is_refused_in_one_line_with_nothing_else_printed(capfd):
    with pytest.raises(ValueError, match=r"^trace_torch: torch.export cannot trace _Branching: ") as refused:
        trace_torch(_Branching(), S, L)
    assert "\n" not in str(refused.value)
    assert capfd.readouterr() == ("", "")


def test_threads_tracing_at_once_each_get_their_program():
    """torch.export is not thread-safe (rw sweep's worker threads trace alike): program_factory traces one
    program at a time in a process. Without its lock, two threads tracing at once failed ("Trying to pop empty
    mode stack", fake tensors among the constants)."""
    import threading

    errors: list[str] = []

    def trace(L: int) -> None:
        try:
            program_factory(EXAMPLE.one_layer)(2, L)
        except Exception as why:  # noqa: BLE001 - the test reports whatever a thread raised
            errors.append(str(why)[:200])

    threads = [threading.Thread(target=trace, args=(L,)) for L in (2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_a_fake_constant_refusal_is_tried_again_and_other_failures_are_not(monkeypatch):
    """torch.export once refused the nanoGPT example in a Dask worker for a fake tensor among its lifted constants
    (nondeterministic, inside torch): the export is tried a second time on that refusal only."""
    from rwtoolkit.models.traced import _torch as traced_torch

    real = torch.export.export
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("We found a fake tensor in the exported program constant's list. ...")
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.export, "export", flaky)
    program = trace_torch(EXAMPLE.one_layer(S, L), S, L)
    assert len(calls) == 2 and program.nodes[0].op == "embedding"

    def broken(*args, **kwargs):
        calls.append(1)
        raise RuntimeError("something else")

    calls.clear()
    monkeypatch.setattr(torch.export, "export", broken)
    with pytest.raises(ValueError, match="torch.export cannot trace GPT: something else"):
        trace_torch(EXAMPLE.one_layer(S, L), S, L)
    assert len(calls) == 1
    assert traced_torch._FAKE_CONSTANT in "We found a fake tensor in the exported program constant's list."
