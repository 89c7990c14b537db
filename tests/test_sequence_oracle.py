"""``rw derive --json`` of a sequence model (issue 41, item 6): the oracle holds its parameters by name at every
step, the objective's value, and per input the next-token logits at every position (``token_logits``, n × L × K)
and the prediction f, with what identifies the model (name, target, objective, start) and the task.

The model is the hand-written nanoGPT-style tape program of tests/test_sequence_model.py, on the binary (p, q)
source with N = 3 (8 sequences of L = 2 tokens, K = 2), one step from its own float64 start (every logit an
exponential atom). The oracles are independent of the writer: the PyTorch float64 forward pass and autograd GD of
the same network (``torch_logits``, ``torch_descent``: within 1e-12), and the exact engine's own trajectory, which
the file's exact values must equal and its doubles' certified bounds must hold. A PyTorch module traced by
``--model PATH.py:ATTR`` is checked against its own forward pass and autograd GD step.
"""

from __future__ import annotations

import inspect
import json
from fractions import Fraction
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import sympy as sp
import torch
from flint import fmpq

from rwtoolkit.cli.main import main
from rwtoolkit.engines.exact import derive_model, derive_model_job, load_oracle, per_input_path, write_oracle
from rwtoolkit.engines.exact.arithmetic._models import to_sympy
from rwtoolkit.io import load_schema
from rwtoolkit.tasks import binary_markov_task
from tests.test_sequence_model import (
    TinyGPT,
    _dyadic,
    population,
    tiny_model,
    torch_descent,
    torch_logits,
    torch_objective,
)

#: The task of every test: rw derive's spec file and the same task in Python.
SPEC = {"task": {"family": "binary_markov", "params": {"p": "1/3", "q": "3/5", "N": 3}}}
TASK = binary_markov_task("1/3", "3/5", 3)


def _write_model(folder: Path) -> None:
    """The tape program as a user's module of its own (``--model tiny.py:model``) and the task's spec."""
    source = "from __future__ import annotations\n\nimport math\nfrom fractions import Fraction\n\nimport numpy as np\n\n"
    source += "from rwtoolkit.models import SequenceModel, Tape\n\nD = 2\n\n\n" + inspect.getsource(TinyGPT)
    source += '\n\nmodel = SequenceModel(lambda S, L: TinyGPT(S, L), name="tiny_gpt")\n'
    (folder / "tiny.py").write_text(source)
    (folder / "task.json").write_text(json.dumps(SPEC))


@pytest.fixture(scope="module")
def own_oracle(tmp_path_factory) -> Path:
    """``rw derive --json`` of one step from the program's own start (the refusal of --json is gone)."""
    folder = tmp_path_factory.mktemp("own")
    _write_model(folder)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        argv = "derive --model tiny.py:model --spec task.json --mu 1 --init own --steps 1 --json o.json"
        assert main(argv.split()) == 0
    return folder / "o.json"


def test_rw_derive_json_of_a_sequence_model_writes_a_header_its_schema_validates(own_oracle):
    header = json.loads(own_oracle.read_text())
    jsonschema.validate(header, load_schema("oracle"))  # the whole header, node table included
    model, config = header["model"], header["config"]
    assert (model["name"], model["target"]) == ("tiny_gpt", "tiny.py:model")
    assert model["readouts"] == {"loss": [], "accuracy": [], "mean_f": [2]}
    assert model["per_input"] == {"token_logits": [2, 2], "f": [2]}  # L = N - 1 = 2 positions, K = 2
    assert list(model["parameters"]) == ["E", "P", "W_Q", "W_K", "W_V", "W_O", "U", "b"]
    assert (config["task"], config["K"], config["N"], config["objective"]) == ("binary_markov", 2, 3, "lm")
    assert config["init"].startswith("own") and "M" not in config and "positions" not in config
    assert all("mean_attention" not in step for step in header["steps"])
    members = header["per_input"]["members"]
    assert (
        "token_logits/1" in members and "f_exact/1" in members and not any(m.startswith("S") for m in members)
    )
    # an attention model's header without its mean attention, or a sequence model's without its objective, fails
    for damaged in (
        {**header, "model": {**model, "per_input": {"logits": [3], "S": [3], "f": [2]}}},
        {**header, "config": {k: v for k, v in config.items() if k != "objective"}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**damaged, "nodes": []}, load_schema("oracle"))


