"""Every documented error path of rwtoolkit.engines.numeric and `rw train` raises a clear ValueError (or exits 2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import forward_by_hand

from rwtoolkit.cli.main import main
from rwtoolkit.engines.numeric import ModelConfig, TrainConfig, positional_embeddings, train
from rwtoolkit.engines.numeric._train import _check_finite
from rwtoolkit.io import MemoryEstimateError
from rwtoolkit.tasks import CircleWalk, qa_task2

TASK = CircleWalk(3, 4, "1/2")


def _model(**kw):
    return ModelConfig(**{"K": 3, "N": 4, "M": 6, **kw})


def _cfg(**kw):
    return TrainConfig(**{"steps": 1, "population": True, **kw})


BAD_TRAIN = [
    (
        "task-not-a-task",
        "circle",
        _model(),
        _cfg(),
        r"task='circle' must be a rwtoolkit.tasks CircleWalk or FiniteTask",
    ),
    ("model-not-a-config", TASK, {"K": 3}, _cfg(), r"model=\{'K': 3\} must be a ModelConfig"),
    ("cfg-not-a-config", TASK, _model(), None, r"cfg=None must be a TrainConfig"),
    ("K-mismatch", TASK, _model(K=4), _cfg(), r"K=4 differs from the task's vocabulary size K=3"),
    ("N-mismatch", TASK, _model(N=5), _cfg(), r"N=5 differs from the task's sequence length N=4"),
    ("M-below-N", TASK, _model(M=3), _cfg(), r"M=3 is out of range: M must be >= N=4"),
    ("sine-M-equals-N", TASK, _model(M=4), _cfg(), r"pos='sine' needs M > N"),
    ("onehot-M-not-N", TASK, _model(pos="onehot"), _cfg(), r"pos='onehot' needs M = N"),
    ("pos-unknown", TASK, _model(pos="cosine"), _cfg(), r"pos='cosine' is not one of sine, onehot, random"),
    (
        "user-pos-not-orthogonal",
        TASK,
        _model(pos=np.ones((6, 4))),
        _cfg(),
        r"not orthogonal with equal norms",
    ),
    (
        "user-pos-unequal-norms",
        TASK,
        _model(pos=np.diag([1.0, 1, 1, 2, 0, 0])[:, :4]),
        _cfg(),
        r"not orthogonal",
    ),
    (
        "user-pos-shape",
        TASK,
        _model(pos=np.eye(5)),
        _cfg(),
        r"has shape \(5, 5\), expected \(M, N\) = \(6, 4\)",
    ),
    ("mu-zero", TASK, _model(mu=0.0), _cfg(), r"mu=0.0 is out of range"),
    ("pos-seed-negative", TASK, _model(pos_seed=-1), _cfg(), r"pos_seed=-1 must be an integer >= 0"),
    ("relu-width-zero", TASK, _model(relu_width=0), _cfg(), r"relu_width=0 must be an integer >= 1"),
    ("gram-unknown", TASK, _model(gram="exact"), _cfg(), r"gram='exact' is not one of ideal, computed"),
    ("steps-negative", TASK, _model(), _cfg(steps=-1), r"steps=-1 must be an integer >= 0"),
    ("eta-zero", TASK, _model(), _cfg(eta=0.0), r"eta=0.0 is out of range"),
    ("eta-nan", TASK, _model(), _cfg(eta=math.nan), r"eta=nan is out of range"),
    ("eta-schedule-negative", TASK, _model(), _cfg(eta=lambda t: -1.0), r"eta\(0\) = -1.0 is out of range"),
    ("eta-schedule-bool", TASK, _model(), _cfg(eta=lambda t: True), r"eta\(0\) = True is out of range"),
    (
        "eta-schedule-zero-later",
        TASK,
        _model(),
        _cfg(steps=3, eta=lambda t: 1.0 if t < 2 else 0.0),
        r"^eta\(2\) = 0.0 is out of range: the learning rate must be a finite number > 0$",
    ),
    ("eps-negative", TASK, _model(), _cfg(eps=-0.1), r"eps=-0.1 is out of range"),
    ("loss-unknown", TASK, _model(), _cfg(loss="hinge"), r"loss='hinge' is not one of log, squared, exp"),
    (
        "loss-not-finite",
        TASK,
        _model(),
        _cfg(loss=lambda z: torch.log(z - 1)),
        r"is not finite at step 0 for 24 of 24",
    ),
    ("loss-wrong-shape", TASK, _model(), _cfg(loss=lambda z: z.sum()), r"must map a tensor of shape \(24,\)"),
    ("init-unknown", TASK, _model(), _cfg(init="ones"), r"init='ones' is not one of zero, gaussian"),
    ("sigma-zero", TASK, _model(), _cfg(init="gaussian", sigma=0.0), r"sigma=0.0 is out of range"),
    ("seed-negative", TASK, _model(), _cfg(seed=-2), r"seed=-2 must be an integer >= 0"),
    (
        "train-size-zero",
        TASK,
        _model(),
        _cfg(population=False, train_size=0),
        r"train_size=0 must be an integer >= 1",
    ),
    (
        "test-size-zero",
        TASK,
        _model(),
        _cfg(population=False, test_size=0),
        r"test_size=0 must be an integer >= 1",
    ),
    (
        "dtype-unknown",
        TASK,
        _model(),
        _cfg(dtype="float16"),
        r"dtype='float16' is not one of float64, float32",
    ),
    ("device-unknown", TASK, _model(), _cfg(device="tpu"), r"device='tpu' is not one of cpu, cuda"),
    ("tie-rtol-negative", TASK, _model(), _cfg(tie_rtol=-1e-9), r"tie_rtol=-1e-09 is out of range"),
    ("snapshot-out-of-range", TASK, _model(), _cfg(snapshots=[2]), r"snapshots entry 2 is out of range"),
    ("threads-zero", TASK, _model(), _cfg(threads=0), r"threads=0 must be an integer >= 1"),
    (
        "record-step-out-of-range",
        TASK,
        _model(),
        _cfg(record_steps=[0, 2]),
        r"record_steps entry 2 is out of range",
    ),
    (
        "record-steps-not-a-sequence",
        TASK,
        _model(),
        _cfg(record_steps=3),
        r"record_steps=3 must be a sequence",
    ),
    (
        "rotate-gaussian-init",
        TASK,
        _model(),
        _cfg(rotate=True, init="gaussian"),
        r"rotate=True .* init='gaussian'",
    ),
    (
        "rotate-sampled",
        TASK,
        _model(),
        _cfg(rotate=True, population=False),
        r"rotate=True .* population=False",
    ),
    ("rotate-relu", TASK, _model(relu_width=2), _cfg(rotate=True), r"rotate=True .* relu_width=2"),
    ("rotate-reference", TASK, _model(), _cfg(rotate=True, fast=False), r"rotate=True .* fast=False"),
    (
        "rotate-computed-gram",
        TASK,
        _model(gram="computed"),
        _cfg(rotate=True),
        r"rotate=True .* gram='computed'",
    ),
    (
        "rotate-finite-task",
        qa_task2(),
        ModelConfig(K=19, N=19, M=20),
        _cfg(rotate=True),
        r"rotate=True .* not a CircleWalk",
    ),
    ("kl-norm-unknown", TASK, _model(), _cfg(kl_norm="clip"), r"kl_norm='clip' is not one of softmax, shift"),
    ("population-too-large", CircleWalk(6, 97, "1/2"), ModelConfig(K=6, N=97), _cfg(), r"above the limit"),
    ("sampling-symbolic-p", CircleWalk(3, 4, "p"), _model(), _cfg(population=False), r"needs a numeric p"),
]


@pytest.mark.parametrize("task,model,cfg,message", [b[1:] for b in BAD_TRAIN], ids=[b[0] for b in BAD_TRAIN])
def test_bad_training_arguments_raise_a_clear_error(task, model, cfg, message):
    with pytest.raises(ValueError, match=message):
        train(task, model, cfg, progress=False)


@pytest.mark.parametrize("path", ["fast", "reference", "reference-chunks"])
def test_log_loss_outside_its_domain_names_the_step_and_the_sample_count(monkeypatch, path):
    """A Gaussian init with σ = 0.3 puts some label scores below -ε: the run stops at step 0, no NaN.

    The count is over the whole training set, also when the reference path splits it into chunks of 10
    walks, and the first walk is one of the bad ones. (From zero init the log-loss can never leave its
    domain: its V-gradient only raises entries of V, so V ≥ 0 and z ≥ 0 throughout.)
    """
    task, M, sigma, seed = CircleWalk(4, 5, "0.3"), 7, 0.3, 3
    f = forward_by_hand(task, M, sigma, seed)[1]
    z = f[np.arange(len(f)), task.population().labels]  # e_yᵀ f
    out = z + 0.1 <= 0
    bad = int(np.sum(out))
    assert 0 < bad < 64 and out[0] and max(out[s : s + 10].sum() for s in range(0, 64, 10)) < bad
    if path == "reference-chunks":  # (K+M)·N·8 = 440 bytes per walk
        monkeypatch.setattr("rwtoolkit.engines.numeric._model.REFERENCE_CHUNK_BYTES", 10 * 440)
    with pytest.raises(
        ValueError, match=rf"undefined at step 0: z\+eps <= 0 for {bad} of 64 training samples \("
    ):
        train(
            task,
            ModelConfig(K=4, N=5, M=M),
            TrainConfig(
                steps=2,
                init="gaussian",
                sigma=sigma,
                seed=seed,
                eta=0.5,
                population=True,
                fast=path == "fast",
            ),
            progress=False,
        )


def test_cuda_request_without_cuda_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(
        ValueError,
        match=r"^device='cuda' was requested but torch.cuda.is_available\(\) is False; use device='cpu'$",
    ):
        train(TASK, _model(), _cfg(device="cuda"), progress=False)


def test_a_memory_refusal_names_the_largest_part_and_its_alternative(monkeypatch):
    """M = 10⁶ makes P (and its Gram and torch copies, 144 MB) the largest part, above the fixed 64 MiB overhead."""
    monkeypatch.setattr("rwtoolkit.io._memory.available_memory", lambda: 2**20)
    with pytest.raises(
        MemoryEstimateError,
        match=r"^training K=3, N=4, M=1000000 \(largest part: embeddings\) needs about .* available: "
        r"use a smaller M or N \(and the fast path with zero init, which never builds W\)$",
    ):
        train(TASK, _model(M=1_000_000), _cfg(), progress=False)


def test_a_non_finite_metric_stops_the_run_naming_the_metric_and_the_step(monkeypatch):
    monkeypatch.setattr("rwtoolkit.engines.numeric._train.kl_divergence", lambda *args: math.nan)
    with pytest.raises(ValueError, match=r"^metric 'kl' is not finite at step 0: the run diverged"):
        train(TASK, _model(), _cfg(), progress=False)


def test_a_non_finite_metric_is_refused_with_its_name_and_step():
    """Every entry of a list-valued metric (the attention profile) is checked, not only scalar metrics."""
    with pytest.raises(
        ValueError,
        match=r"^metric 'attention_profile' is not finite at step 3: the run diverged \(lower eta\)$",
    ):
        _check_finite({"kl": 0.5, "attention_profile": [0.5, math.nan, 0.5]}, 3)
    _check_finite({"kl": 0.5, "attention_profile": [0.5, 0.5], "ones_residual": None}, 3)


BAD_EMBEDDINGS = [
    ("random-M-below-N", dict(kind="random", M=3, N=4), r"pos='random' needs M >= N"),
    ("M-not-integer", dict(kind="sine", M=6.0, N=4), r"M=6.0 must be a positive integer"),
    ("N-too-small", dict(kind="sine", M=6, N=1), r"N=1 must be an integer >= 2"),
    ("mu-negative", dict(kind="sine", M=6, N=4, mu=-1.0), r"mu=-1.0 must be a finite number > 0"),
    ("user-nan", dict(kind=np.full((6, 4), np.nan), M=6, N=4), r"non-finite entries"),
]


@pytest.mark.parametrize(
    "kwargs,message", [b[1:] for b in BAD_EMBEDDINGS], ids=[b[0] for b in BAD_EMBEDDINGS]
)
def test_bad_embedding_arguments_raise_a_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        positional_embeddings(**kwargs)


BAD_CLI = [
    ("p-with-qa", ["--task", "qa1", "--p", "1/2"], "--p applies only to --task circle"),
    ("K-with-qa", ["--task", "qa2", "--K", "5"], "--K=5 does not match --task qa2, whose K is 19"),
    ("p-out-of-range", ["--p", "1.5", "--N", "5"], "p=3/2 is outside [0, 1]"),
    ("K-too-small", ["--K", "2", "--N", "5"], "K=2 is out of range: K must be >= 3"),
    ("snapshots-not-integers", ["--N", "5", "--M", "8", "--snapshots", "1,x"], "--snapshots='1,x' must be"),
    ("M-below-N", ["--N", "9", "--M", "5"], "M=5 is out of range: M must be >= N=9"),
]


@pytest.mark.parametrize("argv,message", [b[1:] for b in BAD_CLI], ids=[b[0] for b in BAD_CLI])
def test_bad_cli_arguments_exit_2_with_one_line(argv, message, tmp_path, capsys):
    code = main(["train", *argv, "--steps", "1", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "metrics.json").exists()


def test_qa_task_runs_with_its_own_sizes(tmp_path):
    """The complement of the K-with-qa error: matching sizes are accepted."""
    assert qa_task2().K == 19
    assert (
        main(
            [
                "train",
                "--task",
                "qa2",
                "--K",
                "19",
                "--N",
                "19",
                "--M",
                "25",
                "--steps",
                "1",
                "--population",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
