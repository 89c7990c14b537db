"""Stuck for every t (proved), for T steps (evidence), or escapes: a task's verdict from both routes.

:func:`stuck_proof` finds candidate subspaces by the task's symmetry (``fixed_subspace`` of
``rwtoolkit.tasks.task_symmetries``) and by the trajectory's span (``trajectory_subspace``), decides each by the
exact induction step (``induction_step``), and follows the trajectory in certified ball arithmetic:

* **stuck for all t (proved)**: a candidate is proved invariant for every η, every loss and every μ, and
  every point of it predicts the same for every input (so GD from zero, which starts on it, is at chance
  for every t, by induction);
* **escapes**: the trajectory's scores f(X) differ between two inputs at some t ≤ T, certified (the ball of
  the difference excludes 0), so no input-independent set holds it;
* **stuck for T steps (evidence)**: neither: the scores agree within their balls for t ≤ T. Evidence only.

These are the words of the one verdict vocabulary (``rwtoolkit.io.Verdict``) for the claim "stuck at chance
for every t": proved, refuted, holds at the sizes (steps) checked (``rwtoolkit.io.STUCK_WORDS``).

The report says which route explains a proved case: the symmetry (its group named by its generators), or
an uninformative average that no symmetry explains (only the trajectory's span is proved), and whether the
symmetry's subspace is larger than the trajectory's.
"""

from __future__ import annotations

from typing import Any

from flint import ctx

from rwtoolkit.engines.exact.analysis._candidates import fixed_subspace, identical_heads, trajectory_subspace
from rwtoolkit.engines.exact.analysis._invariance import Induction, Subspace, induction_step, positions
from rwtoolkit.io import DECISION_WORDS, STUCK_WORDS, Verdict
from rwtoolkit.models import (
    CrossEntropy,
    Model,
    Sizes,
    acting_group,
    batch,
    descend,
    get_model,
    objective_name,
)
from rwtoolkit.tasks import Task, task_symmetries

#: Steps of the trajectory (span and ball check), and the precision of the balls (bits).
STUCK_STEPS, BALL_PREC = 4, 128
#: The largest job a proof is attempted for, as inputs × parameters (each input is one pass of the model in
#: the function field per score class). Measured on 2 cores under load: 3072 inputs × 205 parameters
#: (CircleWalk(3, 11, 1/2), a learning case whose scores fall into many classes) took 98 s, so this bound
#: is about three minutes; stuck cases (one score class) are far faster (benchmarks/stuck_proof.py).
MAX_STUCK_WORK = 1_000_000
#: The longest trajectory whose span is tried (the span grows with T until the step maps it into itself).
MAX_SPAN_STEPS = 16


def trajectory_check(
    task: Task,
    model: Model,
    steps: int,
    eta: object = 1,
    eps: object = "1/10",
    mu: object = 1,
    objective: str | None = None,
) -> dict:
    """The first step (if any) at which two inputs' scores differ, certified in ball arithmetic (μ, P = √μ·I_N).

    GD on the log-loss, or on its cross-entropy objective for a model with next-token logits (``objective``, by
    default ``"lm"``: ``rwtoolkit.models.objective_name``)."""
    previous = ctx.prec
    ctx.prec = BALL_PREC
    try:
        from rwtoolkit.engines.balls import BallLogLoss, ball_arithmetic, to_ball

        ar = ball_arithmetic()
        pop = task.population()
        P = ar.asarray(positions(task.N)) * to_ball(mu).sqrt()
        data = batch(ar, pop.tokens, pop.labels, [to_ball(q) for q in pop.exact_probs()], task.K, P)
        probs = pop.exact_probs()
        support = [n for n, q in enumerate(probs) if q != 0]
        start = model.zeros(ar, Sizes(K=task.K, M=task.N, N=task.N))
        objective = objective_name(model, objective)
        loss = BallLogLoss(eps) if objective is None else CrossEntropy(objective)
        states = descend(model, ar, start, data, loss, to_ball(eta), steps)
        first = support[0]
        for t, state in enumerate(states):
            for n in support[1:]:
                for k in range(task.K):
                    diff = state.f[n, k] - state.f[first, k]
                    if not diff.contains(0):
                        return {
                            "escape_step": t,
                            "inputs": [int(first), int(n)],
                            "label": k,
                            "difference": diff.str(8, radius=True),
                        }
        return {"escape_step": None, "steps": steps}
    finally:
        ctx.prec = previous


