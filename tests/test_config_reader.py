"""One reader for every configuration file a user writes (task specs, sweep specs, ``rw check --configs``).

Numbers come back exactly as written (the oracle: ``Fraction`` of the decimal, built here from its digits);
every field of the three formats refuses a list where a number belongs, ``.inf``, a word, a value out of
range, a misspelt key and a missing required key with one line that names the file and the field's path
(and the value as written); through the CLI that line is ``rw <cmd>: error: ...`` with exit code 2 and
nothing written.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
import sympy as sp

from rwtoolkit.analyses.check import read_specs
from rwtoolkit.analyses.sweep import load_spec
from rwtoolkit.cli.main import main
from rwtoolkit.io import ConfigError, Exact, Record, Text, check_config, exact_value, plain, read_data_file
from rwtoolkit.tasks import load_task_spec

# ------------------------------------------------------------------------------------------------
# Numbers exactly as written


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("0.1", Fraction(1, 10)),
        ("1e-8", Fraction(1, 10**8)),
        ("1E+3", Fraction(1000)),
        ("2.50", Fraction(5, 2)),
        ("1e-400", Fraction(1, 10**400)),
        ("-0.125", Fraction(-1, 8)),
        ("7", 7),
    ],
    ids=lambda v: str(v) if isinstance(v, str) else "",
)
def test_every_number_is_read_as_the_exact_decimal_written(tmp_path, suffix, literal, value):
    path = tmp_path / f"c{suffix}"
    path.write_text(f'{{"x": [{literal}]}}' if suffix == ".json" else f"x:\n  - {literal}\n")
    (number,) = read_data_file(path, "FILE")["x"]
    assert number == value and type(number) is (int if isinstance(value, int) else Exact)
    if isinstance(number, Exact):
        assert str(number) == literal  # messages repeat the number as written


def test_yaml_reads_1e_minus_8_as_a_number_and_a_leading_zero_as_decimal(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("a: 1e-8\nb: 010\nc: '1e-8'\nd: yes\n")
    data = read_data_file(path, "FILE")
    assert data == {"a": Fraction(1, 10**8), "b": 10, "c": "1e-8", "d": True}


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("c.yaml", "a: {b: .inf}\n", "c.yaml: a.b: .inf is not a finite number; allowed: a finite number"),
        ("c.yaml", "a: [1, -.inf]\n", "c.yaml: a[1]: -.inf is not a finite number"),
        ("c.yaml", "a: .nan\n", "c.yaml: a: .nan is not a finite number"),
        ("c.json", '{"a": NaN}', "c.json: a: NaN is not a finite number"),
        ("c.json", '{"a": {"b": -Infinity}}', "c.json: a.b: -Infinity is not a finite number"),
        ("c.json", '{"a": 1e-99999}', "c.json: a: 1e-99999 has a decimal exponent beyond ±1000"),
        ("c.json", '{"a": ' + "1" * 1001 + "}", "c.json: a: 111"),
        ("c.json", '{"a": 1, "a": 2}', "c.json: a: a is given twice in the same mapping"),
        ("c.yaml", "a:\n  b: 1\n  b: 2\n", "c.yaml: a.b: b is given twice in the same mapping"),
    ],
    ids=[
        "inf",
        "minus-inf-in-list",
        "nan",
        "json-nan",
        "json-infinity",
        "exponent",
        "digits",
        "json-twice",
        "yaml-twice",
    ],
)
def test_a_literal_no_field_accepts_is_refused_naming_its_path(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        read_data_file(path, "FILE")
    assert str(info.value).startswith(f"{tmp_path}/{message}") and "\n" not in str(info.value)


def test_plain_keeps_the_value_and_writes_json():
    data = {"a": [Exact("0.1"), Exact("1e-400"), Exact("3.0"), Exact("0.5")]}
    out = plain(data)
    assert json.loads(json.dumps(out)) == {"a": [0.1, "1e-400", 3, 0.5]}
    assert Fraction(out["a"][1]) == Fraction(1, 10**400)  # the text is read back exactly


def test_an_unknown_key_is_named_alone_with_the_closest_key_and_the_allowed_ones_apart():
    record = Record({"family": Text(), "params": Text()}, required=("family",))
    with pytest.raises(ConfigError) as info:
        check_config({"family": "circle", "parms": "x"}, record, "spec.json")
    message = str(info.value)
    assert message == "spec.json: parms: unknown key (did you mean params?); allowed: family, params"
    named = message.split("; allowed:")[0]
    assert "family" not in named  # the valid key is not named as unexpected (it was, before)


def test_an_icl_markov_alpha_of_one_in_ten_to_the_eight_builds_the_exact_task(tmp_path):
    """α = 1e-8 as written: the population sums to exactly 1, and P(0, 0, 0) is the Pólya-urn value
    (1/S)·α(α+1)/(Sα(Sα+1)) = (α+1)/(4(2α+1)) for S = 2 (it was refused through a float round-trip)."""
    path = tmp_path / "spec.json"
    path.write_text('{"task": {"family": "icl_markov", "params": {"S": 2, "N": 3, "alpha": 1e-8}}}')
    task = load_task_spec(path).task()
    alpha = sp.Rational(1, 10**8)
    assert sum(task.prob_values) == 1
    assert task.prob_values[0] == (alpha + 1) / (4 * (2 * alpha + 1))


def test_an_alpha_of_1e_minus_400_is_that_number_not_zero(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("task: {family: icl_markov, params: {S: 2, N: 2, alpha: 1e-400}}\n")
    spec = load_task_spec(path)
    assert spec.raw["task"]["params"]["alpha"] == "1e-400"
    # S = 2, N = 2: P(x1, x2) = 1/4 for every pair, whatever α > 0 (one transition from a uniform start)
    assert spec.task().prob_values == (sp.Rational(1, 4),) * 4


def test_a_float_setting_that_would_round_to_zero_is_refused(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text("task: circle\nfixed: {sigma: 1e-400}\n")
    with pytest.raises(ValueError, match=r"sweep.yaml: fixed.sigma: 1e-400 is below the smallest float64"):
        load_spec(path)


# ------------------------------------------------------------------------------------------------
# Every field of the three formats, with a table of bad values

TASK_BASE = {
    "name": "t",
    "description": "a task",
    "task": {"family": "circle", "params": {"K": 3, "N": 3, "p": "1/2"}},
    "sweep": {"p": ["1/3"]},
    "explore": {"steps": 1, "eta": 1, "eps": "1/10", "mu": 1},
    "train": {
        "steps": 2,
        "M": 4,
        "eta": 0.1,
        "eps": 0.1,
        "sigmas": [0.01],
        "population": True,
        "train_size": 10,
        "test_size": 10,
        "seed": 0,
    },
}
EXPLICIT_BASE = {
    "task": {
        "vocab": ["a", "b"],
        "labels": ["a", "b"],
        "sequences": [
            {"tokens": ["a"], "label": "b", "prob": "1/2"},
            {"tokens": ["b"], "label": "a", "prob": "1/2"},
        ],
    }
}
SWEEP_BASE = {
    "name": "s",
    "task": "circle",
    "fixed": {
        "K": 3,
        "N": 3,
        "p": "1/2",
        "M": 4,
        "pos": "sine",
        "mu": 1,
        "gram": "ideal",
        "normalize_attention": False,
        "steps": 1,
        "eta": 1,
        "eps": 0.1,
        "loss": "log",
        "init": "zero",
        "sigma": 0.01,
        "dtype": "float64",
        "escape_threshold": 0.001,
        "learned_fraction": 0.99,
    },
    "grid": {"seed": [0, 1]},
    "random": {"count": 1, "seed": 0, "axes": {"pos_seed": {"choice": [0, 1]}}},
    "record_every": 1,
    "pack_size": 2,
    "metrics": False,
}
CONFIGS_BASE = [
    {
        "family": "circle",
        "params": {"K": 3, "N": 3, "p": "1/3"},
        "mu": 1,
        "eta": 1,
        "eps": "1/10",
        "loss": "log",
        "embedding": "onehot",
        "M": 3,
        "seed": 0,
    }
]

#: Bad literals (YAML flow text) by the kind of the field.
LIST, INF, WORD, FRACTION = "[1]", ".inf", "'fast'", "2.5"
KINDS = {
    "integer": {"list": LIST, "inf": INF, "word": WORD, "fraction": FRACTION},
    "number": {"list": LIST, "inf": INF, "word": WORD},
    "exact-or-symbol": {"list": LIST, "inf": INF, "word": "'two words'"},
    "choice": {"list": LIST, "word": "'nope'"},
    "token": {"list": LIST, "inf": INF, "word": "'zzz'"},
    "boolean": {"list": LIST, "word": WORD, "number": "1"},
    "text": {"list": LIST, "number": "1"},
    "mapping": {"list": LIST, "word": WORD},
    "list": {"word": WORD, "number": "1"},
}

#: (format, path to the field, its kind, a value out of its range or None)
FIELDS = [
    ("task", ("name",), "text", "''"),
    ("task", ("description",), "text", None),
    ("task", ("task", "family"), "choice", None),
    ("task", ("task", "params"), "mapping", None),
    ("task", ("task", "params", "K"), "integer", "2"),
    ("task", ("task", "params", "N"), "integer", "1"),
    ("task", ("task", "params", "p"), "exact-or-symbol", "1.5"),
    ("task", ("sweep",), "mapping", "{}"),
    ("task", ("sweep", "p"), "list", "[]"),
    ("task", ("explore", "steps"), "integer", "9"),
    ("task", ("explore", "eta"), "exact-or-symbol", "0"),
    ("task", ("explore", "eps"), "exact-or-symbol", "-1"),
    ("task", ("explore", "mu"), "exact-or-symbol", "0"),
    ("task", ("train", "steps"), "integer", "0"),
    ("task", ("train", "M"), "integer", "1"),
    ("task", ("train", "eta"), "number", "0"),
    ("task", ("train", "eps"), "number", "-0.1"),
    ("task", ("train", "sigmas"), "list", "[0.1, 0.1, 0.1, 0.1, 0.1]"),
    ("task", ("train", "sigmas", 0), "number", "0"),
    ("task", ("train", "population"), "boolean", None),
    ("task", ("train", "train_size"), "integer", "0"),
    ("task", ("train", "test_size"), "integer", "2000000"),
    ("task", ("train", "seed"), "integer", "-1"),
    ("explicit", ("task", "vocab"), "list", "[]"),
    ("explicit", ("task", "vocab", 0), "text", "''"),
    ("explicit", ("task", "labels"), "list", "[]"),
    ("explicit", ("task", "sequences"), "list", "[]"),
    ("explicit", ("task", "sequences", 0, "tokens"), "list", "[]"),
    ("explicit", ("task", "sequences", 0, "tokens", 0), "token", "7"),
    ("explicit", ("task", "sequences", 0, "label"), "token", "-1"),
    ("explicit", ("task", "sequences", 0, "prob"), "exact-or-symbol", "2"),
    ("sweep", ("name",), "text", None),
    ("sweep", ("task",), "choice", None),
    ("sweep", ("fixed",), "mapping", None),
    ("sweep", ("grid",), "mapping", None),
    ("sweep", ("grid", "seed"), "list", "{range: [3, 1]}"),
    ("sweep", ("random",), "mapping", None),
    ("sweep", ("random", "count"), "integer", "0"),
    ("sweep", ("random", "seed"), "integer", "-1"),
    ("sweep", ("random", "axes"), "mapping", "{}"),
    ("sweep", ("random", "axes", "pos_seed"), "mapping", "{uniform: [1, 0]}"),
    ("sweep", ("record_every",), "integer", "0"),
    ("sweep", ("pack_size",), "integer", "5000"),
    ("sweep", ("metrics",), "boolean", None),
    ("sweep", ("model",), "choice", None),
    ("sweep", ("head_dim",), "integer", "0"),
    ("sweep", ("heads",), "integer", "0"),
    ("sweep", ("fixed", "K"), "integer", "2"),
    ("sweep", ("fixed", "N"), "integer", "1"),
    ("sweep", ("fixed", "p"), "number", "1.5"),
    ("sweep", ("fixed", "M"), "integer", "1"),
    ("sweep", ("fixed", "pos"), "choice", None),
    ("sweep", ("fixed", "mu"), "number", "0"),
    ("sweep", ("random", "axes", "pos_seed", "choice", 0), "integer", "-1"),
    ("sweep", ("fixed", "gram"), "choice", None),
    ("sweep", ("fixed", "normalize_attention"), "boolean", None),
    ("sweep", ("fixed", "steps"), "integer", "-1"),
    ("sweep", ("fixed", "eta"), "number", "0"),
    ("sweep", ("fixed", "eps"), "number", "-0.1"),
    ("sweep", ("fixed", "loss"), "choice", None),
    ("sweep", ("fixed", "init"), "choice", None),
    ("sweep", ("fixed", "sigma"), "number", "0"),
    ("sweep", ("fixed", "dtype"), "choice", None),
    ("sweep", ("fixed", "escape_threshold"), "number", "1"),
    ("sweep", ("fixed", "learned_fraction"), "number", "1.5"),
    ("configs", (0, "family"), "choice", None),
    ("configs", (0, "params"), "mapping", None),
    ("configs", (0, "params", "K"), "integer", "2"),
    ("configs", (0, "mu"), "number", "0"),
    ("configs", (0, "eta"), "number", "-1"),
    ("configs", (0, "eps"), "number", "0"),
    ("configs", (0, "loss"), "choice", None),
    ("configs", (0, "embedding"), "choice", None),
    ("configs", (0, "M"), "integer", "0"),
    ("configs", (0, "seed"), "integer", "-1"),
]
#: (format, path to a mapping, a key of it, the misspelling)
MISSPELT = [
    ("task", (), "explore", "explor"),
    ("task", ("task",), "params", "parms"),
    ("task", ("explore",), "steps", "step"),
    ("task", ("train",), "sigmas", "sigma"),
    ("explicit", ("task", "sequences", 0), "prob", "probability"),
    ("sweep", (), "fixed", "fixd"),
    ("sweep", ("fixed",), "eta", "eat"),
    ("sweep", ("random",), "count", "cout"),
    ("configs", (0,), "eps", "epss"),
]
#: (format, path to a mapping, a required key of it)
REQUIRED = [
    ("task", (), "task"),
    ("task", ("task",), "family"),
    ("task", ("task", "params"), "p"),
    ("explicit", ("task", "sequences", 0), "prob"),
    ("sweep", (), "task"),
    ("sweep", ("random",), "axes"),
    ("configs", (0,), "eps"),
]
BASES = {"task": TASK_BASE, "explicit": EXPLICIT_BASE, "sweep": SWEEP_BASE, "configs": CONFIGS_BASE}
LOADERS = {"task": load_task_spec, "explicit": load_task_spec, "sweep": load_spec, "configs": read_specs}


def _where(path: tuple) -> str:
    from rwtoolkit.io import format_path

    return format_path(path)


def _write(tmp_path: Path, fmt: str, change) -> Path:
    """The format's valid base with ``change(data)`` applied, written as YAML (flow style: JSON text, with
    the placeholder "@BAD@" replaced by the literal of ``change``'s return value, if any)."""
    data = json.loads(json.dumps(BASES[fmt]))
    literal = change(data)
    text = json.dumps(data)
    if literal is not None:
        text = text.replace('"@BAD@"', literal)
    path = tmp_path / "config.yaml"
    path.write_text(text + "\n")
    return path


