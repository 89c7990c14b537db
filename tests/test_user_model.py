"""A model of your own, written with the tape in a folder of its own, runs in every command with no file of the
toolkit edited (issue 41, item 1): ``--model PATH.py:ATTR`` and ``--model MODULE:ATTR``, and the refusals of a
target that names no model, each one line with exit 2 before any work (docs/guide/models.md#your-own-model)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rwtoolkit.cli.main import main

#: A new tape model: the paper's attention with an affine read-out f = V X S + b (a bias per label).
MY_MODEL = '''
"""The paper's attention with an affine read-out, written with the tape's primitives only."""

from rwtoolkit.models import Model, Readouts


class AffineReadOut(Model):
    """Logits X̃ᵀ W x̃_N, attention S = softmax(logits), prediction f = V X S + b."""

    name = "affine_read_out"
    AXES = {"V": ("label", "token"), "W": ("embed", "embed"), "b": ("label",)}

    def shapes(self, sizes):
        return {"V": (sizes.K, sizes.K), "W": (sizes.D, sizes.D), "b": (sizes.K,)}

    def forward(self, tape, params, inputs):
        w = tape.matmul(params["W"], inputs.xN)
        logits = tape.matmul(inputs.Xt.swapaxes(-1, -2), w)
        S = tape.softmax(logits)
        f = tape.add(tape.matmul(tape.attend(inputs.X, S), tape.swap(params["V"])), params["b"])
        return Readouts(logits=logits, S=S, f=f)


class Wide(AffineReadOut):
    """The same with a hyperparameter it does not use (to show --head-dim reaching a model of your own)."""

    name = "affine_read_out_wide"
    HYPERPARAMETERS = ("d",)

    def __init__(self, d=1):
        self.d = d

    @property
    def hyperparameters(self):
        return {"d": self.d}


INSTANCE = AffineReadOut()
'''

#: An independent plain-PyTorch implementation of that model (rw check's protocol (a)) and a planted bug.
IMPLEMENTATION = """
import torch
from torch import nn


class Affine(nn.Module):
    def __init__(self, K, M, dtype):
        super().__init__()
        self.K = K
        self.V = nn.Parameter(torch.zeros(K, K, dtype=dtype))
        self.W = nn.Parameter(torch.zeros(K + M, K + M, dtype=dtype))
        self.b = nn.Parameter(torch.zeros(K, dtype=dtype))

    def attention(self, Xt):
        return torch.softmax(torch.einsum("nij,ik,nk->nj", Xt, self.W, Xt[:, :, -1]), dim=1)

    def forward(self, Xt):
        return torch.einsum("kl,nlj,nj->nk", self.V, Xt[:, : self.K, :], self.attention(Xt)) + self.b


class NoBias(Affine):
    def forward(self, Xt):
        return super().forward(Xt) - self.b


def model(config):
    return Affine(config.K, config.M, config.torch_dtype)


def no_bias(config):
    return NoBias(config.K, config.M, config.torch_dtype)
"""

TARGET = "my_model.py:AffineReadOut"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder outside the toolkit with the model and an implementation of it, the working folder."""
    (tmp_path / "my_model.py").write_text(MY_MODEL)
    (tmp_path / "affine_impl.py").write_text(IMPLEMENTATION)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_derive_gives_the_exact_trajectory_of_a_model_of_your_own(folder: Path) -> None:
    """b(1) by hand: from zero f = 0, so ∂L/∂b_k = ℓ'(0) P(y = k) = -(1/ε)(1/K) and b(1) = η/(εK) = 10/3."""
    argv = "derive --model my_model.py:AffineReadOut --K 3 --N 3 --p 1/2 --mu 2 --steps 2 --json out.json"
    assert main(argv.split()) == 0
    oracle = json.loads((folder / "out.json").read_text())
    assert oracle["model"]["name"] == "affine_read_out"
    assert oracle["model"]["definition"].startswith(f"{TARGET}: Logits")
    assert [oracle["nodes"][i] for i in oracle["steps"][1]["b"]["exact"]] == ["10/3"] * 3


def test_check_passes_an_implementation_of_a_model_of_your_own_and_fails_its_bug(folder: Path) -> None:
    common = ["--model", TARGET, "--steps", "2", "--examples", "2"]
    assert main(["check", "affine_impl.py:model", *common, "--json", "report.json"]) == 0
    report = json.loads((folder / "report.json").read_text())
    assert report["options"]["model"] == {"name": "affine_read_out", "target": TARGET}
    assert main(["check", "affine_impl.py:no_bias", *common, "--json", "bug.json"]) == 1
    failed = [
        row["id"]
        for row in json.loads((folder / "bug.json").read_text())["properties"]
        if row["status"] == "fail"
    ]
    assert failed[0] == "b"


