"""C templates of ``lowering_rnn``: the gate kernels of MXNet's fused RNN, one time step each.

A gate kernel runs one thread per (row, unit) of a time step (``n = N * H``). The forward kernel
adds the biases to the two GEMM results of the step (``zx = x W^T``, ``zh = h U^T``), applies
the cell's forward formulas (``ops/rnn_cells.CELLS``, printed as C: the numpy reference
evaluates the same formulas) and stores ``h`` twice (the direction's contiguous state buffer,
which the next step's GEMM reads, and the layer output, strided by ``D * H``), ``c`` for LSTM,
and over the step's ``zx`` (and GRU's ``zh``) what the backward needs. The backward kernel
reads those, adds the output gradient to the carried ``dh``, applies the cell's backward
formulas and writes the pre-activation gradients over the same places, ready for the GEMMs.

Each kernel names its pointer parameters (``FORWARD_PARAMS``, ``BACKWARD_PARAMS``); the
lowering passes buffers in that order. Every read goes through ``sg_ld``, every value is a
float, stores convert to the step's dtype.
"""
from __future__ import annotations

from ...compiler.ops.rnn_cells import CELLS, GATES
from .codegen import Rendered, expr_to_c, grid_stride_kernel, ptr, with_dtype

# Pointer parameters of each kernel, per mode: (name, written). ``zx``/``zh``: the step's rows
# of the two GEMM results (row stride G*H); ``bias``: b then c of this layer and direction;
# ``y``/``dy``: the step's output (gradient) rows at this direction's column (stride D*H).
FORWARD_PARAMS: dict[str, tuple[tuple[str, bool], ...]] = {
    "lstm": (("zx", True), ("zh", False), ("bias", False), ("h_prev", False),
             ("c_prev", False), ("h", True), ("y", True), ("c", True)),
    "gru": (("zx", True), ("zh", True), ("bias", False), ("h_prev", False), ("h", True),
            ("y", True)),
    "rnn_tanh": (("zx", False), ("zh", False), ("bias", False), ("h", True), ("y", True)),
}
FORWARD_PARAMS["rnn_relu"] = FORWARD_PARAMS["rnn_tanh"]
BACKWARD_PARAMS: dict[str, tuple[tuple[str, bool], ...]] = {
    "lstm": (("zx", True), ("dh", False), ("dy", False), ("dc", True), ("c_prev", False),
             ("c", False)),
    "gru": (("zx", True), ("zh", True), ("dh", True), ("dy", False), ("h_prev", False)),
    "rnn_tanh": (("zx", True), ("dh", False), ("dy", False), ("h", False)),
}
BACKWARD_PARAMS["rnn_relu"] = BACKWARD_PARAMS["rnn_tanh"]


class _Gates:
    """C text of the step's gate rows: element ``(row, j)`` of gate ``g`` in ``zx``/``zh``
    (``z`` is the row's first element plus ``j``), and reads with the biases added."""

    def __init__(self, h: int, gh: int) -> None:
        self.h, self.gh = h, gh

    def zx(self, g: int) -> str:
        return f"zx[z + {g * self.h}]"

    def zh(self, g: int) -> str:
        return f"zh[z + {g * self.h}]"

    def x(self, g: int) -> str:
        """Input side plus ``b``."""
        return f"sg_ld({self.zx(g)}) + sg_ld(bias[j + {g * self.h}])"

    def r(self, g: int) -> str:
        """Recurrent side plus ``c`` (stored right after ``b``)."""
        return f"sg_ld({self.zh(g)}) + sg_ld(bias[j + {self.gh + g * self.h}])"

    def sum(self, g: int) -> str:
        return f"{self.x(g)} + {self.r(g)}"


IO = tuple[list[str], list[tuple[str, ...]]]


