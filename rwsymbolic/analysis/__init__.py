"""What the toolkit proves about exact values: structure predicates of trajectories and the token-average signal.

Layer 3 of ``rwsymbolic``: ``_structure`` (docs/theory.md#statements, each predicate with a witness
when false) and ``_signal`` (docs/theory.md#signal, where the signal C vanishes, with its file).
"""

from rwsymbolic.analysis._signal import (
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
from rwsymbolic.analysis._structure import (
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

__all__ = [
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