def test_stability_reports_a_model_of_your_own_by_its_target(folder: Path, capsys) -> None:
    argv = [
        "stability",
        "--model",
        TARGET,
        "--K",
        "3",
        "--N",
        "4",
        "--p",
        "1",
        "--steps",
        "2",
        "--json",
        "s.json",
    ]
    assert main(argv) == 0
    assert json.loads((folder / "s.json").read_text())["model"] == {
        "name": "affine_read_out",
        "target": TARGET,
    }
    assert f"rw stability --model {TARGET} " in capsys.readouterr().out


def test_a_module_target_an_instance_and_hyperparameters_resolve(folder: Path, monkeypatch) -> None:
    from rwtoolkit.models import get_model, is_registered

    monkeypatch.syspath_prepend(str(folder))
    by_module = get_model("my_model:AffineReadOut")
    assert by_module.describe() == {"name": "affine_read_out", "target": "my_model:AffineReadOut"}
    assert get_model("my_model.py:INSTANCE").describe()["target"] == "my_model.py:INSTANCE"
    wide = get_model("my_model.py:Wide", d=3)
    assert wide.describe() == {"name": "affine_read_out_wide", "d": 3, "target": "my_model.py:Wide"}
    assert (
        get_model(**wide.describe()).describe() == wide.describe()
    )  # an output file's model builds it again
    assert not is_registered(by_module)
    registered = get_model("rwtoolkit.models.key_query:KeyQuery", d=2)  # the registered class: no target
    assert registered.describe() == {"name": "key_query", "d": 2} and is_registered(registered)


#: A PyTorch module (its class, a factory function and an instance) and a JAX factory, ATTR(S, L).
FACTORIES = {
    "tiny_torch.py": """
from torch import nn


class Tiny(nn.Module):
    def __init__(self, S, L):
        super().__init__()
        self.emb = nn.Embedding(S, 4)
        self.head = nn.Linear(4, S, bias=False)

    def forward(self, tokens):
        return self.head(self.emb(tokens))


def tiny(S, L):
    return Tiny(S, L)


MODULE = Tiny(3, 2)
""",
    "tiny_jax.py": """
import numpy as np


def tiny(S, L):
    params = {"emb": np.full((S, 4), 0.5), "head": np.full((4, S), 0.25)}

    def apply(params, tokens):
        return params["emb"][tokens] @ params["head"]

    return apply, params
""",
}


def test_a_pytorch_or_jax_factory_is_traced_into_a_sequence_model(folder: Path) -> None:
    from rwtoolkit.models import SequenceModel, Sizes, get_model

    for name, text in FACTORIES.items():
        (folder / name).write_text(text)
    sizes = Sizes(K=3, M=4, N=3)
    for target in ("tiny_torch.py:tiny", "tiny_torch.py:Tiny"):
        model = get_model(target)
        assert isinstance(model, SequenceModel)
        assert model.describe() == {"name": f"tiny_torch.{target[-4:]}", "target": target}
        assert model.shapes(sizes) == {"emb.weight": (3, 4), "head.weight": (3, 4)}
    jax_model = get_model("tiny_jax.py:tiny")
    assert jax_model.describe() == {"name": "tiny_jax.tiny", "target": "tiny_jax.py:tiny"}
    assert jax_model.shapes(sizes) == {"emb": (3, 4), "head": (4, 3)}
    with pytest.raises(
        ValueError, match=r"^--model='tiny_torch.py:MODULE' is a torch.nn.Module instance; give"
    ):
        get_model("tiny_torch.py:MODULE")
    with pytest.raises(ValueError, match=r"^--model='tiny_jax.py:tiny' has no hyperparameter 'd'"):
        get_model("tiny_jax.py:tiny", d=2)


def test_a_tape_model_resolves_without_torch_or_jax(folder: Path) -> None:
    code = (
        "import sys; from rwtoolkit.models import get_model; get_model(sys.argv[1]); "
        "print([m for m in ('torch', 'jax', 'sympy') if m in sys.modules])"
    )
    proc = subprocess.run([sys.executable, "-c", code, TARGET], capture_output=True, text=True, check=False)
    assert proc.stdout.strip() == "[]", proc.stderr


