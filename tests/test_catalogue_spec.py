"""Task specification files: strict parsing, errors that name the field, sweeps, the shipped schema."""

from __future__ import annotations

import json

import jsonschema
import pytest
import sympy as sp

from rwtoolkit.io import load_schema
from rwtoolkit.tasks import SpecError, load_task_spec, parse_task_spec

EXPLICIT = {
    "vocab": ["a", "b", "c"],
    "labels": ["a", "b"],
    "sequences": [
        {"tokens": ["a", "b"], "label": "a", "prob": "1/2"},
        {"tokens": ["b", "a"], "label": "b", "prob": 0.5},
    ],
}


def _with(path, value, base=None):
    """A copy of a valid spec with the value at ``path`` (a list of keys) replaced."""
    spec = json.loads(json.dumps(base or {"task": EXPLICIT}))
    target = spec
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return spec


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(load_schema("task_spec"))


def test_explicit_task_parses_exactly():
    spec = parse_task_spec({"name": "swap", "task": EXPLICIT})
    task = spec.task()
    assert (task.K, task.N, task.vocab) == (3, 3, ("a", "b", "c"))
    assert task.prob_values == (sp.Rational(1, 2), sp.Rational(1, 2))  # 0.5 read exactly
    assert task.tokens.tolist() == [[0, 1], [1, 0]] and task.labels.tolist() == [0, 1]
    assert spec.points() == [{}]


def test_family_spec_with_sweep_gives_every_combination():
    spec = parse_task_spec(
        {
            "task": {"family": "circle", "params": {"K": 3, "N": 4, "p": "p"}},
            "sweep": {"N": [4, 7], "p": [0, "1/2"]},
        }
    )
    points = spec.points()
    assert points == [{"N": 4, "p": 0}, {"N": 4, "p": "1/2"}, {"N": 7, "p": 0}, {"N": 7, "p": "1/2"}]
    walk = spec.task(**points[3])
    assert (walk.K, walk.N, walk.p) == (3, 7, sp.Rational(1, 2))
    assert spec.explore["steps"] == 3 and spec.train["sigmas"] == [1e-2, 1e-4]


