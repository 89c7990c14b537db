"""``rw stability``'s figure and text summary for every report shape the command produces.

The shapes: the paper's model and ``--model`` (one schema, ``stability``), one μ or the full grid's
three, with or without measured runs, escapes never observed (a None step), growth beyond the float range
(ln σ_max(Φ_T) > 709, so σ_max(Φ_T) itself is not a float), and, for reports built by hand, +inf, NaN and
empty columns. Oracles: the report's own values (every one must be drawn where the module text says),
and the physics stated in docs/stability.md (σ = 10⁻² is above τ = 10⁻³ at t = 1, so it escapes at step 1).
"""

from __future__ import annotations

import math

import pytest
from matplotlib.transforms import BlendedGenericTransform

from rwtoolkit.analyses.stability import escape_summary, plot_report, stability_report
from rwtoolkit.analyses.stability._figure import NAN_GID, NEG_INF_GID, NEVER_GID, POS_INF_GID
from rwtoolkit.tasks import CircleWalk

PNG = b"\x89PNG\r\n\x1a\n"
INF, NAN = math.inf, math.nan


def _band_points(ax, gid: str) -> list[float]:
    """The x of every marker drawn in an edge band with this gid (in axes-fraction y, on the band)."""
    xs = []
    for line in ax.lines:
        if line.get_gid() == gid:
            assert isinstance(line.get_transform(), BlendedGenericTransform)
            assert all(y in (0.05, 0.95) for y in line.get_ydata())
            xs += [float(x) for x in line.get_xdata()]
    return xs


def _finite_limits(fig) -> None:
    """Every axis limit of the figure is finite; a log axis' limits are positive."""
    for ax in fig.axes:
        for lo, hi in (ax.get_xlim(), ax.get_ylim()):
            assert math.isfinite(lo) and math.isfinite(hi) and lo < hi
        if ax.get_xscale() == "log":
            assert ax.get_xlim()[0] > 0


def _row(mu: float, steps: list[dict], gaussian: list[dict], rounding: list[dict] | None) -> dict:
    escape = {"quantity": "v_residual", "gaussian": gaussian}
    if rounding is not None:
        escape["rounding"] = rounding
    return {
        "mu": mu,
        "verdict": {"kind": "repelling", "rate": 1.0, "line": ""},
        "steps": steps,
        "escape": escape,
    }


def _full_grid_by_hand() -> dict:
    """A --grid full shaped report (3 μ, 6 σ, 2 dtypes, 5 seeds) with every non-finite column there is."""
    sigmas, dtypes, T = [1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12], ["float32", "float64"], 200

    def steps(phi, sigma_c):
        return [{"t": t, "log_sigma_Phi": phi(t), "sigma_C": sigma_c(t)} for t in range(T)]

    def gaussian(predicted, measured):
        return [
            {
                "sigma": s,
                "dtype": d,
                "predicted": predicted(s),
                "measured": [measured(s, k) for k in range(5)],
            }
            for s in sigmas
            for d in dtypes
        ]

    rounding = [
        {"dtype": d, "gram": g, "predicted": None, "measured": None}
        for d in dtypes
        for g in ("ideal", "computed")
    ]
    return {
        "task": {"name": "circle", "K": 3, "N": 4, "p": "1"},
        "config": {"steps": T, "eta": 1.0, "dtypes": dtypes, "threshold": 1e-3, "measured": True},
        "results": [
            # μ = 1: the escape never observed (None and +inf), one NaN measurement; σ_C all +inf
            _row(
                1.0,
                steps(lambda t: 0.01 * t, lambda t: INF),
                gaussian(lambda s: None, lambda s, k: INF if k else NAN),
                rounding,
            ),
            # √1000: σ_max(Φ_t) far beyond the float range (e^3000), σ_C all NaN; an empty escape table
            _row(math.sqrt(1000), steps(lambda t: 15.0 * t, lambda t: NAN), [], rounding),
            # 500: no steps at all, σ_C = 0 would be -inf on the log scale; finite escapes
            _row(500.0, [], gaussian(lambda s: 3, lambda s, k: 3 + k), []),
        ],
    }


