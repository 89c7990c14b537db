"""Exact population gradient descent from zero initialisation in the reduced coordinates (V, w_tok, c).

Reduction (docs/theory.md#reduction, Lemma B.1). Every W-gradient is u·x̃_Nᵀ with u = ℓ'(z) X̃ (diag S - SSᵀ) Xᵀ Vᵀ e_y,
so from W(0) = 0 we have W(t) = w(t) x̃_Nᵀ / μ with w = W x̃_N, the first K columns of W stay zero
(W11 = W21 = 0) and the logits are x̃_jᵀ w. Every u lies in span{x̃_1..x̃_N}, so the positional part of w
is w_pos = Σ_j c_j p_j and, by orthogonality with ‖p_j‖² = μ, logit_j = x_jᵀ w_tok + μ c_j (x_N = 0).
With δ_j = ℓ'(z) S_j (a_j - z), a_j = V[y, s_j] (a_N = 0), z = e_yᵀ f, one step is
    V ← V - η E[ℓ'(z) e_y (XS)ᵀ],   w_tok ← w_tok - ημ E[Σ_{j<N} δ_j e_{s_j}],   c ← c - ημ E[δ].
So the trajectory depends on P only through μ, and no M-dimensional object is ever built.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Unpack, overload

import sympy as sp
from tqdm import tqdm

from rwtoolkit.engines.exact.arithmetic._atoms import expand_atoms, has_atoms
from rwtoolkit.engines.exact.arithmetic._decide import nearest_float, sign
from rwtoolkit.engines.exact.arithmetic._rational import descend, use_flint
from rwtoolkit.engines.exact.engine._cost import DeriveJob, job_estimate
from rwtoolkit.engines.exact.engine._groups import GroupPass, group_pass
from rwtoolkit.engines.exact.engine._population import (
    MAX_INPUTS,
    Loss,
    SummedPopulation,
    population_inputs,
    rooted_walks,
)
from rwtoolkit.engines.exact.engine._trajectory import EngineArguments, ExactTrajectory
from rwtoolkit.models import ArithmeticLoss, Model, get_model, objective_name
from rwtoolkit.tasks import ABSTRACT_LOSS, CircleWalk, FiniteTask, Task, check_int, check_loss, exact

#: The abstract loss of ``loss="any"`` (``rwtoolkit.tasks.ABSTRACT_LOSS``): ℓ is the undefined function ``ell``, ℓ' the undefined ``dell``.
ELL = sp.Function("ell")
DELL = sp.Function("dell")


def make_loss(loss: str | Callable[[sp.Expr], sp.Expr], eps: sp.Expr) -> Loss:
    """The loss ℓ and its derivative: a name of ``rwtoolkit.tasks.LOSSES``, "any" (abstract ell/dell), or a callable of z.

    >>> make_loss("squared", sp.Rational(1, 10)).derivative(sp.Rational(1, 3))
    -4/3
    """
    check_loss(loss, abstract=True)
    if loss == ABSTRACT_LOSS:
        return Loss(ABSTRACT_LOSS, ELL, DELL)
    if not isinstance(loss, str):
        zs = sp.Dummy("z")
        return Loss(getattr(loss, "__name__", "custom"), *_as_functions(sp.sympify(loss(zs)), zs))
    formulas = ArithmeticLoss(loss, eps, _SympyScalars())
    if loss == "log":

        def check(z: sp.Expr) -> None:
            # -log(z+ε) is undefined for z <= -ε: refuse instead of producing nan/complex values.
            s = sign(z + eps)  # None when z has symbols: the domain is then the user's to keep
            if s is not None and s <= 0:
                value = None if has_atoms(z) or sp.count_ops(z) < 40 else nearest_float(z)
                shown = f"z ≈ {value:.17g}" if value is not None else f"z = {expand_atoms(z)}"
                raise ValueError(f"the log-loss -log(z + eps) is undefined at {shown} (z + eps <= 0)")

        def value(z: sp.Expr) -> sp.Expr:
            check(z)
            return formulas.value(z)

        def derivative(z: sp.Expr) -> sp.Expr:
            check(z)
            return formulas.derivative(z)

        return Loss("log", value, derivative)
    return Loss(loss, formulas.value, formulas.derivative)  # "squared", "exp"


class _SympyScalars:
    """SymPy expressions, one at a time, as the arithmetic ``rwtoolkit.models.ArithmeticLoss`` reads its formulas in:
    the exact engine's ℓ and ℓ' are that one definition's (``rwtoolkit.models.LossArithmetic``)."""

    @staticmethod
    def log(x: sp.Expr) -> sp.Expr:
        # SymPy's log would study the sign of a large argument again: it is positive (make_loss checks it).
        return sp.log(x, evaluate=not has_atoms(x))

    @staticmethod
    def exp(x: sp.Expr) -> sp.Expr:
        return sp.exp(x)


