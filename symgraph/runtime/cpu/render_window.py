"""Python (numba) source of the compiled CPU backend's sliding-window kernels, one per window
geometry with the geometry written in as constants: max pooling forward and backward (the
window's cells unrolled) and the convolution's im2col and col2im (``layers.py``).

Constants matter here: a max-pooling kernel with ``kh*kw`` constant cells keeps every value in
registers and its backward picks each window's first maximum with selects instead of branches
(a loop over a window given at run time took as long as numpy's pass per kernel offset, and
its branches mispredicted on every window: 3x slower). im2col and col2im go through a small
padded copy of each plane, so every index is a non-negative sum of loop counters and constants:
no bounds tests and no wraparound checks in the inner loops (numba's kernels over run-time
geometry spent more per 14-element row than numpy's strided copy). Kernels are written and
loaded like the elementwise ones (``kernels.load``: a module per kernel in the cache folder,
numba's disk cache beside it), named by a hash of their source.

Every kernel takes ``lo, hi`` first: the planes (``N*C``, pooling) or samples (im2col,
col2im) this call computes. Pooling compiles only windows that lie inside the input (no
padding, ``valid`` convention): :func:`why_not_window` says why another geometry runs the
numpy reference.

Example::

    >>> k = render_pool_forward((2, 2), (2, 2), "float32")
    >>> k.name.startswith("sg_maxpool2x2s2x2_f32_")
    True
    >>> "m = v if (v > m or v != v) else m" in k.source
    True
"""
from __future__ import annotations

import hashlib

from .render import FLOAT_TYPES, Kernel

Pair = tuple[int, int]

MAX_CELLS = 25
"""Largest window compiled (its cells are unrolled: a global pool over a large map would make
a kernel of thousands of lines)."""


def why_not_window(kernel: Pair, stride: Pair, pad: Pair, spatial: Pair, out: Pair) -> str:
    """Why max-pooling windows of this geometry are not compiled ("" when they are)."""
    if any(pad):
        return f"pad {pad} (compiled: unpadded windows)"
    if kernel[0] * kernel[1] > MAX_CELLS:
        return f"kernel {kernel}: more than {MAX_CELLS} cells to unroll"
    if any((o - 1) * s + k > n for o, s, k, n in zip(out, stride, kernel, spatial)):
        return f"windows past the input {spatial} (pooling_convention 'full')"
    return ""


def _cells(kernel: Pair) -> list[tuple[int, int, int]]:
    """(index, row, column) of each window cell in row-major order (MXNet's first maximum)."""
    return [(i * kernel[1] + j, i, j) for i in range(kernel[0]) for j in range(kernel[1])]


def _rows(kernel: Pair, stride: Pair, names: tuple[str, ...]) -> list[str]:
    """Statements binding each window row of each plane in ``names`` (``r0 = xp[oh*s + 0]``)."""
    return [f"            {n[0]}{i} = {n}[oh * {stride[0]} + {i}]"
            for n in names for i in range(kernel[0])]


def _channel_loop(lines: list[str], last: bool) -> list[str]:
    """``lines`` (one window's statements) inside a loop over the channels when ``last``."""
    if not last:
        return lines
    return ["                for ch in range(yr.shape[1]):"] + ["    " + ln for ln in lines]


def render_pool_forward(kernel: Pair, stride: Pair, dtype: str, last: bool = False) -> Kernel:
    """The kernel ``(lo, hi, x, y)``: ``y[p]`` the max over each window of ``x[p]`` (NaN
    propagates, as ``np.maximum``). ``p`` is a plane ``(H, W)`` of an NCHW array, or with
    ``last`` a sample ``(H, W, C)`` of an NHWC one (the channels the innermost loop)."""
    at = ", ch]" if last else "]"
    body = ["    for p in range(lo, hi):", "        xp = x[p]", "        yp = y[p]",
            "        for oh in range(yp.shape[0]):"]
    body += _rows(kernel, stride, ("xp",)) + [
        "            yr = yp[oh]", "            for ow in range(yp.shape[1]):",
        f"                c = ow * {stride[1]}"]
    cells = [f"m = x0[c{at}"]
    for k, i, j in _cells(kernel)[1:]:
        cells += [f"v = x{i}[c + {j}{at}", "m = v if (v > m or v != v) else m"]
    body += _channel_loop(["                " + ln for ln in cells + [f"yr[ow{at} = m"]], last)
    return _module(f"maxpool{kernel[0]}x{kernel[1]}s{stride[0]}x{stride[1]}{'l' if last else ''}",
                   "lo, hi, x, y", body, dtype)


