"""``rw train``: numeric gradient descent on the torch engine ``rwtoolkit.engines.select`` picks, writing
DIR/metrics.json atomically (``TrainResult.to_json``)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from rwtoolkit.io import check_output_dir

if TYPE_CHECKING:
    from pathlib import Path

    from rwtoolkit.engines.numeric import Checkpoints, ModelConfig, TrainConfig
    from rwtoolkit.tasks import CircleWalk, FiniteTask

TASKS = ("circle", "qa1", "qa2")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``rw train``, one per ModelConfig/TrainConfig field (defaults: the paper's Fig 4 setting, p = 1/2)."""
    a = parser.add_argument
    from rwtoolkit.cli._models import add_model_arguments, add_objective_argument
    from rwtoolkit.cli._task_args import add_spec_argument

    add_model_arguments(
        parser,
        "another model trains with its tape gradient on the exact population only (--population), with the "
        "--pos/--M/--mu embeddings as P, --init/--sigma/--seed drawn in the order of its parameters; "
        "its metrics.json holds the model, config and per-step loss, accuracy and mean attention",
    )
    add_objective_argument(parser, "another model")
    from rwtoolkit.cli._optim import add_optimizer_arguments

    add_optimizer_arguments(
        parser, "another rule than gd trains on the generic engine, with --population", schedules=True
    )
    a("--task", choices=TASKS, default="circle", help="circle walk or QA task 1/2 (default circle)")
    add_spec_argument(parser, "rw train")
    a("--K", type=int, default=None, help="circle: number of nodes, >= 3 (default 6; QA tasks: 19, fixed)")
    a("--N", type=int, default=None, help="circle: walk length incl. the label, >= 2 (default 97; QA: 17/19)")
    a("--p", default=None, help="circle: clockwise probability in [0, 1], e.g. 1/2 or 0.7 (default 1/2)")
    a(
        "--M",
        type=int,
        default=1000,
        help="positional dimension, >= N (> N for sine; = N for onehot) (default 1000)",
    )
    a(
        "--pos",
        choices=("sine", "onehot", "random"),
        default="sine",
        help="positional embeddings (default sine)",
    )
    a("--mu", type=float, default=None, help="mu = ||p_i||^2 > 0 (default: M/2 sine, 1 onehot/random)")
    a("--pos-norm", type=float, default=None, dest="pos_norm", help=argparse.SUPPRESS)  # deprecated --mu
    a("--pos-seed", type=int, default=0, help="seed of the random embeddings (default 0)")
    a(
        "--gram",
        choices=("ideal", "computed"),
        default="ideal",
        help="fast path: P^T P = mu*I exactly (ideal, default) or the float Gram matrix of P (computed)",
    )
    a(
        "--init",
        choices=("zero", "gaussian", "own"),
        default="zero",
        help="initialisation: zero (default), gaussian (--sigma, --seed), or own: the model's own start (a traced "
        "or sequence program's float64 initial values)",
    )
    a(
        "--sigma",
        type=float,
        default=None,
        help="std of the Gaussian init (--init gaussian), > 0 (default 0.01)",
    )
    a(
        "--normalize-attention",
        action="store_true",
        help="unit-normalise each x~_i inside the softmax (Fig 6)",
    )
    a("--relu-width", type=int, default=None, help="use f = A ReLU(V X S) with hidden width m >= 1 (Fig 10)")
    a(
        "--loss",
        choices=("log", "squared", "exp"),
        default=None,
        help="loss of e_y^T f (default log; not for a model with next-token logits, which trains on --objective)",
    )
    a("--eta", type=float, default=1.0, help="learning rate > 0 (default 1)")
    a(
        "--eps",
        type=float,
        default=None,
        help="epsilon of the log-loss -log(z+eps), > 0 (default 0.1); train_loss is negative once z+eps > 1",
    )
    a("--steps", type=int, default=50, help="GD steps >= 0 (default 50)")
    a("--train-size", type=int, default=1000, help="sampled training inputs >= 1 (default 1000)")
    a("--test-size", type=int, default=1000, help="sampled test inputs >= 1 (default 1000)")
    a("--population", action="store_true", help="train and test on the exact population (small tasks only)")
    a("--seed", type=int, default=0, help="seed of sampling and init, >= 0 (default 0)")
    a("--dtype", choices=("float64", "float32"), default="float64", help="default float64")
    a("--device", choices=("cpu", "cuda"), default="cpu", help="default cpu")
    a(
        "--tie-rtol",
        type=float,
        default=None,
        help="accuracy tie tolerance (default 1e-9 float64, 1e-5 float32)",
    )
    a(
        "--kl-norm",
        choices=("softmax", "shift"),
        default="softmax",
        help="output normalisation of the kl metric",
    )
    a(
        "--reference",
        action="store_true",
        help="train with autograd on the full W instead of the fast path (slow)",
    )
    a("--snapshots", default="", help="comma-separated steps at which to keep V, attention and X S")
    a(
        "--record-steps",
        default=None,
        help="comma-separated steps whose metrics go into history (default: every step), e.g. 0,100,2000",
    )
    a(
        "--rotate",
        action="store_true",
        help="circle populations from zero init: exact rotation reduction (K times fewer training walks)",
    )
    a(
        "--record-params",
        action="store_true",
        help='keep V, w = W x~_N (and A with --relu-width) at every recorded step in metrics.json under "params"',
    )
    a(
        "--threads",
        type=int,
        default=1,
        help=f"torch threads, 1..{os.cpu_count() or 1} (the cores here; default 1: the tensors are small and "
        "extra threads mostly add overhead)",
    )
    a(
        "--record-every",
        type=int,
        default=None,
        dest="record_every",
        help="record the metrics at steps 0, N, 2N, ... and the last (instead of --record-steps), N >= 1",
    )
    a(
        "--checkpoint-every",
        type=int,
        default=None,
        dest="checkpoint_every",
        help="write DIR/checkpoint.pt atomically every N >= 1 steps (θ, the update rule's state, step, RNG state, "
        "the metrics so far; generic engine, --population)",
    )
    a(
        "--resume",
        action="store_true",
        help="continue from DIR/checkpoint.pt with the same options: the same bytes as an uninterrupted run",
    )
    a(
        "--max-seconds",
        type=int,
        default=3600,
        dest="max_seconds",
        help="refuse a generic-engine run estimated above this many seconds, >= 1 (default 3600)",
    )
    a("--out", required=True, help="output directory; DIR/metrics.json is written atomically")


