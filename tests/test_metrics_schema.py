"""``metrics.json`` (``rw train``, ``TrainResult.to_json``) validates against the shipped schema, which bites."""

from __future__ import annotations

import copy
import json

import jsonschema
import numpy as np
import pytest
from conftest import SMALL_TRAIN_ARGS as SMALL

from rwtoolkit.cli.main import main
from rwtoolkit.engines.numeric import HISTORY_KEYS, ModelConfig, TrainConfig, train
from rwtoolkit.io import load_schema
from rwtoolkit.tasks import CircleWalk, qa_task1


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = load_schema("metrics")
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize(
    "extra",
    [
        ["--snapshots", "0,3"],
        ["--init", "gaussian", "--relu-width", "3", "--population", "--reference"],
        [
            "--record-steps",
            "0,2",
            "--pos",
            "onehot",
            "--M",
            "5",
            "--normalize-attention",
            "--dtype",
            "float32",
        ],
        ["--record-params", "--record-steps", "0,1,3"],
        ["--record-params", "--init", "gaussian", "--relu-width", "2"],
    ],
    ids=[
        "snapshots",
        "relu-population-reference",
        "record-steps-float32",
        "record-params",
        "record-params-relu",
    ],
)
def test_rw_train_output_validates_against_the_metrics_schema(tmp_path, validator, extra):
    assert main(["train", *SMALL, *extra, "--out", str(tmp_path / "run")]) == 0
    data = json.loads((tmp_path / "run" / "metrics.json").read_text())
    validator.validate(data)
    assert data["config"]["history_keys"] == list(HISTORY_KEYS)  # the schema's const is the code's key list
    assert ("params" in data) == ("--record-params" in extra)


def test_finite_task_and_user_embedding_runs_validate(validator):
    task = qa_task1()
    P = np.linalg.qr(np.random.default_rng(0).standard_normal((task.N + 2, task.N + 2)))[0][:, : task.N]
    run = train(
        task,
        ModelConfig(K=task.K, N=task.N, M=task.N + 2, pos=P),
        TrainConfig(steps=1, train_size=5, test_size=5),
        progress=False,
    )
    validator.validate(run.to_json())


def _mutations(doc: dict):
    """(name, broken copy) pairs: each breaks one documented property of the format."""

    def edit(name, fn):
        broken = copy.deepcopy(doc)
        fn(broken)
        return name, broken

    yield edit("missing history key", lambda d: d["history"][0].pop("kl"))
    yield edit("unknown history key", lambda d: d["history"][0].update(loss=1.0))
    yield edit("accuracy above 1", lambda d: d["history"][0].update(test_accuracy=1.5))
    yield edit("negative step", lambda d: d["history"][0].update(step=-1))
    yield edit("metric as a string", lambda d: d["history"][0].update(train_loss="nan"))
    yield edit("missing final V", lambda d: d["final"].pop("V"))
    yield edit("p as a float", lambda d: d["config"]["task"].update(p=0.7))
    yield edit("unknown gram", lambda d: d["config"]["model"].update(gram="exact"))
    yield edit("non-numeric snapshot key", lambda d: d["snapshots"].update(last=d["snapshots"]["0"]))
    yield edit("reordered history_keys", lambda d: d["config"]["history_keys"].reverse())
    yield edit("mu zero", lambda d: d["config"].update(mu=0.0))


def test_the_schema_rejects_each_kind_of_broken_file(validator):
    run = train(
        CircleWalk(3, 4, "1/2"),
        ModelConfig(K=3, N=4, M=5),
        TrainConfig(steps=1, population=True, snapshots=(0,)),
        progress=False,
    )
    doc = json.loads(json.dumps(run.to_json()))
    validator.validate(doc)
    for name, broken in _mutations(doc):
        assert not validator.is_valid(broken), f"the schema accepts a file with a {name}"
