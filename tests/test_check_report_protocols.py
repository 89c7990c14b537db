"""Every report ``rw check`` can produce validates against ``rwtoolkit/schemas/report.schema.json``.

One check per protocol (a module, a training loop, a NumPy and a JAX ``Functional``, a ``Supervised``
module), and the fields a report holds beyond a passing one-layer check: failures (a divergence, a NaN,
a crash of the user's code, a failed assumption on the user's own P), rows not checked, another model
of ``rwtoolkit.models``. The schema's enumerations are the toolkit's own lists, so a new protocol, loss or
dtype cannot be left out of it again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from rwtoolkit.analyses.check import (
    PROTOCOLS,
    CheckOptions,
    Functional,
    Supervised,
    check,
    load_factory,
    write_report,
)
from rwtoolkit.analyses.check._config import DTYPES
from rwtoolkit.analyses.check.strategies import TASK_KINDS
from rwtoolkit.cli.main import main
from rwtoolkit.io import load_schema
from rwtoolkit.tasks import LOSSES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
OPTIONS = CheckOptions(steps=1, examples=2)
sys.path.insert(0, str(EXAMPLES))


def _written(report, tmp_path: Path) -> dict:
    """The report as ``write_report`` writes it (it validates first), read back and validated again."""
    path = write_report(report, tmp_path / "report.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.validate(data, load_schema("report"))
    assert data == json.loads(json.dumps(report.to_json()))
    return data


def test_the_report_schema_enumerates_the_toolkits_own_lists() -> None:
    schema = load_schema("report")
    assert schema["properties"]["protocol"]["enum"] == list(PROTOCOLS)
    options = schema["properties"]["options"]["properties"]
    assert options["losses"]["items"]["enum"] == list(LOSSES)
    assert options["dtype"]["enum"] == list(DTYPES)
    assert options["task"]["enum"] == list(TASK_KINDS)


def _supervised(config):
    from plain_torch import OneLayerTransformer

    def loss(f, labels, weights):
        import torch

        z = f[torch.arange(len(labels)), labels]
        return (weights * -torch.log(z + float(config.eps))).sum()

    return Supervised(OneLayerTransformer(config.K, config.M, config.torch_dtype), loss)


def _protocol_factory(name: str):
    if name == "functional-jax":
        pytest.importorskip("jax", reason="the JAX port needs the [jax] extra (the test extra installs it)")
        return load_factory(f"{EXAMPLES / 'plain_jax.py'}:model")
    if name == "supervised":
        return _supervised
    target = {
        "module": "plain_torch.py:model",
        "loop": "plain_torch.py:training",
        "functional-numpy": "plain_numpy.py:model",
    }[name]
    return load_factory(f"{EXAMPLES}/{target}")


#: One correct implementation per protocol (and per framework of the ``Functional``).
CASES = ["module", "loop", "functional-numpy", "functional-jax", "supervised"]


@pytest.mark.parametrize("name", CASES)
def test_a_correct_check_of_every_protocol_writes_a_valid_report(name, tmp_path) -> None:
    report = check(_protocol_factory(name), OPTIONS, name)
    assert report.exit_code == 0, report.render()
    data = _written(report, tmp_path)
    assert data["protocol"] == name.split("-")[0]


def test_every_protocol_has_a_case_above() -> None:
    assert {name.split("-")[0] for name in CASES} == set(PROTOCOLS)


def test_rw_check_json_of_a_numpy_functional_writes_its_report(tmp_path, capsys) -> None:
    out = tmp_path / "r.json"
    code = main(
        [
            "check",
            f"{EXAMPLES / 'plain_numpy.py'}:model",
            "--steps",
            "1",
            "--examples",
            "1",
            "--json",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert f"wrote {out}" in printed
    data = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(data, load_schema("report"))
    assert data["protocol"] == "functional"


def _numpy(config, **kwargs) -> Functional:
    from plain_numpy import functional

    return functional(config, **kwargs)


def _shifted_own_P(config) -> Functional:
    from plain_numpy import sine_positions

    return _numpy(config, P=sine_positions(config.N + 3, config.N, shift=0.5))


def _nan_after_the_first_step(config) -> Functional:
    impl = _numpy(config)

    def grad(params, Xt):
        return {name: np.full_like(value, np.nan) for name, value in params.items()}

    return Functional(impl.params, impl.forward, attention=impl.attention, grad=grad)


def _crash_at_the_second_step(config) -> Functional:
    impl = _numpy(config)
    calls = []

    def grad(params, Xt):
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("the user's code broke")
        return impl.grad(params, Xt)

    return Functional(impl.params, impl.forward, attention=impl.attention, grad=grad)


@pytest.mark.parametrize(
    "factory, steps, failing, text",
    [
        (lambda config: _numpy(config, transposed=True), 2, "V", "expected"),
        (_shifted_own_P, 1, "P", "orthogonality fails"),
        (_nan_after_the_first_step, 1, "V", "got NaN"),
        (_crash_at_the_second_step, 2, "V", "raised RuntimeError: the user's code broke"),
    ],
    ids=["divergence", "own-P-assumption", "nan", "crash"],
)
def test_a_check_that_fails_writes_a_valid_report(factory, steps, failing, text, tmp_path) -> None:
    report = check(factory, CheckOptions(steps=steps, examples=2))
    data = _written(report, tmp_path)
    assert data["exit_code"] == 1
    failed = {p["id"]: p["failure"] for p in data["properties"] if p["status"] == "fail"}
    assert failing in failed, report.render()
    assert text in failed[failing]["text"]
    assert data["counts"]["not checked"] >= 1  # the rows after the first divergence


def test_a_failed_assumption_on_the_own_P_is_written_with_the_assumption(tmp_path) -> None:
    data = _written(check(_shifted_own_P, OPTIONS), tmp_path)
    failure = next(p["failure"] for p in data["properties"] if p["id"] == "P")
    assert failure["quantity"] == "P" and failure["assumption"].startswith("orthogonality fails")


def test_a_report_of_another_model_that_fails_validates(tmp_path) -> None:
    options = CheckOptions(steps=2, examples=2, model="key_query", dtype="float32", task="any")
    report = check(load_factory(f"{EXAMPLES / 'key_query_torch.py'}:transposed_V"), options)
    data = _written(report, tmp_path)
    assert data["options"]["model"] == {"name": "key_query", "d": 2}
    assert data["options"]["dtype"] == "float32" and data["options"]["task"] == "any"
    assert data["exit_code"] == 1
    reasons = [p["reason"] for p in data["properties"] if p["status"] == "not checked"]
    assert any("one_layer" in reason for reason in reasons)