def _snapshots(text: str, flag: str = "--snapshots") -> tuple[int, ...]:
    try:
        return tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise ValueError(f"{flag}={text!r} must be comma-separated integers, e.g. 100,400") from None


def _numeric_p(text: str) -> object:
    """--p as an exact number in [0, 1]: training samples walks, so a symbol such as p is refused."""
    from rwtoolkit.tasks import exact, is_numeric

    try:
        p = exact(text, "--p")
    except ValueError:
        p = None
    if p is None or not is_numeric(p):
        raise ValueError(f"--p={text!r} is not a number: rw train needs --p in [0, 1], e.g. 1/2, 0.7 or 1")
    return p


def _loss_note(loss: str, value: float) -> str:
    """Why a log-loss value is negative: -log(z+eps) < 0 once z + eps > 1, which a confident output reaches."""
    return " (negative because -log(z+eps) < 0 where z+eps > 1)" if loss == "log" and value < 0 else ""


def _task(args: argparse.Namespace) -> CircleWalk | FiniteTask:
    """The task of --spec (a task of the catalogue, one point: ``task_or_spec``, as rw derive reads it) or of
    --task/--K/--N/--p (the exact population checked against its limit with --population)."""
    from rwtoolkit.tasks import MAX_EXACT_WALKS, CircleWalk, qa_task1, qa_task2

    if args.spec is not None:
        from rwtoolkit.cli._task_args import task_or_spec

        task = task_or_spec(args, "rw train")
        if task.symbols:
            raise ValueError(f"the task's probabilities are symbolic ({task!r}): rw train needs numbers")
        if args.population and task.population_size() > MAX_EXACT_WALKS:
            raise ValueError(
                f"--population: the task of --spec {args.spec} has {task.population_size()} inputs, above the "
                f"limit of {MAX_EXACT_WALKS} for the exact population; give a smaller task"
            )
        return task
    if args.task == "circle":
        K, N = 6 if args.K is None else args.K, 97 if args.N is None else args.N
        task = CircleWalk(K, N, _numeric_p("1/2" if args.p is None else args.p))
        if args.population and task.walk_count > MAX_EXACT_WALKS:
            raise ValueError(
                f"--population: the circle walk with K={task.K}, N={task.N} has {float(task.walk_count):.3g} walks, "
                f"above the limit of {MAX_EXACT_WALKS} for the exact population; drop --population to train on "
                "--train-size sampled walks"
            )
    else:
        task = qa_task1() if args.task == "qa1" else qa_task2()
        if args.p is not None:
            raise ValueError(f"--p applies only to --task circle, not --task {args.task}")
        for flag, given, fixed in (("--K", args.K, task.K), ("--N", args.N, task.N)):
            if given is not None and given != fixed:
                raise ValueError(
                    f"{flag}={given} does not match --task {args.task}, whose {flag[2:]} is {fixed}"
                )
    return task