def stuck_proof(
    task: Task, model: Model | str = "one_layer", steps: int = STUCK_STEPS, objective: str | None = None
) -> dict[str, Any]:
    """Both routes, the induction certificates and the verdict (module docstring); JSON-ready, and the same
    bytes for the same task (no timings: ``benchmarks/stuck_proof.py`` measures them).

    A model with next-token logits (a sequence model: a PyTorch or JAX program traced, or written with the tape)
    is decided for its cross-entropy objective (``objective``, by default ``"lm"``), on the part of the task's
    group that leaves it unchanged (``rwtoolkit.models.acting_group``: positions fixed, labels renamed as the
    tokens); the report names the objective. From zero such a model without biases never moves when every
    gradient vanishes at θ = 0 (each parameter reaches the logits through a product with another, all zero):
    then the trajectory's span is {0}, proved invariant, and the report says that every parameter stays at 0.

    >>> from rwtoolkit.tasks import CircleWalk
    >>> stuck_proof(CircleWalk(3, 4, 1))["verdict"]
    'stuck for all t (proved)'
    """
    model = get_model(model) if isinstance(model, str) else model
    objective = objective_name(model, objective)
    size = model.parameter_count(Sizes(K=task.K, M=task.N, N=task.N))
    work = size * task.population_size()
    if work > MAX_STUCK_WORK:
        raise ValueError(
            f"stuck_proof: {task.population_size()} inputs × {size} parameters = {work:.3g}, above "
            f"{MAX_STUCK_WORK:.1e} (minutes of the exact induction step); use a smaller N or K"
        )
    group = acting_group(model, task_symmetries(task))  # what of the task's group the model respects
    fixed = fixed_subspace(model, task, group)
    by_symmetry = induction_step(task, model, fixed, objective)
    span, by_trajectory = _closed_span(task, model, steps, objective)
    check = trajectory_check(task, model, steps, objective=objective)
    proved = [r for r in (by_symmetry, by_trajectory) if r is not None and r.stuck_for_all_t]
    if proved:
        verdict = Verdict.PROVED
        if by_symmetry.stuck_for_all_t:
            why = f"a symmetry of order {group.order}: " + "; ".join(
                group.describe(getattr(task, "vocab", None))
            )
        elif span is not None and span.dim == 0:
            why = (
                "every parameter stays at 0: every gradient vanishes at θ = 0 (proved: {0} is invariant), where "
                "every input gets the same prediction; the symmetry's subspace "
                f"(dim {fixed.dim}, order {group.order}): {by_symmetry.line()}"
            )
        else:
            why = (
                "an uninformative average that no symmetry explains: the task's symmetry "
                f"(order {group.order}) fixes a subspace whose points can tell inputs apart"
            )
    elif check["escape_step"] is not None:
        verdict = Verdict.REFUTED
        why = (
            f"at t = {check['escape_step']} inputs {check['inputs'][0]} and {check['inputs'][1]} get scores "
            f"differing by {check['difference']} on label {check['label']} (certified)"
        )
    else:
        verdict = Verdict.HOLDS
        why = f"no invariant input-independent subspace proved; the scores agree within their balls for t ≤ {steps}"
    comparison = _compare(fixed, span)
    heads = identical_heads(model, task)
    extra = {} if heads is None else {"identical_heads": induction_step(task, model, heads).to_json()}
    return {
        "verdict": STUCK_WORDS.word(verdict),
        "why": why,
        "model": model.describe(),
        **({} if objective is None else {"objective": objective}),
        "group": group.to_json(),
        "symmetry": by_symmetry.to_json(),
        "trajectory": by_trajectory.to_json()
        if by_trajectory is not None
        else {"outcome": "no rational span"},
        "comparison": comparison,
        "ball_check": check,
        **extra,
    }


def _closed_span(
    task: Task, model: Model, steps: int, objective: str | None = None
) -> tuple[Subspace | None, Induction | None]:
    """The trajectory's span over T = steps, 2·steps, ... (up to ``MAX_SPAN_STEPS``) until the induction step
    proves it or it stops growing: the smallest span of the trajectory that is closed under the step."""
    T, span, result = steps, None, None
    while True:
        grown = trajectory_subspace(model, task, T, objective=objective)
        if grown is None:
            return span, result
        if span is not None and grown.dim == span.dim:
            return span, result
        span, result = grown, induction_step(task, model, grown, objective)
        if DECISION_WORDS.verdict(result.outcome) is Verdict.PROVED or 2 * T > MAX_SPAN_STEPS:
            return span, result
        T *= 2


def _compare(fixed: Subspace, span: Subspace | None) -> str:
    if span is None:
        return "the trajectory's span has no rational basis (route (b) has no candidate)"
    inside = all(fixed.contains(list(b)) for b in span.basis)
    if inside and fixed.dim > span.dim:
        return f"the symmetry's subspace (dim {fixed.dim}) is larger than the trajectory's span (dim {span.dim}), which it contains"
    if inside:
        return f"the symmetry's subspace equals the trajectory's span (dim {span.dim})"
    return f"the trajectory's span (dim {span.dim}) leaves the symmetry's subspace (dim {fixed.dim})"
