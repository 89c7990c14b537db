"""rwtoolkit: exact checks of training-dynamics claims about small transformers.

One import root, in layers; a package imports only from the layers below it (``tests/test_import_graph.py``),
and importing ``rwtoolkit`` itself loads nothing (docs/guide/architecture.md):

1. ``rwtoolkit.io``: files and formats: atomic writers, the configuration reader, memory and disk checks,
   the JSON schemas (``rwtoolkit/schemas/``);
2. ``rwtoolkit.tasks`` and ``rwtoolkit.models``: what is learned (exact populations) and what learns it
   (each model written once on the tape);
3. ``rwtoolkit.engines``: the arithmetics that run gradient descent: ``exact`` (SymPy and python-flint,
   the source of truth), ``numeric`` (PyTorch) and ``balls`` (certified ball arithmetic);
4. ``rwtoolkit.analyses``: what users point at their code and at the paper: ``check``, ``stability``,
   ``explore``, ``sweep``, ``repro``, ``zoo`` and ``proofs``;
5. ``rwtoolkit.cli``: the ``rw`` command.
"""

__all__: list[str] = []
