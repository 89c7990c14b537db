"""The paper's experiments as data (docs/reproduction.md#experiments): one ``FigureSpec`` per figure, its runs and its options.

A figure is a set of ``RunSpec`` (the settings the paper states) trained under one ``Choices`` (the
settings the paper leaves unstated: μ = ‖p_i‖², float precision, mean vs sum loss, the Gram matrix
of P on the fast path, x̃ normalisation where the paper is silent). ``main`` is the option the main
panels show; ``options`` are every option whose outcome the report also shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from rwtoolkit.engines.numeric import ModelConfig, TrainConfig
from rwtoolkit.tasks import CircleWalk, FiniteTask, qa_task1, qa_task2

#: The paper's positional dimension.
M_PAPER = 1000

#: μ = ‖p_i‖² options of the sensitivity study and the figure variants, as functions of M.
MU_OPTIONS: dict[str, Callable[[int], float]] = {
    "1": lambda M: 1.0,
    "sqrtM": lambda M: math.sqrt(M),
    "M/2": lambda M: M / 2,
}
MU_LABELS = {"1": "μ=1", "sqrtM": "μ=√M", "M/2": "μ=M/2"}
REDUCTIONS = ("mean", "sum")


@dataclass(frozen=True)
class Choices:
    """The settings the paper does not state.

    ``mu``: a key of ``MU_OPTIONS``; ``dtype``: "float64" | "float32"; ``reduction``: "mean" (the loss
    is E over the training set, docs/theory.md#model) or "sum" (Σ over the set, i.e. η × train size);
    ``gram``: the fast path's PᵀP, "ideal" (= μI, the spec's P) or "computed" (the float Gram of the
    sine P, what a direct implementation sees); ``normalize``: x̃ normalisation inside the softmax,
    None = the figure's own setting; ``kl_norm``: how the KL metric turns f into a distribution,
    "softmax" or "shift" ((f - min f + ε)/sum) -- it changes the KL curves, not the training;
    ``seed``: the run's seed (training/test samples and the random init), not a paper choice but
    the check that a random-init outcome is not one draw's accident.
    """

    mu: str = "M/2"
    dtype: str = "float64"
    reduction: str = "mean"
    gram: str = "ideal"
    normalize: bool | None = None
    kl_norm: str = "softmax"
    seed: int = 0

    def label(self) -> str:
        """Short human-readable name, e.g. "μ=M/2, float64, mean, ideal Gram"."""
        parts = [MU_LABELS[self.mu], self.dtype, f"{self.reduction} loss", f"{self.gram} Gram"]
        if self.normalize is not None:
            parts.append("x̃ normalised" if self.normalize else "x̃ not normalised")
        if self.kl_norm != "softmax":
            parts.append(f"{self.kl_norm}-normalised KL")
        if self.seed:
            parts.append(f"seed {self.seed}")
        return ", ".join(parts)

    def key(self) -> str:
        """Filesystem- and JSON-friendly identifier."""
        mu = {"1": "mu1", "sqrtM": "musqrtM", "M/2": "muMhalf"}[self.mu]
        norm = "" if self.normalize is None else ("_norm" if self.normalize else "_nonorm")
        kl = "" if self.kl_norm == "softmax" else f"_kl{self.kl_norm}"
        seed = f"_seed{self.seed}" if self.seed else ""
        return f"{mu}_{self.dtype}_{self.reduction}_{self.gram}{norm}{kl}{seed}"

    def differs_from(self, main: Choices) -> str:
        """The options that differ from ``main`` (what the variant changes), or "main"."""
        diffs = []
        if self.mu != main.mu:
            diffs.append(MU_LABELS[self.mu])
        if self.dtype != main.dtype:
            diffs.append(self.dtype)
        if self.reduction != main.reduction:
            diffs.append(
                f"{self.reduction} loss (η × train size)" if self.reduction == "sum" else "mean loss"
            )
        if self.gram != main.gram:
            diffs.append(f"{self.gram} Gram")
        if self.normalize != main.normalize:
            diffs.append("x̃ normalised" if self.normalize else "x̃ not normalised")
        if self.kl_norm != main.kl_norm:
            diffs.append(f"{self.kl_norm}-normalised KL")
        if self.seed != main.seed:
            diffs.append(f"seed {self.seed}")
        return ", ".join(diffs) if diffs else "main"


@dataclass(frozen=True)
class RunSpec:
    """One training run with the paper's stated settings; ``build`` adds the unstated ``Choices``."""

    name: str  # e.g. "p=1/2", "task 1"
    task: str  # "circle" | "qa1" | "qa2"
    K: int
    N: int
    p: str | None = None
    M: int = M_PAPER
    steps: int = 50
    eta: float = 1.0
    eps: float = 0.1
    init: str = "zero"
    sigma: float = 0.01
    normalize: bool = False
    relu_width: int | None = None
    train_size: int = 1000
    test_size: int = 1000
    seed: int = 0
    snapshots: tuple[int, ...] = ()
    probe: bool = False  # keep X·S of a few fixed walks at T (Fig 13)
    v_every_step: bool = False  # record V's distance from the form a·1ᵀ at every step (sensitivity)

    def make_task(self) -> CircleWalk | FiniteTask:
        """The rwtoolkit.tasks task of this run."""
        if self.task == "circle":
            return CircleWalk(self.K, self.N, self.p)
        return qa_task1() if self.task == "qa1" else qa_task2()

    def build(self, choices: Choices) -> tuple[CircleWalk | FiniteTask, ModelConfig, TrainConfig]:
        """(task, ModelConfig, TrainConfig) of this run under ``choices`` (sum loss = η × train size)."""
        normalize = self.normalize if choices.normalize is None else choices.normalize
        model = ModelConfig(
            K=self.K,
            N=self.N,
            M=self.M,
            pos="sine",
            mu=MU_OPTIONS[choices.mu](self.M),
            normalize_attention=normalize,
            relu_width=self.relu_width,
            gram=choices.gram,
        )
        eta = self.eta * (self.train_size if choices.reduction == "sum" else 1)
        cfg = TrainConfig(
            steps=self.steps,
            eta=eta,
            eps=self.eps,
            loss="log",
            init=self.init,
            sigma=self.sigma,
            seed=self.seed + choices.seed,
            train_size=self.train_size,
            test_size=self.test_size,
            dtype=choices.dtype,
            snapshots=self.snapshots,
            kl_norm=choices.kl_norm,
            threads=1,  # the tensors are small; runs go in parallel processes instead
        )
        return self.make_task(), model, cfg

    def describe(self) -> str:
        """The stated setting in one line, for plot titles."""
        what = f"K={self.K}, N={self.N}, p={self.p}" if self.task == "circle" else f"QA {self.name}"
        init = "zero init" if self.init == "zero" else f"N(0,{self.sigma}²) init"
        relu = f", ReLU m={self.relu_width}" if self.relu_width else ""
        return f"{what}, M={self.M}, η={self.eta:g}, ε={self.eps:g}, {init}{relu}, {self.train_size} walks"


