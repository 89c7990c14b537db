"""The built-in per-sample losses ℓ(z) of the label score z = e_yᵀ f: one table of names for both engines.

``rwtoolkit.engines.numeric`` implements each on torch tensors and ``rwtoolkit.engines.exact`` on SymPy expressions; both validate a
``loss`` argument with ``check_loss`` so they accept, and name in their errors, the same losses. The exact
engine also accepts ``ABSTRACT_LOSS``: ℓ left as an undefined function (claims that hold for any ℓ).
"""

from __future__ import annotations

#: Built-in loss name -> ℓ(z) (ε is the offset of the paper's log-loss; the other losses do not use it).
LOSSES: dict[str, str] = {"log": "-log(z + eps)", "squared": "(1 - z)**2", "exp": "exp(-z)"}
#: The exact engine's abstract loss: ℓ is the undefined function ``ell``, ℓ' the undefined ``dell``.
ABSTRACT_LOSS = "any"


def check_loss(loss: object, abstract: bool = False, callables: bool = True) -> None:
    """ValueError naming the allowed losses unless ``loss`` is a built-in name (or allowed otherwise).

    ``abstract`` also admits ``ABSTRACT_LOSS`` (exact engine); ``callables`` admits a callable ℓ.

    >>> check_loss("squared")
    >>> check_loss("hinge", abstract=True)
    Traceback (most recent call last):
    ...
    ValueError: loss='hinge' is not one of log, squared, exp, any (or a callable)
    """
    names = [*LOSSES, *([ABSTRACT_LOSS] if abstract else [])]
    if isinstance(loss, str) and loss in names or callables and not isinstance(loss, str) and callable(loss):
        return
    tail = " (or a callable)" if callables else ""
    raise ValueError(f"loss={loss!r} is not one of {', '.join(names)}{tail}")
