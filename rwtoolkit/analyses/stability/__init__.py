"""Is a stuck task's symmetric manifold stable? The GD map linearised along an exact trajectory, predicted escape.

One report builder (``stability_report``) reads the linearisation ``select_linearisation`` picks by (model,
arithmetic, start): Lemma D.3's reduced GD map for the paper's model, the generic off-manifold one otherwise.
"""

from typing import Any as _Any

from rwtoolkit.analyses.stability._escape import (
    DEFAULT_THRESHOLD,
    Escape,
    Selection,
    StabilitySummary,
    extrapolate_escape,
    first_above,
    measure_escape,
    predict_escape,
    selection,
    selection_distribution,
    stability_summary,
    v_residual,
)
from rwtoolkit.analyses.stability._figure import escape_summary, plot_report
from rwtoolkit.analyses.stability._generic import (
    ModelView,
    check_model_report_args,
    off_manifold_jacobian,
    rational_mu,
)
from rwtoolkit.analyses.stability._lemma import (
    MAX_DIM,
    ORBITS_ABOVE,
    SUMS,
    ReducedView,
    check_estimate,
    check_report_args,
    check_stuck_task,
    population_route,
    report_estimate,
)
from rwtoolkit.analyses.stability._linear import (
    STABILITY_WORDS,
    STABILITY_WORDS_GENERIC,
    ExactJacobian,
    Linearisation,
    StabilityVerdict,
    attracts,
    exact_jacobians,
    linearise,
    unstable_directions,
    verdict,
)
from rwtoolkit.analyses.stability._manifold import MANIFOLDS, Manifold, symmetric_manifold, zero_manifold
from rwtoolkit.analyses.stability._orbits import SYMMETRY, OrbitSums, orbit_sums, reduced_images
from rwtoolkit.analyses.stability._reduced import (
    Coordinates,
    active_coordinates,
    find_manifold,
    reduced_loss,
    symbolic_loss,
    torch_loss,
)
from rwtoolkit.analyses.stability._report import (
    GRIDS,
    check_stability_args,
    stability_report,
    task_info,
    view_report,
)
from rwtoolkit.analyses.stability._views import (
    GENERIC_LINEARISATION,
    LINEARISATIONS,
    StabilityOptions,
    StabilityView,
    select_linearisation,
)
from rwtoolkit.io import schema_deprecations as _schema_deprecations

__all__ = [
    "DEFAULT_THRESHOLD",
    "GENERIC_LINEARISATION",
    "LINEARISATIONS",
    "ModelView",
    "ReducedView",
    "StabilityOptions",
    "StabilityView",
    "check_stability_args",
    "select_linearisation",
    "view_report",
    "MANIFOLDS",
    "Manifold",
    "symmetric_manifold",
    "zero_manifold",
    "ORBITS_ABOVE",
    "SUMS",
    "SYMMETRY",
    "OrbitSums",
    "check_estimate",
    "orbit_sums",
    "population_route",
    "reduced_images",
    "report_estimate",
    "GRIDS",
    "MAX_DIM",
    "STABILITY_WORDS",
    "STABILITY_WORDS_GENERIC",
    "Coordinates",
    "Escape",
    "ExactJacobian",
    "Linearisation",
    "Selection",
    "StabilitySummary",
    "StabilityVerdict",
    "active_coordinates",
    "attracts",
    "check_model_report_args",
    "check_report_args",
    "check_stuck_task",
    "escape_summary",
    "exact_jacobians",
    "extrapolate_escape",
    "find_manifold",
    "first_above",
    "linearise",
    "measure_escape",
    "off_manifold_jacobian",
    "plot_report",
    "predict_escape",
    "rational_mu",
    "reduced_loss",
    "selection",
    "selection_distribution",
    "stability_report",
    "stability_summary",
    "symbolic_loss",
    "task_info",
    "torch_loss",
    "unstable_directions",
    "v_residual",
    "verdict",
]


# Kept one release (docs/changelog.md): the schema is rwtoolkit.io.load_schema("stability") for every model (the
# generic report's stability_generic schema is merged into it).
_schemas = _schema_deprecations(
    "rwtoolkit.analyses.stability", {"schema": "stability", "generic_schema": "stability"}
)


def __getattr__(name: str) -> _Any:
    return _schemas(name)
