"""Containers and basic layers of ``gluon.nn`` (MXNet 1.x names, arguments and defaults):
Sequential, HybridSequential, Dense, Dropout, BatchNorm, BatchNormReLU, Embedding, Flatten, Lambda,
HybridLambda. Every layer is one call of a registered op through ``F``."""
from __future__ import annotations

import warnings
from typing import Any, Callable, Optional, Union

import numpy as np

from ...core import registry
from ...core.base import AttrError
from ..block import Block, HybridBlock
from .activations import Activation
from .norm_layers import scale_shift


class Sequential(Block):
    """Runs its children in the order they were added.

    Examples
    --------
    >>> net = sg.gluon.nn.Sequential()
    >>> net.add(sg.gluon.nn.Dense(2, in_units=3), sg.gluon.nn.Activation('relu'))
    >>> net.initialize()
    >>> net(sg.nd.ones((4, 3))).shape
    (4, 2)
    """

    _summary_row = False  # (Block.summary lists the children instead)

    def add(self, *blocks: Block) -> None:
        for block in blocks:
            self.register_child(block)

    def forward(self, x: Any, *args: Any) -> Any:
        for block in self._children.values():
            x = block(x, *args)
            args = ()
        return x

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Hybridize the children; warns (as MXNet) when all of them are HybridBlocks, which
        a HybridSequential would run as one graph."""
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(f"All children of this Sequential layer '{self.prefix}' are "
                          f"HybridBlocks. Consider using HybridSequential for the best "
                          f"performance.", stacklevel=2)
        super().hybridize(active, **kwargs)

    def __getitem__(self, key: Union[int, slice]) -> Any:
        layers = list(self._children.values())[key]
        if isinstance(layers, list):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self) -> int:
        return len(self._children)


class HybridSequential(HybridBlock):
    """Sequential whose children are HybridBlocks, so the whole chain can be hybridized.

    Examples
    --------
    >>> net = sg.gluon.nn.HybridSequential()
    >>> net.add(sg.gluon.nn.Dense(2, in_units=3), sg.gluon.nn.Activation('relu'))
    >>> net.initialize()
    >>> net.hybridize()  # the chain runs as one compiled graph
    >>> net(sg.nd.ones((4, 3))).shape
    (4, 2)
    """

    _summary_row = False

    add = Sequential.add
    __getitem__ = Sequential.__getitem__
    __len__ = Sequential.__len__

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:
        for block in self._children.values():
            x = block(x, *args)
            args = ()
        return x


class Dense(HybridBlock):
    """``activation(dot(x, weight.T) + bias)``; weight ``(units, in_units)``, ``in_units=0``
    infers it at the first forward. ``flatten=True`` folds all but the first axis.

    Examples
    --------
    >>> dense = sg.gluon.nn.Dense(2, in_units=3, weight_initializer='ones',
    ...                           bias_initializer='ones')
    >>> dense.initialize()
    >>> dense(sg.nd.array([[1, 2, 3]]))  # 1 + 2 + 3, plus the bias 1
    [[7. 7.]]
    <NDArray 1x2 @cpu(0)>
    """

    def __init__(self, units: int, activation: Optional[str] = None, use_bias: bool = True,
                 flatten: bool = True, dtype: Any = "float32", weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_units: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._flatten, self._units, self._in_units = flatten, units, in_units
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(units, in_units),
                                          init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(units,), init=bias_initializer,
                                        dtype=dtype, allow_deferred_init=True) \
                if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") \
                if activation is not None else None

    def hybrid_forward(self, F: Any, x: Any, weight: Any, bias: Any = None) -> Any:
        if bias is None:
            out = self._op(F, F.FullyConnected, (x, weight), {
                "no_bias": True, "num_hidden": self._units, "flatten": self._flatten})
        else:
            out = self._op(F, F.FullyConnected, (x, weight, bias),
                           {"num_hidden": self._units, "flatten": self._flatten})
        return self.act(out) if self.act is not None else out
    _FIXED_OPS = hybrid_forward  # one recorded op (gluon/one_op.py)

    def __repr__(self) -> str:
        return f"Dense({self._in_units or None} -> {self._units}, " \
               f"{'linear' if self.act is None else self.act._act_type})"


class Dropout(HybridBlock):
    """Zeroes elements with probability ``rate`` in training mode (``autograd.record()``),
    scaling the rest by ``1/(1-rate)``; identity otherwise.

    Examples
    --------
    >>> drop = sg.gluon.nn.Dropout(0.5)
    >>> drop(sg.nd.ones(4))  # outside training: the identity
    [1. 1. 1. 1.]
    <NDArray 4 @cpu(0)>
    >>> with sg.autograd.record():
    ...     y = drop(sg.nd.ones(1000))
    >>> sorted(set(y.asnumpy().tolist()))  # dropped, or scaled by 1 / (1 - rate)
    [0.0, 2.0]
    """

    def __init__(self, rate: float, axes: tuple = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise AttrError(f"Dropout: rate must be in [0, 1), got {rate}")
        self._rate, self._axes = rate, tuple(axes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd")
        return F.identity(x, name="fwd")

    def __repr__(self) -> str:
        return f"Dropout(p = {self._rate}, axes={self._axes})"


class BatchNorm(HybridBlock):
    """Batch normalisation over ``axis``; ``running_mean``/``running_var`` are auxiliary
    parameters updated (``momentum``) by forwards in training mode.

    Examples
    --------
    >>> bn = sg.gluon.nn.BatchNorm(in_channels=1)
    >>> bn.initialize()
    >>> with sg.autograd.record():  # training: the batch's own mean 2 and variance 1
    ...     y = bn(sg.nd.array([[1], [3]]))
    >>> y
    [[-1.]
     [ 1.]]
    <NDArray 2x1 @cpu(0)>
    """

    def __init__(self, axis: int = 1, momentum: float = 0.9, epsilon: float = 1e-5,
                 center: bool = True, scale: bool = True, use_global_stats: bool = False,
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones",
                 running_mean_initializer: Any = "zeros",
                 running_variance_initializer: Any = "ones", in_channels: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum,
                        "fix_gamma": not scale, "use_global_stats": use_global_stats}
        self._in_channels = in_channels
        shape = (in_channels,)
        with self.name_scope():
            self.gamma, self.beta = scale_shift(self, shape, center, scale, beta_initializer,
                                                gamma_initializer)
            self.running_mean = self.params.get("running_mean", grad_req="null", shape=shape,
                                                init=running_mean_initializer,
                                                allow_deferred_init=True,
                                                differentiable=False)
            self.running_var = self.params.get("running_var", grad_req="null", shape=shape,
                                               init=running_variance_initializer,
                                               allow_deferred_init=True,
                                               differentiable=False)

    def cast(self, dtype: Any) -> None:
        if np.dtype(dtype).name == "float16":
            dtype = "float32"  # statistics stay in float32 (MXNet does the same)
        super().cast(dtype)

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any, running_mean: Any,
                       running_var: Any) -> Any:
        return self._op(F, F.BatchNorm, (x, gamma, beta, running_mean, running_var),
                        self._kwargs)
    _FIXED_OPS = hybrid_forward  # one recorded op (gluon/one_op.py)

    def __repr__(self) -> str:
        return f"BatchNorm({self._kwargs}, in_channels={self._in_channels or None})"


class BatchNormReLU(BatchNorm):
    """``relu(BatchNorm(x))``, MXNet 1.9.1's fused layer: BatchNorm's arguments and
    parameter names (the fusion is left to the compiler).

    Examples
    --------
    >>> layer = sg.gluon.nn.BatchNormReLU(in_channels=2)
    >>> layer.initialize()
    >>> with sg.autograd.record():  # normalised to -1 and 1, then the negative one cut
    ...     y = layer(sg.nd.array([[1, 10], [3, 30]]))
    >>> y
    [[0. 0.]
     [1. 1.]]
    <NDArray 2x2 @cpu(0)>
    """

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any, running_mean: Any,
                       running_var: Any) -> Any:
        y = self._op(F, F.BatchNorm, (x, gamma, beta, running_mean, running_var), self._kwargs)
        return self._op(F, F.Activation, (y,), {"act_type": "relu"}, name="relu")
    _FIXED_OPS = hybrid_forward


class Embedding(HybridBlock):
    """Rows of ``weight`` ``(input_dim, output_dim)`` picked by integer indices.

    Examples
    --------
    >>> emb = sg.gluon.nn.Embedding(3, 2)
    >>> emb.initialize()
    >>> emb.weight.set_data(sg.nd.array([[0, 0], [1, 1], [2, 2]]))
    >>> emb(sg.nd.array([2, 0]))
    [[2. 2.]
     [0. 0.]]
    <NDArray 2x2 @cpu(0)>
    """

    def __init__(self, input_dim: int, output_dim: int, dtype: Any = "float32",
                 weight_initializer: Any = None, sparse_grad: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if sparse_grad:
            raise AttrError("Embedding: sparse_grad=True is not supported (no row_sparse "
                            "arrays); gradients are dense")
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim,
                        "dtype": np.dtype(dtype).name}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      allow_deferred_init=True)

    def hybrid_forward(self, F: Any, x: Any, weight: Any) -> Any:
        return self._op(F, F.Embedding, (x, weight), self._kwargs)
    _FIXED_OPS = hybrid_forward  # one recorded op (gluon/one_op.py)

    def __repr__(self) -> str:
        return f"Embedding({self._kwargs['input_dim']} -> {self._kwargs['output_dim']})"


class Flatten(HybridBlock):
    """``(N, ...)`` to ``(N, prod(...))``.

    Examples
    --------
    >>> sg.gluon.nn.Flatten()(sg.nd.ones((2, 3, 4))).shape
    (2, 12)
    """

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.Flatten(x)

    def __repr__(self) -> str:
        return "Flatten"


def _op_function(F: Any, name: str, who: str) -> Callable:
    """The ``F`` function of a registered op named by the user (``Lambda('tanh')``)."""
    try:
        registry.get_op(name)
    except Exception:
        raise AttrError(f"{who}: {name!r} is not a registered operator") from None
    return getattr(F, name)


class Lambda(Block):
    """Wraps a function (or the name of an ``sg.nd`` operator) as a Block.

    Examples
    --------
    >>> sg.gluon.nn.Lambda(lambda x: x * 2)(sg.nd.array([1, 2]))
    [2. 4.]
    <NDArray 2 @cpu(0)>
    >>> sg.gluon.nn.Lambda('relu')(sg.nd.array([-1, 2]))
    [0. 2.]
    <NDArray 2 @cpu(0)>
    """

    def __init__(self, function: Union[str, Callable], prefix: Optional[str] = None) -> None:
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            from ...runtime import ndarray as nd
            function = _op_function(nd, function, "Lambda")
        elif not callable(function):
            raise AttrError(f"Lambda: unrecognized function {function!r}: give a callable "
                            f"or the name of an operator")
        self._func = function

    def forward(self, *args: Any) -> Any:
        return self._func(*args)

    def __repr__(self) -> str:
        return f"Lambda({getattr(self._func, '__name__', self._func)})"


class HybridLambda(HybridBlock):
    """Wraps ``function(F, *args)`` (or an operator's name) as a HybridBlock.

    Examples
    --------
    >>> sg.gluon.nn.HybridLambda(lambda F, x: F.relu(x))(sg.nd.array([-1, 2]))
    [0. 2.]
    <NDArray 2 @cpu(0)>
    """

    def __init__(self, function: Union[str, Callable], prefix: Optional[str] = None) -> None:
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            name = function
            from ...frontend import symbol as sym
            _op_function(sym, name, "HybridLambda")
            self._func: Callable = lambda F, *a: _op_function(F, name, "HybridLambda")(*a)
            self._func_name = name
        elif callable(function):
            self._func, self._func_name = function, getattr(function, "__name__", "lambda")
        else:
            raise AttrError(f"HybridLambda: unrecognized function {function!r}: give a "
                            f"callable or the name of an operator")

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:
        return self._func(F, x, *args)

    def __repr__(self) -> str:
        return f"HybridLambda({self._func_name})"
