"""``rw zoo claims`` times each claim from before its set-up to its figure, and is never silent while it works.

A fake claim stands in for the real ones: its set-up and its figure sleep for known times, so the seconds
reported must cover both, and its progress lines must reach stderr as the stages start (the real claims'
stages are the same calls: ``ZooClaim.check`` and ``write_figure``).
"""

from __future__ import annotations

import time

import pytest
from matplotlib.figure import Figure

from rwtoolkit.analyses.zoo import CLAIMS, Finding, ZooClaim, run_claims
from rwtoolkit.analyses.zoo._figures import FIGURES
from rwtoolkit.cli.main import main
from rwtoolkit.io import Verdict

SETUP_SECONDS, FIGURE_SECONDS = 0.4, 0.3


def _fake_run(quick: bool, progress) -> Finding:
    time.sleep(SETUP_SECONDS)  # the claim's set-up: imports, the exact or certified runs it needs
    progress("configuration one")
    return Finding(Verdict.PROVED, ["configuration one: proved"], [{"task": "fake"}])


def _fake_figure(claim: ZooClaim, progress) -> Figure:
    progress("figure: a float64 run")
    time.sleep(FIGURE_SECONDS)
    fig = Figure(figsize=(2, 2))
    fig.add_subplot(1, 1, 1).plot([0, 1], [0, 1])
    return fig


@pytest.fixture
def fake_claim(monkeypatch):
    claim = ZooClaim(
        id="fake_claim",
        source="a paper",
        statement="a statement",
        model="one_layer",
        task="circle",
        criterion="a criterion",
        run=_fake_run,
    )
    monkeypatch.setitem(CLAIMS, claim.id, claim)
    monkeypatch.setitem(FIGURES, claim.id, _fake_figure)
    return claim


def test_a_claims_seconds_cover_its_set_up(fake_claim) -> None:
    (claim,) = run_claims([fake_claim.id])
    assert claim.id == fake_claim.id and claim.verdict is Verdict.PROVED and not fake_claim.evidence
    assert claim.seconds >= SETUP_SECONDS


def test_a_claims_seconds_cover_its_figure_and_the_stages_are_told_in_order(fake_claim, tmp_path) -> None:
    heard: list[tuple[float, str]] = []
    start = time.perf_counter()
    (outcome,) = run_claims(
        [fake_claim.id],
        progress=lambda message: heard.append((time.perf_counter() - start, message)),
        figures=tmp_path,
    )
    assert outcome.seconds >= SETUP_SECONDS + FIGURE_SECONDS
    assert (tmp_path / "fake_claim.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    messages = [m for _, m in heard]
    assert messages == [
        "fake_claim: checking",
        "fake_claim: configuration one",
        "fake_claim: proved; drawing its figure",
        "fake_claim: figure: a float64 run",
        f"fake_claim: proved, done in {outcome.seconds:.1f} s",
    ]
    # Told as each stage starts: the first line before the set-up, the configuration after it.
    assert heard[0][0] < SETUP_SECONDS <= heard[1][0]


def test_rw_zoo_claims_shows_progress_on_stderr_and_the_total_seconds(fake_claim, tmp_path, capsys) -> None:
    assert main(["zoo", "claims", "--claim", fake_claim.id, "--out", str(tmp_path / "zoo")]) == 0
    captured = capsys.readouterr()
    assert "rw zoo: fake_claim: checking" in captured.err
    assert "rw zoo: fake_claim: figure: a float64 run" in captured.err
    (row,) = [line for line in captured.out.splitlines() if line.startswith("fake_claim")]
    assert float(row.split()[-1].rstrip("s")) >= SETUP_SECONDS + FIGURE_SECONDS
    assert (tmp_path / "zoo" / "figures" / "fake_claim.png").is_file()
    assert "![fake_claim](figures/fake_claim.png)" in (tmp_path / "zoo" / "ZOO.md").read_text()
