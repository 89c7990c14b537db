"""``--model``, ``--head-dim`` and ``--heads`` of every command: one reading of the model registry
(``rwtoolkit.models.get_model``): a registered name, ``MODULE:ATTR`` or ``PATH.py:ATTR``."""

from __future__ import annotations

import argparse

import rwtoolkit.models
from rwtoolkit.cli._task_args import options_in_place, parse_int


def model_option_help(what: str = "") -> str:
    """The help of ``--model``: the default, the registered models and the two forms of a model of your own."""
    return (
        f"the model (default {rwtoolkit.models.DEFAULT_MODEL}{'; ' + what if what else ''}): a registered name, "
        f"or your own as {rwtoolkit.models.TARGET_FORMS} ({rwtoolkit.models.TARGET_KINDS}; "
        f"docs/guide/models.md#your-own-model). Registered: {rwtoolkit.models.model_help()}"
    )


def add_model_arguments(parser: argparse.ArgumentParser, what: str = "") -> None:
    """``--model NAME|MODULE:ATTR|PATH.py:ATTR`` (the registered models listed in --help), ``--head-dim D``
    and ``--heads H``."""
    parser.add_argument(
        "--model",
        default=rwtoolkit.models.DEFAULT_MODEL,
        metavar="MODEL",
        help=model_option_help(what),
    )
    parser.add_argument(
        "--head-dim",
        default=None,
        dest="head_dim",
        metavar="D",
        help="head dimension d of a model that has one (key_query: W_K, W_Q of d rows, default 2; multi_head: "
        "separate key and query of d rows per head, default merged W_h; your own model: its hyperparameter d), "
        "integer >= 1",
    )
    parser.add_argument(
        "--heads",
        default=None,
        metavar="H",
        help="number of heads H of a model that has several (multi_head; your own model: its hyperparameter H), "
        "integer >= 1 (default 2)",
    )


#: The objectives of a model with next-token logits, as ``--objective`` offers them: ``rwtoolkit.models.OBJECTIVES``
#: (written out here, so that ``rw --help`` loads no numpy; tests/test_train_sequence.py pins them equal).
OBJECTIVE_CHOICES = ("lm", "last")


def add_objective_argument(parser: argparse.ArgumentParser, what: str = "a model") -> None:
    """``--objective lm|last``: the cross-entropy objective (``rwtoolkit.models.CrossEntropy``) of ``what`` with
    next-token logits (a traced or sequence model); default None, the model's own (``lm``;
    ``rwtoolkit.models.objective_name`` refuses it for a model without next-token logits)."""
    parser.add_argument(
        "--objective",
        default=None,
        choices=OBJECTIVE_CHOICES,
        help=f"{what} with next-token logits (a traced or sequence model): lm (default), the cross-entropy at "
        "every position, weighted by each sequence's exact probability; last: at the last position only",
    )


def model_from_args(args: argparse.Namespace) -> rwtoolkit.models.Model:
    """The model of ``--model`` / ``--head-dim`` / ``--heads``; one line naming the option when they do not go
    together, or when ``--model`` names no model (``rwtoolkit.models.get_model``'s refusals).

    >>> model_from_args(argparse.Namespace(model="key_query", head_dim="3")).describe()
    {'name': 'key_query', 'd': 3}
    """
    name = getattr(args, "model", rwtoolkit.models.DEFAULT_MODEL)
    head_dim, heads = getattr(args, "head_dim", None), getattr(args, "heads", None)
    takes = rwtoolkit.models.model_hyperparameters(name)
    if head_dim is not None and "d" not in takes:
        raise ValueError(f"--head-dim is out of place: --model {name} has no head dimension (leave it out)")
    if heads is not None and "H" not in takes:
        raise ValueError(f"--heads is out of place: --model {name} has one head (leave it out)")
    d = None if head_dim is None else parse_int(head_dim, "head-dim", 1)
    H = None if heads is None else parse_int(heads, "heads", 1)
    return rwtoolkit.models.get_model(name, d=d, H=H)


def loss_of_f_from_args(args: argparse.Namespace, model: rwtoolkit.models.Model, defaults: dict) -> None:
    """``--loss`` and ``--eps`` (defaults None in the parser) are the loss of a prediction f: refused in one line
    for a model with next-token logits, which trains on ``--objective`` (they would be recorded and never used);
    else set to ``defaults`` (``{"loss": ..., "eps": ...}``) where not given.

    >>> ns = argparse.Namespace(loss=None, eps=None)
    >>> loss_of_f_from_args(ns, rwtoolkit.models.get_model("one_layer"), {"loss": "log", "eps": "1/10"})
    >>> ns.loss, ns.eps
    ('log', '1/10')
    """
    why = (
        f"{{flag}} belongs to the loss of a prediction f; {model.name} trains on --objective (the cross-entropy "
        "of its next-token logits): drop {flag}"
    )
    options_in_place(args, defaults, why if model.TOKEN_LOGITS else None)


def gaussian_start_from_args(args: argparse.Namespace, defaults: dict) -> None:
    """The options of ``--init gaussian`` (``defaults``' keys, e.g. ``sigma``; None in the parser): refused in one
    line with another start, where they would be recorded and never used; else set to ``defaults`` where not given.

    >>> ns = argparse.Namespace(init="gaussian", sigma=None)
    >>> gaussian_start_from_args(ns, {"sigma": "1/100"}); ns.sigma
    '1/100'
    """
    init = getattr(args, "init", "zero")
    why = (
        f"{{flag}} applies to --init gaussian (the start drawn from N(0, sigma^2)), not --init {init}: drop "
        "{flag}, or give --init gaussian"
    )
    options_in_place(args, defaults, why if init != "gaussian" else None)
