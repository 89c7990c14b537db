"""What the toolkit proves about exact values: structure predicates of trajectories and the token-average signal.

Layer 3 of ``rwtoolkit.engines.exact``: ``_structure`` (docs/theory.md#statements, each predicate with a witness
when false), ``_signal`` (docs/theory.md#signal, where the signal C vanishes, with its file), and stuck for
every t (docs/theory.md#invariant-manifolds): ``_invariance`` (the exact induction step on a subspace),
``_candidates`` (subspaces from the task's symmetry and from the trajectory) and ``_stuck`` (the verdict).
"""

from rwtoolkit.engines.exact.analysis._candidates import fixed_subspace, identical_heads, trajectory_subspace
from rwtoolkit.engines.exact.analysis._invariance import Induction, Subspace, induction_step
from rwtoolkit.engines.exact.analysis._signal import (
    MAX_FACTOR_N,
    SignalReport,
    VanishingSet,
    signal_json,
    signal_matrix,
    signal_offsets,
    signal_report,
    vanishing_set,
    write_signal_json,
)
from rwtoolkit.engines.exact.analysis._structure import (
    PREDICATES,
    Check,
    explicit_weights,
    has_equal_attention,
    is_circulant,
    is_lemma_d3_form,
    is_proportional_to_ones,
    is_rank_one,
    outcome,
    structure_verdicts,
    w_token_columns_zero,
)
from rwtoolkit.engines.exact.analysis._stuck import stuck_proof, trajectory_check

__all__ = [
    "Induction",
    "Subspace",
    "fixed_subspace",
    "identical_heads",
    "induction_step",
    "stuck_proof",
    "trajectory_check",
    "trajectory_subspace",
    "MAX_FACTOR_N",
    "SignalReport",
    "VanishingSet",
    "signal_json",
    "signal_matrix",
    "signal_offsets",
    "signal_report",
    "vanishing_set",
    "write_signal_json",
    "PREDICATES",
    "Check",
    "explicit_weights",
    "has_equal_attention",
    "is_circulant",
    "is_lemma_d3_form",
    "is_proportional_to_ones",
    "is_rank_one",
    "outcome",
    "structure_verdicts",
    "w_token_columns_zero",
]
