"""A new user's first day, from the docs: what they read matches what the toolkit does.

* the ``kit`` extra holds what the emitted fixtures and the pytest plugin import beyond the runtime, and
  ``rw check --emit`` prints the README's install line for it;
* every task family ``rw zoo list`` prints is documented with every one of its parameters;
* docs/check.md: the synopsis names exactly the options of ``rw check``, the pytest text names exactly the
  tests ``ConformanceTests`` gives, the config table lists every public name of ``CheckConfig``, and the
  model table states every registered model's parameters and shapes as the registry has them;
* ``rw derive`` points to ``--json`` only when it was given;
* docs/getting-started.md has a section per ``rw`` command, and every ``rw`` line it shows runs.
"""

from __future__ import annotations

import argparse
import ast
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rwtoolkit.analyses.check import CheckConfig, ConformanceTests
from rwtoolkit.cli.check import KIT_INSTALL
from rwtoolkit.cli.main import COMMANDS, main
from rwtoolkit.models import Sizes, get_model, model_names
from rwtoolkit.tasks import FAMILIES

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
CHECK_DOC = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
GETTING_STARTED = ROOT / "docs" / "getting-started.md"


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower()


def _imports(path: Path) -> set[str]:
    """The top-level modules ``path`` imports (anywhere in the file)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


# ---------------------------------------------------------------------------------------------------------
# the kit extra and the install line
# ---------------------------------------------------------------------------------------------------------
def test_the_kit_extra_holds_what_the_fixtures_and_the_plugin_need_beyond_the_runtime():
    """The files that run under the user's pytest (the plugin, the emitted test file and its conftest) import
    third-party modules; those not in the runtime set are exactly the kit extra."""
    hosted = (
        "rwtoolkit/analyses/check/pytest_plugin.py",
        "rwtoolkit/analyses/check/_fixture_test.py",
        "rwtoolkit/analyses/check/_fixture_conftest.py",
    )
    local = {"rwtoolkit", "rwcheck_runtime", "__future__"}
    imported = set().union(*(_imports(ROOT / path) for path in hosted)) - local - set(sys.stdlib_module_names)
    runtime = {_name(r) for r in EXTRAS["dependencies"]}
    kit = {_name(r) for r in EXTRAS["optional-dependencies"]["kit"]}
    assert kit == imported - runtime == {"pytest"}
    assert "rwtoolkit[kit]" in EXTRAS["optional-dependencies"]["test"]


def test_the_emit_message_gives_the_readme_install_line_of_the_kit(tmp_path, monkeypatch, capsys):
    extra = re.fullmatch(r"pip install -e '\.\[(\w+)\]'", KIT_INSTALL)
    assert extra and extra.group(1) in EXTRAS["optional-dependencies"]
    install = (ROOT / "README.md").read_text(encoding="utf-8").split("## Install", 1)[1].split("\n## ", 1)[0]
    assert f".venv/bin/{KIT_INSTALL}" in install
    monkeypatch.chdir(tmp_path)
    (tmp_path / "one.json").write_text(
        '[{"family": "circle", "params": {"K": 3, "N": 3, "p": "1/2"}, "mu": 1, "eta": 1, "eps": "1/10"}]'
    )
    assert main(["check", "--emit", "fx", "--configs", "one.json", "--steps", "0"]) == 0
    out = capsys.readouterr().out
    assert "run them with: pytest fx --rwfixture-factory MODULE:FACTORY" in out
    assert f"pytest: {KIT_INSTALL} in the toolkit's checkout" in out


# ---------------------------------------------------------------------------------------------------------
# the task families
# ---------------------------------------------------------------------------------------------------------
def test_every_catalogue_family_is_documented_with_every_parameter():
    """docs/guide/tasks.md's catalogue table: a row per family of ``rw zoo list`` naming each parameter."""
    page = (ROOT / "docs" / "guide" / "tasks.md").read_text(encoding="utf-8")
    rows = {}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3:
            for name in re.findall(r"`(\w+)`", cells[0]):
                rows[name] = cells[1]
    missing = [name for name in FAMILIES if name not in rows]
    assert not missing, f"docs/guide/tasks.md has no catalogue row for {missing}"
    for name, family in FAMILIES.items():
        for param in family.params:
            assert re.search(rf"(?<![\w`]){re.escape(param)}(?!\w)", rows[name]), (
                f"docs/guide/tasks.md: the row of {name!r} does not name its parameter {param!r}"
            )


# ---------------------------------------------------------------------------------------------------------
# docs/check.md
# ---------------------------------------------------------------------------------------------------------
def _section(title: str) -> str:
    return CHECK_DOC.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_check_synopsis_names_exactly_the_options_of_rw_check():
    from rwtoolkit.cli.check import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    options = {
        option
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction)
        for option in action.option_strings
    }
    synopsis = _section("`rw check`").lstrip("\n").split("\n\n", 1)[0]
    assert synopsis.startswith("    rw check "), synopsis
    assert set(re.findall(r"--[\w-]+", synopsis)) == options
    assert "MODULE:FACTORY" in synopsis


def test_the_pytest_text_names_exactly_the_tests_conformance_tests_collects():
    text = _section("Under pytest")
    collected = sorted(name for name in dir(ConformanceTests) if name.startswith("test_"))
    assert sorted(set(re.findall(r"`(test_\w+)`", text))) == collected
    words = {"five": 5, "six": 6, "four": 4}
    (count,) = re.findall(r"`pytest` collects (\w+) tests", text)
    assert words[count] == len(collected)


