"""``sg.image`` (also ``sg.img``): MXNet's image API: decoding through Pillow, OpenCV-style
resizing and cropping, the ``*Aug`` augmenters, ``CreateAugmenter`` and ``ImageIter``.

Example::

    >>> import symgraph as sg
    >>> img = sg.image.imdecode(open('cat.jpg', 'rb').read())        # doctest: +SKIP
    >>> small, box = sg.image.center_crop(img, (224, 224))          # doctest: +SKIP
"""
from __future__ import annotations

from . import image
from .augment import (Augmenter, BrightnessJitterAug, CastAug, CenterCropAug, ColorJitterAug,
                      ColorNormalizeAug, ContrastJitterAug, CreateAugmenter, ForceResizeAug,
                      HorizontalFlipAug, HueJitterAug, LightingAug, RandomCropAug,
                      RandomGrayAug, RandomOrderAug, RandomSizedCropAug, ResizeAug,
                      SaturationJitterAug, SequentialAug)
from .image import (center_crop, color_normalize, copyMakeBorder, fixed_crop, imdecode, imread,
                    imresize, random_crop, random_size_crop, resize_short, scale_down)
from .rotate import imrotate, random_rotate
from .iter import ImageIter

__all__ = ["image", "imread", "imdecode", "imresize", "scale_down", "copyMakeBorder",
           "resize_short", "fixed_crop", "random_crop", "center_crop", "color_normalize",
           "random_size_crop", "imrotate", "random_rotate", "Augmenter", "SequentialAug",
           "ResizeAug", "ForceResizeAug", "RandomCropAug", "RandomSizedCropAug",
           "CenterCropAug", "RandomOrderAug", "BrightnessJitterAug", "ContrastJitterAug",
           "SaturationJitterAug", "HueJitterAug", "ColorJitterAug", "LightingAug",
           "ColorNormalizeAug", "RandomGrayAug", "HorizontalFlipAug", "CastAug",
           "CreateAugmenter", "ImageIter"]
