"""``rw check`` and ``rw check --emit`` estimate every size before work and compute only what is compared.

Issue 39, items 5 and 6: an emit configuration's M and its task's population count in the estimate (time,
memory and the files), and what cannot fit is refused in one line with exit code 2 before anything is written;
a check estimates its exact reference trajectories from the configurations its search draws and refuses above
--max-seconds; the exact reference of another model converts only the read-outs a comparison reads, decides
the accuracy only where it is compared, and proves an exact tie in f without expanding its atoms.

The oracles: the positional embeddings' file is 8·M·N bytes of float64 (the .npy format); an independent
PyTorch implementation (examples/learned_positions_torch.py) for the predictions at an exact tie; the
search's own draws, recorded while it runs, for the configurations the estimate reads.
"""

from __future__ import annotations

import json
import shutil
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

import rwtoolkit.engines.exact.arithmetic._decide as decide
from rwtoolkit.analyses.check import (
    CheckOptions,
    Mismatch,
    build_config,
    check,
    estimate_check,
    estimate_fixtures,
    for_model,
    load_factory,
)
from rwtoolkit.analyses.check._check import drawn_configs
from rwtoolkit.analyses.check._compare import compare, expected_steps, trajectory_key
from rwtoolkit.analyses.check._emit import FixtureSpec
from rwtoolkit.cli.main import main
from rwtoolkit.engines.exact import EXACT, job_estimate
from rwtoolkit.models import Evaluation
from rwtoolkit.runtime import run_model
from rwtoolkit.tasks import CircleWalk

ROOT = Path(__file__).resolve().parent.parent
LEARNED = ROOT / "examples" / "learned_positions_torch.py"
KEY_QUERY = ROOT / "examples" / "key_query_torch.py"
PLAIN = ROOT / "examples" / "plain_numpy.py"


# --- item 6: compute only what is compared --------------------------------------------------------------
def test_an_exact_tie_in_f_at_three_steps_is_decided_without_expanding_the_atoms(monkeypatch) -> None:
    """The configuration `rw check --model learned_positions --steps 3` stalled on (28 minutes): at t = 3 some
    entries of f are equal through exponentials of one exponent built along different paths. The tie is proved
    by making those atoms one, never by expanding every atom into SymPy's exp (which took minutes)."""
    config = for_model(build_config(CircleWalk(5, 4, "1"), mu=5, eta="1/7", eps="5/6"), "learned_positions")
    expected = expected_steps(config, 3)
    f = expected.trajectory.states[3].f

    def refuse(expr):
        raise AssertionError("a tie was decided by expanding every atom")

    monkeypatch.setattr(decide, "expand_atoms", refuse)
    predicted = EXACT.predict(f)
    assert predicted is not None
    floats = run_model(load_factory(f"{LEARNED}:model"), config, 3, config.shapes)
    from rwtoolkit.runtime import predict

    assert predicted.tolist() == predict(floats.values["f"][3], config.tie_rtol).tolist()


def _key_query_readouts():
    config = for_model(build_config(CircleWalk(3, 3, "1/2"), mu=2, eta=1, eps="1/10"), "key_query")
    return config, run_model(load_factory(f"{KEY_QUERY}:model"), config, 2, config.shapes)


def test_an_implementation_without_an_accuracy_never_has_the_exact_accuracy_decided(monkeypatch) -> None:
    config, readouts = _key_query_readouts()
    readouts.values["accuracy"] = None  # a training loop that yields no accuracy

    def refuse(self, batch, arithmetic):
        raise AssertionError("the exact accuracy was decided though nothing compares it")

    monkeypatch.setattr(Evaluation, "accuracy", refuse)
    assert compare(readouts, config, 2) == []


def test_a_first_divergence_stops_the_exact_accuracies_of_later_steps(monkeypatch) -> None:
    config, readouts = _key_query_readouts()
    readouts.values["V"][1] = readouts.values["V"][1] + 1.0  # wrong from t = 1
    calls = []
    decided = Evaluation.accuracy

    def counted(self, batch, arithmetic):
        calls.append(self)
        return decided(self, batch, arithmetic)

    monkeypatch.setattr(Evaluation, "accuracy", counted)
    with pytest.raises(Mismatch) as err:
        compare(readouts, config, 2)
    assert (err.value.divergence.step, err.value.divergence.quantity) == (1, "V")
    assert len(calls) == 1  # t = 0 only: every later accuracy comes after the divergence


def test_the_configurations_the_estimate_reads_are_the_ones_the_search_draws(monkeypatch) -> None:
    import rwtoolkit.analyses.check._compare as comparison

    options = CheckOptions(steps=1, examples=4, model="key_query")
    seen = []
    computed = comparison.expected_steps

    def recorded(config, steps):
        seen.append(trajectory_key(config, steps))
        return computed(config, steps)

    monkeypatch.setattr(comparison, "expected_steps", recorded)
    assert check(load_factory(f"{KEY_QUERY}:model"), options).exit_code == 0
    drawn = [trajectory_key(config, 1) for config in drawn_configs(options)]
    assert seen == drawn and len(drawn) == 4


