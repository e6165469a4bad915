"""One named model of a family: MXNet's ``resnet18_v1(**kwargs)`` is ``get_resnet(1, 18,
**kwargs)``; :func:`variant` makes such a function with its own name and docstring."""
from __future__ import annotations

from typing import Any, Callable, TypeVar

T = TypeVar("T")


def variant(name: str, builder: Callable[..., T], *args: Any, doc: str,
            **fixed: Any) -> Callable[..., T]:
    """``name(**kwargs)`` calling ``builder(*args, **kwargs, **fixed)``; ``fixed`` wins over
    the caller's keywords, as MXNet's ``vgg11_bn`` sets ``batch_norm=True``.

    Example: ``vgg11_bn = variant("vgg11_bn", get_vgg, 11, doc="VGG-11", batch_norm=True)``.
    """
    def make(**kwargs: Any) -> T:
        return builder(*args, **{**kwargs, **fixed})
    make.__name__ = make.__qualname__ = name
    make.__module__ = builder.__module__
    make.__doc__ = (f"{doc}; ``pretrained``, ``ctx``, ``root`` and the model's own keywords "
                    f"as :func:`{builder.__name__}`.")
    return make
