"""rw derive --model: another model of the registry through the generic exact engine (rwtoolkit.engines.exact.derive_model)."""

from __future__ import annotations

import pytest

from rwtoolkit.cli.main import main


def test_key_query_from_zero_is_stuck_exactly(capsys):
    """Both factors zero: W_K, W_Q stay 0 and the attention stays 1/N at every step (docs/guide/models.md)."""
    assert main("derive --model key_query --K 3 --N 4 --p 3/10 --mu 2 --steps 3".split()) == 0
    out = capsys.readouterr().out
    assert "model={'name': 'key_query', 'd': 2}" in out
    assert out.count("mean attention = [1/4, 1/4, 1/4, 1/4]") == 4
    assert out.count("W_K = [0, 0, 0, 0, 0, 0, 0]") == 4 and out.count("W_Q = [0, 0, 0, 0, 0, 0, 0]") == 4
    # V(1) = (η/(εNK)) Σ_{i<N} (Πᵀ)^{N-i} (Lemma C.1, uniform attention as for the paper's model); at K = 3,
    # N = 4, p = 3/10, η = 1, ε = 1/10 its (1,1) entry is (10/12)·([Π]₁₁ + [Π²]₁₁ + [Π³]₁₁) = (10/12)(0 + 2·21/100
    # + (27 + 343)/1000) = (10/12)(790/1000) = 79/120, by hand.
    assert "t = 1\nV = [79/120," in out


def test_key_query_from_a_gaussian_start_moves_its_attention(capsys):
    argv = "derive --model key_query --K 3 --N 4 --p 3/10 --mu 2 --steps 1".split()
    assert main([*argv, "--init", "gaussian", "--sigma", "1/20", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "init=gaussian(sigma=1/20, seed=1, grid=2^-20)" in out
    assert "mean attention = [1/4, 1/4, 1/4, 1/4]" not in out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--verdict"], "--verdict applies to the paper's model from zero init"),
        (["--json", "x.json", "--mu", "1", "--max-bytes", "1K"], "the files are estimated at"),
        (["--per-input"], "--per-input / --no-per-input apply to the oracle file: give --json FILE"),
        (["--init", "gaussian", "--steps", "9"], "--steps=9 is out of range with --init gaussian: at most 3"),
        (["--loss", "any"], "--loss any applies to the paper's model"),
        (["--head-dim", "0"], "--head-dim"),
        (["--mu", "p"], "--mu=p is out of range"),
    ],
    ids="verdict json-max-bytes per-input-without-json gaussian-steps abstract-loss head-dim-0 symbolic-mu".split(),
)
def test_generic_derive_refuses_in_one_line(extra, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["derive", "--model", "key_query", "--K", "3", "--N", "4", "--p", "1/2", "--steps", "1"]
    assert main(argv + extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "x.json").exists()


def test_pos_norm_is_the_deprecated_mu(capsys):
    assert main(["derive", "--K", "3", "--N", "3", "--p", "1/2", "--pos-norm", "1", "--steps", "1"]) == 0
    old = capsys.readouterr()
    assert "--pos-norm is deprecated, use --mu" in old.err
    assert main(["derive", "--K", "3", "--N", "3", "--p", "1/2", "--mu", "1", "--steps", "1"]) == 0
    assert capsys.readouterr().out == old.out
