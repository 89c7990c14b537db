"""The stability report drawn (``plot_report``) and its escape table summarised in text (``escape_summary``).

Both read every report ``stability_report`` writes (schema ``stability``): the reduced view's of the paper's model
and the generic view's of ``--model`` (a report with a ``model`` key), one μ or many (``--grid full``), with or
without measured runs (``--predict-only``). Nothing non-finite reaches an axis limit or a log axis:

* growth panel: singular values drawn as log₁₀ on a linear axis whose ticks read 10^k, so a product
  σ_max(Φ_T) beyond the float range (ln σ_max(Φ_T) > 709) is drawn as the number it is; limits from the
  finite values only;
* escape panel: escape steps on a linear axis scaled to the finite steps; an escape step that is None
  (or +inf) means *no escape within the T steps of the run* and is drawn in a grey band along the top
  edge, labelled so; σ on a log axis over the positive finite σ only;
* a value that is +inf (overflow), −inf or 0 on a log scale, or NaN is drawn in a labelled band at the
  top (+inf) or bottom edge (−inf, 0, NaN) of its panel, never dropped silently.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rwtoolkit.analyses.stability._escape import UNIT_ROUNDOFF

#: The ``gid`` of the artists drawn in the edge bands (tests find them by it): runs that never escaped within
#: the run, and values that are +inf, −inf / 0 on a log scale, or NaN.
NEVER_GID, POS_INF_GID, NEG_INF_GID, NAN_GID = (
    "no-escape-within-run",
    "plus-infinity",
    "minus-infinity",
    "nan",
)
#: Height of an edge band, in axes fraction, and where its markers sit.
_BAND = 0.1
_EDGE_Y = {"top": 1 - _BAND / 2, "bottom": _BAND / 2}
_BAND_COLOUR = {"top": "0.88", "bottom": "#f6d5d5"}


def _kind(y: float) -> str:
    """'finite', '+inf', '-inf' or 'nan' of a float."""
    if math.isnan(y):
        return "nan"
    if math.isinf(y):
        return "+inf" if y > 0 else "-inf"
    return "finite"


def _number(value: Any) -> float:
    """A JSON number as a float; None (a missing value) is NaN here."""
    return float("nan") if value is None else float(value)


def _log10_positive(value: Any) -> float:
    """log₁₀ of a singular value: −inf at 0, NaN below 0 or missing, +inf at +inf."""
    x = _number(value)
    if math.isnan(x) or x < 0:
        return float("nan")
    return -math.inf if x == 0 else math.log10(x)


def _log10_of_ln(value: Any) -> float:
    """log₁₀ of exp(ln value): ln σ_max(Φ_t) to decades, without ever forming σ_max(Φ_t)."""
    return _number(value) / math.log(10)


def _escape_step(value: Any) -> float:
    """An escape step as a float: None (no escape within the run) is +inf."""
    return math.inf if value is None else float(value)


class _Panel:
    """One axes: finite points as usual, non-finite ones in labelled bands at its top and bottom edges."""

    def __init__(self, ax: Any, log_x: bool):
        self.ax, self.log_x = ax, log_x
        self.finite_y: list[float] = []
        self.drawn_x: list[float] = []
        self.edges: dict[str, list[str]] = {}  # edge -> its band's labels

    def usable_x(self, x: float) -> bool:
        return math.isfinite(x) and (x > 0 or not self.log_x)

    def draw(
        self,
        xs: Sequence[float],
        ys: Sequence[float],
        *,
        bands: dict[str, tuple[str, str, str]],
        connect: bool = False,
        **style: Any,
    ) -> None:
        """Plot (x, y); ``bands`` maps a non-finite kind ('+inf', '-inf', 'nan') to (edge, band label, gid).

        A point whose x cannot be drawn (non-finite, or ≤ 0 on the log x axis) is left out: its x is not a
        value of the axis (σ is validated > 0 before any report is made).
        """
        from matplotlib.transforms import blended_transform_factory

        pts = [(x, y) for x, y in zip(xs, ys) if self.usable_x(x)]
        finite = [(x, y) for x, y in pts if _kind(y) == "finite"]
        self.drawn_x += [x for x, _ in pts]
        self.finite_y += [y for _, y in finite]
        if connect:  # a line with a gap where the series is not finite
            ys_gapped = [y if _kind(y) == "finite" else math.nan for _, y in pts]
            self.ax.plot([x for x, _ in pts], ys_gapped, **style)
        else:
            self.ax.plot([x for x, _ in finite], [y for _, y in finite], **{"linestyle": "none", **style})
        edge_style = {k: v for k, v in style.items() if k not in ("label", "linestyle")}
        edge_style["marker"] = edge_style.get("marker") or "o"
        trans = blended_transform_factory(self.ax.transData, self.ax.transAxes)
        for kind, (edge, text, gid) in bands.items():
            at = [x for x, y in pts if _kind(y) == kind]
            if not at:
                continue
            if text not in self.edges.setdefault(edge, []):
                self.edges[edge].append(text)
            self.ax.plot(
                at,
                [_EDGE_Y[edge]] * len(at),
                transform=trans,
                clip_on=False,
                gid=gid,
                **{**edge_style, "linestyle": "none"},
            )

    def finish(
        self,
        empty: str,
        ticks: Callable[[float, float], tuple[list[float], Callable[[float, int], str]]],
        y_floor: float | None = None,
        y_default: tuple[float, float] = (0.0, 1.0),
    ) -> None:
        """Limits from the finite values only (``y_default`` when there are none), room for the bands and
        their legend entries; ``ticks(lo, hi)`` gives the y ticks within the finite range and their labels;
        ``empty`` is written when the panel has nothing to draw."""
        from matplotlib.patches import Rectangle
        from matplotlib.ticker import FixedLocator, FuncFormatter

        ax = self.ax
        lo, hi = (min(self.finite_y), max(self.finite_y)) if self.finite_y else y_default
        if y_floor is not None:
            lo = min(lo, y_floor)
        span = hi - lo if hi > lo else max(abs(hi), 1.0)
        top = _BAND + 0.04 if "top" in self.edges else 0.06
        bottom = _BAND + 0.04 if "bottom" in self.edges else (0.0 if y_floor is not None else 0.06)
        inner = span / (1 - top - bottom)
        y_lo, y_hi = lo - bottom * inner, hi + top * inner
        ax.set_ylim(y_lo, y_hi)
        band = _BAND * (y_hi - y_lo)  # ticks outside the bands only
        where, label = ticks(
            y_lo + (band if "bottom" in self.edges else 0), y_hi - (band if "top" in self.edges else 0)
        )
        ax.yaxis.set_major_locator(FixedLocator(where))
        ax.yaxis.set_major_formatter(FuncFormatter(label))
        if self.drawn_x:
            x_lo, x_hi = min(self.drawn_x), max(self.drawn_x)
            if self.log_x:
                ax.set_xscale("log")
                pad = 3.0 if x_hi > x_lo else 10.0  # one σ: a decade either side
                ax.set_xlim(x_lo / pad, x_hi * pad)
            else:
                pad = 0.03 * (x_hi - x_lo) if x_hi > x_lo else 0.5
                ax.set_xlim(x_lo - pad, x_hi + pad)
        elif self.log_x:
            ax.set_xscale("log")
            ax.set_xlim(1e-13, 1e-1)
        for edge, texts in self.edges.items():  # the band, labelled in the legend
            y0 = 1 - _BAND if edge == "top" else 0.0
            band = Rectangle((0, y0), 1, _BAND, transform=ax.transAxes, lw=0, zorder=0)
            band.set(facecolor=_BAND_COLOUR[edge], label=f"{edge} band: " + ", ".join(texts))
            ax.add_patch(band)
        if not self.drawn_x and not self.edges:
            ax.set_xticks([])
            ax.set_yticks([])
            ax.text(
                0.5, 0.5, empty, transform=ax.transAxes, ha="center", va="center", fontsize=8, color="0.35"
            )


def _decade_ticks(lo: float, hi: float) -> tuple[list[float], Callable[[float, int], str]]:
    """Ticks of a log₁₀-valued axis read as powers of ten: 10^k over two decades or more, else the numbers
    1, 2, …, 9 (or 1, 2, 5) times a power of ten, as a log axis labels them."""
    from matplotlib.ticker import MaxNLocator

    if hi - lo >= 2:
        where = [y for y in MaxNLocator(nbins=6, integer=True).tick_values(lo, hi) if lo <= y <= hi]
        return where, lambda y, _: f"$10^{{{y:.0f}}}$"
    marks = [k + math.log10(m) for k in range(math.floor(lo), math.ceil(hi) + 1) for m in range(1, 10)]
    where = [y for y in marks if lo - 1e-12 <= y <= hi + 1e-12]
    if len(where) > 8:
        where = [y for y in where if round(10 ** (y - math.floor(y + 1e-9))) in (1, 2, 5)]
    return where, lambda y, _: f"{10**y:.3g}"


def _step_ticks(lo: float, hi: float) -> tuple[list[float], Callable[[float, int], str]]:
    """Integer ticks within [lo, hi] (escape steps)."""
    from matplotlib.ticker import MaxNLocator

    where = [y for y in MaxNLocator(nbins=7, integer=True).tick_values(lo, hi) if lo <= y <= hi]
    return where, lambda y, _: f"{y:.0f}"


def _growth_panel(ax: Any, res: dict, generic: bool, threshold: float) -> None:
    """σ_max(Φ_t) and the one-step norm along t, in decades (log₁₀ on a linear axis)."""
    steps = res.get("steps") or []
    panel = _Panel(ax, log_x=False)
    ts = [float(s["t"]) + 1 for s in steps]
    bands = {
        "+inf": ("top", "+inf", POS_INF_GID),
        "-inf": ("bottom", "0", NEG_INF_GID),
        "nan": ("bottom", "NaN", NAN_GID),
    }
    panel.draw(
        ts,
        [_log10_of_ln(s.get("log_sigma_Phi")) for s in steps],
        bands=bands,
        connect=True,
        color="C0",
        marker="." if len(steps) <= 40 else None,
        label=r"$\sigma_{\max}(\Phi_t)$: t steps",
    )
    key, label = (
        ("sigma_max", r"$\sigma_{\max}(A_{t-1})$: one step")
        if generic
        else ("sigma_C", r"$\sigma_{\max}(C_{t-1})$: one step")
    )
    panel.draw(
        ts,
        [_log10_positive(s.get(key)) for s in steps],
        bands=bands,
        connect=True,
        color="C1",
        marker="." if len(steps) <= 40 else None,
        label=label,
    )
    if generic and steps:  # the predicted escape is σ_max(Φ_t) crossing 1/τ
        level = math.log10(1 / threshold)
        ax.axhline(
            level, color="0.4", lw=0.8, ls="--", label=rf"$1/\tau = {1 / threshold:g}$: predicted escape"
        )
        panel.finite_y.append(level)
    panel.finish("no steps in the report", _decade_ticks)
    ax.set_xlabel("GD step t")
    ax.set_ylabel("singular value (log scale)")
    ax.grid(alpha=0.3)
    if steps:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)


def _escape_panel(ax: Any, res: dict, config: dict, generic: bool) -> None:
    """Predicted and measured escape steps against σ; rounding (computed Gram) at σ = u."""
    T = config.get("steps", len(res.get("steps") or []))
    panel = _Panel(ax, log_x=True)
    bands = {
        "+inf": ("top", f"no escape within T = {T} steps", NEVER_GID),
        "-inf": ("bottom", "-inf", NEG_INF_GID),
        "nan": ("bottom", "NaN", NAN_GID),
    }
    table = res.get("escape", {}).get("gaussian") or []
    predicted: dict[float, float] = {}
    for row in table:  # the prediction does not depend on the dtype: one per σ
        predicted.setdefault(_number(row.get("sigma")), _escape_step(row.get("predicted")))
    sig = sorted(predicted)
    panel.draw(
        sig,
        [predicted[s] for s in sig],
        bands=bands,
        connect=True,
        color="C0",
        marker="o",
        ms=5,
        label="predicted (linear)",
    )
    styles = {"float64": ("x", "C1"), "float32": ("d", "C4")}
    dtypes = list(config.get("dtypes") or sorted({r.get("dtype") for r in table}))
    for dtype in dtypes:
        pts = [
            (_number(r.get("sigma")), _escape_step(m))
            for r in table
            if r.get("dtype") == dtype
            for m in r.get("measured") or []
        ]
        if not pts:
            continue
        marker, color = styles.get(dtype, ("x", "C5"))
        panel.draw(
            [x for x, _ in pts],
            [y for _, y in pts],
            bands=bands,
            marker=marker,
            color=color,
            ms=7,
            mfc="none" if marker == "d" else None,
            label=f"measured, {dtype} ({len(pts)} run{'s' if len(pts) > 1 else ''})",
        )
    computed = [r for r in res.get("escape", {}).get("rounding") or [] if r.get("gram") == "computed"]
    for i, r in enumerate(computed):
        u = UNIT_ROUNDOFF.get(r.get("dtype"), math.nan)  # rounding drawn at σ = u, one rounding error's size
        panel.draw(
            [u],
            [_escape_step(r.get("predicted"))],
            bands=bands,
            marker="s",
            mfc="none",
            color="C2",
            ms=7,
            label="rounding, predicted" if i == 0 else None,
        )
        if config.get("measured", True):
            panel.draw(
                [u],
                [_escape_step(r.get("measured"))],
                bands=bands,
                marker="+",
                ms=11,
                color="C3",
                label="rounding, measured" if i == 0 else None,
            )
    panel.finish("no escape table in the report", _step_ticks, y_floor=0.0, y_default=(0.0, float(max(T, 1))))
    threshold = config.get("threshold", math.nan)
    if generic:
        ax.set_xlabel(r"init scale $\sigma$")
        ax.set_ylabel(rf"escape step (off-manifold growth $> {1 / threshold:g}$)")
    else:
        ax.set_xlabel(r"init scale $\sigma$ (rounding: at unit roundoff $u$, computed Gram)")
        ax.set_ylabel(rf"escape step ($\rho > {threshold:g}$)")
    ax.grid(alpha=0.3)
    if not config.get("measured", True):
        ax.text(
            0.99,
            0.02,
            "--predict-only: no measured runs",
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize=7,
            color="0.35",
        )
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)


def _row_title(res: dict, generic: bool) -> str:
    v = res.get("verdict", {})
    mu = _number(res.get("mu"))
    if generic:
        T = len(res.get("steps") or [])
        ln = _number(v.get("log_growth"))
        return f"μ = {mu:g}: {v.get('kind', '?')}, ln σ_max(Φ_T) = {ln:+.3g} over T = {T} steps"
    return f"μ = {mu:g}: {v.get('kind', '?')}, rate {_number(v.get('rate')):+.3g} per step (late half)"


def report_title(report: dict) -> str:
    """The figure's title: the task, the model (and its manifold) and the run's settings."""
    t = report.get("task", {})
    title = (
        f"circle walk K={t.get('K')}, N={t.get('N')}, p={t.get('p')}"
        if t.get("name") == "circle"
        else f"{t.get('name')} (K={t.get('K')}, N={t.get('N')})"
    )
    if "model" in report:
        off = ", ".join(report.get("manifold", {}).get("parameters") or [])
        title += f", model {report['model'].get('name')}" + (f" (off-manifold: {off})" if off else "")
    c = report.get("config", {})
    settings = [f"T = {c['steps']} steps" if "steps" in c else "", f"η = {c['eta']:g}" if "eta" in c else ""]
    return title + "".join(f"; {s}" for s in settings if s)


def plot_report(report: dict, path: str | None = None) -> Any:
    """The report's figure (returned; written as PNG to ``path`` if given, atomically).

    One row per μ. Left: σ_max(Φ_t), the growth of a normal (off-manifold) perturbation over t steps, and
    the one-step norm σ_max(C_{t−1}) (the paper's model) or σ_max(A_{t−1}) (``--model``), on a log scale
    in decades (ticks 10^k), so a growth beyond the float range is drawn too. Right: the escape step
    against the init scale σ, predicted (linear theory) and measured per dtype and seed, with the rounding
    runs (computed Gram matrix, the paper's model only) at σ = u of their dtype. A run that does not
    escape within the T steps is a marker in the grey band "no escape within T = … steps" at the top
    edge; +inf, −inf and NaN values sit in labelled bands at the edges (module text). Axis limits come from
    the finite values only.

    >>> r = {"task": {"name": "circle", "K": 3, "N": 4, "p": "1"}, "config": {"steps": 5, "dtypes": ["float64"],
    ...      "threshold": 1e-3}, "results": [{"mu": 1.0, "verdict": {"kind": "neutral", "rate": 0.0},
    ...      "steps": [{"t": 0, "log_sigma_Phi": 1e4, "sigma_C": float("inf")}],
    ...      "escape": {"gaussian": [{"sigma": 1e-8, "dtype": "float64", "predicted": None, "measured": [None]}]}}]}
    >>> fig = plot_report(r)
    >>> sorted({a.get_gid() for a in fig.axes[1].lines if a.get_gid()})
    ['no-escape-within-run']
    """
    from matplotlib.figure import Figure

    rows = report.get("results") or []
    generic = "model" in report
    config = report.get("config", {})
    n = max(len(rows), 1)
    fig = Figure(figsize=(13, 3.4 * n + 0.5))
    axes = fig.subplots(n, 2, squeeze=False)
    for (a, b), res in zip(axes, rows):
        _growth_panel(a, res, generic, config.get("threshold", 1e-3))
        _escape_panel(b, res, config, generic)
        a.set_title(_row_title(res, generic), fontsize=9)
        b.set_title(f"escape from the manifold, μ = {_number(res.get('mu')):g}", fontsize=9)
    if not rows:
        for ax in axes[0]:
            ax.set_axis_off()
        fig.text(0.5, 0.5, "the report has no results", ha="center", va="center", fontsize=9)
    fig.suptitle(report_title(report), fontsize=10)
    fig.tight_layout()
    if path is not None:
        from rwtoolkit.io import save_figure_atomic

        save_figure_atomic(fig, path, dpi=150, metadata={"Software": None})
    return fig


def _steps_text(values: Iterable[int | None]) -> str:
    """Measured escape steps over seeds: one step, a range, '-' for none, '(k/n)' when only k escaped."""
    values = list(values)
    hit = sorted(v for v in values if v is not None)
    if not values:
        return ""
    if not hit:
        return "-"
    text = str(hit[0]) if hit[0] == hit[-1] else f"{hit[0]}-{hit[-1]}"
    return text if len(hit) == len(values) else f"{text} ({len(hit)}/{len(values)})"


def _step_text(value: int | None) -> str:
    return "-" if value is None else str(value)


def escape_summary(report: dict) -> str:
    """The escape tables in text: per μ and dtype one row, per σ one column "predicted / measured".

    Measured is over the seeds: one step, a range "a-b", "-" when no seed escaped within the run, and
    "(k/n)" when only k of n seeds did. The paper's model adds the rounding runs (zero init, computed Gram
    matrix). ``--predict-only`` reports have the predictions only.

    >>> r = {"config": {"steps": 9, "threshold": 1e-3, "measured": True}, "results": [{"mu": 1.0,
    ...      "escape": {"gaussian": [{"sigma": 1e-2, "dtype": "float64", "predicted": 1, "measured": [1, 2]},
    ...      {"sigma": 1e-8, "dtype": "float64", "predicted": None, "measured": [None, 7]}]}}]}
    >>> print(escape_summary(r))
    escape step, predicted / measured over seeds ('-': no escape within T = 9 steps; (k/n): k of n seeds escaped)
      mu  dtype    sigma=1e-02  sigma=1e-08
       1  float64  1 / 1-2      - / 7 (1/2)
    """
    config = report.get("config", {})
    measured = config.get("measured", True)
    T = config.get("steps")
    sigmas = list(
        dict.fromkeys(r["sigma"] for res in report.get("results") or [] for r in res["escape"]["gaussian"])
    )
    rounding = any(res["escape"].get("rounding") for res in report.get("results") or [])
    header = (
        ["mu", "dtype"]
        + [f"sigma={s:.0e}" for s in sigmas]
        + (["rounding (computed Gram)"] if rounding else [])
    )
    rows = []
    for res in report.get("results") or []:
        cells: dict[str, dict[float, str]] = {}
        for r in res["escape"]["gaussian"]:
            text = _step_text(r["predicted"]) + (f" / {_steps_text(r['measured'])}" if measured else "")
            cells.setdefault(r["dtype"], {})[r["sigma"]] = text
        round_cells = {
            r["dtype"]: _step_text(r["predicted"]) + (f" / {_step_text(r['measured'])}" if measured else "")
            for r in res["escape"].get("rounding") or []
            if r["gram"] == "computed"
        }
        for dtype in sorted(set(cells) | set(round_cells)):
            rows.append(
                [f"{res['mu']:g}", dtype]
                + [cells.get(dtype, {}).get(s, "") for s in sigmas]
                + ([round_cells.get(dtype, "")] if rounding else [])
            )
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    what = "predicted / measured over seeds" if measured else "predicted (--predict-only: no measured runs)"
    legend = f"'-': no escape within T = {T} steps" + ("; (k/n): k of n seeds escaped" if measured else "")
    lines = [f"escape step, {what} ({legend})"]
    for line in [header, *rows]:
        first = line[0].rjust(widths[0])
        lines.append("  " + "  ".join([first] + [c.ljust(w) for c, w in zip(line[1:], widths[1:])]).rstrip())
    return "\n".join(lines)