def test_the_config_table_lists_every_public_name_of_check_config():
    table = CHECK_DOC.split("| attribute | type | what |", 1)[1].split("\n\n", 1)[0]
    listed = {
        name
        for line in table.splitlines()[2:]
        for name in re.findall(r"`(\w+)(?:\([^`]*\))?`", line.split("|")[1])
    }
    public = {name for name in dir(CheckConfig) if not name.startswith("_")}
    public |= set(CheckConfig.__dataclass_fields__)
    assert public - listed == set(), f"docs/check.md's config table lacks {sorted(public - listed)}"
    assert listed - public == set(), (
        f"docs/check.md's config table names {sorted(listed - public)}, not in CheckConfig"
    )


#: Sizes with distinct values, read back as their names: K tokens, M rows of P, D = K + M, N positions, d, H.
SIZES = {2: "K", 9: "M", 11: "D", 5: "N", 3: "d", 4: "H"}


def _shapes_cell(model) -> str:
    shapes = model.shapes(Sizes(K=2, M=9, N=5))
    return ", ".join(f"`{name}` ({', '.join(SIZES[n] for n in shape)})" for name, shape in shapes.items())


def test_the_model_table_states_each_registered_model_parameters_as_the_registry_has_them():
    rows = {}
    for line in CHECK_DOC.split("| `--model` | parameters (`config.shapes`) |", 1)[1].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells
    variants = {name: get_model(name, **({"H": 4} if name == "multi_head" else {})) for name in model_names()}
    variants["key_query"] = get_model("key_query", d=3)
    variants["multi_head --head-dim d"] = get_model("multi_head", H=4, d=3)
    assert set(rows) == {f"`{name}`" for name in variants}
    for name, model in variants.items():
        cells = rows[f"`{name}`"]
        assert cells[1] == _shapes_cell(model), f"docs/check.md: the parameters of {name}"
        assert cells[2] and cells[3], f"docs/check.md: {name} needs its attention and prediction read-outs"


# ---------------------------------------------------------------------------------------------------------
# rw derive
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("json", [None, "o.json"])
def test_rw_derive_points_to_json_only_when_it_was_given(json, tmp_path, monkeypatch, capsys):
    """Symbolic p at t = 2: the loss is too long to show; the output says where its exact value is."""
    monkeypatch.chdir(tmp_path)
    argv = ["derive", "--K", "3", "--N", "3", "--p", "p", "--steps", "2", "--mu", "1"]
    assert main(argv + (["--json", json] if json else [])) == 0
    out = capsys.readouterr().out
    assert "loss = <expression>" in out
    if json:
        assert "<expression>: a symbolic value too long to show; the exact value is in o.json" in out
        assert (tmp_path / "o.json").is_file()
    else:
        assert "<expression>: a symbolic value too long to show; for the exact value add --json FILE" in out
        assert "is in" not in out and "see --json" not in out


# ---------------------------------------------------------------------------------------------------------
# docs/getting-started.md
# ---------------------------------------------------------------------------------------------------------
FENCE = re.compile(r"^```bash\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _command_sections() -> dict[str, list[list[str]]]:
    """Per ``### `rw NAME` `` section of getting-started: its ``rw`` and ``pytest`` lines, split as a shell would."""
    text = GETTING_STARTED.read_text(encoding="utf-8")
    sections = {}
    for part in re.split(r"^### ", text, flags=re.MULTILINE)[1:]:
        heading = re.match(r"`rw (\w+)`", part)
        assert heading, f"docs/getting-started.md: a section that is not a command: {part.splitlines()[0]}"
        body = part.split("\n## ", 1)[0]
        sections[heading.group(1)] = [
            shlex.split(line.split("#")[0])
            for block in FENCE.findall(body)
            for line in block.splitlines()
            if line.startswith(("rw ", "pytest "))
        ]
    return sections


def test_getting_started_starts_from_the_main_job_and_shows_every_command():
    text = GETTING_STARTED.read_text(encoding="utf-8")
    assert re.findall(r"^## (.+)$", text, flags=re.MULTILINE)[:2] == ["Install", "The main job: `make demo`"]
    sections = _command_sections()
    assert sorted(sections) == sorted(name for name, _, _ in COMMANDS)
    for name, lines in sections.items():
        assert any(argv[:2] == ["rw", name] for argv in lines), f"the section of rw {name} runs no rw {name}"


def test_getting_started_names_every_runtime_dependency_and_extra():
    text = GETTING_STARTED.read_text(encoding="utf-8").split("\n## Dependencies\n", 1)[1]
    missing = [r for r in EXTRAS["dependencies"] if _name(r) not in text.lower()]
    assert not missing, f"docs/getting-started.md's dependencies do not name {missing}"
    for extra in EXTRAS["optional-dependencies"]:
        assert f"`{extra}`" in GETTING_STARTED.read_text(encoding="utf-8"), f"the {extra} extra"


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(name for name, _, _ in COMMANDS))
def test_getting_started_examples_run_as_written(command, tmp_path):
    """In a fresh folder with the repository's examples/: the section's lines in order, each exit 0."""
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    for argv in _command_sections()[command]:
        if argv[0] == "rw":
            run = [sys.executable, "-m", "rwtoolkit.cli.main", *argv[1:]]
        else:
            run = [sys.executable, "-m", "pytest", *argv[1:], "-q", "-p", "no:cacheprovider"]
        proc = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, (
            f"{shlex.join(argv)} exited {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        )