def render_pool_backward(kernel: Pair, stride: Pair, dtype: str, cover: bool,
                         last: bool = False, mask: bool = False) -> Kernel:
    """The kernel ``(lo, hi, dy, x, y, dx)``: ``dx[p]`` gets each ``dy`` at its window's first
    cell equal to ``y`` (``p`` and ``last`` as in :func:`render_pool_forward`). ``cover``: the
    windows tile the input exactly (stride = kernel, no cell left over), so every cell is
    written once and nothing is zeroed or accumulated; otherwise ``dx`` accumulates (with
    ``last`` the caller zeroes it). ``mask``: ``dx`` times ``x > 0`` (the gradient of the ReLU
    whose output was pooled), applied once per window: the cell a window's ``dy`` goes to
    holds ``y``."""
    at = ", ch]" if last else "]"
    body = ["    z = dx.dtype.type(0)", "    for p in range(lo, hi):", "        xp = x[p]",
            "        dxp = dx[p]", "        yp = y[p]", "        gp = dy[p]"]
    if not cover and not last:
        body += _indented(_FILL.format(a="dxp", v="z"), 8)
    body += ["        for oh in range(yp.shape[0]):"] + _rows(kernel, stride, ("xp", "dxp"))
    body += ["            yr = yp[oh]", "            gr = gp[oh]",
             "            for ow in range(yp.shape[1]):", f"                c = ow * {stride[1]}"]
    cells = [f"t = yr[ow{at}", f"g = gr[ow{at}" + (" * F(t > z)" if mask else ""), "f = False"]
    store = "=" if cover else "+="
    for k, i, j in _cells(kernel):
        # h_k: this cell is the window's first maximum (f: one before it was)
        cells += [f"h{k} = (x{i}[c + {j}{at} == t) and not f", f"f = f or h{k}",
                  f"d{i}[c + {j}{at} {store} g if h{k} else z"]
    body += _channel_loop(["                " + ln for ln in cells], last)
    flags = ("t" if cover else "a") + ("l" if last else "") + ("m" if mask else "")
    return _module(f"maxpoolgrad{kernel[0]}x{kernel[1]}s{stride[0]}x{stride[1]}{flags}",
                   "lo, hi, dy, x, y, dx", body, dtype)


Geometry = tuple[int, ...]
"""(kh, kw, sh, sw, ph, pw, dh, dw) of a 2-D convolution."""

_PADDED = """    c_n = {x}.shape[1]
    h = {x}.shape[2]
    w = {x}.shape[3]
    for s in range(lo, hi):
        pad = pads[s]"""


def padded_plane(g: Geometry, spatial: Pair, out: Pair) -> Pair:
    """Rows and columns of the zero-padded plane a window kernel reads (``pads[s]``): the
    input at offset ``(ph, pw)`` and every window of the ``out`` grid inside it. The caller
    allocates the planes, one per sample (a kernel allocating its own took 0.4 s more to
    compile: numba's ``np.zeros``)."""
    kh, kw, sh, sw, ph, pw, dh, dw = g
    return (max((out[0] - 1) * sh + (kh - 1) * dh + 1, ph + spatial[0]),
            max((out[1] - 1) * sw + (kw - 1) * dw + 1, pw + spatial[1]))


_ROWS = """        for c in range(c_n):
{before}
            for k in range({kk}):
                i = k // {kw}
                j = k - i * {kw}
{cell}
                for oh in range(oh_n):
                    prow = pad[oh * {sh} + i * {dh}]
                    {crow}
                    for ow in range(ow_n):
                        {statement}"""
# Plane copies and fills as explicit loops: an array slice assignment (``pad[1:1 + h, ...] =
# x[s, c]``) makes numba compile its shape-mismatch error path, which took 5 of the 6 s that
# the first window kernel of a process spent compiling.
_COPY = """{dst}p = {dst_plane}
{src}p = {src_plane}
for r in range(h):
    {dst}r = {dst}p[{dr} + r]
    {src}r = {src}p[{sr} + r]
    for q in range(w):
        {dst}r[{dc} + q] = {src}r[{sc} + q]"""
_FILL = """for r in range({a}.shape[0]):
    {a}r = {a}[r]
    for q in range({a}.shape[1]):
        {a}r[q] = {v}"""
_DIMS = "oh_n = cols.shape[2]\now_n = cols.shape[3]"
# im2col's columns, per sample ``(N, R, OH, OW)`` or rows first ``(R, N, OH, OW)``: a run-time
# choice between two views, so one kernel writes both layouts (as fast as one per layout).
_EITHER = "cols[{r}, s] if rows_first else cols[s, {r}]"
_ONES = """if ones:
    one = cols[c_n * {kk}, s] if rows_first else cols[s, c_n * {kk}]
    for r in range(oh_n):
        oner = one[r]
        for q in range(ow_n):
            oner[q] = 1"""