def test_sweep_spec_takes_a_model_of_your_own(folder: Path) -> None:
    from rwtoolkit.analyses.sweep import SpecError, load_spec

    spec = load_spec({"task": "circle", "model": TARGET, "fixed": {"K": 3, "N": 3, "steps": 2}})
    assert spec.model == TARGET and spec.runs[0]["model"] == TARGET
    with pytest.raises(SpecError, match=r"^spec: model: .*missing\.py does not exist"):
        load_spec({"task": "circle", "model": "missing.py:M"})


#: Bad targets (file contents, --model) and the one line each is refused with.
BAD = {
    "unknown_name": (
        "",
        "two_heads",
        "--model='two_heads' is not a registered model: use one of one_layer, ",
    ),
    "missing_file": ("", "nowhere.py:M", "--model='nowhere.py:M': the file nowhere.py does not exist"),
    "missing_module": (
        "",
        "no_such_module:M",
        "importing no_such_module raised ModuleNotFoundError: No module",
    ),
    "broken_module": (
        "import no_such_module\n",
        "bad.py:M",
        "importing bad.py raised ModuleNotFoundError: No module",
    ),
    "missing_attribute": ("", "bad.py:M", "--model='bad.py:M': bad.py has no attribute M"),
    "wrong_kind": (
        "M = {'V': 1}\n",
        "bad.py:M",
        "--model='bad.py:M' is a dict; it must be a rwtoolkit.models.Model",
    ),
    "wrong_class": ("class M:\n    pass\n", "bad.py:M", "--model='bad.py:M' is the class M; it must be"),
    "not_two_arguments": (
        "def M(S):\n    pass\n",
        "bad.py:M",
        "is a function that cannot be called as ATTR(S, L)",
    ),
    "registered_name": (
        "from rwtoolkit.models import OneLayer\n\nclass M(OneLayer):\n    pass\n",
        "bad.py:M",
        "its name 'one_layer' is the registered model rwtoolkit.models.one_layer:OneLayer's; give it a name",
    ),
    "no_name": (
        "from rwtoolkit.models import OneLayer\n\nclass M(OneLayer):\n    name = ''\n",
        "bad.py:M",
        "M sets no name",
    ),
}

