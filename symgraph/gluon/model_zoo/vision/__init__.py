"""``gluon.model_zoo.vision``: AlexNet, DenseNet, Inception v3, MobileNet v1/v2, ResNet v1/v2,
SqueezeNet and VGG with MXNet 1.9.1's names, arguments, parameter names and shapes, so a
file written by MXNet's ``save_parameters`` loads here and predicts the same.

Pretrained files (``pretrained=True``) are read from ``root`` (default ``~/.mxnet/models``)
and checked against the sha1 MXNet publishes. Inputs are ``(N, 3, H, W)`` images normalised
with mean ``[0.485, 0.456, 0.406]`` and std ``[0.229, 0.224, 0.225]``; H and W at least 224
(299 for Inception v3).

Example::

    >>> from symgraph.gluon.model_zoo import vision
    >>> net = vision.get_model("mobilenet0.25", classes=10)
    >>> net.initialize()
    >>> net(sg.nd.zeros((2, 3, 32, 32))).shape
    (2, 10)
"""
from __future__ import annotations

from typing import Any, Callable

from ....core.base import AttrError
from ...block import HybridBlock
from .alexnet import AlexNet, alexnet
from .densenet import DenseNet, densenet121, densenet161, densenet169, densenet201
from .inception import Inception3, inception_v3
from .mobilenet import (MobileNet, MobileNetV2, get_mobilenet, get_mobilenet_v2,
                        mobilenet0_25, mobilenet0_5, mobilenet0_75, mobilenet1_0,
                        mobilenet_v2_0_25, mobilenet_v2_0_5, mobilenet_v2_0_75,
                        mobilenet_v2_1_0)
from .resnet import (BasicBlockV1, BasicBlockV2, BottleneckV1, BottleneckV2, ResNetV1,
                     ResNetV2, get_resnet, resnet18_v1, resnet18_v2, resnet34_v1,
                     resnet34_v2, resnet50_v1, resnet50_v2, resnet101_v1, resnet101_v2,
                     resnet152_v1, resnet152_v2)
from .squeezenet import SqueezeNet, squeezenet1_0, squeezenet1_1
from .vgg import (VGG, get_vgg, vgg11, vgg11_bn, vgg13, vgg13_bn, vgg16, vgg16_bn, vgg19,
                  vgg19_bn)

# get_model's names (MXNet's, which are also the pretrained files' names)
MODELS: dict[str, Callable[..., HybridBlock]] = {
    "resnet18_v1": resnet18_v1, "resnet34_v1": resnet34_v1, "resnet50_v1": resnet50_v1,
    "resnet101_v1": resnet101_v1, "resnet152_v1": resnet152_v1,
    "resnet18_v2": resnet18_v2, "resnet34_v2": resnet34_v2, "resnet50_v2": resnet50_v2,
    "resnet101_v2": resnet101_v2, "resnet152_v2": resnet152_v2,
    "vgg11": vgg11, "vgg13": vgg13, "vgg16": vgg16, "vgg19": vgg19,
    "vgg11_bn": vgg11_bn, "vgg13_bn": vgg13_bn, "vgg16_bn": vgg16_bn, "vgg19_bn": vgg19_bn,
    "alexnet": alexnet,
    "densenet121": densenet121, "densenet161": densenet161, "densenet169": densenet169,
    "densenet201": densenet201,
    "squeezenet1.0": squeezenet1_0, "squeezenet1.1": squeezenet1_1,
    "inceptionv3": inception_v3,
    "mobilenet1.0": mobilenet1_0, "mobilenet0.75": mobilenet0_75,
    "mobilenet0.5": mobilenet0_5, "mobilenet0.25": mobilenet0_25,
    "mobilenetv2_1.0": mobilenet_v2_1_0, "mobilenetv2_0.75": mobilenet_v2_0_75,
    "mobilenetv2_0.5": mobilenet_v2_0_5, "mobilenetv2_0.25": mobilenet_v2_0_25}


def get_model(name: str, **kwargs: Any) -> HybridBlock:
    """The model called ``name`` (case-insensitive, e.g. ``'resnet50_v2'``,
    ``'mobilenetv2_0.5'``); keywords: ``pretrained``, ``classes``, ``ctx``, ``root`` and the
    model's own arguments.

    Example: ``get_model('squeezenet1.1', pretrained=True)``.
    """
    key = name.lower()
    if key not in MODELS:
        raise AttrError(f"Model {name} is not supported. Available options are\n\t"
                        + "\n\t".join(sorted(MODELS)))
    return MODELS[key](**kwargs)


# One example serves the family: every model is built, initialised and called the same way.
FAMILY_EXAMPLE = """

    Examples
    --------
    >>> vision = sg.gluon.model_zoo.vision
    >>> net = vision.get_model('mobilenet0.25', classes=10)  # vision.mobilenet0_25(classes=10)
    >>> net.initialize()
    >>> net(sg.nd.zeros((1, 3, 32, 32))).shape  # a score per class
    (1, 10)
    """

__all__ = ["AlexNet", "BasicBlockV1", "BasicBlockV2", "BottleneckV1", "BottleneckV2",
           "DenseNet", "Inception3", "MobileNet", "MobileNetV2", "ResNetV1", "ResNetV2",
           "SqueezeNet", "VGG", "alexnet", "densenet121", "densenet161", "densenet169",
           "densenet201", "get_mobilenet", "get_mobilenet_v2", "get_model", "get_resnet",
           "get_vgg", "inception_v3", "mobilenet0_25", "mobilenet0_5", "mobilenet0_75",
           "mobilenet1_0", "mobilenet_v2_0_25", "mobilenet_v2_0_5", "mobilenet_v2_0_75",
           "mobilenet_v2_1_0", "resnet101_v1", "resnet101_v2", "resnet152_v1",
           "resnet152_v2", "resnet18_v1", "resnet18_v2", "resnet34_v1", "resnet34_v2",
           "resnet50_v1", "resnet50_v2", "squeezenet1_0", "squeezenet1_1", "vgg11",
           "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]

for _name in __all__:
    globals()[_name].__doc__ = (globals()[_name].__doc__ or "").rstrip() + FAMILY_EXAMPLE
