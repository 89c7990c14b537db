"""A PyTorch ``nn.Module`` traced onto the tape: :func:`trace_torch` (issue 41, item 2).

The module is exported with ``torch.export.export`` on example token ids (2, L) int64, the batch axis a dynamic
``torch.export.Dim``, and its graph lowered to core ATen (``run_decompositions``, keeping ``one_hot``); each ATen
node is mapped to a neutral op of :data:`~rwtoolkit.models.traced.OP_TABLE`.

Why ``torch.export`` and core ATen, not ``torch.fx.symbolic_trace``: export records every tensor's shape, with the
batch size a symbol, so a reshape that names the batch (``view(B, T, C)``) is rewritten with −1 and the program runs
on any population n; it lifts parameters and buffers with their module names; and core ATen is one closed set of
operations into which ``einsum``, ``nn.Linear``, ``matmul``, ``masked_fill`` and the rest decompose, so one table of
about forty ATen ops covers what the field writes. ``symbolic_trace`` records module calls and Python operators
without shapes, and leaves each composite (einsum, linear, scaled dot-product attention) to be mapped by hand.

Constant folding: a node whose inputs are all constants (buffers, tensor constants, ``arange``, ``tril``, a mask
``tril == 0``, ``scalar_tensor``) is evaluated by PyTorch itself during the trace and enters the program as a constant.

Axes (``TracedProgram.axes``), inferred where obvious and None elsewhere:

* a parameter read by ``embedding`` at the token ids: its rows index tokens (``("token", None, ...)``);
* a parameter read by ``embedding`` at constant ids (``wpe(arange(T))``): its rows index positions;
* the unembedding: a parameter whose axis of size S is the logits' last axis through the final matrix product
  (``lm_head.weight`` of ``x @ Wᵀ``; its bias): that axis indexes tokens.

The module runs in eval mode while it is traced (dropout off); its training flag is restored.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import math
import operator
import os
import sysconfig
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from rwtoolkit.models.traced._program import Node, TracedProgram, unknown_op

#: The ATen ops that are shape and dtype bookkeeping or runtime assertions: no value of the program.
_SKIPPED = frozenset(
    {
        "sym_size",
        "sym_numel",
        "sym_stride",
        "_assert_tensor_metadata",
        "_assert_async",
        "_assert_scalar",
        "sym_constrain_range",
        "sym_constrain_range_for_size",
    }
)
#: ATen ops that are the identity on the values the program holds (copies, aliases, float dtype casts).
_IDENTITY = frozenset({"clone", "alias", "detach", "contiguous", "lift_fresh_copy", "_to_copy", "to", "copy"})
#: ATen ops that give their input another shape (the output's shape, read from the trace).
_RESHAPE = frozenset({"view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "flatten", "view_as"})
_UNARY = {"exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "neg": "neg", "relu": "relu"}
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "rsub": "sub"}


def _library_dirs() -> tuple[str, ...]:
    """The folders whose frames are not the user's: torch's, this toolkit's and Python's standard library."""
    import torch

    return (
        str(Path(torch.__file__).resolve().parent),
        str(Path(__file__).resolve().parents[2]),
        str(Path(sysconfig.get_paths()["stdlib"]).resolve()),
    )


def _source(node: Any, fallback: str, libraries: tuple[str, ...]) -> str:
    """``file:line`` of the user's frame that made ``node``: the innermost frame of its stack trace outside
    ``libraries`` (``fallback`` where the trace has none)."""
    trace = node.meta.get("stack_trace") or ""
    found = None
    for line in trace.splitlines():
        line = line.strip()
        if not line.startswith('File "'):
            continue
        path, _, rest = line[len('File "') :].partition('", line ')
        number = rest.split(",")[0]
        resolved = str(Path(path).resolve()) if path and not path.startswith("<") else path
        if resolved.startswith(libraries) or not number.isdigit():
            continue
        found = f"{_display(path)}:{number}"
    return found or fallback


def _display(path: str) -> str:
    """A path relative to the working directory where it lies under it."""
    try:
        return os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd()) else path
    except (OSError, ValueError):
        return path


def _module_source(module: Any) -> str:
    """``file:line`` of the module's ``forward`` (where a node's own stack trace names no user frame)."""
    try:
        forward = type(module).forward
        return f"{_display(inspect.getsourcefile(forward) or '?')}:{inspect.getsourcelines(forward)[1]}"
    except (OSError, TypeError):
        return f"<{type(module).__name__}.forward>"


def _opname(target: Any) -> str:
    """The ATen op's name without overload (``aten.add.Tensor`` -> ``add``), or the Python function's."""
    name = getattr(target, "_opname", None)
    if name is None:
        name = getattr(target, "__name__", str(target))
    return str(name)


class _Tracer:
    """The mapping of one exported graph to a :class:`TracedProgram`."""

    def __init__(self, module: Any, S: int, L: int) -> None:
        import torch

        self.torch = torch
        self.module, self.S, self.L = module, S, L
        self.fallback = _module_source(module)
        self.libraries = _library_dirs()
        self.param_of: dict[Any, str] = {}  # placeholder -> the parameter's name
        self.constants: list[np.ndarray] = []
        self.nodes: list[tuple[str, tuple[tuple[str, int], ...], dict[str, Any], str]] = []
        # fx node -> ("param", i) | ("tokens", 0) | ("const", k) | ("node", k); or a folded torch value
        self.ref: dict[Any, tuple[str, int]] = {}
        self.folded: dict[Any, Any] = {}
        self.uses: dict[str, list[tuple[str, Any]]] = {}  # parameter -> how it is read (axes)

    # values ----------------------------------------------------------------------------------------
    def constant(self, value: Any) -> tuple[str, int]:
        torch = self.torch
        t = value if isinstance(value, torch.Tensor) else torch.tensor(value)
        t = t.detach().cpu()
        if t.dtype == torch.bool:
            array = t.numpy().astype(np.bool_)
        elif t.is_floating_point():
            array = t.to(torch.float64).numpy().astype(np.float64)
        else:
            array = t.to(torch.int64).numpy().astype(np.int64)
        self.constants.append(np.array(array))
        return ("const", len(self.constants) - 1)

    def emit(
        self, op: str, inputs: list[tuple[str, int]], attrs: dict[str, Any], source: str
    ) -> tuple[str, int]:
        self.nodes.append((op, tuple(inputs), attrs, source))
        return ("node", len(self.nodes) - 1)

    def value(self, arg: Any, source: str) -> tuple[str, int]:
        """The program value of a node's tensor argument (a folded constant enters the constants)."""
        fx = self.torch.fx
        if isinstance(arg, fx.Node):
            if arg in self.ref:
                return self.ref[arg]
            if arg in self.folded:
                self.ref[arg] = self.constant(self.folded[arg])
                return self.ref[arg]
            raise ValueError(f"torch trace: {arg.name} at {source} is not a tensor of the program")
        if isinstance(arg, (int, float, bool)):
            return self.constant(arg)
        raise ValueError(f"torch trace: argument {arg!r} at {source} is not a tensor or a number")

    def is_const(self, arg: Any) -> bool:
        return not isinstance(arg, self.torch.fx.Node) or arg in self.folded

    def folded_value(self, arg: Any) -> Any:
        fx = self.torch.fx
        if isinstance(arg, fx.Node):
            return self.folded[arg]
        if isinstance(arg, (list, tuple)):
            return type(arg)(self.folded_value(a) for a in arg)
        return arg

    # shapes ----------------------------------------------------------------------------------------
    @staticmethod
    def static_int(s: Any) -> int | None:
        if isinstance(s, int):
            return s
        expr = getattr(getattr(s, "node", None), "expr", None)
        if expr is not None and getattr(expr, "is_number", False):
            return int(expr)
        return None

    def shape_of(self, node: Any) -> tuple[Any, ...]:
        val = node.meta.get("val")
        return tuple(val.shape)

    def free_shape(self, shape: tuple[Any, ...], source: str, what: str) -> tuple[int, ...]:
        """The shape with its one batch-dependent size −1; one line where two sizes depend on the batch."""
        sizes = [self.static_int(s) for s in shape]
        if sizes.count(None) > 1:
            raise ValueError(
                f"torch trace: {what} at {source} has sizes {tuple(str(s) for s in shape)}: more than one depends "
                "on the batch size"
            )
        return tuple(-1 if s is None else s for s in sizes)

    # the mapping -----------------------------------------------------------------------------------
    def run(self, ep: Any, tokens_name: str) -> TracedProgram:
        torch = self.torch
        signature = ep.graph_signature
        params = dict(self.module.named_parameters())
        trained = [name for name, p in params.items() if p.requires_grad]
        index = {name: i for i, name in enumerate(trained)}
        state = {**dict(self.module.named_parameters()), **dict(self.module.named_buffers())}
        by_placeholder = {
            **signature.inputs_to_parameters,
            **signature.inputs_to_buffers,
        }
        lifted = getattr(signature, "inputs_to_lifted_tensor_constants", {})
        output = None
        for node in ep.graph.nodes:
            source = _source(node, self.fallback, self.libraries)
            if node.op == "placeholder":
                if node.name == tokens_name:
                    self.ref[node] = ("tokens", 0)
                elif node.name in by_placeholder and by_placeholder[node.name] in index:
                    self.ref[node] = ("param", index[by_placeholder[node.name]])
                    self.param_of[node] = by_placeholder[node.name]
                elif node.name in by_placeholder:
                    self.folded[node] = state[by_placeholder[node.name]].detach()
                elif node.name in lifted:
                    self.folded[node] = ep.constants[lifted[node.name]].detach()
                else:
                    raise ValueError(
                        f"torch trace: input {node.name} is neither the token ids nor a parameter or buffer"
                    )
            elif node.op == "call_function":
                self.call(node, source)
            elif node.op == "output":
                outs = [a for a in node.args[0] if a is not None]
                if len(outs) != 1:
                    raise ValueError(
                        f"torch trace: the module returns {len(outs)} tensors; it must return the logits (n, L, S) alone"
                    )
                output = outs[0]
            else:
                raise ValueError(
                    f"torch trace: graph node {node.op} {node.name} at {source} is not supported"
                )
        assert output is not None
        shape = self.shape_of(output)
        if len(shape) != 3 or self.static_int(shape[1]) != self.L or self.static_int(shape[2]) != self.S:
            raise ValueError(
                f"torch trace: the module returns shape {tuple(str(s) for s in shape)}; logits (n, L, S) = "
                f"(n, {self.L}, {self.S}) expected"
            )
        out_ref = self.value(output, self.fallback)
        P, C = len(trained), len(self.constants)

        def number(ref: tuple[str, int]) -> int:
            kind, k = ref
            return {"param": k, "tokens": P, "const": P + 1 + k, "node": P + 1 + C + k}[kind]

        nodes = [
            Node(op, tuple(number(r) for r in inputs), attrs, src) for op, inputs, attrs, src in self.nodes
        ]
        initial = {name: params[name].detach().to(torch.float64).cpu().numpy().copy() for name in trained}
        return TracedProgram(
            parameters={name: tuple(params[name].shape) for name in trained},
            initial=initial,
            constants=self.constants,
            nodes=nodes,
            output=number(out_ref),
            axes=self.axes(trained, params, output),
            framework="torch",
        )

    def call(self, node: Any, source: str) -> None:
        torch = self.torch
        fx = torch.fx
        target = node.target
        name = _opname(target)
        val = node.meta.get("val")
        if name in _SKIPPED or target in (
            operator.mul,
            operator.add,
            operator.sub,
            operator.floordiv,
            operator.neg,
        ):
            return
        if isinstance(
            val, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)
        ) and not isinstance(val, torch.Tensor):
            return
        flat = [a for a in _flatten((node.args, node.kwargs)) if isinstance(a, fx.Node)]
        if target is operator.getitem:
            self.getitem(node, source)
            return
        if any(word in name for word in ("rand", "bernoulli", "normal", "uniform", "dropout", "multinomial")):
            raise unknown_op("torch", name, source)  # a random draw is no constant of the program
        if all(self.is_const(a) for a in flat) and not any(
            isinstance(a.meta.get("val"), (torch.SymInt, torch.SymFloat)) for a in flat
        ):
            try:
                self.folded[node] = target(*self.folded_value(node.args), **self.folded_value(node.kwargs))
                return
            except Exception as error:  # noqa: BLE001 - a fold that fails is a trace that cannot be mapped
                raise ValueError(
                    f"torch trace: cannot evaluate the constant {name} at {source}: {error}"
                ) from None
        handler = getattr(self, f"op_{name}", None)
        if name in _IDENTITY:
            self.identity(node, source)
        elif name in _RESHAPE:
            shape = self.free_shape(self.shape_of(node), source, name)
            self.ref[node] = self.emit(
                "reshape", [self.value(node.args[0], source)], {"shape": shape}, source
            )
        elif name in _UNARY:
            self.ref[node] = self.emit(_UNARY[name], [self.value(node.args[0], source)], {}, source)
        elif name in _BINARY:
            self.binary(node, name, source)
        elif handler is not None:
            handler(node, source)
        else:
            raise unknown_op("torch", name, source)

    def getitem(self, node: Any, source: str) -> None:
        parent, i = node.args
        if isinstance(parent, self.torch.fx.Node) and parent in self.folded:
            self.folded[node] = self.folded[parent][i]
        elif isinstance(parent, self.torch.fx.Node) and parent in self.ref and i == 0:
            self.ref[node] = self.ref[parent]  # native_layer_norm's output (its mean and rstd are not values)
        else:
            raise unknown_op("torch", f"{_opname(getattr(parent, 'target', parent))}[{i}]", source)

    def identity(self, node: Any, source: str) -> None:
        """A copy or a dtype cast: a cast to floats keeps the value (the arithmetic holds it); a cast to integers
        or booleans only of integers or booleans (ids, masks), never of a computed real value."""
        x = node.args[0]
        new, old = getattr(node.meta.get("val"), "dtype", None), getattr(x.meta.get("val"), "dtype", None)
        if new is not None and old is not None and not new.is_floating_point and old.is_floating_point:
            raise unknown_op("torch", f"{_opname(node.target)}(dtype={new}) of real values", source)
        self.ref[node] = self.value(x, source)

    def binary(self, node: Any, name: str, source: str) -> None:
        a, b = node.args[0], node.args[1]
        alpha = node.kwargs.get("alpha", node.args[2] if len(node.args) > 2 else 1)
        if name == "rsub":
            a, b = b, a
        if isinstance(b, (int, float)) and name == "mul":
            self.ref[node] = self.emit("scale", [self.value(a, source)], {"value": float(b)}, source)
            return
        if isinstance(a, (int, float)) and name == "mul":
            self.ref[node] = self.emit("scale", [self.value(b, source)], {"value": float(a)}, source)
            return
        if name in ("div",) and node.kwargs.get("rounding_mode") is not None:
            raise unknown_op("torch", f"div(rounding_mode={node.kwargs['rounding_mode']!r})", source)
        bv = self.value(b, source)
        if alpha != 1:
            bv = self.emit("scale", [bv], {"value": float(alpha)}, source)
        self.ref[node] = self.emit(_BINARY[name], [self.value(a, source), bv], {}, source)

    # ops with arguments ----------------------------------------------------------------------------
    def op_mm(self, node: Any, source: str) -> None:
        self.ref[node] = self.emit("matmul", [self.value(a, source) for a in node.args[:2]], {}, source)

    op_bmm = op_mm
    op_matmul = op_mm

    def op_addmm(self, node: Any, source: str) -> None:
        bias, a, b = node.args[:3]
        beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
        product = self.emit("matmul", [self.value(a, source), self.value(b, source)], {}, source)
        if alpha != 1:
            product = self.emit("scale", [product], {"value": float(alpha)}, source)
        bv = self.value(bias, source)
        if beta != 1:
            bv = self.emit("scale", [bv], {"value": float(beta)}, source)
        self.ref[node] = self.emit("add", [product, bv], {}, source)

    def op_linear(self, node: Any, source: str) -> None:
        x, w = node.args[:2]
        bias = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
        wt = self.emit("transpose", [self.value(w, source)], {"dim0": 0, "dim1": 1}, source)
        out = self.emit("matmul", [self.value(x, source), wt], {}, source)
        self.ref[node] = (
            out if bias is None else self.emit("add", [out, self.value(bias, source)], {}, source)
        )

    def op_embedding(self, node: Any, source: str) -> None:
        weight, ids = node.args[:2]
        self.use(weight, ("embedding", ids))
        self.ref[node] = self.emit(
            "embedding", [self.value(weight, source), self.value(ids, source)], {}, source
        )

    def op_index(self, node: Any, source: str) -> None:
        x, indices = node.args[:2]
        if len(indices) == 1 and indices[0] is not None:
            self.use(x, ("embedding", indices[0]))
            self.ref[node] = self.emit(
                "embedding", [self.value(x, source), self.value(indices[0], source)], {}, source
            )
            return
        raise unknown_op("torch", "index (other than table[ids] on the first axis)", source)

    def op_gather(self, node: Any, source: str) -> None:
        x, dim, index = node.args[:3]
        self.ref[node] = self.emit(
            "gather", [self.value(x, source), self.value(index, source)], {"axis": int(dim)}, source
        )

    def op_one_hot(self, node: Any, source: str) -> None:
        ids = node.args[0]
        k = node.args[1] if len(node.args) > 1 else node.kwargs.get("num_classes", -1)
        if k is None or int(k) < 0:
            raise ValueError(f"torch trace: one_hot at {source} needs num_classes (the number of classes)")
        self.ref[node] = self.emit("one_hot", [self.value(ids, source)], {"num_classes": int(k)}, source)

    def op_permute(self, node: Any, source: str) -> None:
        perm = tuple(int(p) for p in node.args[1])
        self.ref[node] = self.emit("permute", [self.value(node.args[0], source)], {"perm": perm}, source)

    def op_t(self, node: Any, source: str) -> None:
        self.ref[node] = self.emit(
            "transpose", [self.value(node.args[0], source)], {"dim0": 0, "dim1": -1}, source
        )

    def op_transpose(self, node: Any, source: str) -> None:
        x, d0, d1 = node.args[:3]
        self.ref[node] = self.emit(
            "transpose", [self.value(x, source)], {"dim0": int(d0), "dim1": int(d1)}, source
        )

    def op_expand(self, node: Any, source: str) -> None:
        x = node.args[0]
        old = self.shape_of(x)
        new = self.shape_of(node)
        lead = len(new) - len(old)
        shape = []
        for d, s in enumerate(new):
            if d >= lead and str(s) == str(old[d - lead]):
                shape.append(-1)
            elif (k := self.static_int(s)) is not None:
                shape.append(k)
            else:
                raise ValueError(f"torch trace: expand at {source} broadcasts an axis to the batch size {s}")
        self.ref[node] = self.emit("expand", [self.value(x, source)], {"shape": tuple(shape)}, source)

    def op_cat(self, node: Any, source: str) -> None:
        tensors = node.args[0]
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        self.ref[node] = self.emit(
            "concat", [self.value(t, source) for t in tensors], {"axis": int(dim)}, source
        )

    def op_slice(self, node: Any, source: str) -> None:
        x = node.args[0]
        args = list(node.args[1:]) + [None] * 4
        dim, start, stop, step = (args[0] or 0), args[1], args[2], args[3]
        size = self.shape_of(x)[int(dim)]

        def bound(b: Any) -> int | None:
            if b is None:
                return None
            k = self.static_int(b.meta["val"] if isinstance(b, self.torch.fx.Node) else b)
            if k is None:
                if str(b.meta["val"] if isinstance(b, self.torch.fx.Node) else b) == str(size):
                    return None  # up to the batch size: the whole axis
                raise ValueError(
                    f"torch trace: slice at {source} has a bound {b} depending on the batch size"
                )
            return k

        lo, hi, st = bound(start), bound(stop), bound(step)
        if self.static_int(size) is None and (
            lo not in (None, 0) or hi is not None and hi < 2**62 or st not in (None, 1)
        ):
            raise ValueError(f"torch trace: slice at {source} cuts the batch axis")
        self.ref[node] = self.emit(
            "slice",
            [self.value(x, source)],
            {"axis": int(dim), "start": lo, "stop": hi, "step": st},
            source,
        )

    def op_select(self, node: Any, source: str) -> None:
        x, dim, i = node.args[:3]
        if self.static_int(self.shape_of(x)[int(dim)]) is None:
            raise ValueError(f"torch trace: select at {source} picks one sequence of the batch")
        self.ref[node] = self.emit(
            "select", [self.value(x, source)], {"axis": int(dim), "index": int(i)}, source
        )

    def op_where(self, node: Any, source: str) -> None:
        self.ref[node] = self.emit("where", [self.value(a, source) for a in node.args[:3]], {}, source)

    def op_masked_fill(self, node: Any, source: str) -> None:
        x, mask, value = node.args[:3]
        if isinstance(value, self.torch.fx.Node):
            if value not in self.folded:
                raise ValueError(f"torch trace: masked_fill at {source} fills a computed value")
            value = float(self.folded[value])
        self.ref[node] = self.emit(
            "masked_fill", [self.value(x, source), self.value(mask, source)], {"value": float(value)}, source
        )

    def op_scaled_dot_product_attention(self, node: Any, source: str) -> None:
        """softmax(q kᵀ · scale, masked) v: a causal mask or a constant ``attn_mask`` (boolean: True takes part;
        float: added, −∞ left out of the softmax); dropout and grouped-query attention refused."""
        names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
        defaults = (None, None, None, None, 0.0, False, None, False)
        given = dict(zip(names, node.args, strict=False))
        a = {k: node.kwargs.get(k, given.get(k, d)) for k, d in zip(names, defaults, strict=True)}
        if a["dropout_p"] or a["enable_gqa"]:
            raise unknown_op("torch", "scaled_dot_product_attention with dropout or enable_gqa", source)
        q, k, v = (self.value(a[x], source) for x in ("query", "key", "value"))
        qs, ks = self.shape_of(a["query"]), self.shape_of(a["key"])
        Lq, Lk, E = self.static_int(qs[-2]), self.static_int(ks[-2]), self.static_int(qs[-1])
        if Lq is None or Lk is None or E is None:
            raise ValueError(
                f"torch trace: scaled_dot_product_attention at {source} has a batch-dependent length"
            )
        scale = a["scale"] if a["scale"] is not None else 1 / math.sqrt(E)
        kt = self.emit("transpose", [k], {"dim0": -2, "dim1": -1}, source)
        scores = self.emit(
            "scale", [self.emit("matmul", [q, kt], {}, source)], {"value": float(scale)}, source
        )
        masks = []
        if a["is_causal"]:
            masks.append(~np.tril(np.ones((Lq, Lk), dtype=np.bool_)))
        mask = a["attn_mask"]
        if mask is not None:
            if not self.is_const(mask):
                raise ValueError(
                    f"torch trace: scaled_dot_product_attention at {source} takes a computed attn_mask"
                )
            m = self.folded[mask].detach().cpu()
            if m.dtype == self.torch.bool:
                masks.append(~m.numpy())
            else:
                m = m.to(self.torch.float64).numpy()
                out = m == -math.inf
                finite = np.where(out, 0.0, m)
                if not np.isfinite(finite).all():
                    raise ValueError(
                        f"torch trace: scaled_dot_product_attention at {source}: attn_mask holds +inf or NaN"
                    )
                if finite.any():
                    scores = self.emit(
                        "add", [scores, self.constant(self.torch.as_tensor(finite))], {}, source
                    )
                masks.append(out)
        for m in masks:
            ref = self.constant(self.torch.as_tensor(np.asarray(m, dtype=np.bool_)))
            scores = self.emit("masked_fill", [scores, ref], {"value": -math.inf}, source)
        weights = self.emit("softmax", [scores], {"axis": -1}, source)
        self.ref[node] = self.emit("matmul", [weights, v], {}, source)

    def softmax_like(self, node: Any, source: str, op: str) -> None:
        x, dim = node.args[:2]
        self.ref[node] = self.emit(op, [self.value(x, source)], {"axis": int(dim)}, source)

    def op__softmax(self, node: Any, source: str) -> None:
        self.softmax_like(node, source, "softmax")

    op_softmax = op__softmax

    def op__log_softmax(self, node: Any, source: str) -> None:
        self.softmax_like(node, source, "log_softmax")

    op_log_softmax = op__log_softmax

    def op_gelu(self, node: Any, source: str) -> None:
        approximate = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
        if approximate != "none":
            raise unknown_op("torch", f"gelu(approximate={approximate!r})", source)
        self.ref[node] = self.emit("gelu", [self.value(node.args[0], source)], {}, source)

    def op_pow(self, node: Any, source: str) -> None:
        x, e = node.args[:2]
        if not isinstance(e, (int, float)) or not (float(e).is_integer() or abs(float(e)) == 0.5):
            raise unknown_op("torch", f"pow(exponent={e})", source)
        self.ref[node] = self.emit("pow", [self.value(x, source)], {"exponent": e}, source)

    def reduce(self, node: Any, source: str, op: str) -> None:
        x = node.args[0]
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        axis = None if dims is None or (isinstance(dims, (list, tuple)) and not dims) else dims
        axis = tuple(int(d) for d in axis) if isinstance(axis, (list, tuple)) else axis
        self.ref[node] = self.emit(
            op, [self.value(x, source)], {"axis": axis, "keepdim": bool(keepdim)}, source
        )

    def op_sum(self, node: Any, source: str) -> None:
        self.reduce(node, source, "sum")

    def op_mean(self, node: Any, source: str) -> None:
        self.reduce(node, source, "mean")

    def op_native_layer_norm(self, node: Any, source: str) -> None:
        x, shape, weight, bias, eps = node.args[:5]
        self.layer_norm(node, x, shape, weight, bias, eps, source)

    def op_layer_norm(self, node: Any, source: str) -> None:
        x, shape, weight, bias = (list(node.args) + [None] * 4)[:4]
        eps = node.args[4] if len(node.args) > 4 else node.kwargs.get("eps", 1e-5)
        self.layer_norm(
            node, x, shape, node.kwargs.get("weight", weight), node.kwargs.get("bias", bias), eps, source
        )

    def layer_norm(
        self, node: Any, x: Any, shape: Any, weight: Any, bias: Any, eps: Any, source: str
    ) -> None:
        inputs = [self.value(x, source)]
        inputs += [self.value(weight, source)] if weight is not None else []
        inputs += [self.value(bias, source)] if bias is not None else []
        attrs = {
            "normalized_shape": tuple(int(s) for s in shape),
            "eps": float(eps),
            "weight": weight is not None,
            "bias": bias is not None,
        }
        self.ref[node] = self.emit("layer_norm", inputs, attrs, source)

    # axes ------------------------------------------------------------------------------------------
    def use(self, weight: Any, how: tuple[str, Any]) -> None:
        if weight in self.param_of:
            self.uses.setdefault(self.param_of[weight], []).append(how)

    def axes(
        self, trained: list[str], params: dict[str, Any], output: Any
    ) -> dict[str, tuple[str | None, ...]]:
        out: dict[str, list[str | None]] = {name: [None] * params[name].dim() for name in trained}
        for name, hows in self.uses.items():
            for _, ids in hows:
                role = (
                    "token"
                    if self.ref.get(ids) == ("tokens", 0)
                    else ("position" if self.is_const(ids) else None)
                )
                if role is not None and out[name][0] in (None, role):
                    out[name][0] = role
        for name, axis in self.unembedding(output):
            if out[name][axis] is None:
                out[name][axis] = "token"
        return {name: tuple(roles) for name, roles in out.items()}

    def unembedding(self, output: Any) -> list[tuple[str, int]]:
        """(parameter, axis) whose axis is the logits' last axis through the final matrix product (and bias):
        the logits reached back through reshapes and copies from ``x @ W``, ``x @ Wᵀ``, ``addmm(b, x, Wᵀ)`` or
        ``x @ Wᵀ + b``."""
        fx = self.torch.fx
        passive = _IDENTITY | _RESHAPE

        def back(n: Any) -> Any:
            while isinstance(n, fx.Node) and _opname(n.target) in passive and n.args:
                n = n.args[0]
            return n

        found: list[tuple[str, int]] = []
        node = back(output)
        if not isinstance(node, fx.Node):
            return found
        name = _opname(node.target)
        if name == "add" and len(node.args) > 1 and node.args[1] in self.param_of:
            bias, node = node.args[1], back(node.args[0])
            if len(self.shape_of(bias)) == 1:
                found.append((self.param_of[bias], 0))
            name = _opname(node.target) if isinstance(node, fx.Node) else ""
        if name == "addmm":
            if node.args[0] in self.param_of and len(self.shape_of(node.args[0])) == 1:
                found.append((self.param_of[node.args[0]], 0))
            weight = node.args[2]
        elif name in ("mm", "matmul", "bmm"):
            weight = node.args[1]
        else:
            return found
        transposed = False
        while isinstance(weight, fx.Node) and _opname(weight.target) in ("permute", "t", "transpose"):
            transposed, weight = not transposed, weight.args[0]
        if weight in self.param_of and len(self.shape_of(weight)) == 2:
            found.append((self.param_of[weight], 0 if transposed else 1))
        return found