def _as_functions(
    expr: sp.Expr, z: sp.Symbol
) -> tuple[Callable[[sp.Expr], sp.Expr], Callable[[sp.Expr], sp.Expr]]:
    """ℓ and ℓ' as functions of z, from the expression ``expr`` of the symbol ``z``."""
    dexpr = sp.diff(expr, z)
    return (lambda v: expr.xreplace({z: v})), (lambda v: dexpr.xreplace({z: v}))


class StepState:
    """θ(t) in reduced coordinates plus everything evaluated at θ(t) (computed on first access).

    V (K×K), w_tok (K×1, token part of W(t)x̃_N), c (N×1, w_pos = Σ_j c_j p_j). Per-input lists
    (``logits``, ``S``, ``f``, ``z``) follow the order of ``task.population()``. Attributes are plain
    SymPy expressions; ``atom_form(name)`` gives the same value with nested exponentials as named
    atoms (``rwtoolkit.engines.exact.arithmetic._atoms``), which is what the engine computes with and what prints and
    evaluates fast on late steps.
    """

    def __init__(
        self, t: int, V: sp.Matrix, w_tok: sp.Matrix, c: sp.Matrix, evaluate: Callable[[], GroupPass]
    ) -> None:
        self.t = t
        self._raw: dict[str, object] = {"V": V, "w_tok": w_tok, "c": c}
        self._plain: dict[str, object] = {}
        self._evaluate = evaluate
        self._pass: GroupPass | None = None
        self._inputs: SummedPopulation | None = None

    @property
    def evaluated(self) -> GroupPass:
        """The group-level evaluation at θ(t) (computed once; values in atom form)."""
        if self._pass is None:
            self._pass = self._evaluate()
        return self._pass

    @overload
    def atom_form(self, name: Literal["V", "w_tok", "c"]) -> sp.Matrix: ...
    @overload
    def atom_form(self, name: Literal["loss", "accuracy"]) -> sp.Expr: ...
    @overload
    def atom_form(self, name: Literal["mean_attention", "mean_logits", "mean_f", "z"]) -> list[sp.Expr]: ...
    @overload
    def atom_form(self, name: Literal["logits", "S"]) -> list[list[sp.Expr]]: ...
    @overload
    def atom_form(self, name: Literal["f"]) -> list[sp.Matrix]: ...
    @overload
    def atom_form(self, name: str) -> object: ...
    def atom_form(self, name: str) -> object:
        """The value of attribute ``name`` with nested exponentials kept as named atoms."""
        if name not in self._raw:
            ev = self.evaluated
            if name in ("loss", "accuracy", "mean_attention", "mean_logits", "mean_f"):
                self._raw[name] = getattr(ev, name)
            elif name in ("logits", "S", "f", "z"):
                self._raw[name] = self._per_input(name)
            else:
                raise AttributeError(f"StepState has no value {name!r}")
        return self._raw[name]

    # The same value types as ``atom_form``, with every named atom expanded.
    @overload
    def _value(self, name: Literal["V", "w_tok", "c"]) -> sp.Matrix: ...
    @overload
    def _value(self, name: Literal["loss", "accuracy"]) -> sp.Expr: ...
    @overload
    def _value(self, name: Literal["mean_attention", "mean_logits", "mean_f", "z"]) -> list[sp.Expr]: ...
    @overload
    def _value(self, name: Literal["logits", "S"]) -> list[list[sp.Expr]]: ...
    @overload
    def _value(self, name: Literal["f"]) -> list[sp.Matrix]: ...
    def _value(self, name: str) -> object:
        if name not in self._plain:
            self._plain[name] = _expand(self.atom_form(name))
        return self._plain[name]

    @property
    def V(self) -> sp.Matrix:
        """V(t) (K×K)."""
        return self._value("V")

    @property
    def w_tok(self) -> sp.Matrix:
        """Token part of w(t) = W(t) x̃_N (K×1)."""
        return self._value("w_tok")

    @property
    def c(self) -> sp.Matrix:
        """Positional coefficients of w(t): w_pos = Σ_j c_j p_j (N×1)."""
        return self._value("c")

    # population means -------------------------------------------------------------------------
    @property
    def loss(self) -> sp.Expr:
        """L(θ(t)) = E[ℓ(e_yᵀ f)]."""
        return self._value("loss")

    @property
    def accuracy(self) -> sp.Expr:
        """P(smallest argmax of f = y): a Rational when every comparison is decided, else a Piecewise sum."""
        return self._value("accuracy")

    @property
    def mean_attention(self) -> list[sp.Expr]:
        """E[S_j], j = 1..N."""
        return self._value("mean_attention")

    @property
    def mean_logits(self) -> list[sp.Expr]:
        """E[x̃_jᵀ W x̃_N], j = 1..N."""
        return self._value("mean_logits")

    @property
    def mean_f(self) -> list[sp.Expr]:
        """E[f(X)] (K entries)."""
        return self._value("mean_f")

    # per input ---------------------------------------------------------------------------------
    def _per_input(self, which: str) -> list:
        ev, inputs = self.evaluated, self._inputs
        assert inputs is not None
        K, L = inputs.K, inputs.N - 1
        rows = []
        for r in range(K if inputs.rotation else 1):
            for i in range(inputs.size):
                g = int(ev.inverse[i])
                pairs = [(int(ev.cls[j]), int(inputs.tokens[i, j])) for j in range(L)]
                if which == "logits":
                    rows.append([ev.logit_of[g][pr] for pr in pairs] + [ev.logit_query])
                elif which == "S":
                    rows.append([ev.S_of[g][pr] for pr in pairs] + [ev.S_query[g]])
                elif which == "f":
                    rows.append(sp.Matrix([ev.f[g][(k - r) % K] for k in range(K)]))
                else:
                    rows.append(ev.z[g])
        return rows

    @property
    def logits(self) -> list[list[sp.Expr]]:
        """Per input: x̃_jᵀ W x̃_N = x_jᵀ w_tok + μ c_j, j = 1..N."""
        return self._value("logits")

    @property
    def S(self) -> list[list[sp.Expr]]:
        """Per input: the attention S(X̃ᵀ W x̃_N) over the N positions."""
        return self._value("S")

    @property
    def f(self) -> list[sp.Matrix]:
        """Per input: f(X) = V X S (K×1)."""
        return self._value("f")

    @property
    def z(self) -> list[sp.Expr]:
        """Per input: z = e_yᵀ f(X)."""
        return self._value("z")

    def __repr__(self) -> str:
        return f"StepState(t={self.t}, V={self.V.tolist()}, w_tok={list(self.w_tok)}, c={list(self.c)})"