def run(args: argparse.Namespace) -> int:
    """Build the task and configs from the flags, train, write DIR/metrics.json.

    The printed ``train_loss`` is the mean training loss at the last step; with the log-loss
    -log(z + eps) it is negative once the predicted probabilities z of the labels plus eps exceed 1.
    """
    if not 1 <= args.threads <= (os.cpu_count() or 1):
        raise ValueError(
            f"--threads={args.threads} is out of range: must be in 1..{os.cpu_count() or 1} (the cores)"
        )
    from rwtoolkit.cli._models import gaussian_start_from_args, loss_of_f_from_args, model_from_args
    from rwtoolkit.cli._task_args import renamed_flag
    from rwtoolkit.models import DEFAULT_MODEL, FLOAT64, Sizes, objective_name

    renamed_flag(args, "rw train", "--mu", "--pos-norm")
    from rwtoolkit.cli._optim import optimizer_from_args, schedule_from_args, stages_from_args

    record_steps = _long_run_options(args)
    checkpointing = args.checkpoint_every is not None or args.resume
    schedule, stages = schedule_from_args(args), stages_from_args(args)  # their syntax, before any work
    if args.steps < 0:  # before a traced model's tracing
        raise ValueError(f"steps={args.steps!r} must be an integer >= 0")
    net = model_from_args(args)
    loss_of_f_from_args(args, net, {"loss": "log", "eps": 0.1})
    gaussian_start_from_args(args, {"sigma": 0.01})
    optimizer = optimizer_from_args(args)  # None: plain GD
    paper = net.name == DEFAULT_MODEL
    if not paper:
        _refuse_paper_only(args, net.name)
    elif optimizer is not None:
        _refuse_reduced_only(args, f"--optimizer {optimizer.name}", "which run plain GD")
    elif schedule is not None or stages is not None:
        flag = "--schedule" if schedule is not None else "--stages"
        _refuse_reduced_only(args, flag, "which run a constant rate on every parameter")
    elif checkpointing:
        _refuse_reduced_only(args, "--checkpoint-every/--resume", "which write no checkpoints")
    objective = objective_name(net, args.objective)  # one line for a model without next-token logits
    files = ("metrics.json", "checkpoint.pt") if checkpointing else ("metrics.json",)
    out = check_output_dir(args.out, "--out", files=files)
    path = out / "metrics.json"
    task = _task(args)
    if args.init == "own":  # one line for a model without a start of its own, before the engine loads
        net.own_start(FLOAT64, Sizes(K=task.K, M=args.M, N=task.N), "zero or gaussian")
    if stages is not None:  # the globs against the model's parameter names, covering --steps
        stages = stages_from_args(args, list(net.shapes(Sizes(K=task.K, M=args.M, N=task.N))))
    from rwtoolkit.engines import select
    from rwtoolkit.engines.numeric import (  # torch loads here, not for --help
        ModelConfig,
        TrainConfig,
        registered_model,
        write_json_atomic,
    )

    model = ModelConfig(
        K=task.K,
        N=task.N,
        M=args.M,
        pos=args.pos,
        mu=args.mu,
        pos_seed=args.pos_seed,
        normalize_attention=args.normalize_attention,
        relu_width=args.relu_width,
        gram=args.gram,
        registered=None if paper else net,
    )
    cfg = TrainConfig(
        steps=args.steps,
        eta=args.eta,
        eps=args.eps,
        loss=args.loss,
        init=args.init,
        sigma=args.sigma,
        seed=args.seed,
        population=args.population,
        train_size=args.train_size,
        test_size=args.test_size,
        dtype=args.dtype,
        device=args.device,
        fast=not args.reference,
        tie_rtol=args.tie_rtol,
        snapshots=_snapshots(args.snapshots),
        kl_norm=args.kl_norm,
        threads=args.threads,
        record_steps=record_steps,
        rotate=args.rotate,
        record_params=args.record_params,
        objective=objective,
        optimizer=optimizer,
        schedule=schedule,
        stages=stages,
    )
    # The paper's model (with --normalize-attention / --relu-width: the variant it names) trains on its
    # registered specialisation; a model named with --model, or another update rule, on the generic engine.
    specialise = paper and optimizer is None and schedule is None and stages is None and not checkpointing
    engine = select(registered_model(model).name, "torch", args.init, specialise=specialise)
    if specialise:
        [result] = engine.load()([(task, model, cfg)], progress=True)
    else:  # the generic engine: its estimate first, then the run with its checkpoints
        [result] = engine.load()(
            [(task, model, cfg)], progress=True, checkpoint=_plan(args, task, model, cfg, out)
        )
    if result.diverged is not None:
        raise result.diverged
    write_json_atomic(result.to_json(), path)
    last = result.history[-1]
    loss = last["train_loss"]
    about = "" if paper else f"model {net.name} {net.hyperparameters}, "
    if objective is not None:  # a model with next-token logits: what it trained on, from where
        about += f"objective {objective}, init {args.init}, "
    if optimizer is not None:
        about += f"optimizer {optimizer.name}, "
    if schedule is not None:
        about += f"schedule {schedule.text}, "
    if stages is not None:
        about += f"{len(stages)} stages, "
    attention = (  # a sequence model has no attention over the N positions to report
        f", parent_attention {last['parent_attention']:.4g}" if "parent_attention" in last else ""
    )
    print(
        f"wrote {path}: {about}step {last['step']}, train_loss {loss:.6g}{_loss_note(args.loss, loss)}, "
        f"test_accuracy {last['test_accuracy']:.4g}{attention}"
    )
    return 0


