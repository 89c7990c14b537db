"""Exact population gradient descent: the paper's model in reduced coordinates, and any model of the registry.

Layer 2 of ``rwtoolkit.engines.exact``. ``derive`` is the fast path for the paper's model from zero initialisation
(reduced coordinates V, w_tok, c, μ; docs/theory.md#reduction); its group passes are
``_uniform`` (uniform attention, rationals in ``fmpq``), ``_polynomial_pass`` (symbolic p),
``_atom_pass`` (exponential atoms) and ``_groups`` (the SymPy reference and the dispatcher), all reading
the types of ``_population``. ``derive_model`` (``_generic``) runs any model of ``rwtoolkit.models`` from its one
definition; tests/test_models.py shows the two equal on the paper's model. Both take the same keyword
arguments, plan their runs with one signature (``derive_job``, ``derive_model_job``) and return an
``ExactTrajectory`` (``_trajectory``), the reduced one with itself as its reduced view. ``_moments`` holds the
circle walks' transfer-matrix moments, ``_cost`` the estimate every job prints before it starts, and
``_hessian`` the exact gradient and Hessian of any model at one point (dual numbers over the tape).
"""

from rwtoolkit.engines.exact.engine._cost import (
    PER_INPUT_LIMIT,
    START_ESTIMATE,
    DeriveJob,
    JobEstimate,
    job_estimate,
    model_job_estimate,
    symbolic_probabilities,
)
from rwtoolkit.engines.exact.engine._derive import (
    DELL,
    ELL,
    ReducedTrajectory,
    StepState,
    derive,
    derive_estimate,
    derive_job,
    make_loss,
)
from rwtoolkit.engines.exact.engine._generic import (
    INITS,
    MAX_EXP_STEPS,
    ModelTrajectory,
    derive_model,
    derive_model_job,
    exact_arithmetic,
    initial_parameters,
    model_estimate,
    model_file_bytes,
    positive_rational,
)
from rwtoolkit.engines.exact.engine._groups import MAX_WORK
from rwtoolkit.engines.exact.engine._hessian import SYMPY, exact_hessian, hessian_inertia
from rwtoolkit.engines.exact.engine._moments import (
    MAX_STRUCTURED_K,
    MAX_STRUCTURED_N,
    MAX_SYMBOLIC_N,
    CircleFirstMoments,
    circle_first_moments,
    expected_label_token_outer,
    label_token_offsets,
    label_token_sum,
    transition_power,
)
from rwtoolkit.engines.exact.engine._population import MAX_INPUTS
from rwtoolkit.engines.exact.engine._trajectory import READOUT_AXES, EngineArguments, ExactTrajectory

__all__ = [
    "SYMPY",
    "exact_hessian",
    "hessian_inertia",
    "PER_INPUT_LIMIT",
    "START_ESTIMATE",
    "DeriveJob",
    "JobEstimate",
    "EngineArguments",
    "ExactTrajectory",
    "READOUT_AXES",
    "derive_job",
    "derive_model_job",
    "exact_arithmetic",
    "job_estimate",
    "symbolic_probabilities",
    "DELL",
    "ELL",
    "StepState",
    "ReducedTrajectory",
    "derive",
    "derive_estimate",
    "INITS",
    "MAX_EXP_STEPS",
    "ModelTrajectory",
    "derive_model",
    "initial_parameters",
    "model_estimate",
    "model_job_estimate",
    "model_file_bytes",
    "positive_rational",
    "MAX_WORK",
    "MAX_STRUCTURED_K",
    "MAX_STRUCTURED_N",
    "MAX_SYMBOLIC_N",
    "CircleFirstMoments",
    "circle_first_moments",
    "expected_label_token_outer",
    "label_token_offsets",
    "label_token_sum",
    "transition_power",
    "MAX_INPUTS",
    "make_loss",
]
