"""The engines (layer 3): gradient descent of a model on a task in one arithmetic each.

``exact`` (SymPy and python-flint rationals, the source of truth), ``numeric`` (PyTorch floats) and
``balls`` (certified ball arithmetic on python-flint's arb). Importing this package loads none of them.
"""

__all__: list[str] = []
