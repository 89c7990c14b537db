"""Certified ball arithmetic (python-flint ``arb``) for the exact training trajectory at the paper's scale.

Two engines run gradient descent in balls with one signature and one result, ``BallTrajectory``: the generic
``ball_model_trajectory`` (any model of record) and its registered specialisation ``run_trajectory`` (the
paper's model from zero in reduced coordinates); ``rwtoolkit.engines.select(model, "balls", start)`` chooses.
``ball_model_job`` plans a run of the generic engine before any work (estimate, refusal) and
``model_certify_json`` / ``model_certify_markdown`` report it (``rw certify --model``).

``certify(task, ...)`` encloses every quantity of full-batch GD from zero init on the exact model
(sine embeddings enclosed entry by entry, Lemma E.5 checked against the enclosure) and returns typed
statements, each with a verdict of the one vocabulary (``rwtoolkit.io.Verdict``): holds at the sizes checked
(written ``verified``), ``refuted`` or ``inconclusive`` (never a pass).
"""

from rwtoolkit.engines.balls._balls import MAX_PREC, MIN_PREC, ball_json, precision
from rwtoolkit.engines.balls._certify import (
    Certification,
    Statement,
    certify,
    certify_estimate,
    certify_steps_that_fit,
    statements,
    walk_sets,
)
from rwtoolkit.engines.balls._compare import compare_float
from rwtoolkit.engines.balls._engine import State, Undecided, run_trajectory
from rwtoolkit.engines.balls._export import certify_json, certify_markdown, tolerance_line
from rwtoolkit.engines.balls._float_balls import FLOAT_BALLS, FloatBallArithmetic, FloatBalls
from rwtoolkit.engines.balls._gram import GramEnclosure, enclose_gram, sine_embeddings
from rwtoolkit.engines.balls._model_certify import (
    BallEstimate,
    BallJob,
    ball_model_job,
    model_certify_json,
    model_certify_markdown,
    model_certify_summary,
)
from rwtoolkit.engines.balls._models import (
    MAX_BALL_SECONDS,
    BallLogLoss,
    ball_arithmetic,
    ball_batch,
    ball_estimate,
    ball_model_trajectory,
    to_ball,
)
from rwtoolkit.engines.balls._trajectory import BallTrajectory, Readout, Reduced, StepRecord, bits_per_step
from rwtoolkit.engines.balls._walks import WalkSet
from rwtoolkit.io import deprecated_attributes as _deprecated_attributes

__all__ = [
    "MAX_PREC",
    "MIN_PREC",
    "FLOAT_BALLS",
    "FloatBallArithmetic",
    "FloatBalls",
    "BallEstimate",
    "BallJob",
    "BallLogLoss",
    "ball_arithmetic",
    "ball_batch",
    "ball_estimate",
    "ball_model_job",
    "ball_model_trajectory",
    "bits_per_step",
    "to_ball",
    "certify_json",
    "certify_markdown",
    "model_certify_json",
    "model_certify_markdown",
    "model_certify_summary",
    "compare_float",
    "tolerance_line",
    "Certification",
    "GramEnclosure",
    "Readout",
    "Reduced",
    "State",
    "Statement",
    "StepRecord",
    "Undecided",
    "BallTrajectory",
    "WalkSet",
    "ball_json",
    "certify",
    "certify_estimate",
    "certify_steps_that_fit",
    "MAX_BALL_SECONDS",
    "enclose_gram",
    "precision",
    "run_trajectory",
    "sine_embeddings",
    "statements",
    "walk_sets",
]

# Kept one release (docs/changelog.md): one Trajectory per package was one name for three things.
__getattr__ = _deprecated_attributes(
    "rwtoolkit.engines.balls",
    {"Trajectory": ("rwtoolkit.engines.balls.BallTrajectory", lambda: BallTrajectory)},
)