def _long_run_options(args: argparse.Namespace) -> tuple[int, ...] | None:
    """--record-every, --checkpoint-every and --max-seconds checked (one line each) before any work; the steps
    recorded (None: every step)."""
    for flag, value in (("--record-every", args.record_every), ("--checkpoint-every", args.checkpoint_every)):
        if value is not None and value < 1:
            raise ValueError(f"{flag}={value} is out of range: must be an integer >= 1")
    if args.max_seconds < 1:
        raise ValueError(f"--max-seconds={args.max_seconds} is out of range: must be an integer >= 1")
    if args.record_every is not None:
        if args.record_steps is not None:
            raise ValueError(
                "--record-every and --record-steps both choose the recorded steps: give one of them"
            )
        return tuple(range(0, args.steps + 1, args.record_every))
    return None if args.record_steps is None else _snapshots(args.record_steps, "--record-steps")


def _plan(
    args: argparse.Namespace, task: CircleWalk | FiniteTask, model: ModelConfig, cfg: TrainConfig, out: Path
) -> Checkpoints | None:
    """The generic engine's run estimated (time, memory, files with the checkpoint) and refused in one line
    above --max-seconds or the free disk of --out, or a --resume without a checkpoint in --out; its
    ``Checkpoints`` (None without --checkpoint-every or --resume). The estimate goes to stderr for a run above
    a minute or with checkpoints."""
    import sys

    from rwtoolkit.engines.numeric import (
        CHECKPOINT_NAME,
        Checkpoints,
        checkpoint_step,
        model_train_estimate,
        registered_model,
    )
    from rwtoolkit.io import check_disk

    checkpointing = args.checkpoint_every is not None or args.resume
    where = out / CHECKPOINT_NAME
    if args.resume and not where.is_file():
        raise ValueError(
            f"--resume: no checkpoint {where}; run without --resume (and with --checkpoint-every)"
        )
    first = checkpoint_step(where) if args.resume else 0
    net = registered_model(model)
    est = model_train_estimate(
        task,
        net,
        args.M,
        args.steps,
        args.dtype,
        cfg.record_steps,
        args.record_params,
        args.checkpoint_every,
        first,
        cfg.optimizer,
    )
    what = f"training {net.name} for {args.steps - first} steps"
    if est.seconds > args.max_seconds:
        fits = int(args.max_seconds / (est.seconds / max(args.steps - first, 1)))
        raise ValueError(
            f"{what} is estimated at {est.describe()}: above --max-seconds {args.max_seconds}; take at most "
            f"--steps {first + fits}, or raise --max-seconds (with --checkpoint-every N a run stopped on the way "
            "continues with --resume)"
        )
    check_disk(est.file_bytes, out, what, "use --record-every or fewer --record-steps, or another --out")
    resumed = f", resuming at step {first}" if first else ""
    note = f"rw train: {what}{resumed}: estimated {est.describe()}"
    if not checkpointing:
        if est.seconds > 60:
            print(note, file=sys.stderr)
        return None
    # printed by the engine once a checkpoint to resume from is found of this run (one line otherwise)
    return Checkpoints(where, args.checkpoint_every, args.resume, note)


