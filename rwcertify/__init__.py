"""Certified ball arithmetic (python-flint ``arb``) for the exact training trajectory at the paper's scale.

``certify(task, ...)`` encloses every quantity of full-batch GD from zero init on the exact model
(sine embeddings enclosed entry by entry, Lemma E.5 checked against the enclosure) and returns typed
statements: ``Outcome.VERIFIED`` / ``REFUTED`` / ``INCONCLUSIVE`` (never a pass).
"""

from rwcertify._balls import MAX_PREC, MIN_PREC, Outcome, ball_json, precision
from rwcertify._certify import Certification, Statement, certify, statements, walk_sets
from rwcertify._compare import compare_float
from rwcertify._engine import State, StepRecord, Trajectory, run_trajectory
from rwcertify._export import certify_json, certify_markdown, tolerance_line
from rwcertify._gram import GramEnclosure, enclose_gram, sine_embeddings
from rwcertify._walks import WalkSet

__all__ = [
    "MAX_PREC",
    "MIN_PREC",
    "certify_json",
    "certify_markdown",
    "compare_float",
    "tolerance_line",
    "Certification",
    "GramEnclosure",
    "Outcome",
    "State",
    "Statement",
    "StepRecord",
    "Trajectory",
    "WalkSet",
    "ball_json",
    "certify",
    "enclose_gram",
    "precision",
    "run_trajectory",
    "sine_embeddings",
    "statements",
    "walk_sets",
]
