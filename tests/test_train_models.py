"""``rw train --model NAME``: another registered model trains in torch with its tape gradient (rwtoolkit.engines.numeric.train_model)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from rwtoolkit.cli.main import main
from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, train, train_model
from rwtoolkit.models import get_model, rational_positions
from rwtoolkit.tasks import CircleWalk

#: V of the float64 torch trajectory against the exact engine's, relative to max |V| (at least 1):
#: measured 2.3e-16 (CircleWalk(3, 4, 1/3) and (4, 5, 3/10), 3 steps); the bound is that times about 40.
V_RTOL = 1e-14


def _P(N: int) -> np.ndarray:
    return np.asarray(rational_positions(N, 1), dtype=np.float64)


def test_key_query_from_zero_keeps_w_k_w_q_exactly_zero_and_attention_uniform():
    task = CircleWalk(3, 5, "1/3")
    r = train_model(task, get_model("key_query", d=2), _P(5), 6, keep_params=True)
    for t, params in r.params.items():
        assert not params["W_K"].any() and not params["W_Q"].any(), t
    for record in r.history:
        np.testing.assert_allclose(record["attention_profile"], np.full(5, 1 / 5), rtol=1e-14, atol=0)
    assert np.abs(r.params[6]["V"]).max() > 0.1  # V learns the token average


def test_key_query_from_a_gaussian_init_moves_w_k_w_q_and_the_attention():
    task = CircleWalk(3, 5, "1/3")
    r = train_model(
        task, get_model("key_query"), _P(5), 10, init="gaussian", sigma=0.05, seed=1, keep_params=True
    )
    for name in ("W_K", "W_Q"):
        assert np.abs(r.params[10][name] - r.params[0][name]).max() > 1e-4
    assert np.ptp(r.history[-1]["attention_profile"]) > 1e-4
    again = train_model(
        task, get_model("key_query"), _P(5), 1, init="gaussian", sigma=0.05, seed=1, keep_params=True
    )
    np.testing.assert_array_equal(again.params[0]["W_K"], r.params[0]["W_K"])  # the seed fixes the init


@pytest.mark.parametrize("task", [CircleWalk(3, 4, "1/3"), CircleWalk(4, 5, "3/10")], ids=repr)
def test_key_query_torch_trajectory_agrees_with_the_exact_engine(task):
    from rwtoolkit.engines.exact import derive_model

    model = get_model("key_query")
    exact = derive_model(task, model, 3)  # eta 1, eps 1/10, mu 1, log-loss, zero init
    r = train_model(task, model, _P(task.N), 3, eta=1.0, eps=0.1, keep_params=True)
    for t in range(4):
        V = np.array(exact.states[t].params["V"].tolist(), dtype=object).astype(np.float64)
        err = np.abs(V - r.params[t]["V"]).max() / max(1.0, np.abs(V).max())
        assert err <= V_RTOL, (t, err)
        assert r.history[t]["train_loss"] == pytest.approx(float(exact.states[t].loss), rel=1e-13)


def test_rw_train_model_key_query_writes_a_valid_json(tmp_path, capsys):
    out = tmp_path / "kq"
    argv = ["train", "--model", "key_query", "--head-dim", "3", "--K", "3", "--N", "5", "--p", "1/3"]
    argv += [
        "--M",
        "8",
        "--population",
        "--steps",
        "4",
        "--init",
        "gaussian",
        "--sigma",
        "0.05",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    assert "wrote" in capsys.readouterr().out
    data = json.loads((out / "metrics.json").read_text())
    assert data["model"] == {"name": "key_query", "d": 3}
    assert data["config"]["task"] == {"name": "circle", "K": 3, "N": 5, "p": "1/3"}
    assert data["config"]["positions"]["M"] == 8 and data["config"]["init"] == "gaussian"
    assert [h["step"] for h in data["history"]] == list(range(5))
    for h in data["history"]:
        assert np.isfinite([h["train_loss"], h["test_accuracy"], *h["attention_profile"]]).all()
        assert sum(h["attention_profile"]) == pytest.approx(1.0)
    assert np.asarray(data["final"]["W_K"]).shape == (3, 3 + 8)


@pytest.mark.parametrize(
    "extra",
    [
        ["--relu-width", "2"],
        ["--normalize-attention"],
        ["--gram", "computed"],
        ["--reference"],
        ["--rotate"],
        ["--snapshots", "1"],
        ["--record-params"],
        ["--tie-rtol", "1e-6"],
        ["--population", "--head-dim", "0"],
    ],
)
def test_options_of_the_paper_model_only_are_refused_for_key_query(extra, tmp_path, capsys):
    out = tmp_path / "refused"
    argv = ["train", "--model", "key_query", "--K", "3", "--N", "4", "--M", "8", "--out", str(out)]
    pop = [] if "--population" in extra else ["--population"]
    assert main(argv + pop + extra) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "error" in err
    assert not out.exists()


def test_sampled_training_and_head_dim_of_one_layer_are_refused(tmp_path, capsys):
    base = ["train", "--K", "3", "--N", "4", "--M", "8", "--out", str(tmp_path / "x")]
    assert main([*base, "--model", "key_query"]) == 2
    assert "--population" in capsys.readouterr().err
    assert main([*base, "--head-dim", "2"]) == 2
    assert "no head dimension" in capsys.readouterr().err


def test_one_layer_output_is_that_of_train(tmp_path):
    """rw train (and --model one_layer) still runs rwtoolkit.engines.numeric.train: the same metrics.json bytes."""
    base = ["train", "--K", "3", "--N", "4", "--M", "5", "--population", "--steps", "3"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 0
    assert main([*base, "--model", "one_layer", "--out", str(tmp_path / "b")]) == 0
    a, b = (tmp_path / "a" / "metrics.json").read_bytes(), (tmp_path / "b" / "metrics.json").read_bytes()
    assert a == b
    result = train(CircleWalk(3, 4, "1/2"), ModelConfig(K=3, N=4, M=5), TrainConfig(steps=3, population=True))
    assert json.loads(a)["history"] == json.loads(json.dumps(result.to_json()["history"]))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_key_query_on_cuda_matches_cpu():
    task = CircleWalk(3, 5, "1/3")
    kw = {"init": "gaussian", "sigma": 0.05, "keep_params": True}
    cpu = train_model(task, get_model("key_query"), _P(5), 5, **kw)
    gpu = train_model(task, get_model("key_query"), _P(5), 5, device="cuda", **kw)
    for name in ("V", "W_K", "W_Q"):
        np.testing.assert_allclose(gpu.params[5][name], cpu.params[5][name], rtol=1e-10, atol=1e-12)


def _engine_runs(model: ModelConfig, cfg: TrainConfig, ps=("1/3", "3/10")):
    return [(CircleWalk(model.K, model.N, p), model, cfg) for p in ps]


def test_every_torch_engine_takes_the_same_runs_and_returns_train_results():
    """One signature and one result type: the engine select picks (reduced, batched, generic) each takes
    the same (task, ModelConfig, TrainConfig) runs and ``trace=True`` and returns one TrainResult per run,
    and the three agree on V at every recorded step and on V's residuals at every step (float64 rounding
    over 4 steps: 1e-12; the residuals are relative, 1e-9)."""
    from rwtoolkit.engines import select
    from rwtoolkit.engines.numeric import TrainResult

    model = ModelConfig(K=3, N=5, M=8)
    cfg = TrainConfig(steps=4, population=True, init="gaussian", sigma=0.02, record_params=True)
    engines = [
        select("one_layer", "torch", "gaussian"),
        select("one_layer", "torch", "gaussian", specialise=False),
        select("one_layer", "torch", "gaussian", many=True),
    ]
    assert [e.name for e in engines] == [
        "reduced torch engine (FastModel)",
        "generic torch engine",
        "batched torch engine",
    ]
    no_params = TrainConfig(**{**vars(cfg), "record_params": False})  # the batched engine keeps V at the end
    reduced, generic, batched = (
        e.load()(_engine_runs(model, no_params if e.many else cfg), trace=True) for e in engines
    )
    for results in (reduced, generic, batched):
        assert len(results) == 2 and all(isinstance(r, TrainResult) and r.diverged is None for r in results)
    assert generic[0].description == {"name": "one_layer"} and reduced[0].description is None
    for r, g, b in zip(reduced, generic, batched, strict=True):
        for t in range(5):
            np.testing.assert_allclose(r.params[t]["V"], g.params[t]["V"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.final["V"], g.final["V"], rtol=0, atol=1e-12)
        assert b.final_accuracy == pytest.approx(g.final_accuracy, abs=1e-12)
        for key in ("ones_residual", "circulant_residual"):  # V's residuals at every step, by all three
            assert not np.isnan(g.series(key, 4)).any()
            np.testing.assert_allclose(b.series(key, 4), g.series(key, 4), rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(r.series(key, 4), g.series(key, 4), rtol=1e-9, atol=1e-12)


def test_the_generic_engine_reports_a_diverged_run_and_trains_the_others():
    """A run that leaves the loss domain is reported with its step and message; the next run still trains
    (as rw sweep needs), and rw train raises the same one line."""
    from rwtoolkit.engines.numeric import train_model_runs

    model = ModelConfig(K=3, N=4, M=6, registered=get_model("key_query", d=2))
    bad = TrainConfig(steps=3, population=True, init="gaussian", sigma=3.0, eta=1e300, seed=1, loss="squared")
    good = TrainConfig(steps=3, population=True, init="gaussian", sigma=0.1, loss="squared")
    task = CircleWalk(3, 4, "1/3")
    diverged, trained = train_model_runs([(task, model, bad), (task, model, good)])
    assert diverged.diverged is not None and diverged.history == []
    assert "not finite at step 1" in str(diverged.diverged) and diverged.diverged.step == 1
    assert trained.diverged is None and [h["step"] for h in trained.history] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match=f"at step {diverged.diverged.step}"):
        train_model(task, model.registered, _positions(model), 3, eta=1e300,
                    init="gaussian", sigma=3.0, seed=1, loss="squared")  # fmt: skip


def _positions(model: ModelConfig) -> np.ndarray:
    from rwtoolkit.engines.numeric import positional_embeddings

    return positional_embeddings(model.pos, model.M, model.N, model.mu, model.pos_seed)


def test_the_generic_engine_refuses_the_reduced_engines_options_before_work():
    from rwtoolkit.engines.numeric import train_model_runs

    model = ModelConfig(K=3, N=4, M=6, registered=get_model("key_query", d=2))
    for option, cfg in (
        ("population=False", TrainConfig(steps=1)),
        ("rotate=True", TrainConfig(steps=1, population=True, rotate=True)),
        ("snapshots", TrainConfig(steps=1, population=True, snapshots=(1,))),
    ):
        with pytest.raises(ValueError, match=option.replace("(", r"\(")):
            train_model_runs([(CircleWalk(3, 4, "1/3"), model, cfg)])


def test_a_named_model_trains_on_the_generic_engine_and_the_paper_options_on_the_reduced_one(tmp_path):
    """rw train --model normalized_attention writes the generic engine's metrics.json (its model and every
    parameter), --normalize-attention the reduced engine's (format rw-metrics, V and w): the same model."""
    base = ["train", "--K", "3", "--N", "4", "--M", "6", "--population", "--steps", "2"]
    assert main([*base, "--model", "normalized_attention", "--out", str(tmp_path / "named")]) == 0
    assert main([*base, "--normalize-attention", "--out", str(tmp_path / "flag")]) == 0
    named = json.loads((tmp_path / "named" / "metrics.json").read_text())
    flag = json.loads((tmp_path / "flag" / "metrics.json").read_text())
    assert named["model"] == {"name": "normalized_attention"} and "format" not in named
    assert set(named["final"]) == {"V", "W", "attention_profile"}
    assert flag["format"] == "rw-metrics" and set(flag["final"]) == {"V", "w", "attention_profile"}
    np.testing.assert_allclose(named["final"]["V"], flag["final"]["V"], rtol=0, atol=1e-12)
