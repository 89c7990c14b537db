"""The models of record: each model defined once, evaluated and differentiated by every engine.

A model (:class:`Model`) declares its parameters and writes its forward pass with the primitives of a
:class:`Tape`, against the arithmetic-neutral layer :class:`Arithmetic`; the exact (SymPy), ball (arb),
numpy and torch engines each implement that layer, and the tape's reverse pass gives every model's gradient
in every arithmetic. :data:`MODELS` is the registry ``--model`` reads (docs/guide/models.md).

The registry's names (:data:`DEFAULT_MODEL`, :func:`model_names`, :func:`model_help`, :func:`model_summary`)
load without numpy; every other name is imported on first use, so ``rw --help`` stays fast.

>>> DEFAULT_MODEL, MODELS["key_query"].__name__, "key_query" in model_names()
('one_layer', 'KeyQuery', True)
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from rwtoolkit.models._registry import (
    DEFAULT_MODEL,
    MODELS,
    REGISTRY,
    TARGET_FORMS,
    TARGET_KINDS,
    Registered,
    get_model,
    is_registered,
    is_target,
    model_help,
    model_hyperparameters,
    model_names,
    model_summary,
)

if _typing.TYPE_CHECKING:
    from rwtoolkit.models._arith import (
        BALL_ENGINE,
        FLOAT64,
        Arithmetic,
        Array,
        ExtendedArithmetic,
        FloatArithmetic,
        ObjectArithmetic,
    )
    from rwtoolkit.models._descent import (
        Batch,
        Evaluation,
        batch,
        descend,
        evaluate,
        gradient_steps,
    )
    from rwtoolkit.models._dual import (
        Dual,
        DualArithmetic,
        flatten,
        hessian,
        hessian_vector_products,
        unflatten,
    )
    from rwtoolkit.models._losses import (
        BUILT_IN,
        OBJECTIVES,
        ArithmeticLoss,
        CrossEntropy,
        ElementLoss,
        LossArithmetic,
        Objective,
        PredictionLoss,
        as_objective,
        objective_name,
    )
    from rwtoolkit.models._model import Inputs, Model, Readouts, Sizes, embed
    from rwtoolkit.models._optim import (
        OPTIMIZERS,
        RULE_STATE_KEYS,
        Optimizer,
        Schedule,
        glob_stages,
        parse_stages,
        stage_plan,
    )
    from rwtoolkit.models._positions import four_squares, rational_positions
    from rwtoolkit.models._sequence import (
        SequenceModel,
        SequenceProgram,
        exact_start,
        forward_exponentials,
        forward_operations,
        stays_at_zero,
    )
    from rwtoolkit.models._symmetry import (
        REDUCED_AXES,
        acting_group,
        coordinate_permutation,
        parameter_images,
    )
    from rwtoolkit.models._tape import Tape, Var
    from rwtoolkit.models.key_query import KeyQuery
    from rwtoolkit.models.one_layer import OneLayer, reduced_coordinates

#: Where each name that needs numpy lives (imported by :func:`__getattr__` on first use).
_LAZY = {
    **dict.fromkeys(
        (
            "BALL_ENGINE",
            "FLOAT64",
            "Arithmetic",
            "Array",
            "ExtendedArithmetic",
            "FloatArithmetic",
            "ObjectArithmetic",
        ),
        "rwtoolkit.models._arith",
    ),
    **dict.fromkeys(
        ("Dual", "DualArithmetic", "flatten", "hessian", "hessian_vector_products", "unflatten"),
        "rwtoolkit.models._dual",
    ),
    **dict.fromkeys(
        ("Batch", "Evaluation", "batch", "descend", "evaluate", "gradient_steps"),
        "rwtoolkit.models._descent",
    ),
    **dict.fromkeys(
        (
            "BUILT_IN",
            "OBJECTIVES",
            "ArithmeticLoss",
            "CrossEntropy",
            "ElementLoss",
            "LossArithmetic",
            "Objective",
            "PredictionLoss",
            "as_objective",
            "objective_name",
        ),
        "rwtoolkit.models._losses",
    ),
    **dict.fromkeys(
        (
            "SequenceModel",
            "SequenceProgram",
            "exact_start",
            "forward_exponentials",
            "forward_operations",
            "stays_at_zero",
        ),
        "rwtoolkit.models._sequence",
    ),
    **dict.fromkeys(("Inputs", "Model", "Readouts", "Sizes", "embed"), "rwtoolkit.models._model"),
    **dict.fromkeys(
        (
            "OPTIMIZERS",
            "RULE_STATE_KEYS",
            "Optimizer",
            "Schedule",
            "glob_stages",
            "parse_stages",
            "stage_plan",
        ),
        "rwtoolkit.models._optim",
    ),
    **dict.fromkeys(("four_squares", "rational_positions"), "rwtoolkit.models._positions"),
    **dict.fromkeys(("Tape", "Var"), "rwtoolkit.models._tape"),
    **dict.fromkeys(
        ("REDUCED_AXES", "acting_group", "coordinate_permutation", "parameter_images"),
        "rwtoolkit.models._symmetry",
    ),
    "KeyQuery": "rwtoolkit.models.key_query",
    **dict.fromkeys(("OneLayer", "reduced_coordinates"), "rwtoolkit.models.one_layer"),
}


def __getattr__(name: str) -> _typing.Any:
    if name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rwtoolkit.models' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BALL_ENGINE",
    "BUILT_IN",
    "DEFAULT_MODEL",
    "FLOAT64",
    "MODELS",
    "OBJECTIVES",
    "OPTIMIZERS",
    "REDUCED_AXES",
    "REGISTRY",
    "RULE_STATE_KEYS",
    "TARGET_FORMS",
    "TARGET_KINDS",
    "Arithmetic",
    "ArithmeticLoss",
    "Array",
    "Batch",
    "CrossEntropy",
    "Dual",
    "DualArithmetic",
    "ElementLoss",
    "Evaluation",
    "ExtendedArithmetic",
    "FloatArithmetic",
    "Inputs",
    "LossArithmetic",
    "KeyQuery",
    "Model",
    "ObjectArithmetic",
    "Objective",
    "OneLayer",
    "Optimizer",
    "PredictionLoss",
    "Readouts",
    "Registered",
    "Schedule",
    "SequenceModel",
    "SequenceProgram",
    "Sizes",
    "Tape",
    "Var",
    "acting_group",
    "as_objective",
    "batch",
    "coordinate_permutation",
    "parameter_images",
    "descend",
    "embed",
    "evaluate",
    "flatten",
    "exact_start",
    "forward_exponentials",
    "forward_operations",
    "four_squares",
    "get_model",
    "glob_stages",
    "is_registered",
    "is_target",
    "gradient_steps",
    "hessian",
    "hessian_vector_products",
    "model_help",
    "model_hyperparameters",
    "model_names",
    "model_summary",
    "objective_name",
    "parse_stages",
    "rational_positions",
    "reduced_coordinates",
    "stage_plan",
    "stays_at_zero",
    "unflatten",
]