def _indented(block: str, spaces: int) -> list[str]:
    """The lines of ``block`` indented by ``spaces``."""
    return [" " * spaces + ln for ln in block.split("\n")]


def _window_body(g: Geometry, x: str, block: tuple[str, str], statement: str, before: str,
                 after: str, per_sample: str = "", dims: str = "") -> list[str]:
    """A kernel body running ``statement`` for each cell of each window of each plane, over
    a zero-padded copy ``pad`` of the plane (``block``: the statements binding the columns'
    block of a window cell, and its row ``crow``; ``before``/``after``: statements per plane;
    ``per_sample``: statements run first for each sample; ``dims``: statements binding the
    output's ``oh_n, ow_n`` where they are no parameters)."""
    kh, kw, sh, sw, ph, pw, dh, dw = g
    fmt = {"x": x, "sh": sh, "sw": sw, "ph": ph, "pw": pw, "dh": dh, "kw": kw,
           "kk": kh * kw, "statement": statement.format(sw=sw, dw=dw)}
    fmt.update(cell=block[0].format(**fmt), crow=block[1])
    fmt["before"] = "\n".join(_indented(before.format(**fmt), 12))
    return ((_indented(dims, 4) if dims else []) + _PADDED.format(**fmt).split("\n")
            + (_indented(per_sample.format(**fmt), 8) if per_sample else [])
            + _ROWS.format(**fmt).split("\n")
            + (_indented(after.format(**fmt), 12) if after else []))


def render_im2col(g: Geometry, dtype: str) -> Kernel:
    """The kernel ``(lo, hi, x, cols, pads, rows_first, ones)``: ``cols[s, (c, i, j), oh, ow] =
    x[s, c, oh*sh - ph + i*dh, ow*sw - pw + j*dw]`` (0 in the padding); ``rows_first``:
    ``cols`` is laid out ``((c, i, j), s, oh, ow)`` instead (the weight gradient's GEMM
    operand). ``ones``: ``cols`` has one more row, ``(c, i, j) = C*kh*kw``, of ones (a bias
    column in the weights then adds the bias in the GEMM instead of in a pass over the
    output). ``pads``: one zeroed plane of :func:`padded_plane`'s size per sample (only
    their interiors are written). One kernel for both layouts: each more to compile costs
    about a second on a model's first step."""
    to_pad = _COPY.format(dst="pad", dst_plane="pad", dr="{ph}", dc="{pw}",
                          src="x", src_plane="x[s, c]", sr="0", sc="0")
    block = ("                ck = " + _EITHER.format(r="c * {kk} + k"), "crow = ck[oh]")
    body = _window_body(g, "x", block, "crow[ow] = prow[ow * {sw} + j * {dw}]", to_pad, "",
                        _ONES, _DIMS)
    return _module("im2col_" + "_".join(map(str, g)),
                   "lo, hi, x, cols, pads, rows_first, ones", body, dtype)


def render_col2im(g: Geometry, dtype: str) -> Kernel:
    """The kernel ``(lo, hi, cols, dx, pads)``, the adjoint of :func:`render_im2col`'s per-sample
    layout (``cols`` of shape ``(N, C*kh*kw, OH, OW)``, no ones row): ``dx[s]`` is the sum of
    every column entry of ``cols[s]`` on the cell it was read from (``pads``: a scratch plane
    of :func:`padded_plane`'s size per sample, zeroed here)."""
    from_pad = _COPY.format(dst="dx", dst_plane="dx[s, c]", dr="0", dc="0",
                            src="pad", src_plane="pad", sr="{ph}", sc="{pw}")
    block = ("                ck = cols[s, c * {kk} + k]", "crow = ck[oh]")
    body = _window_body(g, "dx", block, "prow[ow * {sw} + j * {dw}] += crow[ow]",
                        _FILL.format(a="pad", v="0"), from_pad, dims=_DIMS)
    return _module("col2im_" + "_".join(map(str, g)), "lo, hi, cols, dx, pads", body, dtype)


def _module(stem: str, params: str, body: list[str], dtype: str) -> Kernel:
    """The kernel module around ``body``, named by ``stem``, the dtype and a source hash."""
    ftype, tag = FLOAT_TYPES[dtype]
    text = "\n".join(body)
    digest = hashlib.sha1(f"{ftype}|{params}|{text}".encode()).hexdigest()[:10]
    name = f"sg_{stem}_{tag}_{digest}"
    source = (f'"""symgraph generated CPU kernel: {stem} ({dtype})"""\n'
              "import numba\nimport numpy as np\n\n"
              f"F = {ftype}\n\n\n"
              '@numba.njit(nogil=True, cache=True, error_model="numpy")\n'
              f"def {name}({params}):\n{text}\n\n\nKERNEL = {name}\n")
    return Kernel(name, source)