# Runs rwtoolkit.cli.main.main(argv) in a fresh interpreter; the last stdout line: exit code, heavy modules loaded.
_HARNESS = """
import json, sys
from rwtoolkit.cli.main import main
try:
    code = main(json.loads(sys.argv[1]))
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "loaded": [m for m in ("torch", "sympy") if m in sys.modules]}))
"""


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_target_that_names_no_model_is_refused_in_one_line_before_any_work(
    tmp_path: Path, case: str
) -> None:
    text, target, line = BAD[case]
    (tmp_path / "bad.py").write_text(text)
    (tmp_path / "s.json").write_text(json.dumps({"task": "circle", "fixed": {"K": 3, "N": 3, "steps": 1}}))
    argv = ["derive", "--model", target, "--steps", "1", "--json", "out.json"]
    proc = subprocess.run(
        [sys.executable, "-c", _HARNESS, json.dumps(argv)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"code": 2, "loaded": []}, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("rw derive: error: --model="), proc.stderr
    assert line in proc.stderr
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["stability", "--K", "3", "--N", "4", "--p", "1"],
        ["check", "affine_impl.py:model"],
        ["train", "--out", "out", "--population"],
        ["sweep", "s.json", "--out", "out"],
        ["derive", "--steps", "1", "--head-dim", "2"],
    ],
    ids=lambda argv: argv[0],
)
def test_every_command_refuses_a_target_that_names_no_model(folder: Path, argv: list[str], capsys) -> None:
    (folder / "s.json").write_text(json.dumps({"task": "circle", "fixed": {"K": 3, "N": 3, "steps": 1}}))
    assert main([*argv, "--model", "nowhere.py:M"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere.py:M" in err and "nowhere.py does not exist" in err, err


def test_head_dim_is_refused_for_a_model_of_your_own_without_one(folder: Path, capsys) -> None:
    assert main(["derive", "--model", TARGET, "--steps", "1", "--head-dim", "2"]) == 2
    assert (
        "--head-dim is out of place: --model my_model.py:AffineReadOut has no head dimension"
        in capsys.readouterr().err
    )


def test_help_names_the_two_forms_and_the_registered_models() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rwtoolkit.cli.main", "derive", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    text = " ".join(proc.stdout.split())
    assert "MODULE:ATTR or PATH.py:ATTR" in text and "key_query:" in text and "relu_head:" in text


def test_the_doc_example_runs_as_written() -> None:
    """docs/guide/models.md#your-own-model shows the model this test writes, line for line."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "guide" / "models.md").read_text()
    block = doc.split("## Your own model", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert textwrap.dedent(block).strip() in MY_MODEL


def test_explore_gives_stuck_proofs_verdict_for_a_model_of_your_own(folder: Path, capsys) -> None:
    """The circle walk K = 3, N = 4, p = 1: the inputs are x, x+1, x+2 with label x + 3 = x, so every input holds
    each token once, x̄ = (1/3, 1/3, 1/3) for all and C = 0; the paper's model is stuck there for all t, and the
    bias b adds a label vector that starts as a multiple of 1 (its first step is η/(εK) on every label, as derived
    above). rw explore keeps the task's checks and takes its verdict from stuck_proof of the model, in the one
    stuck vocabulary."""
    from rwtoolkit.io import STUCK_WORDS, Verdict

    spec = {
        "name": "c",
        "task": {"family": "circle", "params": {"K": 3, "N": 4, "p": 1}},
        "explore": {"steps": 1},
    }
    (folder / "spec.json").write_text(json.dumps(spec))
    assert main(["explore", "spec.json", "--out", "out", "--model", TARGET]) == 0
    printed = capsys.readouterr().out
    proved = STUCK_WORDS.word(Verdict.PROVED)
    assert f"model: {TARGET} (affine_read_out)" in printed
    line = (
        f"\nc (as given): stuck, {proved} (C = 0; {proved}: a symmetry of order 18: "  # docs/guide/explore.md
    )
    assert line in printed
    assert printed.count("not run: ") == 3 and "ran: stuck_proof(task, model)" in printed
    data = json.loads((folder / "out" / "explore.json").read_text())
    assert data["model"] == {"name": "affine_read_out", "target": TARGET}
    check = data["points"][0]["checks"][0]
    assert check["stuck_proof"]["verdict"] == proved and check["stuck_proof"]["model"] == data["model"]
    assert check["signal_is_zero"] and check["one_step"] is None and check["stability"]["analysed"] is False
    assert f"- model: {TARGET} (affine_read_out)" in (folder / "out" / "REPORT.md").read_text()


#: The nanoGPT-style example traced from PyTorch (issue 41): a model of your own named by its path.
NANOGPT = str(Path(__file__).resolve().parent.parent / "examples" / "nanogpt_attention.py") + ":one_layer"


def _circle_spec(folder: Path) -> None:
    spec = {
        "name": "c",
        "task": {"family": "circle", "params": {"K": 3, "N": 4, "p": 1}},
        "explore": {"steps": 1},
    }
    (folder / "spec.json").write_text(json.dumps(spec))


def test_explore_runs_a_traced_pytorch_model_end_to_end(folder: Path, capsys) -> None:
    """rw explore --model examples/nanogpt_attention.py:one_layer: exit 0, and stuck_proof's verdict: from zero
    every gradient of the bias-free model vanishes, so every parameter stays at 0 (proved)."""
    _circle_spec(folder)
    assert main(["explore", "spec.json", "--out", "out", "--model", NANOGPT]) == 0
    printed = capsys.readouterr().out
    assert (
        "c (as given): stuck, stuck for all t (proved) (C = 0; stuck for all t (proved): every parameter stays at 0"
        in printed
    )
    data = json.loads((folder / "out" / "explore.json").read_text())
    assert data["model"] == {"name": "nanogpt_attention.one_layer", "target": NANOGPT}
    proof = data["points"][0]["checks"][0]["stuck_proof"]
    assert proof["objective"] == "lm" and proof["trajectory"]["subspace"]["dim"] == 0


def _population_objective(task):
    """The 'lm' objective of the example's module as a function of its flat parameters, with torch alone."""
    import importlib.util
    from fractions import Fraction

    import numpy as np
    import torch

    path, attr = NANOGPT.rsplit(":", 1)
    spec = importlib.util.spec_from_file_location("nanogpt_for_stability", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    net = getattr(module, attr)(task.K, task.N - 1)
    names = [n for n, _ in net.named_parameters()]
    shapes = [p.shape for _, p in net.named_parameters()]
    pop = task.population()
    tokens = torch.as_tensor(np.asarray(pop.tokens), dtype=torch.int64)
    targets = torch.cat([tokens[:, 1:], torch.as_tensor(np.asarray(pop.labels))[:, None]], dim=1)
    weights = torch.tensor([float(Fraction(str(q))) for q in pop.exact_probs()], dtype=torch.float64)

    def objective(flat):
        params, start = {}, 0
        for name, shape in zip(names, shapes, strict=True):
            size = int(torch.Size(shape).numel())
            params[name] = flat[start : start + size].reshape(shape)
            start += size
        logits = torch.func.functional_call(net, params, (tokens,))
        ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
        return (weights * ce.mean(1)).sum()

    return objective, sum(int(p.numel()) for p in net.parameters())


def test_stability_of_a_traced_model_linearises_its_objective_around_zero(folder: Path) -> None:
    """rw stability --model <traced>: exit 0; GD from zero leaves every parameter at 0 (the zero manifold is {0}),
    and A_0 = I − η ∇²L(0) of the 'lm' objective: its largest |eigenvalue| equals torch's Hessian's (1e-9)."""
    import torch

    from rwtoolkit.tasks import CircleWalk

    argv = ["stability", "--model", NANOGPT, "--K", "3", "--N", "4", "--p", "1", "--steps", "3"]
    assert main([*argv, "--sigmas", "1e-2", "--seeds", "1", "--json", "st.json"]) == 0
    report = json.loads((folder / "st.json").read_text())
    assert report["config"]["objective"] == "lm"
    assert report["manifold"]["kind"] == "zero" and report["manifold"]["dim"] == 0
    objective, total = _population_objective(CircleWalk(3, 4, 1))
    H = torch.autograd.functional.hessian(objective, torch.zeros(total, dtype=torch.float64))
    A = torch.eye(total, dtype=torch.float64) - report["config"]["eta"] * H
    radius = float(torch.linalg.eigvals(A).abs().max())
    assert abs(report["results"][0]["steps"][0]["radius"] - radius) < 1e-9 and radius > 1 + 1e-3


def test_train_population_of_a_traced_model_stays_at_chance_from_zero(folder: Path, capsys) -> None:
    """rw train --model <traced> --population from zero: exit 0, the objective 'lm' in the config, and the loss of
    the uniform prediction, log 3, at every step (every gradient vanishes at 0)."""
    import math

    argv = ["train", "--model", NANOGPT, "--K", "3", "--N", "4", "--p", "1", "--population", "--steps", "3"]
    assert main([*argv, "--out", "tr"]) == 0
    assert "parent_attention" not in capsys.readouterr().out
    metrics = json.loads((folder / "tr" / "metrics.json").read_text())
    assert metrics["config"]["objective"] == "lm"
    assert [abs(h["train_loss"] - math.log(3)) < 1e-12 for h in metrics["history"]] == [True] * 4


def test_a_two_run_sweep_with_a_traced_model_runs(folder: Path) -> None:
    import pandas as pd

    spec = {
        "task": "circle",
        "model": NANOGPT,
        "fixed": {"K": 3, "N": 4, "M": 8, "steps": 2, "init": "gaussian", "sigma": 0.1},
        "grid": {"p": ["1/3", "1"]},
        "pack_size": 2,
    }
    (folder / "sweep.json").write_text(json.dumps(spec))
    assert main(["sweep", "sweep.json", "--out", "sw", "--workers", "1"]) == 0
    rows = pd.read_parquet(folder / "sw" / "results.parquet")
    assert len(rows) == 2 and set(rows["model"]) == {NANOGPT}
    assert rows["final_accuracy"].between(0, 1).all()


def test_a_factory_that_raises_is_refused_in_one_line_naming_its_line(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """The user's own factory failing: its exception and the line it was raised from, one line, exit 2."""
    (tmp_path / "f.py").write_text(
        "def raises(S, L):\n    x = S + L\n    raise RuntimeError(f'no model\\nfor {x}')\n"
    )
    (tmp_path / "s.json").write_text(
        json.dumps({"task": {"family": "icl_markov", "params": {"S": 2, "N": 4}}})
    )
    monkeypatch.chdir(tmp_path)
    argv = ["derive", "--model", "f.py:raises", "--spec", "s.json", "--init", "own", "--steps", "1"]
    assert main([*argv, "--json", "out.json"]) == 2
    out, err = capsys.readouterr()
    assert err == "rw derive: error: raises(2, 3) raised RuntimeError: no model for 5 at f.py:3\n", err
    assert not (tmp_path / "out.json").exists()