def _at(data, path):
    for key in path:
        data = data[key]
    return data


def _refused(fmt: str, path: Path) -> str:
    with pytest.raises(ValueError) as info:
        LOADERS[fmt](path)
    message = str(info.value)
    assert "\n" not in message, message
    return message


def _value_cases():
    for fmt, path, kind, out_of_range in FIELDS:
        bad = dict(KINDS[kind])
        if out_of_range is not None:
            bad["out-of-range"] = out_of_range
        for what, literal in bad.items():
            yield pytest.param(fmt, path, literal, id=f"{fmt}-{_where(path)}-{what}")


@pytest.mark.parametrize(("fmt", "path", "literal"), list(_value_cases()))
def test_a_bad_value_of_any_field_is_one_line_naming_the_file_and_the_field(tmp_path, fmt, path, literal):
    def change(data):
        _at(data, path[:-1])[path[-1]] = "@BAD@"
        return literal

    file = _write(tmp_path, fmt, change)
    message = _refused(fmt, file)
    assert message.startswith(f"{file}: {_where(path)}"), message
    shown = literal.strip("'") if literal.startswith("'") else literal
    if not shown.startswith("{"):  # the value is repeated, as written (or, by a family, as the exact number)
        assert shown in message or str(exact_value(shown)) in message, message


