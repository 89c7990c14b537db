"""The kit for every framework: NumPy and JAX ports of examples/plain_torch.py and of every bug of bugs.py.

Each port passes; each planted bug fails at the same first quantity as its PyTorch twin (both are run
here and their failing quantities compared). The user's own P: a correct sine P of its own (μ = M/2,
M ≠ N) passes and a shifted one fails with the assumption named. The protocols: a module with the user's
loss and optimizer (``Supervised``), a torch ``Functional`` differentiated by the kit, and what each refuses.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from rwtoolkit.analyses.check import (
    CheckOptions,
    Functional,
    ImplementationError,
    Mismatch,
    Supervised,
    assert_matches_exact,
    build_config,
    check,
    check_positions,
    load_factory,
)
from rwtoolkit.analyses.check._properties import TRAJECTORY
from rwtoolkit.tasks import CircleWalk

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
OPTIONS = CheckOptions(steps=2, examples=3)
sys.path.insert(0, str(EXAMPLES))
from bugs import FIRST_WRONG  # noqa: E402

PORTS = ["numpy", "jax"]


def _port(framework: str) -> str:
    if framework == "jax":
        pytest.importorskip("jax", reason="the JAX port needs the [jax] extra (CI installs it)")
    return framework


def _failures(report) -> list[str]:
    return [r.id for r in report.results if r.id in TRAJECTORY and r.status == "fail"]


@pytest.mark.parametrize("framework", PORTS)
def test_the_port_passes(framework) -> None:
    report = check(load_factory(f"{EXAMPLES}/plain_{_port(framework)}.py:model"), OPTIONS)
    assert report.exit_code == 0 and report.counts() == {"pass": 10, "fail": 0, "not checked": 0}, (
        report.render()
    )
    assert report.protocol == "functional"


@pytest.mark.parametrize("bug", sorted(FIRST_WRONG))
@pytest.mark.parametrize("framework", PORTS)
def test_each_ported_bug_fails_where_its_torch_twin_fails(framework, bug) -> None:
    port = check(load_factory(f"{EXAMPLES}/bugs_{_port(framework)}.py:{bug}"), OPTIONS)
    twin = check(load_factory(f"{EXAMPLES}/bugs.py:{bug}"), OPTIONS)
    assert port.exit_code == twin.exit_code == 1
    assert _failures(port) == _failures(twin) == [FIRST_WRONG[bug]], port.render()
    first = lambda report: next(r.failure["step"] for r in report.results if r.status == "fail")  # noqa: E731
    assert first(port) == first(twin)


@pytest.mark.parametrize("framework", PORTS)
def test_own_sine_positions_pass_and_a_shifted_one_is_named(framework) -> None:
    own = check(load_factory(f"{EXAMPLES}/plain_{_port(framework)}.py:own_sine"), OPTIONS)
    assert own.exit_code == 0, own.render()
    rows = {r.id: r for r in own.results}
    assert rows["P"].status == "pass" and rows["P_only_through_mu"].status == "not checked"
    shifted = check(load_factory(f"{EXAMPLES}/plain_{framework}.py:shifted_sine"), OPTIONS)
    rows = {r.id: r for r in shifted.results}
    assert rows["P"].status == "fail" and "orthogonality fails: p_1·p_2" in rows["P"].failure["text"]
    assert all(rows[q].status == "not checked" for q in ("V", "W_xN", "S", "f", "loss", "accuracy"))


def test_check_positions_names_each_assumption() -> None:
    i, m = np.arange(1, 5), np.arange(1, 8)
    P = np.sin(np.pi * np.outer(m, i) / 7)  # orthogonal, ‖p_i‖² = 7/2
    assert check_positions(P, 4).assumption is None and abs(check_positions(P, 4).mu - 3.5) < 1e-14
    skewed = P.copy()
    skewed[:, 1] *= 1.1
    assert check_positions(skewed, 4).assumption == "equal norms"
    query = P.copy()
    query[:, 3] *= 2
    assert check_positions(query, 4).assumption == "query column"
    assert check_positions(P[:, :3], 4).assumption == "shape"
    assert check_positions(P + 0.01, 4).assumption == "orthogonality"
    assert check_positions(np.sqrt(np.pi) * np.eye(3), 3).assumption == "rational mu"


def test_the_jax_port_compiles_once_for_every_configuration_drawn() -> None:
    """Padded to one bucketed shape, the port's one jitted function compiles once for the whole check
    (unpadded it compiled once per population shape, some forty times at examples=10)."""
    jax = pytest.importorskip("jax", reason="the JAX port needs the [jax] extra (CI installs it)")
    compiles: list[str] = []
    counting = [True]

    def listen(event: str, duration: float, **kwargs) -> None:
        if counting[0] and event.endswith("backend_compile_duration"):
            compiles.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        report = check(load_factory(f"{EXAMPLES}/plain_jax.py:model"), CheckOptions(steps=2, examples=10))
    finally:
        counting[0] = False
    assert report.exit_code == 0
    assert len(compiles) <= 1, compiles  # 0 when an earlier test of this process compiled the bucket


def test_jax_without_x64_is_refused_with_the_reason() -> None:
    pytest.importorskip("jax", reason="the JAX port needs the [jax] extra (CI installs it)")
    with pytest.raises(ImplementationError, match=r"JAX float32 array but the check runs in float64.*x64"):
        check(load_factory(f"{EXAMPLES}/plain_jax.py:float32_by_accident"), OPTIONS)


def test_a_non_finite_value_is_named_with_its_step_and_quantity() -> None:
    config = build_config(CircleWalk(3, 3, "1/2"), mu=1, eta=1, eps="1/10")
    with pytest.raises(Mismatch) as caught:
        assert_matches_exact(load_factory(f"{EXAMPLES}/bugs_numpy.py:eps_outside_log"), config, 1)
    assert caught.value.divergence.describe().startswith("loss at t=0: expected ")
    assert "got inf (the implementation gave inf)" in caught.value.divergence.describe()


class _Module(torch.nn.Module):
    """The paper's model, written here (module protocol)."""

    def __init__(self, K: int, M: int) -> None:
        super().__init__()
        self.V = torch.nn.Parameter(torch.zeros(K, K, dtype=torch.float64))
        self.W = torch.nn.Parameter(torch.zeros(K + M, K + M, dtype=torch.float64))
        self.K = K

    def attention(self, Xt):
        return torch.softmax(torch.einsum("nij,ik,nk->nj", Xt, self.W, Xt[:, :, -1]), dim=1)

    def forward(self, Xt):
        return torch.einsum("kl,nlj,nj->nk", self.V, Xt[:, : self.K, :], self.attention(Xt))