def test_a_sequence_models_oracle_reads_back_torchs_parameters_logits_prediction_and_loss(own_oracle):
    """Floats against the PyTorch network of the same program (its own float64 start, one autograd GD step):
    every parameter, the loss, and per input the logits at every position and f, within 1e-12."""
    oracle = load_oracle(own_oracle, verify=True)
    reference = torch_descent(TASK, TinyGPT(2, 2).initial, 1)
    pop, targets = population(TASK)
    tokens = torch.tensor(pop.tokens)
    weights = torch.tensor([float(q) for q in pop.exact_probs()], dtype=torch.float64)
    assert oracle.per_input_values == ("token_logits", "f")
    assert np.array_equal(oracle.population()["tokens"], pop.tokens)
    assert np.array_equal(oracle.population()["labels"], pop.labels)
    for t in (0, 1):
        params = {k: torch.tensor(v) for k, v in reference[t].items()}
        for key, value in reference[t].items():
            assert np.abs(oracle.value(key, t) - value).max() < 1e-12, (t, key)
        logits = torch_logits(params, tokens)
        assert oracle.value("token_logits", t).shape == (8, 2, 2)
        assert np.abs(oracle.value("token_logits", t) - logits.numpy()).max() < 1e-12, t
        assert np.abs(oracle.value("f", t) - torch.softmax(logits[:, -1], -1).numpy()).max() < 1e-12, t
        loss = torch_objective(logits, torch.tensor(targets), weights, last=False).item()
        assert abs(float(oracle.value("loss", t)) - loss) < 1e-12, t
    # the step moved the attention's maps (8e-5) and the logits (0.1), far beyond the tolerance
    assert np.abs(reference[1]["W_Q"] - reference[0]["W_Q"]).max() > 1e-5
    assert np.abs(oracle.value("token_logits", 1) - oracle.value("token_logits", 0)).max() > 1e-2


def _fmpq(x: float) -> fmpq:
    q = Fraction(float(x))
    return fmpq(q.numerator, q.denominator)


def test_a_sequence_models_oracle_holds_the_exact_engines_values_and_bounds_that_hold_them(own_oracle):
    """The exact per-input values read back (the engine's named atoms) equal the exact engine's own trajectory,
    and each double lies within its certified bound of a 256-bit enclosure of that exact value."""
    from rwtoolkit.engines.exact.arithmetic._decide import enclose

    oracle = load_oracle(own_oracle)
    traj = derive_model(TASK, tiny_model(), 1, mu=1, init="own")
    for t in (0, 1):
        assert oracle.exact("b", t, atoms="named") == to_sympy(traj.states[t].params["b"]).tolist()
        for name in ("token_logits", "f"):
            engine = np.ravel(to_sympy(getattr(traj.states[t], name)))
            read = np.ravel(np.array(oracle.exact(name, t, atoms="named"), dtype=object))
            assert len(read) == len(engine) and all(a == b for a, b in zip(read, engine, strict=True)), (
                t,
                name,
            )
            doubles, bounds = oracle.value(name, t).ravel(), oracle.error(name, t).ravel()
            for exact, x, bound in zip(engine, doubles, bounds, strict=True):
                lo, hi = enclose(exact, 256)._mpi_
                assert _dyadic(lo) <= _fmpq(x) + _fmpq(bound) and _fmpq(x) - _fmpq(bound) <= _dyadic(hi), (
                    t,
                    name,
                )
        assert oracle.exact("loss", t, atoms="named") == sp.sympify(traj.states[t].loss)