@pytest.mark.parametrize(("fmt", "parent", "key", "typo"), MISSPELT, ids=[f"{m[0]}-{m[3]}" for m in MISSPELT])
def test_a_misspelt_key_is_named_alone_with_the_key_it_resembles(tmp_path, fmt, parent, key, typo):
    def change(data):
        mapping = _at(data, parent)
        mapping[typo] = mapping.pop(key)

    file = _write(tmp_path, fmt, change)
    message = _refused(fmt, file)
    assert message.startswith(
        f"{file}: {_where((*parent, typo))}: unknown key (did you mean {key}?); allowed: "
    )
    assert key in message.split("; allowed: ")[1].split(", ")


@pytest.mark.parametrize(("fmt", "parent", "key"), REQUIRED, ids=[f"{m[0]}-{m[2]}" for m in REQUIRED])
def test_a_missing_required_key_is_named(tmp_path, fmt, parent, key):
    def change(data):
        del _at(data, parent)[key]

    file = _write(tmp_path, fmt, change)
    message = _refused(fmt, file)
    assert message.startswith(f"{file}: {_where(parent)}: missing "), message
    assert repr(key) in message or f" {key};" in message or f" {key} " in message, message


@pytest.mark.parametrize("fmt", list(BASES))
def test_each_base_is_valid(tmp_path, fmt):
    LOADERS[fmt](_write(tmp_path, fmt, lambda data: None))