def _expand(value: object) -> object:
    """``value`` (expression, matrix or nested list) with every named atom expanded."""
    if isinstance(value, sp.MatrixBase):
        return value.applyfunc(expand_atoms) if any(has_atoms(v) for v in value) else value
    if isinstance(value, list):
        return [_expand(v) for v in value]
    return expand_atoms(value)


#: The reduced coordinates, in the order they are printed and written, and the reduced engine's read-outs.
REDUCED_PARAMETERS = ("V", "w_tok", "c")
REDUCED_READOUTS = ("loss", "accuracy", "mean_attention", "mean_logits", "mean_f")


@dataclass
class ReducedTrajectory(ExactTrajectory):
    """The exact trajectory θ(0..T) of full-batch GD from zero init on ``task`` (see ``derive``), in the
    reduced coordinates: an ``ExactTrajectory`` that is its own reduced view."""

    inputs: SummedPopulation

    @property
    def K(self) -> int:
        return self.inputs.K

    @property
    def N(self) -> int:
        return self.inputs.N

    @property
    def population_size(self) -> int:
        return self.inputs.population_size

    @property
    def M(self) -> None:
        return None

    @property
    def parameter_names(self) -> tuple[str, ...]:
        return REDUCED_PARAMETERS

    def parameter_shapes(self) -> dict[str, list[int]]:
        return {"V": [self.K, self.K], "w_tok": [self.K], "c": [self.N]}

    @property
    def readout_names(self) -> tuple[str, ...]:
        return REDUCED_READOUTS

    def value(self, t: int, name: str) -> Any:
        """``StepState.atom_form`` of step t (nested exponentials as named atoms); w_tok and c as lists."""
        value: Any = self.states[t].atom_form(name)
        return list(value) if name in ("w_tok", "c") else value

    @property
    def reduced(self) -> ReducedTrajectory:
        return self