def _forward_io(mode: str, h: int, gh: int) -> IO:
    """(C value of each forward formula input, places each formula output is stored), in the
    order of ``CELLS[mode].forward_in`` / ``forward_out``."""
    g, state = _Gates(h, gh), ("h[i]", "y[yo]")
    return {
        "lstm": ([g.sum(k) for k in range(4)] + ["sg_ld(c_prev[i])"],
                 [(g.zx(k),) for k in range(4)] + [("c[i]",), state]),
        "gru": ([g.sum(0), g.sum(1), g.x(2), g.r(2), "sg_ld(h_prev[i])"],
                [(g.zx(0),), (g.zx(1),), (g.zx(2),), (g.zh(2),), state]),
        "rnn_tanh": ([g.sum(0)], [state]),
        "rnn_relu": ([g.sum(0)], [state]),
    }[mode]


def _backward_io(mode: str, h: int, gh: int) -> IO:
    """(C value of each backward formula input, places each formula output is stored), in
    the order of ``CELLS[mode].backward_in`` / ``backward_out``."""
    g, dh = _Gates(h, gh), "sg_ld(dh[i]) + sg_ld(dy[yo])"
    return {
        "lstm": ([dh, "sg_ld(dc[i])", "sg_ld(c_prev[i])"]
                 + [f"sg_ld({g.zx(k)})" for k in range(4)] + ["sg_ld(c[i])"],
                 [(g.zx(k),) for k in range(4)] + [("dc[i]",)]),
        "gru": ([dh, "sg_ld(h_prev[i])"] + [f"sg_ld({g.zx(k)})" for k in range(3)]
                + [f"sg_ld({g.zh(2)})"],
                [(g.zx(0), g.zh(0)), (g.zx(1), g.zh(1)), (g.zx(2),), (g.zh(2),), ("dh[i]",)]),
        "rnn_tanh": ([dh, "sg_ld(h[i])"], [(g.zx(0),)]),
        "rnn_relu": ([dh, "sg_ld(h[i])"], [(g.zx(0),)]),
    }[mode]


def _render(stem: str, mode: str, formulas: tuple, io: IO, params: tuple, h: int, gh: int,
            out_stride: int, dtype: str) -> Rendered:
    """One thread per (row, unit): the reads, the cell's formulas, the stores."""
    reads, stores = io
    if len(stores) != len(formulas):  # the tables above follow CELLS' order
        raise ValueError(f"{stem} {mode}: {len(stores)} stores for {len(formulas)} formulas")
    lines = [f"const float v{k} = {c};" for k, c in enumerate(reads)]
    body_lines, results = expr_to_c(formulas, [f"v{k}" for k in range(len(reads))])
    lines += body_lines
    lines += [f"{dst} = {val};" for val, dsts in zip(results, stores) for dst in dsts]
    body = (f"        const long long row = i / {h}LL, j = i - row * {h}LL;\n"
            f"        const long long z = row * {gh}LL + j, yo = row * {out_stride}LL + j;\n"
            "        (void)z; (void)yo;\n"
            + "".join(f"        {ln}\n" for ln in lines))
    sig = ", ".join(ptr(name, dtype, not written, False) for name, written in params)
    return grid_stride_kernel(with_dtype(f"{stem}_{mode}", dtype),
                              f"{mode},{h},{gh},{out_stride},{dtype}", sig, body, len(params))


def render_rnn_forward(mode: str, h: int, out_stride: int, dtype: str) -> Rendered:
    """The forward gate kernel of ``mode`` for ``h`` units and output rows of ``out_stride``
    elements, in ``dtype``; parameters ``FORWARD_PARAMS[mode]``."""
    gh = h * GATES[mode]
    return _render("rnn_gates", mode, CELLS[mode].forward, _forward_io(mode, h, gh),
                   FORWARD_PARAMS[mode], h, gh, out_stride, dtype)


def render_rnn_backward(mode: str, h: int, out_stride: int, dtype: str) -> Rendered:
    """The backward gate kernel of ``mode`` (see :func:`render_rnn_forward`); parameters
    ``BACKWARD_PARAMS[mode]``."""
    gh = h * GATES[mode]
    return _render("rnn_gates_backward", mode, CELLS[mode].backward,
                   _backward_io(mode, h, gh), BACKWARD_PARAMS[mode], h, gh, out_stride, dtype)

