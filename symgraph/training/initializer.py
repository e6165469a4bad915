"""``sg.init``: parameter initialisers with MXNet 1.x names, defaults and name-based dispatch.

Calling an initializer with ``(desc, arr)`` fills ``arr`` in place. As in MXNet, the variable's
``__init__`` attribute (set by ``sg.sym.var(..., init=...)``) wins; otherwise the name decides:
``*_bias``, ``*_beta``, ``*_moving_mean`` are zero, ``*_gamma`` and ``*_moving_var`` one, and
``*_weight`` gets the initializer's own rule. Random draws come from ``sg.random`` so
``sg.random.seed`` makes them reproducible.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Optional

import numpy as np

from ..runtime import random as _random
from ..core import init_registry
from ..core.base import AttrError

__all__ = ["InitDesc", "Initializer", "Constant", "Zero", "One", "Uniform", "Normal", "Xavier",
           "MSRAPrelu", "LSTMBias", "Bilinear", "create", "names", "register"]


class InitDesc(str):
    """A parameter name carrying the variable's attributes (MXNet's ``mx.init.InitDesc``)."""

    def __new__(cls, name: str, attrs: Optional[dict] = None,
                global_init: Optional["Initializer"] = None) -> "InitDesc":
        ret = super().__new__(cls, name)
        ret.attrs = dict(attrs or {})
        ret.global_init = global_init
        return ret


def _fill(arr: Any, value: np.ndarray) -> None:
    arr[:] = np.asarray(value, dtype=np.dtype(arr.dtype))


class Initializer:
    """Base class: subclasses override ``_init_weight`` (and rarely the others)."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs

    def dumps(self) -> str:
        """JSON ``[name, kwargs]``, the form stored in a variable's ``__init__`` attribute."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._kwargs})"

    def __eq__(self, other: object) -> bool:
        """Same kind and arguments (MXNet compares initializers so, e.g. of shared
        parameters)."""
        return isinstance(other, Initializer) and self.dumps() == other.dumps()

    def __hash__(self) -> int:
        return hash(self.dumps())

    def __call__(self, desc: Any, arr: Any) -> None:
        if not isinstance(desc, InitDesc):
            desc = InitDesc(str(desc))
        spec = desc.attrs.get("__init__")
        if spec:  # (this initializer is the global one of a per-variable initializer)
            create(spec)._init_weight(InitDesc(desc, desc.attrs, desc.global_init or self), arr)
            return
        for suffix, rule in self._by_suffix():
            if desc.endswith(suffix):
                rule(desc, arr)
                return
        raise AttrError(f"{desc}: no initialisation rule for this name; default rules cover "
                        f"names ending in weight, bias, gamma, beta, moving_mean, moving_var "
                        f"(give the variable an init=... attribute otherwise)")

    def _by_suffix(self) -> tuple:
        zero, one = self._init_zero, self._init_one
        return (("weight", self._init_weight), ("bias", self._init_bias), ("gamma", one),
                ("beta", zero), ("moving_mean", zero), ("moving_var", one),
                ("moving_inv_var", zero), ("moving_avg", zero))

    def _init_zero(self, _: str, arr: Any) -> None:
        _fill(arr, np.zeros(arr.shape))

    def _init_one(self, _: str, arr: Any) -> None:
        _fill(arr, np.ones(arr.shape))

    def _init_bias(self, name: str, arr: Any) -> None:
        self._init_zero(name, arr)

    def _init_weight(self, name: str, arr: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no weight rule")


class Zero(Initializer):
    """All zeros."""

    def _init_weight(self, name: str, arr: Any) -> None:
        self._init_zero(name, arr)


class One(Initializer):
    """All ones."""

    def _init_weight(self, name: str, arr: Any) -> None:
        self._init_one(name, arr)


def _host(value: Any) -> Any:
    """A scalar as is; an array (NDArray, numpy, nested list) as numpy."""
    if hasattr(value, "asnumpy"):
        return value.asnumpy()
    return value if np.isscalar(value) else np.asarray(value)


class Constant(Initializer):
    """Every element ``value``: a scalar, or an array broadcast to the parameter's shape.

    Examples
    --------
    >>> sg.init.Constant(sg.nd.ones((2,))).dumps()
    '["constant", {"value": [1.0, 1.0]}]'
    """

    def __init__(self, value: Any) -> None:
        super().__init__(value=value)
        self.value = value

    def dumps(self) -> str:
        # an array argument is written as nested lists, which the constructor takes back
        value = _host(self.value)
        if not np.isscalar(value):
            self._kwargs["value"] = value.tolist()
        return super().dumps()

    def _init_weight(self, name: str, arr: Any) -> None:
        value = _host(self.value)
        try:
            _fill(arr, np.broadcast_to(value, arr.shape))
        except ValueError:
            raise AttrError(f"{name}: Constant value of shape {np.shape(value)} does not "
                            f"broadcast to the parameter's shape {tuple(arr.shape)}") from None


class Bilinear(Initializer):
    """Bilinear up-sampling kernel for a ``Deconvolution`` weight (N, C, H, W), as MXNet's:
    ``w[..., y, x] = (1 - |x/f - c|) * (1 - |y/f - c|)`` with ``f = ceil(W / 2)`` and
    ``c = (2f - 1 - f % 2) / 2f`` (both axes use W's factor, as MXNet does).

    Examples
    --------
    >>> a = sg.nd.empty((1, 1, 4, 4)); sg.init.Bilinear()._init_weight('w', a)
    >>> a.asnumpy()[0, 0, 0].tolist()
    [0.0625, 0.1875, 0.1875, 0.0625]
    """

    def _init_weight(self, name: str, arr: Any) -> None:
        shape = tuple(arr.shape)
        if len(shape) != 4:
            raise AttrError(f"{name}: Bilinear initialises a 4-d (N, C, H, W) weight, got "
                            f"shape {shape}")
        f = np.ceil(shape[3] / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        xs = 1 - np.abs(np.arange(shape[3]) / f - c)
        ys = 1 - np.abs(np.arange(shape[2]) / f - c)
        kernel = (ys[:, None] * xs[None, :]).astype(np.float32)
        _fill(arr, np.broadcast_to(kernel, shape))


class Uniform(Initializer):
    """Uniform on ``[-scale, scale]``."""

    def __init__(self, scale: float = 0.07) -> None:
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, name: str, arr: Any) -> None:
        _fill(arr, _random.generator().uniform(-self.scale, self.scale, arr.shape))


class Normal(Initializer):
    """Gaussian with mean 0 and standard deviation ``sigma``."""

    def __init__(self, sigma: float = 0.01) -> None:
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, name: str, arr: Any) -> None:
        _fill(arr, _random.generator().normal(0.0, self.sigma, arr.shape))


_FACTORS: dict[str, Callable[[float, float], float]] = {
    "avg": lambda fin, fout: (fin + fout) / 2.0,
    "in": lambda fin, fout: fin,
    "out": lambda fin, fout: fout,
}


class Xavier(Initializer):
    """MXNet's Xavier: ``scale = sqrt(magnitude / factor)``, factor from fan-in/fan-out
    (``fan_in = shape[1] * prod(shape[2:])``, ``fan_out = shape[0] * prod(shape[2:])``);
    ``rnd_type='uniform'`` draws from ``[-scale, scale]``, ``'gaussian'`` from N(0, scale)."""

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg",
                 magnitude: float = 3) -> None:
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ("uniform", "gaussian"):
            raise AttrError(f"Xavier: rnd_type {rnd_type!r}, expected 'uniform' or 'gaussian'")
        if factor_type not in _FACTORS:
            raise AttrError(f"Xavier: factor_type {factor_type!r}, expected one of "
                            f"{sorted(_FACTORS)}")
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, float(magnitude)

    def _init_weight(self, name: str, arr: Any) -> None:
        shape = arr.shape
        if len(shape) < 2:
            raise AttrError(f"{name}: Xavier needs at least 2 dimensions, got shape {shape}")
        hw = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        factor = _FACTORS[self.factor_type](shape[1] * hw, shape[0] * hw)
        scale = np.sqrt(self.magnitude / factor)
        rng = _random.generator()
        if self.rnd_type == "uniform":
            _fill(arr, rng.uniform(-scale, scale, shape))
        else:
            _fill(arr, rng.normal(0.0, scale, shape))


class MSRAPrelu(Xavier):
    """He/MSRA initialisation for PReLU with ``slope``: Gaussian Xavier with magnitude
    ``2 / (1 + slope**2)``."""

    def __init__(self, factor_type: str = "avg", slope: float = 0.25) -> None:
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


class LSTMBias(Initializer):
    """MXNet's ``LSTMBias``: an LSTM's i2h bias, zeros but ``forget_bias`` on the forget
    gate's quarter (gates in the order i, f, c, o), so that early training keeps memory.

    Examples
    --------
    >>> a = sg.nd.empty((8,)); sg.init.LSTMBias(forget_bias=2.0)._init_weight('b', a)
    >>> a.asnumpy().tolist()
    [0.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0]
    """

    def __init__(self, forget_bias: float = 1.0) -> None:
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name: str, arr: Any) -> None:
        if len(arr.shape) != 1 or arr.shape[0] % 4:
            raise AttrError(f"{name}: LSTMBias initialises a bias of 4 gates (4 * H rows), "
                            f"got shape {tuple(arr.shape)}")
        value = np.zeros(arr.shape)
        hidden = arr.shape[0] // 4
        value[hidden:2 * hidden] = self.forget_bias
        _fill(arr, value)


for _klass in (Zero, One, Constant, Uniform, Normal, Xavier, MSRAPrelu, LSTMBias, Bilinear):
    init_registry.register(_klass)
init_registry.register(Zero, "zeros")
init_registry.register(One, "ones")


def register(klass: type) -> type:
    """Make initializer class ``klass`` known to :func:`create` by its lower-case name (MXNet's
    ``mx.init.register``), e.g. for ``__init__`` attributes naming it."""
    return init_registry.register(klass)


def names() -> list[str]:
    """The names :func:`create` knows, e.g. ``'xavier'`` (for messages and command lines)."""
    return init_registry.names()


def create(spec: Any) -> Initializer:
    """An initializer from an instance, a name (``'xavier'``) or ``dumps()`` JSON."""
    if isinstance(spec, Initializer):
        return spec
    if not isinstance(spec, str):
        raise AttrError(f"cannot make an initializer from {type(spec).__name__}")
    return init_registry.from_spec(spec)