#: Options of the paper's model only (its fast paths and head): (flag, is it given?) for another --model.
_PAPER_ONLY = (
    ("--relu-width", lambda a: a.relu_width is not None),
    ("--normalize-attention", lambda a: a.normalize_attention),
    ("--gram computed", lambda a: a.gram != "ideal"),
    ("--reference", lambda a: a.reference),
    ("--rotate", lambda a: a.rotate),
    ("--snapshots", lambda a: a.snapshots != ""),
    ("--record-params", lambda a: a.record_params),
    ("--kl-norm", lambda a: a.kl_norm != "softmax"),
    ("--tie-rtol", lambda a: a.tie_rtol is not None),
)


def _refuse_reduced_only(args: argparse.Namespace, what: str, why: str) -> None:
    """One line before any work for an option of the paper model's reduced engines (``why`` they cannot run
    ``what``: another update rule, checkpoints), which the generic engine runs on the exact population."""
    for flag, given in _PAPER_ONLY[2:]:  # --relu-width, --normalize-attention: the generic engine has them
        if given(args):
            raise ValueError(
                f"{flag} is an option of the paper model's reduced engines, {why}; drop it for {what}"
            )
    if not args.population:
        raise ValueError(
            f"{what} trains on the generic engine, on the exact population only: add --population"
        )


def _refuse_paper_only(args: argparse.Namespace, name: str) -> None:
    """One line before any work for an option that only ``one_layer`` (the paper's model) supports."""
    for flag, given in _PAPER_ONLY:
        if given(args):
            raise ValueError(
                f"{flag} applies only to --model one_layer (the paper's model); drop it for --model {name}"
            )
    if not args.population:
        raise ValueError(
            f"--model {name} trains on the exact population only (sampled walks are one_layer's): add --population"
        )
