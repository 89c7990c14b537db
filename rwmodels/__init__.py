"""The models of record: each model defined once, evaluated and differentiated by every engine.

A model (:class:`Model`) declares its parameters and writes its forward pass with the primitives of a
:class:`Tape`, against the arithmetic-neutral layer :class:`Arithmetic`; the exact (SymPy), ball (arb),
numpy and torch engines each implement that layer, and the tape's reverse pass gives every model's gradient
in every arithmetic. :data:`MODELS` is the registry ``--model`` reads (docs/guide/models.md).

>>> from fractions import Fraction
>>> sorted(MODELS)
['key_query', 'one_layer']
"""

from rwmodels._arith import FLOAT64, Arithmetic, Array, FloatArithmetic, ObjectArithmetic
from rwmodels._descent import Batch, ElementLoss, Evaluation, batch, descend, evaluate
from rwmodels._model import Inputs, Model, Readouts, embed
from rwmodels._positions import four_squares, rational_positions
from rwmodels._registry import DEFAULT_MODEL, MODELS, get_model, model_help, model_names
from rwmodels._tape import Tape, Var
from rwmodels.key_query import KeyQuery
from rwmodels.one_layer import OneLayer, reduced_coordinates

__all__ = [
    "DEFAULT_MODEL",
    "FLOAT64",
    "MODELS",
    "Arithmetic",
    "Array",
    "Batch",
    "ElementLoss",
    "Evaluation",
    "FloatArithmetic",
    "Inputs",
    "KeyQuery",
    "Model",
    "ObjectArithmetic",
    "OneLayer",
    "Readouts",
    "Tape",
    "Var",
    "batch",
    "descend",
    "embed",
    "evaluate",
    "four_squares",
    "get_model",
    "model_help",
    "model_names",
    "rational_positions",
    "reduced_coordinates",
]
