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

__all__ = [
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
