"""The "Bring your model" guide lists exactly the neutral ops the traced program interprets, and its refusal lines
are the lines the commands print."""

import re
from pathlib import Path

import pytest

from rwtoolkit.models.traced import OP_TABLE

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "bring-your-model.md"


def test_the_guide_lists_every_op_of_the_table_and_no_other():
    listed = re.findall(r"^\| `([a-z_]+)` \|", GUIDE.read_text(encoding="utf-8"), flags=re.M)
    assert listed == list(OP_TABLE)


SORTED = """import torch
from torch import nn


class Sorted(nn.Module):
    def __init__(self, S, L):
        super().__init__()
        self.emb = nn.Embedding(S, S)

    def forward(self, idx):
        x = self.emb(idx)
        return torch.sort(x, dim=-1).values


def factory(S, L):
    return Sorted(S, L).double()
"""

EXAMPLE = "examples/nanogpt_attention.py"


@pytest.mark.parametrize(
    "argv",
    [
        ["derive", "--model", "model.py:factory", "--spec", "binary.json", "--steps", "1", "--mu", "1"],
        [
            "derive",
            "--model",
            f"{EXAMPLE}:one_layer",
            "--spec",
            "binary.json",
            "--init",
            "own",
            "--steps",
            "100000",
            "--max-seconds",
            "60",
            "--mu",
            "1",
        ],
        ["certify", "--model", f"{EXAMPLE}:one_layer", "--spec", "binary.json", "--init", "own"]
        + ["--steps", "1000000", "--out", "out"],
        ["check", f"{EXAMPLE}:training", "--objective", "last"],
        ["derive", "--model", f"{EXAMPLE}:with_layer_norm", "--spec", "binary.json", "--init", "own"]
        + ["--steps", "1", "--mu", "1"],
    ],
    ids=[
        "op-outside-the-table",
        "exact-steps-from-own",
        "certified-beyond-the-limit",
        "objective",
        "layer-norm",
    ],
)
def test_a_refusal_of_the_guide_is_the_line_the_command_prints(argv, tmp_path, monkeypatch, capsys):
    """Run as written: the command, from a folder holding the guide's model.py and binary.json, prints one line
    on stderr, exit 2, and that line is in the guide (the sort line with the file name the guide uses)."""
    from rwtoolkit.cli.main import main

    root = GUIDE.parents[2]
    (tmp_path / "model.py").write_text(SORTED)
    (tmp_path / "binary.json").write_text(
        '{"task": {"family": "binary_markov", "params": {"p": "1/3", "q": "3/5", "N": 3}}}'
    )
    (tmp_path / "examples").mkdir()
    (tmp_path / EXAMPLE).write_text((root / EXAMPLE).read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    line = err.strip()
    text = " ".join(GUIDE.read_text(encoding="utf-8").split())  # the guide's lines wrap
    if argv[2] == "model.py:factory":  # the guide quotes the message without the command prefix
        line = line.removeprefix("rw derive: error: ")
    assert line in text, line
    assert not (tmp_path / "out").exists()
