"""Properties of the figures' building blocks: legends outside the data, reference-line styles, colour
scales that include 0, the red mark on disagreeing panels, quick sizes in the title."""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rwtoolkit.analyses.repro._plots import (
    DISAGREE_GID,
    LOG_FLOOR,
    QUICK_NOTE,
    REFERENCE_STYLES,
    colour_limits,
    curves,
    heatmap,
    mark_disagreement,
    new_figure,
)


def legend_outside_axes(fig: Figure, ax) -> bool:
    """True when the legend of ``ax`` does not overlap its axes box (in display coordinates)."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)  # lays the figure out (constrained layout) as saving it would
    legend = ax.get_legend()
    return not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))


def test_curves_reference_lines_have_distinct_styles_and_the_legend_sits_outside():
    fig, ax = new_figure(1, 1, "t")
    a = ax[0, 0]
    curves(
        a,
        [("main", [0.1, 0.5, 0.5]), ("other", [0.1, 0.2, 0.5])],
        "acc",
        "accuracy",
        refs=[(0.5, "optimum", "OPT = 0.5"), (1 / 6, "chance", "chance 1/K")],
    )
    data, refs = a.lines[:2], a.lines[2:]
    assert [line.get_label() for line in refs] == ["OPT = 0.5", "chance 1/K"]
    styles = {(line.get_linestyle(), line.get_color()) for line in refs}
    assert len(styles) == 2  # OPT and 1/K look different
    assert all(line.get_linestyle() == "-" for line in data)  # data solid, references dashed or dotted
    assert all(line.get_linestyle() != "-" for line in refs)
    assert len({tuple(v.values()) for v in REFERENCE_STYLES.values()}) == len(REFERENCE_STYLES)
    assert legend_outside_axes(fig, a)


def test_constant_like_matrix_gets_a_scale_from_zero_and_its_spread_in_the_title():
    # fig5's V(T) ∝ 1 with rows a few per cent apart (unequal label counts): 1.55 .. 1.67
    V = np.repeat(np.linspace(1.55, 1.67, 6)[:, None], 6, axis=1)
    assert colour_limits(V) == (0.0, 1.67)
    fig, ax = new_figure(1, 1, "t")
    im = heatmap(fig, ax[0, 0], V, "V(T)")
    assert im.get_clim() == (0.0, 1.67)
    assert "entries within 7.2 % of max |entry|" in ax[0, 0].get_title()


def test_log_curves_floor_exact_zeros_in_a_labelled_rounding_band():
    fig, ax = new_figure(1, 1, "t")
    curves(ax[0, 0], [("spread", [0.0, 1e-17, 2e-16, 1e-3])], "spread", "spread", log=True)
    assert min(ax[0, 0].lines[0].get_ydata()) == LOG_FLOOR
    assert any("rounding level" in t.get_text() for t in ax[0, 0].texts)
    _, ax = new_figure(1, 1, "t")  # nothing at the floor: no band, and the axis is not stretched to it
    curves(ax[0, 0], [("kl", [1.0, 0.5])], "kl", "kl", log=True)
    assert not ax[0, 0].texts and ax[0, 0].get_ylim()[0] > LOG_FLOOR


def test_disagreement_mark_is_red_and_names_the_claim():
    _, ax = new_figure(1, 2, "t")
    mark_disagreement(ax[0, 0], ["V(T) ∝ all-ones"])
    mark_disagreement(ax[0, 1], [])
    assert ax[0, 0].title.get_gid() == DISAGREE_GID and "V(T) ∝ all-ones" in ax[0, 0].get_title()
    assert ax[0, 1].title.get_gid() is None


def test_quick_figures_say_so_in_the_title():
    assert QUICK_NOTE in new_figure(1, 1, "fig4", quick=True)[0].get_suptitle()
    assert QUICK_NOTE not in new_figure(1, 1, "fig4")[0].get_suptitle()