def _supervised(reduce: str = "mean", lr_factor: float = 1.0, eps_inside: bool = True):
    def factory(config):
        module = _Module(config.K, config.M)
        eps = config.floats.eps

        def loss(f, labels, weights):
            z = f.gather(1, labels[:, None])[:, 0]
            per = -torch.log(z + eps) if eps_inside else -torch.log(z) + eps
            return (weights * per).sum() if reduce == "mean" else per.sum()

        optimizer = torch.optim.SGD(module.parameters(), lr=lr_factor * config.floats.eta)
        return Supervised(module, loss, optimizer=optimizer)

    return factory


@pytest.mark.parametrize(
    "factory, first",
    [
        (_supervised(), None),
        (_supervised(reduce="sum"), "V"),
        (_supervised(lr_factor=2.0), "V"),
        (_supervised(eps_inside=False), "loss"),
    ],
    ids=["correct", "summed-loss", "doubled-lr", "eps-outside-log"],
)
def test_a_module_with_its_own_loss_and_optimizer_is_checked_through_both(factory, first) -> None:
    report = check(factory, OPTIONS)
    assert report.protocol == "supervised"
    assert _failures(report) == ([] if first is None else [first]), report.render()


def test_a_torch_functional_is_differentiated_by_the_kit_and_a_numpy_one_without_grad_is_refused() -> None:
    def torch_functional(config):
        K, M = config.K, config.M
        params = {
            "V": torch.zeros(K, K, dtype=torch.float64),
            "W": torch.zeros(K + M, K + M, dtype=torch.float64),
        }

        def forward(p, Xt):
            Xt = torch.as_tensor(Xt)
            S = torch.softmax(torch.einsum("nij,ik,nk->nj", Xt, p["W"], Xt[:, :, -1]), dim=1)
            return torch.einsum("kl,nlj,nj->nk", p["V"], Xt[:, :K, :], S)

        return Functional(params, forward)

    assert check(torch_functional, OPTIONS).exit_code == 0

    def numpy_without_grad(config):
        K, M = config.K, config.M
        return Functional(
            {"V": np.zeros((K, K)), "W": np.zeros((K + M, K + M))},
            lambda p, Xt: np.zeros((len(config.labels), K)),
        )

    with pytest.raises(ImplementationError, match="the kit differentiates a torch forward only"):
        check(numpy_without_grad, OPTIONS)


def test_the_factory_is_told_T_and_the_floats() -> None:
    def exact_length_loop(config):
        assert config.floats.eta == float(config.eta)
        module = load_factory(f"{EXAMPLES}/plain_torch.py:training")(config)
        return iter([next(module) for _ in range(config.steps + 1)])  # exactly T + 1 states

    assert check(exact_length_loop, CheckOptions(steps=3, examples=2)).exit_code == 0


def test_rw_check_leaves_no_hypothesis_folder_in_the_working_directory(tmp_path) -> None:
    import subprocess

    code = "import sys; from rwtoolkit.cli.main import main; sys.exit(main())"
    target = f"{EXAMPLES}/plain_numpy.py:model"
    proc = subprocess.run(  # the default steps and examples: hypothesis caches constants once it draws enough
        [sys.executable, "-c", code, "check", target],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (tmp_path / ".hypothesis").exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("framework", PORTS)
def test_a_numpy_or_jax_check_never_loads_torch(framework) -> None:
    """rw check of a NumPy or JAX implementation imports torch nowhere (about 1.5 s and 50 MiB of a
    process): the kit, rwtoolkit.engines.numeric's configurations and embeddings, and the CLI load it only where it is used."""
    import subprocess

    target = f"{EXAMPLES}/plain_{_port(framework)}.py:model"
    code = (
        "import sys; from rwtoolkit.cli.main import main\n"
        f"code = main(['check', {target!r}, '--steps', '1', '--examples', '2'])\n"
        "print('torch loaded:', 'torch' in sys.modules); sys.exit(code)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("torch loaded: False"), proc.stdout


def test_another_registered_model_goes_through_the_functional_protocol() -> None:
    """``--model key_query``: its parameters by their own names, the forward a torch function the kit differentiates."""
    from key_query_torch import KeyQueryTransformer

    def functional(config):
        net = KeyQueryTransformer(config.K, config.M, config.head_dim)
        params = {name: p.detach().clone() for name, p in net.named_parameters()}
        return Functional(params, lambda p, Xt: torch.func.functional_call(net, p, (torch.as_tensor(Xt),)))

    report = check(functional, CheckOptions(model="key_query", steps=2, examples=2))
    assert report.exit_code == 0 and report.protocol == "functional", report.render()
