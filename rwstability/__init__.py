"""Is the symmetric manifold stable? The GD map linearised along an exact trajectory, and predicted escape."""

from rwstability._escape import Escape, measure_escape, predict_escape
from rwstability._linear import (
    ExactJacobian,
    Linearisation,
    Verdict,
    exact_jacobians,
    linearise,
    unstable_directions,
    verdict,
)
from rwstability._reduced import Coordinates, symbolic_loss, torch_loss
from rwstability._report import check_report_args, plot_report, schema, stability_report

__all__ = [
    "Coordinates",
    "Escape",
    "ExactJacobian",
    "Linearisation",
    "Verdict",
    "check_report_args",
    "exact_jacobians",
    "linearise",
    "measure_escape",
    "plot_report",
    "predict_escape",
    "schema",
    "stability_report",
    "symbolic_loss",
    "torch_loss",
    "unstable_directions",
    "verdict",
]
