"""``gluon.data.vision.transforms``: MXNet 1.x's image transforms: composition, tensor
conversion, normalisation, resizing, cropping and flips (``basic.py``), colour jitter, lighting,
grey and rotation (``color.py``)."""
from __future__ import annotations

from .basic import (Cast, CenterCrop, Compose, CropResize, HybridCompose,  # noqa: F401
                    Normalize, RandomApply, RandomCrop, RandomFlipLeftRight,
                    RandomFlipTopBottom, RandomResizedCrop, Resize, ToTensor)
from .color import (RandomBrightness, RandomColorJitter, RandomContrast, RandomGray,
                    RandomHue, RandomLighting, RandomRotation, RandomSaturation, Rotate)

__all__ = ["Cast", "CenterCrop", "Compose", "CropResize", "HybridCompose", "Normalize",
           "RandomApply", "RandomCrop", "RandomFlipLeftRight", "RandomFlipTopBottom",
           "RandomResizedCrop", "Resize", "ToTensor", "RandomBrightness", "RandomColorJitter",
           "RandomContrast", "RandomGray", "RandomHue", "RandomLighting", "RandomRotation",
           "RandomSaturation", "Rotate"]
