"""Oracle files, version 3 (``rw-oracle``): any model of the registry, by its own parameter names (issue 23).

The oracle of ``derive_model`` is compared with the trajectory it was written from (an independent
reading: the exact values in the engine's memory), exactly and through its doubles and certified bounds;
the paper's model keeps version 2's layout under the new format name, and version-2 files (written by the
toolkit before version 3, stored in tests/data) still read, value for value equal to today's.
"""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
import sympy as sp

from rwtoolkit.cli.main import main
from rwtoolkit.engines.exact import (
    EXACT,
    derive,
    derive_model,
    load_oracle,
    model_file_bytes,
    nearest_double,
    to_sympy,
    write_oracle,
)
from rwtoolkit.io import load_schema
from rwtoolkit.models import get_model
from rwtoolkit.tasks import CircleWalk, first_of_two_task

DATA = __import__("pathlib").Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def key_query_traj():
    # a Gaussian start: non-zero W_K, W_Q, so the attention and every parameter move from the first step on
    # (one step: the second takes 30 s of SymPy; test_a_model_oracle_reads_back_the_engines_exact_values
    # writes exponential atoms at t = 2)
    return derive_model(
        CircleWalk(3, 4, "3/10"), get_model("key_query", d=1), 1, mu=2, init="gaussian", sigma="1/2"
    )


def test_a_model_oracle_names_the_models_parameters(tmp_path, key_query_traj):
    path = write_oracle(key_query_traj, tmp_path / "kq.json")
    header = json.loads(path.read_text())
    jsonschema.validate(header, load_schema("oracle"))
    assert (header["format"], header["version"]) == ("rw-oracle", 3)
    assert header["model"]["name"] == "key_query" and header["model"]["hyperparameters"] == {"d": 1}
    assert header["model"]["parameters"] == {"V": [3, 3], "W_K": [1, 7], "W_Q": [1, 7]}
    assert header["config"]["init"].startswith("gaussian(sigma=1/2") and header["config"]["M"] == 4
    oracle = load_oracle(path, verify=True)
    assert oracle.step_values == ("V", "W_K", "W_Q", "loss", "accuracy", "mean_attention", "mean_f")
    for t, state in enumerate(key_query_traj.states):
        for name, value in state.params.items():
            got = oracle.value(
                name, t
            )  # the doubles of the engine's own rounding (EXACT.to_float), certified
            assert got.shape == value.shape and np.all(oracle.error(name, t) <= 1e-15 * np.abs(got) + 1e-300)
            assert np.allclose(got, EXACT.to_float(value), rtol=1e-15, atol=0)
    assert oracle.value("S", 1).shape == (24, 4) and oracle.population()["tokens"].shape == (24, 3)


def test_a_model_oracle_reads_back_the_engines_exact_values(tmp_path):
    """The full-parameter paper's model through the generic engine: rational at t = 0, 1 (uniform attention),
    exponential atoms from t = 2; every exact value read back is the engine's own expression, node for node."""
    traj = derive_model(CircleWalk(3, 4, "3/10"), get_model("one_layer"), 2, mu=2)
    path = write_oracle(traj, tmp_path / "o.json")
    exact, floats = load_oracle(path, exact=True), load_oracle(path)
    for t, state in enumerate(traj.states):
        for name, value in state.params.items():
            same = exact.exact(name, t, atoms="named") == sp.Matrix(to_sympy(value).tolist())
            assert same, f"{name} at t={t}"  # (no repr: the expressions are long)
        same = exact.exact("loss", t, atoms="named") == to_sympy(state.loss)
        assert same, f"loss at t={t}"
        if t < 2:  # rational: each double is the nearest one, independently rounded
            for quantity in ("V", "W", "S", "f", "logits"):
                value = state.params.get(quantity, getattr(state, quantity, None))
                want = np.vectorize(lambda v: nearest_double(sp.sympify(v)), otypes=[float])(to_sympy(value))
                assert np.array_equal(floats.value(quantity, t), want), f"{quantity} at t={t}"


def test_a_model_oracle_is_the_same_bytes_twice(tmp_path, key_query_traj):
    a = write_oracle(key_query_traj, tmp_path / "a.json")
    b = write_oracle(key_query_traj, tmp_path / "b.json")
    header_a, header_b = json.loads(a.read_text()), json.loads(b.read_text())
    assert (
        header_a["per_input"].pop("file") == "a.inputs.npz"
        and header_b["per_input"].pop("file") == "b.inputs.npz"
    )
    assert header_a == header_b
    assert (tmp_path / "a.inputs.npz").read_bytes() == (tmp_path / "b.inputs.npz").read_bytes()


def test_the_file_estimate_bounds_what_is_written(tmp_path):
    for task, model, steps in [
        (CircleWalk(3, 4, "3/10"), get_model("key_query", d=2), 4),
        (first_of_two_task(3), get_model("one_layer"), 3),
    ]:
        path = write_oracle(derive_model(task, model, steps), tmp_path / "o.json", per_input=True)
        header, columns = model_file_bytes(task, model, steps, True)
        assert path.stat().st_size <= header and (tmp_path / "o.inputs.npz").stat().st_size <= columns


def test_the_papers_model_oracle_is_version_2s_layout_under_the_new_name(tmp_path):
    """tests/data/oracle_v2_circle_K3_N3.json: `rw derive --K 3 --N 3 --p 1/2 --mu 1 --steps 2 --json`
    written by the toolkit at version 2 (commit 3dd0d95); today's version 3 holds the same values."""
    old = load_oracle(DATA / "oracle_v2_circle_K3_N3.json", verify=True)
    new_path = write_oracle(derive(CircleWalk(3, 3, "1/2"), 2, mu=1), tmp_path / "o.json")
    new = load_oracle(new_path)
    assert (old.version, new.version) == (2, 3) and old.step_values == new.step_values
    for t in range(3):
        for name in old.step_values:
            assert np.array_equal(old.value(name, t), new.value(name, t))
        for name in ("S", "f", "logits"):
            assert np.array_equal(old.value(name, t), new.value(name, t))
    exact_old, exact_new = (
        load_oracle(DATA / "oracle_v2_circle_K3_N3.json", exact=True),
        load_oracle(new_path, exact=True),
    )
    assert exact_old.steps[2]["V"] == exact_new.steps[2]["V"]


def test_a_file_of_another_format_is_refused_naming_the_ones_read(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "rw-oracle", "version": 2}))
    with pytest.raises(
        ValueError, match=r"not an oracle file this reader knows \(rwtoolkit-derive-oracle version 1, "
    ):
        load_oracle(bad)


def test_rw_derive_model_json_writes_the_oracle(tmp_path, capsys):
    out = tmp_path / "kq.json"
    argv = "derive --model key_query --K 3 --N 4 --p 3/10 --mu 2 --steps 2".split()
    assert main([*argv, "--json", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    oracle = load_oracle(out)
    assert oracle.model["name"] == "key_query" and oracle.T == 2 and oracle.has_per_input
    assert main([*argv, "--json", str(tmp_path / "none.json"), "--no-per-input"]) == 0
    assert not load_oracle(tmp_path / "none.json").has_per_input
