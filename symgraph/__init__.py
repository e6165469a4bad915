"""symgraph: a define-then-run deep learning graph compiler with MXNet's ``mx.sym`` API.

``import symgraph as sg`` gives ``sg.sym`` (symbols), ``sg.nd`` (arrays), ``sg.cpu()``,
``sg.gpu(i)``, ``sg.autograd``, ``sg.random`` and ``sg.test_utils``; for training ``sg.io``,
``sg.init``, ``sg.optimizer``, ``sg.lr_scheduler``, ``sg.mod``, ``sg.model``, ``sg.metric``,
``sg.callback``, ``sg.viz`` and ``sg.datasets``; ``sg.profiler`` and ``sg.onnx``; MXNet's Gluon
API is ``sg.gluon`` (graphviz, onnx, matplotlib and tqdm are imported only when used).
"""
from __future__ import annotations

from .core import module_alias

# Where users find modules: ``import symgraph.ndarray`` and ``from symgraph.io import
# NDArrayIter`` as in MXNet, whichever layer package holds the module (docs/architecture.md).
PUBLIC_MODULES = {
    "amp": "frontend.amp", "attribute": "core.attribute", "autograd": "frontend.autograd",
    "base": "core.base", "callback": "training.callback", "config": "core.config",
    "context": "core.context", "contrib": "interop.contrib", "datasets": "training.datasets",
    "executor": "runtime.executor", "image": "training.image",
    "imperative": "frontend.imperative",
    "initializer": "training.initializer", "io": "training.io", "kvstore": "training.kvstore",
    "lr_scheduler": "training.lr_scheduler", "metric": "training.metric",
    "model": "training.model", "module": "training.module", "monitor": "runtime.monitor",
    "name": "core.name", "ndarray": "runtime.ndarray", "onnx": "interop.onnx",
    "operator": "frontend.operator", "optimizer": "training.optimizer",
    "parallel": "training.parallel", "profiler": "runtime.profiler", "random": "runtime.random",
    "recordio": "training.recordio", "rnn": "interop.rnn", "rtc": "runtime.rtc",
    "symbol": "frontend.symbol",
    "test_utils": "interop.test_utils", "util": "core.util", "viz": "interop.viz",
}
module_alias.install({f"{__name__}.{k}": f"{__name__}.{v}" for k, v in PUBLIC_MODULES.items()})

from .core import attribute, base, config, context, dtypes, name, util
from .runtime import ndarray as nd
from .frontend import nd_methods  # noqa: F401  (plugs the engine into NDArray; sg.nd's op functions)
from .frontend import operator, symbol as sym
from .runtime import random
from .interop import test_utils
from .frontend import autograd, imperative
from .core.base import (AttrError, BindError, DataError, DTypeError, ExecutionError,
                        GraphError, ShapeError, SymgraphError)
from .core.context import Context, cpu, cpu_pinned, current_context, gpu
from .runtime.executor import Executor
from .runtime import executor, monitor, profiler, rtc  # rtc: pycuda loads on first GPU use
from .training import (callback, datasets, io, lr_scheduler, metric, model,  # noqa: E402
                       optimizer, recordio)
from .interop import viz
from .training import (optimizer_extra, optimizer_norm,  # noqa: F401,E402 (register)
                       optimizer_contrib)
from .training import metric_extra  # noqa: F401,E402  (registers F1, MCC... into sg.metric)
from .training import initializer as init, module as mod
from .interop import onnx  # noqa: E402  (the onnx package is imported on first use)
from . import gluon  # noqa: E402
from .training import kvstore, parallel  # noqa: E402  (NCCL is loaded on first GPU use)
from .core.attribute import AttrScope  # noqa: E402
from .core.util import is_np_shape, np_shape, set_np_shape, use_np_shape  # noqa: E402
from .frontend import amp  # noqa: E402
from .interop import contrib  # noqa: E402
from .training import image  # noqa: E402  (Pillow is imported on first decode)
from .interop import rnn  # noqa: E402  (MXNet's symbolic cells, mx.rnn)

from .frontend import control_flow_nd  # noqa: E402,F401  (sg.sym/sg.nd.contrib.foreach, ...)
from .frontend import contrib_update  # noqa: E402,F401  (sg.nd/sg.sym.contrib.adamw_update)
from .frontend import zipfian  # noqa: E402,F401  (sg.nd/sg.sym.contrib.rand_zipfian)
from .training.parallel import group as _parallel_group  # noqa: E402,F401  (Module(context=[...]))
from .training import bucketing_module as _bucketing  # noqa: E402,F401  (sg.mod.BucketingModule)

symbol = sym
ndarray = nd
mon = monitor
initializer = init
module = mod
kv = kvstore
img = image

__version__ = "0.1.0"

__all__ = ["sym", "symbol", "nd", "ndarray", "cpu", "cpu_pinned", "gpu", "Context", "current_context",
           "Executor", "name", "operator", "rtc", "random", "test_utils", "base",
           "SymgraphError", "AttrError", "ShapeError", "DTypeError", "BindError", "GraphError",
           "ExecutionError", "DataError", "io", "init", "initializer", "optimizer",
           "lr_scheduler", "mod", "module", "model", "metric", "callback", "viz", "datasets",
           "profiler", "onnx", "__version__",
           "autograd", "imperative", "context", "gluon", "monitor", "mon", "kv", "kvstore",
           "parallel", "amp", "contrib", "image", "img", "recordio", "rnn", "attribute",
           "AttrScope",
           "util", "np_shape", "use_np_shape", "is_np_shape", "set_np_shape"]