def test_the_same_sequence_model_and_config_give_the_same_oracle_bytes(own_oracle, tmp_path, monkeypatch):
    _write_model(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = "derive --model tiny.py:model --spec task.json --mu 1 --init own --steps 1 --json o.json"
    assert main(argv.split()) == 0
    for name in ("o.json", "o.inputs.npz"):
        assert (tmp_path / name).read_bytes() == (own_oracle.parent / name).read_bytes(), name


def test_the_estimate_of_a_sequence_models_oracle_covers_its_files(own_oracle, tmp_path):
    """The header and per-input file sizes rw derive plans before any work are at least the written ones
    (and within 10x): from the program's own start (the fixture's) and from zero (two steps)."""
    job = derive_model_job(TASK, tiny_model(), 1, mu=1, init="own", json=True, per_input=True)
    written = own_oracle.stat().st_size, per_input_path(own_oracle).stat().st_size
    assert written[0] <= job.estimate.header_bytes <= 10 * written[0]
    assert written[1] <= job.estimate.per_input_bytes <= 10 * written[1]
    zero = write_oracle(derive_model(TASK, tiny_model(), 2, mu=1), tmp_path / "z.json", per_input=True)
    job = derive_model_job(TASK, tiny_model(), 2, mu=1, json=True, per_input=True)
    assert zero.stat().st_size <= job.estimate.header_bytes <= 10 * zero.stat().st_size
    assert per_input_path(zero).stat().st_size <= job.estimate.per_input_bytes
    # without --json the estimate holds no files, and writing adds its time (the node table of the program)
    plain = derive_model_job(TASK, tiny_model(), 2, mu=1).estimate
    assert plain.file_bytes == 0 and job.estimate.seconds > plain.seconds


def test_rw_derive_json_of_a_sequence_model_too_large_for_max_bytes_is_refused_in_one_line(
    tmp_path, monkeypatch, capsys
):
    _write_model(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = "derive --model tiny.py:model --spec task.json --mu 1 --init own --steps 1 --json o.json"
    assert main([*argv.split(), "--max-bytes", "20K"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--json o.json: the files are estimated at" in err
    assert "above --max-bytes" in err and "the certified ball engine" in err
    assert not list(tmp_path.glob("o*"))


#: A PyTorch factory ATTR(S, L) as a user writes one (token and positional embeddings, an unembedding with a bias),
#: traced onto the tape by ``--model PATH.py:ATTR``.
TORCH_MODULE = """
import torch
from torch import nn


class Embeddings(nn.Module):
    def __init__(self, S, L):
        super().__init__()
        torch.manual_seed(0)
        self.wte, self.wpe, self.head = nn.Embedding(S, 3), nn.Embedding(L, 3), nn.Linear(3, S)

    def forward(self, idx):
        return self.head(self.wte(idx) + self.wpe(torch.arange(idx.shape[1])))


def model(S, L):
    return Embeddings(S, L).double()
"""


def test_a_traced_pytorch_modules_oracle_holds_its_own_forward_and_gd(tmp_path, monkeypatch):
    """rw derive --json of a traced module from its own start, one step: the parameters read back are the
    module's own autograd GD step, the token_logits and f its own forward pass at them (within 1e-12)."""
    (tmp_path / "mine.py").write_text(TORCH_MODULE)
    (tmp_path / "task.json").write_text(json.dumps(SPEC))
    monkeypatch.chdir(tmp_path)
    argv = "derive --model mine.py:model --spec task.json --mu 1 --init own --steps 1 --json o.json"
    assert main(argv.split()) == 0
    oracle = load_oracle(tmp_path / "o.json", verify=True)
    assert oracle.model["target"] == "mine.py:model" and oracle.model["per_input"]["token_logits"] == [2, 2]
    namespace: dict = {}
    exec(compile(TORCH_MODULE, "mine.py", "exec"), namespace)
    module = namespace["model"](2, 2)
    pop, targets = population(TASK)
    tokens = torch.tensor(pop.tokens, dtype=torch.long)
    weights = torch.tensor([float(q) for q in pop.exact_probs()], dtype=torch.float64)
    for t in (0, 1):
        for key, value in module.state_dict().items():
            assert np.abs(oracle.value(key, t) - value.numpy()).max() < 1e-12, (t, key)
        module.zero_grad()
        logits = module(tokens)
        assert np.abs(oracle.value("token_logits", t) - logits.detach().numpy()).max() < 1e-12, t
        assert np.abs(oracle.value("f", t) - torch.softmax(logits[:, -1], -1).detach().numpy()).max() < 1e-12
        loss = torch_objective(logits, torch.tensor(targets, dtype=torch.long), weights, last=False)
        assert abs(float(oracle.value("loss", t)) - loss.item()) < 1e-12, t
        loss.backward()
        with torch.no_grad():
            for parameter in module.parameters():
                parameter -= parameter.grad