def test_check_estimate_counts_every_drawn_trajectory_and_the_steps() -> None:
    two = estimate_check(CheckOptions(steps=2, examples=5, model="learned_positions"))
    four = estimate_check(CheckOptions(steps=4, examples=5, model="learned_positions"))
    assert two.trajectories == four.trajectories == 5
    assert four.seconds > 5 * two.seconds  # from t = 3 every step nests the exponentials deeper
    assert "CircleWalk" in four.costliest and four.costliest_seconds <= four.seconds


def test_a_check_of_a_million_examples_is_estimated_from_the_first_draws() -> None:
    est = estimate_check(CheckOptions(steps=1, examples=10**6))
    assert est.drawn == 100 and est.trajectories > 10**4 and est.seconds > 10**4
    assert est.describe().startswith("~") and "(~" in est.describe()


def test_check_is_refused_in_one_line_before_work_above_max_seconds(tmp_path, capsys) -> None:
    factory = tmp_path / "counting.py"
    calls = tmp_path / "calls"
    factory.write_text(
        f"import sys\nsys.path.insert(0, {str(PLAIN.parent)!r})\nfrom plain_numpy import model as plain\n"
        f"def model(config):\n    open({str(calls)!r}, 'a').write('called')\n    return plain(config)\n"
    )
    code = main(["check", f"{factory}:model", "--model", "two_layer", "--steps", "4", "--max-seconds", "60"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and line.startswith("rw check: error: --steps 4 --model two_layer")
    assert "estimated at ~" in line and "above --max-seconds 60" in line and "fewer --steps" in line
    assert not calls.exists()  # the implementation never ran


def test_check_prints_its_estimate_before_the_report(capsys) -> None:
    assert main(["check", f"{PLAIN}:model", "--steps", "1", "--examples", "2"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("rw check: estimated ~") and "2 exact trajectories" in err
    assert out.startswith("rw check ")


# --- item 5: every size estimated before work, every size parameter counted -----------------------------
def _spec(M: int | None = None, **params) -> FixtureSpec:
    return FixtureSpec("circle", {"K": 3, "N": 4, "p": "1/2", **params}, "1", "1", "1/10", M=M)


def test_emit_estimate_reads_M_its_memory_and_the_file_of_the_positions() -> None:
    small, large = estimate_fixtures([_spec(M=10)], 2), estimate_fixtures([_spec(M=10**8)], 2)
    npy = 8 * (10**8 - 10) * 4  # float64 M×N: the .npy files' payloads differ by this much
    assert large.file_bytes - small.file_bytes >= npy
    assert large.memory - small.memory >= npy  # at least the array itself, while it is built and saved
    assert large.seconds > small.seconds + 10


def test_emit_estimate_reads_the_population_at_zero_steps() -> None:
    """3·2^18 inputs at --steps 0: measured 6-17 s, 260 MB, 6.7 MB written (the estimate said 0.64 s, 160 MB)."""
    est = estimate_fixtures([_spec(N=19)], 0)
    assert est.seconds > 3 and est.memory > 300 * 2**20 and est.file_bytes > 4 * 2**20
    assert job_estimate(CircleWalk(3, 19, "1/2"), 0, per_input=True).seconds > 3


def test_emit_refuses_a_configuration_whose_M_does_not_fit_before_work(tmp_path, capsys) -> None:
    configs = tmp_path / "huge.json"
    configs.write_text(json.dumps([{"family": "circle", "params": {"K": 3, "N": 4, "p": "1/2"}, "mu": 1,
                                    "eta": 1, "eps": "1/10", "M": 10**12}]))  # fmt: skip
    assert main(["check", "--emit", str(tmp_path / "out"), "--configs", str(configs)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "M=1000000000000" in err and "of memory" in err and "smaller M" in err
    assert not (tmp_path / "out").exists()


def test_emit_refuses_files_that_do_not_fit_the_disk_before_work(tmp_path, capsys, monkeypatch) -> None:
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**6, 10**6 - 1000, 1000))
    assert main(["check", "--emit", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "estimated at ~" in err and "of files" in err and "free in" in err
    assert not (tmp_path / "out").exists()


def test_emit_prints_time_memory_and_files_of_its_estimate(tmp_path, capsys) -> None:
    configs = tmp_path / "one.json"
    configs.write_text(json.dumps([{"family": "circle", "params": {"K": 3, "N": 3, "p": "1/2"}, "mu": 1,
                                    "eta": 1, "eps": "1/10", "M": 5}]))  # fmt: skip
    assert main(["check", "--emit", str(tmp_path / "out"), "--configs", str(configs), "--steps", "1"]) == 0
    out = capsys.readouterr().out
    assert "estimated ~" in out and "of memory" in out and "of files" in out
    written = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file())
    est = estimate_fixtures([FixtureSpec("circle", {"K": 3, "N": 3, "p": "1/2"}, "1", "1", "1/10", M=5)], 1)
    assert est.file_bytes / 3 <= written <= 3 * est.file_bytes
    assert np.load(tmp_path / "out" / "oracles" / "00-circle-K3-N3-p1_2.P.npy").shape == (5, 3)