BAD_SPECS = [
    pytest.param(
        {"task": EXPLICIT, "colour": 1},
        "spec: colour: unknown key; allowed: name, description, task",
        id="unknown-top-field",
    ),
    pytest.param({}, "spec: (top level): missing key task; required: task", id="missing-task"),
    pytest.param(
        {"task": {"family": "torus"}},
        "spec: task.family: 'torus' is not one of the choices; allowed: circle,",
        id="unknown-family",
    ),
    pytest.param(
        {"task": {"family": "circle", "params": {"K": 3, "N": 4}}},
        "spec: task.params: missing parameter 'p' of family 'circle'; allowed: K, N, p",
        id="missing-param",
    ),
    pytest.param(
        {"task": {"family": "circle", "params": {"K": "three", "N": 4, "p": 1}}},
        "spec: task.params.K: K='three' must be an integer >= 3",
        id="param-type",
    ),
    pytest.param(
        {"task": {"family": "circle", "params": {"K": 3, "N": 4, "p": 1, "r": 2}}},
        "spec: task.params.r: unknown parameter of family 'circle'; allowed: K, N, p",
        id="unknown-param",
    ),
    pytest.param(
        _with(["task", "sequences", 1, "prob"], "one half"),
        "spec: task.sequences[1].prob: prob='one half' is not",
        id="bad-prob",
    ),
    pytest.param(
        _with(["task", "sequences", 1, "prob"], "1/4"),
        "spec: task.sequences: probs sum to 3/4",
        id="probs-sum",
    ),
    pytest.param(
        _with(["task", "sequences", 0, "tokens", 1], "z"),
        "spec: task.sequences[0].tokens[1]: 'z' is not in vocab; allowed: words of vocab: a, b, c",
        id="token-not-in-vocab",
    ),
    pytest.param(
        _with(["task", "sequences", 0, "label"], "c"),
        "spec: task.sequences[0].label: 'c' is not one of labels; allowed: a, b",
        id="label-not-allowed",
    ),
    pytest.param(
        _with(["task", "sequences", 1, "tokens"], ["a"]),
        "spec: task.sequences[1].tokens: has 1 tokens, sequences[0] has 2",
        id="ragged",
    ),
    pytest.param(
        _with(["task", "sequences", 0, "tokens", 0], 7),
        "spec: task.sequences[0].tokens[0]: 7 is out of range; allowed: a word of vocab or a token id in 0..2",
        id="token-id-range",
    ),
    pytest.param(
        _with(["task", "sequences", 0, "weight"], 1),
        "spec: task.sequences[0].weight: unknown key; allowed: tokens, label, prob",
        id="unknown-sequence-field",
    ),
    pytest.param(
        _with(["task", "labels"], ["a", "q"]), "spec: task.labels[1]: 'q' is not in vocab", id="label-set"
    ),
    pytest.param(
        {"task": EXPLICIT, "sweep": {"p": [1]}}, "spec: sweep: only a catalogue family", id="sweep-explicit"
    ),
    pytest.param(
        {"task": {"family": "circle", "params": {"K": 3, "N": 4, "p": "p"}}, "sweep": {"p": [0, 2]}},
        "spec: sweep (point 1: p=2): task.params.p: p=2 is outside [0, 1]",
        id="sweep-point",
    ),
    pytest.param(
        {"task": {"family": "qa1"}, "sweep": {"p": []}},
        "spec: sweep.p: [] has 0 items; allowed: a list of 1 to 64 items",
        id="empty-sweep",
    ),
    pytest.param(
        {"task": {"family": "qa1"}, "explore": {"steps": 9}},
        "spec: explore.steps: 9 is out of range; allowed: an integer in 1..8",
        id="steps-range",
    ),
    pytest.param(
        {"task": {"family": "qa1"}, "explore": {"eps": "x y"}},
        "spec: explore.eps: 'x y' is not a number or a symbol name; allowed:",
        id="eps-value",
    ),
    pytest.param(
        {"task": {"family": "qa1"}, "explore": {"eta": 0}},
        "spec: explore.eta: 0 is out of range; allowed: a number > 0",
        id="eta-positive",
    ),
    pytest.param(
        {"task": {"family": "qa1"}, "train": {"sigmas": [0]}},
        "spec: train.sigmas[0]: 0 is out of range; allowed: a number > 0",
        id="sigma-range",
    ),
    pytest.param(
        {"task": {"family": "qa1"}, "train": {"M": 10.5}},
        "spec: train.M: 10.5 is not an integer; allowed: an integer in 2..4096",
        id="M-type",
    ),
]


@pytest.mark.parametrize("data,message", BAD_SPECS)
def test_spec_errors_name_the_field_and_the_problem(data, message):
    with pytest.raises(SpecError) as info:
        parse_task_spec(data)
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)


def test_spec_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"task": {"family": "qa1"},}')
    with pytest.raises(SpecError, match=r"bad.json is not valid JSON: .* line 1"):
        load_task_spec(bad)
    with pytest.raises(SpecError, match="missing.json is not a file"):
        load_task_spec(tmp_path / "missing.json")
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"task": {"family": "majority", "params": {"L": 3, "q": "q"}}}))
    assert load_task_spec(good).task().N == 4


def test_duplicate_inputs_must_be_merged():
    seqs = [{"tokens": ["a"], "label": "a", "prob": "1/2"}, {"tokens": ["a"], "label": "a", "prob": "1/2"}]
    with pytest.raises(SpecError, match=r"spec: task.sequences\[1\]: repeats sequences\[0\]"):
        parse_task_spec({"task": {"vocab": ["a"], "sequences": seqs}})