def _flatten(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flatten(item)]
    if isinstance(x, dict):
        return [y for item in x.values() for y in _flatten(item)]
    return [x]


#: torch.export's refusal of a program whose lifted constants hold a fake tensor. Seen once in a Dask worker on the
#: nanoGPT example (``wpe.lifted_tensor_0``, the positions' ``torch.arange``), where every other export of the same
#: module, in the same and in fresh processes, holds the real tensor: a nondeterministic failure inside torch, which
#: checks the constants itself, so an export that passes that check is the program.
_FAKE_CONSTANT = "fake tensor in the exported program constant"


def _export(module: Any, example: Any, batch: Any) -> Any:
    """``torch.export.export`` of ``module`` at a free batch size, non-strict; tried a second time (after a garbage
    collection) when torch refuses a fake tensor among its lifted constants (``_FAKE_CONSTANT``)."""
    import gc

    import torch

    try:
        return torch.export.export(module, (example,), dynamic_shapes=({0: batch},), strict=False)
    except RuntimeError as error:
        if _FAKE_CONSTANT not in str(error):
            raise
    gc.collect()
    return torch.export.export(module, (example,), dynamic_shapes=({0: batch},), strict=False)


def trace_torch(module: Any, S: int, L: int) -> TracedProgram:
    """The traced program of a PyTorch module mapping token ids (n, L) int64 to logits (n, L, S).

    The parameters are the module's ``named_parameters`` that require a gradient (names with dots kept; a frozen
    parameter is a constant), ``initial`` their values as float64; the batch size is free (module docstring: the
    export, the axes rule, constant folding). An op outside the table is refused in one line naming the op and the
    user's ``file:line``.

    >>> import torch
    >>> class Bigram(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.table = torch.nn.Embedding(2, 2)
    ...     def forward(self, idx):
    ...         return self.table(idx)
    >>> program = trace_torch(Bigram(), 2, 3)
    >>> [node.op for node in program.nodes], program.axes
    (['embedding'], {'table.weight': ('token', None)})
    """
    import torch

    for name, value in (("S", S), ("L", L)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"trace_torch: {name} must be an integer >= 1, got {value!r}")
    if not isinstance(module, torch.nn.Module):
        raise ValueError(f"trace_torch: expected a torch.nn.Module, got {type(module).__name__}")
    example = (torch.arange(2 * L, dtype=torch.int64) % S).reshape(2, L)
    training = module.training
    module.eval()
    quiet = logging.root.manager.disable
    try:
        # torch.export's own deprecation notices about its internals (pytree specs), and the tracebacks and
        # graphs its loggers and prints write to stderr on a failure, are not the user's: the refusal below is
        # the one line
        logging.disable(logging.CRITICAL)
        # einsum's contraction order chosen by opt_einsum depends on the sizes, so it would fix the batch size
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stderr(io.StringIO()),
            torch.backends.opt_einsum.flags(enabled=False),
        ):
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            batch = torch.export.Dim("batch", min=1)
            exported = _export(module, example, batch)
            table = torch.export.default_decompositions()
            # kept whole: one_hot's decomposition asserts on the ids, and scaled dot-product attention's adds a
            # guard for rows with every entry masked; each maps to the neutral ops directly
            table.pop(torch.ops.aten.one_hot.default, None)
            table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
            exported = exported.run_decompositions(table)
    except Exception as error:  # noqa: BLE001 - torch.export's many failures, each refused in one line
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"trace_torch: torch.export cannot trace {type(module).__name__}: {first}") from None
    finally:
        logging.disable(quiet)
        module.train(training)
    users = [
        s.arg.name
        for s in exported.graph_signature.input_specs
        if s.kind == torch.export.graph_signature.InputKind.USER_INPUT
    ]
    if len(users) != 1:
        raise ValueError(f"trace_torch: forward must take the token ids alone, it takes {len(users)} inputs")
    return _Tracer(module, S, L).run(exported, users[0])


__all__ = ["trace_torch"]