@dataclass(frozen=True)
class FigureSpec:
    """One figure of the paper: its runs, the option of the main panels and the options compared."""

    name: str  # "fig4"
    title: str
    runs: tuple[RunSpec, ...]
    main: Choices
    options: tuple[Choices, ...] = ()  # every option trained (main first); () = main only
    source: str | None = None  # the figure whose runs this one reuses (figs 11-13 reuse fig6)
    notes: str = ""
    extra: dict = field(default_factory=dict)

    def all_options(self) -> tuple[Choices, ...]:
        """``main`` followed by the other options, without repeats."""
        out = [self.main]
        out += [c for c in self.options if c not in out]
        return tuple(out)


FIGURE_NAMES = ("fig2", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10", "fig11", "fig12", "fig13")

#: Steps at which Figs 11-13 show the Fig 6 runs (paper: 100/400/700/1000).
VIS_STEPS = (100, 400, 700, 1000)


def _circle_options(main: Choices) -> tuple[Choices, ...]:
    """One-at-a-time departures from ``main``: the other two μ, float32, the computed Gram, sum loss."""
    return (
        main,
        replace(main, mu="1"),
        replace(main, mu="sqrtM"),
        replace(main, dtype="float32"),
        replace(main, gram="computed"),
        replace(main, reduction="sum"),
    )


def figure_specs(quick: bool = False) -> dict[str, FigureSpec]:
    """Every figure's spec; ``quick`` shrinks data sizes and step counts for CI (same qualitative picture)."""
    walks = 1000  # kept in --quick: smaller sets widen the label-count imbalance that V ∝ 1 is judged against
    zero_steps = 20 if quick else 50
    main = Choices()  # μ = M/2 (the sine construction's own), float64, mean loss, ideal Gram

    def circle_pair(K: int, N: int, p: str) -> RunSpec:
        return RunSpec(
            name=f"p={p}",
            task="circle",
            K=K,
            N=N,
            p=p,
            steps=zero_steps,
            train_size=walks,
            test_size=walks,
            snapshots=(1,),
        )

    specs: dict[str, FigureSpec] = {}
    specs["fig2"] = FigureSpec(
        name="fig2",
        title="The task: transition matrix Π, example walks and the first value step V(1)",
        runs=(
            RunSpec(
                name="p=1/2", task="circle", K=6, N=97, p="1/2", steps=1, train_size=walks, test_size=walks
            ),
            RunSpec(name="p=1", task="circle", K=6, N=97, p="1", steps=1, train_size=walks, test_size=walks),
        ),
        main=main,
        notes="Our choice for Fig 2: the setting itself (Π, example walks) and V(1) of Lemma C.1.",
    )
    for name, (K, N), p, what in (
        ("fig4", (6, 97), "1/2", "success at p = 1/2"),
        ("fig5", (6, 97), "1", "failure at p = 1"),
        ("fig8", (20, 101), "1/2", "success at p = 1/2, larger K"),
        ("fig9", (20, 101), "1", "failure at p = 1, larger K"),
    ):
        specs[name] = FigureSpec(
            name=name,
            title=f"Zero init, K={K}, N={N}, M={M_PAPER}: {what}",
            runs=(circle_pair(K, N, p),),
            main=main,
            options=_circle_options(main),
        )
    f6_steps = 1000  # the claims are about iterations 400 and 1000: --quick keeps them
    f6_test = (
        250 if quick else 1000
    )  # --quick shrinks only the test set (the sum option's η × n needs n = 1000)
    snaps = tuple(s for s in VIS_STEPS if s <= f6_steps)
    f6_runs = tuple(
        RunSpec(
            name=f"p={p}",
            task="circle",
            K=6,
            N=97,
            p=p,
            steps=f6_steps,
            eta=0.01,
            init="gaussian",
            sigma=0.01,
            normalize=True,
            train_size=1000,
            test_size=f6_test,
            snapshots=snaps,
            probe=True,
        )
        for p in ("1/2", "1")
    )
    # With the mean loss nothing moves in 1000 iterations at η = 0.01, so μ and precision are varied on the sum loss.
    f6_sum = replace(main, reduction="sum")
    f6_options = (
        main,
        f6_sum,
        replace(f6_sum, kl_norm="shift"),
        replace(f6_sum, mu="1"),
        replace(f6_sum, mu="sqrtM"),
        replace(f6_sum, dtype="float32"),
        replace(f6_sum, seed=1),
        replace(f6_sum, seed=2),
    )
    specs["fig6"] = FigureSpec(
        name="fig6",
        title="Random init N(0, 0.01²), η=0.01, x̃ normalised in the softmax, 1000 iterations",
        runs=f6_runs,
        main=main,
        options=f6_options if not quick else f6_options[:2],
    )
    qa_walks = 300 if quick else 1000
    qa_steps = 100 if quick else 200
    relu_walks = 300 if quick else 1024
    for name, relu, n in (("fig7", None, qa_walks), ("fig10", 19, relu_walks)):
        runs = tuple(
            RunSpec(
                name=label,
                task=task,
                K=19,
                N=N,
                steps=qa_steps,
                eta=0.1,
                init="gaussian",
                sigma=0.01,
                relu_width=relu,
                train_size=n,
                test_size=n,
            )
            for label, task, N in (("task 1", "qa1", 17), ("task 2", "qa2", 19))
        )
        qa_main = replace(main, normalize=False)
        options = (
            qa_main,
            replace(qa_main, normalize=True),
            replace(qa_main, reduction="sum"),
            replace(qa_main, normalize=True, reduction="sum"),
            replace(qa_main, normalize=True, seed=1),
            replace(qa_main, normalize=True, seed=2),
        )
        specs[name] = FigureSpec(
            name=name,
            title=(
                "QA tasks, one-layer transformer" if relu is None else "QA tasks, with a ReLU layer (m=19)"
            )
            + ", N(0, 0.01²) init, η=0.1",
            runs=runs,
            main=qa_main,
            options=options if not quick else options[:2],
        )
    for name, what in (
        ("fig11", "the value matrix V"),
        ("fig12", "the attention S"),
        ("fig13", "the attended token X·S"),
    ):
        specs[name] = FigureSpec(
            notes="No claim row: what Fig 13 illustrates (X·S picks the parent token) is checked by the Fig 12 row."
            if name == "fig13"
            else "",
            name=name,
            title=f"Fig 6 runs: {what} at iterations {', '.join(map(str, snaps))}",
            runs=f6_runs,
            main=main,
            # all trained for Fig 6 already: the sum loss is the one that learns, and seeds differ in what
            options=(main, f6_sum, replace(f6_sum, seed=1), replace(f6_sum, seed=2))
            if not quick
            else (main, f6_sum),
            source="fig6",
        )
    return specs


def sensitivity_runs(quick: bool = False) -> tuple[RunSpec, tuple[Choices, ...]]:
    """The Fig 5 setting (p=1, K=6, N=97, M=1000) up to 1000 iterations and the μ × precision × Gram grid."""
    steps = 1000 if not quick else 300
    walks = 1000 if not quick else 200
    run = RunSpec(
        name="p=1",
        task="circle",
        K=6,
        N=97,
        p="1",
        steps=steps,
        train_size=walks,
        test_size=walks,
        v_every_step=True,
    )
    grid = tuple(
        Choices(mu=mu, dtype=dtype, gram=gram)
        for gram in ("computed", "ideal")
        for mu in MU_OPTIONS
        for dtype in ("float32", "float64")
    )
    return run, grid