def test_png_for_full_grid_report_with_non_finite_and_empty_columns(tmp_path):
    report = _full_grid_by_hand()
    fig = plot_report(report, str(tmp_path / "grid.png"))
    assert (tmp_path / "grid.png").read_bytes()[:8] == PNG
    _finite_limits(fig)
    growth_1, escape_1, growth_2, escape_2, growth_3, escape_3 = fig.axes[:6]
    # μ = 1: every σ_C is +inf, drawn at the top edge at t = 1..T; the never-escapes all in the top band
    assert _band_points(growth_1, POS_INF_GID) == [float(t) for t in range(1, 201)]
    never = _band_points(escape_1, NEVER_GID)
    sigmas = {r["sigma"] for r in report["results"][0]["escape"]["gaussian"]}
    assert sorted(set(never)) == sorted(sigmas | {2.0**-24, 2.0**-53})  # the Gaussian runs and rounding at u
    assert len(_band_points(escape_1, NAN_GID)) == 6 * 2  # seed 0 of each (σ, dtype) is NaN
    # √1000: σ_max(Φ_t) up to e^2985 drawn on a decade axis that holds it; σ_C all NaN at the bottom edge
    lo, hi = growth_2.get_ylim()
    assert lo <= 0 and hi >= 15.0 * 199 / math.log(10)
    assert len(_band_points(growth_2, NAN_GID)) == 200
    assert "no escape within T = 200 steps" in " ".join(t.get_label() for t in escape_2.patches)
    # 500: no steps, and the finite escapes 3..7 set the limits
    assert any(t.get_text() == "no steps in the report" for t in growth_3.texts)
    lo, hi = escape_3.get_ylim()
    assert lo <= 3 and 7 <= hi < 10


def test_growth_panel_draws_zero_and_infinite_singular_values_at_the_edges():
    report = _full_grid_by_hand()
    report["results"] = [report["results"][0]]
    report["results"][0]["steps"][:3] = [
        {"t": 0, "log_sigma_Phi": 0.0, "sigma_C": 0.0},
        {"t": 1, "log_sigma_Phi": -INF, "sigma_C": 2.0},
        {"t": 2, "log_sigma_Phi": INF, "sigma_C": None},
    ]
    growth = plot_report(report).axes[0]
    assert sorted(_band_points(growth, NEG_INF_GID)) == [1.0, 2.0]  # σ_C = 0 at t = 1, Φ = 0 at t = 2
    assert _band_points(growth, POS_INF_GID)[0] == 3.0  # Φ = +inf at t = 3 (then σ_C's +inf from t = 4)
    assert 3.0 in _band_points(growth, NAN_GID)  # σ_C missing at t = 3


def test_png_for_a_report_without_results_says_so(tmp_path):
    fig = plot_report(
        {"task": {"name": "x", "K": 3, "N": 4}, "config": {}, "results": []}, str(tmp_path / "e.png")
    )
    assert (tmp_path / "e.png").read_bytes()[:8] == PNG
    assert "the report has no results" in [t.get_text() for t in fig.texts]


def test_png_for_the_generic_report_with_growth_beyond_the_float_range():
    steps = [{"t": t, "radius": 2.0, "sigma_max": 2.0, "log_sigma_Phi": 800.0 * (t + 1)} for t in range(3)]
    report = {
        "model": {"name": "key_query", "d": 2},
        "manifold": {"parameters": ["W_K", "W_Q"]},
        "task": {"name": "circle", "K": 3, "N": 4, "p": "1"},
        "config": {"steps": 3, "eta": 1.0, "dtypes": ["float64"], "threshold": 1e-3},
        "results": [
            {
                "mu": 1.0,
                "verdict": {"kind": "unstable", "log_growth": 2400.0},
                "steps": steps,
                "escape": {
                    "gaussian": [{"sigma": 1e-8, "dtype": "float64", "predicted": 1, "measured": [None]}]
                },
            }
        ],
    }
    fig = plot_report(report)
    _finite_limits(fig)
    assert fig.axes[0].get_ylim()[1] >= 2400 / math.log(10)  # σ_max(Φ_3) = e^2400, as 10^1042
    assert _band_points(fig.axes[1], NEVER_GID) == [1e-8]


