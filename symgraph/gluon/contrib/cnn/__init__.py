"""``gluon.contrib.cnn``: MXNet 1.x's contributed convolution layers, ``DeformableConvolution``
(v1) and ``ModulatedDeformableConvolution`` (v2)."""
from __future__ import annotations

from .conv_layers import DeformableConvolution, ModulatedDeformableConvolution

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]
