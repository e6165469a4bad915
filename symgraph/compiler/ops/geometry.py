"""The geometry of a sliding-window node (convolution, deconvolution, pooling), made once.

A window node's geometry depends only on its attributes and its data shape. The op computes it
in one function (``conv.conv_window``, ``deconv.deconv_window``, ``pool.pool_window``,
``conv_act_pool.cap_window``), cached on (attrs, shape), so the shape rule, the numpy reference
and the CUDA lowering of one node all hold the *same* object; lowering passes it unchanged to
the C templates (``cuda/kernels_conv``, ``kernels_pool``, ``kernels_conv_pool``) and to cuDNN's
descriptors (``cuda/cudnn.ConvPlan``), as autodidax passes an equation's params to every rule.

The per-axis tuples (1 to 3 spatial axes) are the truth. The C templates are written for three
axes and read the scalar (depth, height, width) view below, where a 1-D layer has a height of 1
and a 2-D layer a depth of 1 (constant axes fold away when nvcc compiles the baked-in sizes);
cuDNN reads the tuples.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Optional

Shape = tuple[int, ...]


def dhw(values: Shape, fill: int) -> Shape:
    """``values`` (one entry per spatial axis, 1 to 3) as (depth, height, width): missing
    leading axes are ``fill`` (1 for sizes, strides and dilations, 0 for padding)."""
    return (fill,) * (3 - len(values)) + tuple(values)


@dataclass(frozen=True)
class Window:
    """Batch ``n``, input channels ``c``, and per spatial axis: input size, kernel, stride,
    padding (before the axis; a convolution pads as much after), dilation and output size."""

    n: int
    c: int
    spatial: Shape
    kernel: Shape
    stride: Shape
    pad: Shape
    dilate: Shape
    out: Shape
    # Data N(D)(H)WC (and a convolution's weights O(D)(H)WC; the fields keep the NC... order);
    # keyword-only so that subclasses may add fields without defaults.
    channel_last: bool = field(default=False, kw_only=True)

    # The (depth, height, width) scalars the C templates bake in.
    d = property(lambda s: dhw(s.spatial, 1)[0])
    h = property(lambda s: dhw(s.spatial, 1)[1])
    w = property(lambda s: dhw(s.spatial, 1)[2])
    kd = property(lambda s: dhw(s.kernel, 1)[0])
    kh = property(lambda s: dhw(s.kernel, 1)[1])
    kw = property(lambda s: dhw(s.kernel, 1)[2])
    sd = property(lambda s: dhw(s.stride, 1)[0])
    sh = property(lambda s: dhw(s.stride, 1)[1])
    sw = property(lambda s: dhw(s.stride, 1)[2])
    pd = property(lambda s: dhw(s.pad, 0)[0])
    ph = property(lambda s: dhw(s.pad, 0)[1])
    pw = property(lambda s: dhw(s.pad, 0)[2])
    dd = property(lambda s: dhw(s.dilate, 1)[0])
    dh = property(lambda s: dhw(s.dilate, 1)[1])
    dw = property(lambda s: dhw(s.dilate, 1)[2])
    od = property(lambda s: dhw(s.out, 1)[0])
    oh = property(lambda s: dhw(s.out, 1)[1])
    ow = property(lambda s: dhw(s.out, 1)[2])

    @property
    def rank(self) -> int:
        """Spatial axes (1, 2 or 3)."""
        return len(self.kernel)

    @property
    def cells(self) -> int:
        """Input cells of one (n, c) plane."""
        return prod(self.spatial)

    @property
    def outs(self) -> int:
        """Output cells of one (n, c) plane."""
        return prod(self.out)


@dataclass(frozen=True)
class ConvWindow(Window):
    """A convolution: ``filters`` output channels; ``groups`` split the input channels and the
    filters into independent convolutions. A deconvolution is described by the convolution
    whose data gradient it is (``deconv.deconv_window``)."""

    filters: int
    groups: int

    @property
    def input_shape(self) -> Shape:
        """The data's shape, channels first."""
        return (self.n, self.c) + self.spatial

    @property
    def output_shape(self) -> Shape:
        """The output's shape, channels first."""
        return (self.n, self.filters) + self.out

    @property
    def weight_shape(self) -> Shape:
        """The weight's shape, channels first (O, I/groups, *kernel)."""
        return (self.filters, self.c // self.groups) + self.kernel

    @property
    def pix(self) -> int:
        """Output positions per image."""
        return self.outs

    @property
    def ckk(self) -> int:
        """Rows of the im2col column matrix: input channels times kernel cells."""
        return self.c * prod(self.kernel)

    @property
    def cols(self) -> int:
        """Columns of the im2col column matrix: output positions of the whole batch."""
        return self.n * self.pix


@dataclass(frozen=True)
class PoolWindow(Window):
    """A pooling layer (its dilation is 1): ``kind`` max / avg / sum, and whether avg counts
    the padding cells (``include_pad``)."""

    kind: str
    include_pad: bool

    @property
    def after(self) -> Shape:
        """Padding after each axis that puts every window inside (the 'full' convention's last
        window may reach past the symmetric padding)."""
        return tuple(max(p, (o - 1) * s + k - size - p) for p, o, s, k, size in
                     zip(self.pad, self.out, self.stride, self.kernel, self.spatial))

    @property
    def disjoint(self) -> bool:
        """No input cell lies in two windows (stride >= kernel on every axis)."""
        return all(s >= k for s, k in zip(self.stride, self.kernel))

    @property
    def tiles(self) -> tuple[int, int, int]:
        """Tiles along depth, height, width: tile t spans input cells [t*s - p, (t+1)*s - p),
        window t and the gap after it, so the tiles cover every input cell exactly once (tiles
        past the last window hold cells that no window reads)."""
        return tuple(-(-(size + pad) // stride) for size, pad, stride in
                     ((self.d, self.pd, self.sd), (self.h, self.ph, self.sh),
                      (self.w, self.pw, self.sw)))


@dataclass(frozen=True)
class ConvPoolWindow(ConvWindow):
    """``_conv_act_pool``: a 2-D ungrouped convolution, its activation ``act`` (None: the
    identity) and a max pooling of window ``pool`` (its stride, no padding) over the
    convolution's output; ``bias``: whether the layer adds one."""

    pool: Shape
    act: Optional[str]
    bias: bool

    @property
    def wh(self) -> int:
        return self.pool[0]

    @property
    def ww(self) -> int:
        return self.pool[1]

    @property
    def qh(self) -> int:
        """Pooled rows (the 'valid' convention)."""
        return self.oh // self.wh

    @property
    def qw(self) -> int:
        return self.ow // self.ww

    @property
    def field(self) -> int:
        """Weights of one filter."""
        return self.c * self.kh * self.kw

    @property
    def windows(self) -> int:
        """Pooling windows of one image and filter."""
        return self.qh * self.qw

    @property
    def patch(self) -> tuple[int, int]:
        """Rows and columns of the input under one pooling window."""
        return (self.wh - 1) * self.sh + self.kh, (self.ww - 1) * self.sw + self.kw