def _positive(value: sp.Expr, name: str) -> sp.Expr:
    if value.is_number and not value > 0:
        raise ValueError(f"{name}={value} must be > 0")
    return value


def derive_estimate(task: CircleWalk | FiniteTask, steps: int, rotate: bool = True) -> float:
    """Estimated seconds of ``derive`` for ``steps`` steps, with every state's loss, accuracy and mean
    attention (``rwtoolkit.engines.exact.job_estimate``'s cost model, without an oracle file).

    >>> from rwtoolkit.tasks import CircleWalk
    >>> derive_estimate(CircleWalk(5, 6, "3/10"), 4) < 10 < derive_estimate(CircleWalk(5, 9, "3/10"), 4)
    True
    """
    if rotate and task.rotation_invariant and 2 ** (task.N - 1) > MAX_INPUTS:
        rooted_walks(task)  # refuses with the enumeration limit, which comes before any time estimate
    return job_estimate(task, steps, json=False, rotate=rotate).seconds


def derive(
    task: CircleWalk | FiniteTask,
    steps: int,
    eta: object = 1,
    eps: object = "1/10",
    mu: object = "mu",
    loss: str | Callable[[sp.Expr], sp.Expr] = "log",
    rotate: bool = True,
    progress: bool = False,
    orbits: bool = False,
    *,
    model: Model | None = None,
    init: str = "zero",
    sigma: object = "1/100",
    seed: int = 0,
    objective: str | None = None,
    optimizer: object = None,
    schedule: object = None,
    stages: object = None,
) -> ReducedTrajectory:
    """The exact population GD trajectory θ(0), …, θ(steps) from zero initialisation (docs/theory.md#model, #reduction).

    The reduced exact engine: ``rwtoolkit.engines.select("one_layer", "exact", "zero")`` selects it and calls it
    as the generic ``derive_model``, ``derive(task, model=model, steps=steps, eta=…, eps=…, mu=…, loss=…,
    init=…, sigma=…, seed=…, progress=…)``: ``model`` must be the paper's model (``one_layer``; None is it),
    ``init`` "zero" (``sigma`` and ``seed`` then play no part, as in ``derive_model``), ``objective`` None (the
    paper's model has no next-token logits: ``rwtoolkit.models.objective_name`` refuses another in one line).

    ``eta``, ``eps``, ``mu`` (μ = ‖p_i‖²) are read by ``rwtoolkit.tasks.exact``: numbers, "7/10", or symbol names.
    ``loss`` is a name of ``rwtoolkit.tasks.LOSSES`` ("log": ℓ = -log(z+ε), "squared", "exp"), "any" (ℓ, ℓ' the
    undefined functions ``ell``, ``dell``) or a callable z -> SymPy expression. For circle walks ``rotate`` uses the rotation symmetry (exact).
    ``orbits`` sums over one representative per orbit of the task's whole symmetry group instead
    (``rwtoolkit.tasks.orbit_sum``; exact, docs/theory.md#orbit-sums): the parameters, loss, accuracy and means are
    the full population's, the per-input read-outs the representatives'.
    ``progress`` shows a bar over the steps when stderr is a terminal.

    Examples
    --------
    >>> from rwtoolkit.tasks import CircleWalk
    >>> tr = derive(CircleWalk(3, 3, "1/2"), steps=1, mu=1)
    >>> tr.states[1].V
    Matrix([
    [5/9, 5/6, 5/6],
    [5/6, 5/9, 5/6],
    [5/6, 5/6, 5/9]])
    >>> list(tr.states[1].w_tok), list(tr.states[1].c)
    ([0, 0, 0], [0, 0, 0])
    """
    steps = check_int(steps, "steps", 0)
    model = get_model("one_layer") if model is None else model
    objective_name(model, objective)
    plain_rule(optimizer, schedule, stages)
    if model.name != "one_layer" or init != "zero":
        raise ValueError(
            f"model={model.name!r}, init={init!r}: the reduced engine runs the paper's model (one_layer) from "
            "zero; rwtoolkit.engines.select gives the engine of another model or start (derive_model)"
        )
    eta = _positive(exact(eta, "eta"), "eta")
    eps = _positive(exact(eps, "eps"), "eps")
    mu = _positive(exact(mu, "mu"), "mu")
    lossfn = make_loss(loss, eps)
    action = None
    if isinstance(task, Task) and orbits:
        from rwtoolkit.engines.exact.engine._orbits import orbit_action, orbit_inputs

        inputs = orbit_inputs(task)
        action = orbit_action(inputs.orbits)  # type: ignore[arg-type]
    elif isinstance(task, Task) and rotate and task.rotation_invariant:
        inputs = rooted_walks(task)
    elif isinstance(task, Task):
        inputs = population_inputs(task.population())
    else:
        raise ValueError(f"task={task!r} must be a CircleWalk or a FiniteTask (e.g. qa_task1())")
    K, N = inputs.K, inputs.N
    traj = ReducedTrajectory(task, model, eta, eps, mu, lossfn, init, inputs)

    def evaluator(V: sp.Matrix, w_tok: sp.Matrix, c: sp.Matrix, gradients: bool) -> Callable[[], GroupPass]:
        if action is not None:
            from rwtoolkit.engines.exact.engine._orbits import symmetrise

            return lambda: symmetrise(
                group_pass(inputs, V, list(w_tok), list(c), mu, lossfn, gradients), action
            )
        return lambda: group_pass(inputs, V, list(w_tok), list(c), mu, lossfn, gradients)

    V, w_tok, c = sp.zeros(K, K), sp.zeros(K, 1), sp.zeros(N, 1)
    bar = tqdm(total=steps, desc="rw derive", unit="step", disable=not (progress and sys.stderr.isatty()))
    for t in range(steps + 1):
        state = StepState(t, V, w_tok, c, evaluator(V, w_tok, c, gradients=t < steps))
        state._inputs = inputs
        traj.states.append(state)
        if t == steps:
            break
        ev = state.evaluated
        assert ev.grad_V is not None and ev.grad_tok is not None and ev.grad_c is not None
        grads = [*ev.grad_V, *ev.grad_tok, *ev.grad_c]
        if use_flint() and any(has_atoms(g) for g in grads):  # same values; sums scaled term by term
            V = sp.Matrix(K, K, [descend(V[a, b], eta, ev.grad_V[a, b]) for a in range(K) for b in range(K)])
            w_tok = sp.Matrix([descend(w_tok[k], eta * mu, ev.grad_tok[k]) for k in range(K)])
            c = sp.Matrix([descend(c[j], eta * mu, ev.grad_c[j]) for j in range(N)])
        else:
            V = V - eta * ev.grad_V
            w_tok = sp.Matrix([w_tok[k] - eta * mu * ev.grad_tok[k] for k in range(K)])
            c = sp.Matrix([c[j] - eta * mu * ev.grad_c[j] for j in range(N)])
        bar.update(1)
    bar.close()
    return traj


