"""The Parameters sections of the convolution and pooling layers, written once here and
filled per layer by :func:`document` (the spatial rank, the layouts that work, the extra
arguments of transposed convolutions and average pools), so ``help(nn.Conv2D)`` lists every
argument without the same text repeated in eighteen docstrings.

Example::

    document(Conv2D, CONV_PARAMS, 2, adj="")   # Conv2D.__doc__ gains its Parameters
"""
from __future__ import annotations

FIRST = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}

CONV_PARAMS = """channels : int
    Number of output channels.
kernel_size : int or tuple of {n} ints
    Size of the convolution window.
strides : int or tuple of {n} ints
    Step of the window.
padding : int or tuple of {n} ints
    Zeros added on both sides of each spatial axis.
{adj}dilation : int or tuple of {n} ints
    Spacing between kernel elements.
groups : int
    Number of groups: the channels are split into this many independent convolutions.
layout : str
    Data layout: {first} (channels on axis 1) or {last} (channels last).
activation : str or None
    Activation applied to the output (an ``Activation`` act_type), or None.
use_bias : bool
    Whether the layer has a learned bias.
weight_initializer, bias_initializer : Initializer or str
    Initializers of the weight and of the bias.
in_channels : int
    Number of input channels; 0 infers it from the data at the first forward."""
ADJ = """output_padding : int or tuple of {n} ints
    Extra rows/columns added to one side of the output.
"""
POOL_PARAMS = """pool_size : int or tuple of {n} ints
    Size of the pooling window.
strides : int, tuple of {n} ints or None
    Step of the window; None uses pool_size.
padding : int or tuple of {n} ints
    Padding added on both sides of each spatial axis.
layout : str
    Data layout: {first} (channels on axis 1) or {last} (channels last).
ceil_mode : bool
    Round the output size up (MXNet's 'full' convention) instead of down.{avg}"""
AVG = """
count_include_pad : bool
    Whether padded cells count in the average's divisor."""
GLOBAL_PARAMS = """layout : str
    Data layout: {first} (channels on axis 1) or {last} (channels last)."""


def document(cls: type, template: str, ndim: int, **fill: str) -> type:
    """Insert the Parameters section made from ``template`` before ``cls``'s Examples."""
    text = template.format(n=ndim, first=FIRST[ndim], last=LAST[ndim], **fill)
    section = "Parameters\n    ----------\n    " + text.replace("\n", "\n    ") + "\n\n    "
    head = "Examples\n    --------"
    cls.__doc__ = (cls.__doc__ or "").replace(head, section + head, 1)
    return cls