def test_png_is_drawn_when_escape_is_never_observed():
    """μ = 1, T = 4: a 10⁻⁸ start grows a few percent per step (docs/stability.md), so neither the prediction
    nor the run escapes; both are drawn in the top band at σ = 10⁻⁸."""
    report = stability_report(CircleWalk(3, 4, 1), steps=4, sigmas=[1e-8], seeds=1)
    row = report["results"][0]["escape"]["gaussian"][0]
    assert row["predicted"] is None and row["measured"] == [None]
    fig = plot_report(report)
    _finite_limits(fig)
    never = _band_points(fig.axes[1], NEVER_GID)
    assert never.count(1e-8) == 2  # the prediction and the one measured run
    rounding = [r for r in report["results"][0]["escape"]["rounding"] if r["gram"] == "computed"]
    expected = sum((r["predicted"] is None) + (r["measured"] is None) for r in rounding)
    assert len(never) == 2 + expected


def test_png_is_drawn_when_sigma_phi_exceeds_the_float_range(tmp_path, capsys):
    """The issue's command: at μ = 500 the normal growth passes 10^280 within 200 steps, where matplotlib's
    log axis overflowed."""
    from rwtoolkit.cli.main import main

    png = tmp_path / "x.png"
    args = ["stability", "--K", "3", "--N", "4", "--p", "1", "--mu", "500", "--predict-only"]
    assert main(args + ["--png", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG
    assert f"wrote {png}" in capsys.readouterr().out


def test_full_grid_without_outputs_prints_the_escape_summary(capsys, monkeypatch):
    import rwtoolkit.analyses.stability._report
    from rwtoolkit.cli.main import main

    monkeypatch.setattr(rwtoolkit.analyses.stability._report, "SAY_ESTIMATE_ABOVE", 0.0)
    assert main(["stability", "--K", "3", "--N", "4", "--p", "1", "--grid", "full", "--steps", "2"]) == 0
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert (
        "rw stability: about" in captured.err
        and "3 mu x 2 linearised steps and 64 measured runs" in captured.err
    )
    at = next(i for i, line in enumerate(out) if line.startswith("escape step, predicted / measured"))
    header, rows = out[at + 1].split(), [line.split("  ") for line in out[at + 2 : at + 8]]
    assert header[:8] == ["mu", "dtype"] + [
        f"sigma={s}" for s in ("1e-02", "1e-04", "1e-06", "1e-08", "1e-10", "1e-12")
    ]
    assert out[at + 1].endswith("rounding (computed Gram)")
    cells = [[c.strip() for c in row if c.strip()] for row in rows]
    assert [row[:2] for row in cells] == [
        [mu, d] for mu in ("1", "31.6228", "500") for d in ("float32", "float64")
    ]
    # σ = 10⁻² is above τ = 10⁻³ already at t = 1: predicted and measured escape at step 1, every seed
    assert all(row[2] == "1 / 1" for row in cells)
    assert out[at + 8] == "(--json FILE writes the whole report, --png FILE its figure)"


def test_escape_summary_of_a_prediction_only_report_has_no_measured_column():
    report = {
        "config": {"steps": 50, "measured": False},
        "results": [
            _row(
                1.0,
                [],
                [{"sigma": 1e-4, "dtype": "float64", "predicted": 30, "measured": []}],
                [{"dtype": "float64", "gram": "computed", "predicted": None, "measured": None}],
            )
        ],
    }
    assert escape_summary(report).splitlines() == [
        "escape step, predicted (--predict-only: no measured runs) ('-': no escape within T = 50 steps)",
        "  mu  dtype    sigma=1e-04  rounding (computed Gram)",
        "   1  float64  30           -",
    ]


@pytest.mark.parametrize(
    "extra",
    [
        ["--K", "3", "--N", "4", "--p", "1", "--model", "two_layer", "--grid", "full", "--steps", "2000"],
        ["--K", "4", "--N", "11", "--p", "1/2", "--grid", "full", "--steps", "2000"],
    ],
    ids=["two_layer", "paper-model"],
)
def test_full_grid_beyond_the_time_budget_is_refused_before_work(extra, capsys):
    from rwtoolkit.cli.main import main

    assert main(["stability", *extra]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and "above 1800 s" in err and "--steps" in err, err
    assert captured.out == ""