def plain_rule(optimizer: object, schedule: object = None, stages: object = None) -> None:
    """One line where ``optimizer`` is another rule than plain GD, or a ``schedule`` or ``stages`` is given: the
    reduced engine's coordinates follow θ ← θ − η∇L only, at one rate on every parameter (another rule, a
    schedule or stages run on the generic engine, ``rwtoolkit.engines.select(..., specialise=False)``)."""
    for name, given in (("--schedule", schedule), ("--stages", stages)):
        if given is not None:
            raise ValueError(
                f"{name}: the reduced exact engine runs one constant rate on every parameter; a schedule or "
                "stages run on the generic exact engine (rwtoolkit.engines.exact.derive_model)"
            )
    if optimizer is not None and not getattr(optimizer, "plain", False):
        raise ValueError(
            f"--optimizer {getattr(optimizer, 'name', optimizer)}: the reduced exact engine runs plain gradient "
            "descent only; another rule runs on the generic exact engine (--model one_layer --init gaussian, or "
            "rwtoolkit.engines.exact.derive_model)"
        )


def derive_job(
    task: CircleWalk | FiniteTask,
    model: Model,
    steps: int,
    *,
    json: bool = False,
    per_input: bool | None = None,
    verdict: bool = False,
    readouts: bool = False,
    **arguments: Unpack[EngineArguments],
) -> DeriveJob:
    """``derive``'s run planned before any work: its arguments and ``rwtoolkit.engines.exact.job_estimate``
    (time, memory and, with ``json``, the oracle's files), with the alternatives a refusal names. Every
    option of ``rw derive`` runs here (``verdict``: the structure predicates, statements about V, w_tok, c);
    ``readouts`` (rw check's reference, the trajectory read out as floats) changes nothing: the read-outs
    are converted from the per-input values, which ``json`` with ``per_input`` already bounds.
    ``arguments`` are ``derive``'s keyword arguments, checked when it runs.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> job = derive_job(CircleWalk(3, 3, "1/2"), get_model("one_layer"), 2, json=True, mu="mu")
    >>> job.arguments["mu"], job.what, job.estimate.per_input_bytes > 0
    ('mu', '--steps 2 on CircleWalk(K=3, N=3, p=1/2)', True)
    """
    objective_name(model, arguments.get("objective"))  # the paper's model: none but its loss
    plain_rule(arguments.get("optimizer"), arguments.get("schedule"), arguments.get("stages"))
    est = job_estimate(task, steps, json=json, per_input=per_input)
    alternatives = (
        "use fewer --steps, smaller K or N"
        + (", --no-per-input" if json and est.per_input_bytes else "")
        + (
            ", a rational --p (symbolic p costs up to twice as much from two steps on)"
            if task.symbols
            else ""
        )
        + ", or rw train --population for a floating-point trajectory"
    )
    return DeriveJob(
        arguments,
        est,
        f"--steps {steps} on {task!r}",
        alternatives,
    )
