"""SymPy implementation: exact population gradient descent, structure checks, signal, oracles."""
