"""SymPy implementation: exact population gradient descent, structure checks, signal, oracles."""

from rwsymbolic._circle_linear import (
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
from rwsymbolic._derive import DELL, ELL, StepState, Trajectory, derive, derive_estimate
from rwsymbolic._expect import MAX_INPUTS, MAX_WORK
from rwsymbolic._json import exact_json, exact_string, long_integers, nearest_double
from rwsymbolic._oracle import (
    ORACLE_SCHEMA_PATH,
    PER_INPUT_LIMIT,
    load_oracle_schema,
    oracle_dict,
    read_oracle,
    write_oracle,
)
from rwsymbolic._signal import (
    MAX_FACTOR_N,
    SIGNAL_SCHEMA_PATH,
    SignalReport,
    VanishingSet,
    load_signal_schema,
    signal_json,
    signal_matrix,
    signal_offsets,
    signal_report,
    vanishing_set,
    write_signal_json,
)
from rwsymbolic._structure import (
    Check,
    explicit_weights,
    has_equal_attention,
    is_circulant,
    is_lemma_d3_form,
    is_proportional_to_ones,
    is_rank_one,
    w_token_columns_zero,
)

__all__ = [
    # exact gradient descent and structure predicates (_derive, _expect, _structure)
    "DELL",
    "ELL",
    "MAX_INPUTS",
    "MAX_WORK",
    "Check",
    "StepState",
    "Trajectory",
    "derive",
    "derive_estimate",
    "explicit_weights",
    "has_equal_attention",
    "is_circulant",
    "is_lemma_d3_form",
    "is_proportional_to_ones",
    "is_rank_one",
    "w_token_columns_zero",
    # exact oracles and the exact-value JSON encoding (_oracle, _json)
    "exact_json",
    "exact_string",
    "long_integers",
    "nearest_double",
    "ORACLE_SCHEMA_PATH",
    "PER_INPUT_LIMIT",
    "load_oracle_schema",
    "oracle_dict",
    "read_oracle",
    "write_oracle",
    # token-average signal and circle-walk first moments (_signal, _circle_linear)
    "MAX_FACTOR_N",
    "MAX_STRUCTURED_K",
    "MAX_STRUCTURED_N",
    "MAX_SYMBOLIC_N",
    "SIGNAL_SCHEMA_PATH",
    "CircleFirstMoments",
    "SignalReport",
    "VanishingSet",
    "circle_first_moments",
    "expected_label_token_outer",
    "label_token_offsets",
    "label_token_sum",
    "load_signal_schema",
    "signal_json",
    "signal_matrix",
    "signal_offsets",
    "signal_report",
    "transition_power",
    "vanishing_set",
    "write_signal_json",
]