# ------------------------------------------------------------------------------------------------
# Through the CLI: exit 2, one line, nothing written


@pytest.mark.parametrize(
    ("fmt", "argv", "literal", "message"),
    [
        (
            "task",
            ["explore", "{file}", "--out", "{out}"],
            "train.eta",
            "train.eta: .inf is not a finite number",
        ),
        (
            "task",
            ["derive", "--spec", "{file}", "--steps", "1"],
            "explore.steps",
            "explore.steps: .inf is not a finite number",
        ),
        (
            "sweep",
            ["sweep", "{file}", "--out", "{out}"],
            "fixed.eta",
            "fixed.eta: .inf is not a finite number",
        ),
        (
            "configs",
            ["check", "--emit", "{out}", "--configs", "{file}"],
            "[0].mu",
            "[0].mu: .inf is not a finite number",
        ),
    ],
    ids=["explore", "derive-spec", "sweep", "check-configs"],
)
def test_a_bad_field_through_the_cli_is_exit_2_and_one_line(tmp_path, capsys, fmt, argv, literal, message):
    def change(data):
        target = data
        parts = literal.replace("[0]", "0").split(".")
        for key in parts[:-1]:
            target = target[int(key) if key.isdigit() else key]
        target[parts[-1]] = "@BAD@"
        return ".inf"

    file = _write(tmp_path, fmt, change)
    out = tmp_path / "out"
    assert main([a.format(file=file, out=out) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{file}: {message}" in err, err
    assert not out.exists()


# ------------------------------------------------------------------------------------------------
# The shipped JSON Schemas (for editors) name the keys the readers check


def test_the_shipped_schemas_name_the_keys_the_readers_check():
    from rwtoolkit.analyses.sweep import FIELDS
    from rwtoolkit.analyses.sweep._spec import SPEC
    from rwtoolkit.io import load_schema
    from rwtoolkit.tasks import FAMILIES
    from rwtoolkit.tasks._spec import _EXPLICIT_TASK, _FAMILY_TASK, TASK_SPEC

    sweep = load_schema("sweep")
    assert list(sweep["properties"]) == list(SPEC.fields) and sweep["required"] == list(SPEC.required)
    assert sweep["$defs"]["field"]["enum"] == list(FIELDS)
    assert set(sweep["properties"]["random"]["properties"]) == set(SPEC.fields["random"].fields)
    task = load_schema("task_spec")
    assert list(task["properties"]) == list(TASK_SPEC.fields)
    assert set(task["properties"]["explore"]["properties"]) == set(TASK_SPEC.fields["explore"].fields)
    assert set(task["properties"]["train"]["properties"]) == set(TASK_SPEC.fields["train"].fields)
    family, explicit = task["$defs"]["family_task"], task["$defs"]["explicit_task"]
    assert set(family["properties"]) == set(_FAMILY_TASK.fields)
    assert family["properties"]["family"]["enum"] == list(FAMILIES)
    assert set(explicit["properties"]) == set(_EXPLICIT_TASK.fields)
