"""symgraph: a define-then-run deep learning graph compiler with MXNet's ``mx.sym`` API.

``import symgraph as sg`` gives ``sg.sym`` (symbols), ``sg.nd`` (arrays), ``sg.cpu()``,
``sg.gpu(i)``, ``sg.autograd``, ``sg.random`` and ``sg.test_utils``; for training ``sg.io``,
``sg.init``, ``sg.optimizer``, ``sg.lr_scheduler``, ``sg.mod``, ``sg.model``, ``sg.metric``,
``sg.callback``, ``sg.viz`` and ``sg.datasets``; ``sg.profiler`` and ``sg.onnx``; MXNet's Gluon
API is ``sg.gluon`` (graphviz, onnx, matplotlib and tqdm are imported only when used).
"""
from __future__ import annotations

from . import base, config, context, dtypes, name, operator, random
from . import ndarray as nd
from . import nd_methods  # noqa: F401  (NDArray's engine, methods and sg.nd's op functions)
from . import symbol as sym
from . import test_utils
from . import autograd, imperative
from .base import (AttrError, BindError, DataError, DTypeError, ExecutionError, GraphError,
                   ShapeError, SymgraphError)
from .context import Context, cpu, current_context, gpu
from .executor import Executor
from . import (callback, datasets, io, lr_scheduler, metric, model, monitor,  # noqa: E402
               optimizer, viz)
from . import optimizer_extra, optimizer_norm, optimizer_contrib  # noqa: F401,E402 (register)
from . import metric_extra  # noqa: F401,E402  (registers F1, MCC... into sg.metric)
from . import initializer as init
from . import module as mod
from . import rtc  # noqa: E402  (pycuda is imported lazily, on first GPU use)
from . import profiler  # noqa: E402
from . import onnx  # noqa: E402  (the onnx package is imported on first use)
from . import gluon  # noqa: E402
from . import kvstore, parallel  # noqa: E402  (NCCL is loaded on first GPU use)
from . import attribute, util  # noqa: E402
from .attribute import AttrScope  # noqa: E402
from .util import is_np_shape, np_shape, set_np_shape, use_np_shape  # noqa: E402
from . import amp, contrib  # noqa: E402
from . import image, recordio  # noqa: E402  (Pillow is imported on first decode)
from . import rnn  # noqa: E402  (MXNet's symbolic cells, mx.rnn)

from . import control_flow_nd  # noqa: E402,F401  (sg.sym/sg.nd.contrib.foreach, ...)
from .parallel import group as _parallel_group  # noqa: E402,F401  (Module(context=[...]))
from . import bucketing_module as _bucketing  # noqa: E402,F401  (sg.mod.BucketingModule)

symbol = sym
ndarray = nd
mon = monitor
initializer = init
module = mod
kv = kvstore
img = image

__version__ = "0.1.0"

__all__ = ["sym", "symbol", "nd", "ndarray", "cpu", "gpu", "Context", "current_context",
           "Executor", "name", "operator", "rtc", "random", "test_utils", "base",
           "SymgraphError", "AttrError", "ShapeError", "DTypeError", "BindError", "GraphError",
           "ExecutionError", "DataError", "io", "init", "initializer", "optimizer",
           "lr_scheduler", "mod", "module", "model", "metric", "callback", "viz", "datasets",
           "profiler", "onnx", "__version__",
           "autograd", "imperative", "context", "gluon", "monitor", "mon", "kv", "kvstore",
           "parallel", "amp", "contrib", "image", "img", "recordio", "rnn", "attribute",
           "AttrScope",
           "util", "np_shape", "use_np_shape", "is_np_shape", "set_np_shape"]
