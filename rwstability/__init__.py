"""Is a stuck task's symmetric manifold stable? The GD map linearised along an exact trajectory, predicted escape."""

from rwstability._escape import (
    Escape,
    Selection,
    measure_escape,
    predict_escape,
    selection,
    selection_distribution,
    v_residual,
)
from rwstability._linear import (
    ExactJacobian,
    Linearisation,
    Verdict,
    exact_jacobians,
    linearise,
    unstable_directions,
    verdict,
)
from rwstability._reduced import Coordinates, active_coordinates, find_manifold, symbolic_loss, torch_loss
from rwstability._report import (
    GRIDS,
    check_report_args,
    check_stuck_task,
    plot_report,
    schema,
    stability_report,
    task_info,
)

__all__ = [
    "GRIDS",
    "Coordinates",
    "Escape",
    "ExactJacobian",
    "Linearisation",
    "Selection",
    "Verdict",
    "active_coordinates",
    "check_report_args",
    "check_stuck_task",
    "exact_jacobians",
    "find_manifold",
    "linearise",
    "measure_escape",
    "plot_report",
    "predict_escape",
    "schema",
    "selection",
    "selection_distribution",
    "stability_report",
    "symbolic_loss",
    "task_info",
    "torch_loss",
    "unstable_directions",
    "v_residual",
    "verdict",
]
