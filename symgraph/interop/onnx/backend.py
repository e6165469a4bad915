"""``symgraph.interop.onnx.backend``: an ``onnx.backend.base.Backend`` that runs ONNX models on
symgraph, so that ONNX's own backend tests (``onnx.backend.test.BackendTest``) can check
the importer operator by operator.

    from symgraph.interop.onnx import backend
    rep = backend.prepare(onnx_model, "CPU")
    (y,) = rep.run([x])                 # or backend.run_model(onnx_model, [x])

``prepare`` checks the model (``onnx.checker`` and strict shape inference). Each ``run``
builds the symbol with the given input values at hand (symgraph's graphs are static, so an
input that ONNX lets carry a shape or axes is read as a constant) and runs it on the numpy
CPU backend, or on the GPU for ``device="CUDA"``.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from ...core.base import BindError
from .context import onnx_module
from .importer import build_symbol, load_checked

onnx_module()
import onnx.backend.base as _base  # noqa: E402  (after the install hint above)


def _context(device: str) -> Any:
    from ...core.context import cpu, gpu
    return gpu(0) if _base.Device(device).type == _base.DeviceType.CUDA else cpu()


class SymgraphRep(_base.BackendRep):
    """A checked model ready to run; ``run(inputs)`` returns its outputs as numpy arrays."""

    def __init__(self, model: Any, types: dict, device: str = "CPU") -> None:
        self.model, self.types, self.ctx = model, types, _context(device)
        inits = {t.name for t in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in inits]

    def _feeds(self, inputs: Union[Sequence[Any], dict, np.ndarray]) -> dict:
        if isinstance(inputs, dict):
            given = dict(inputs)
        else:
            seq = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            if len(seq) > len(self.input_names):
                raise BindError(f"ONNX model {self.model.graph.name!r}: {len(seq)} inputs "
                                f"given for {self.input_names}")
            given = dict(zip(self.input_names, seq))
        missing = [n for n in self.input_names if n not in given]
        if missing:
            raise BindError(f"ONNX model {self.model.graph.name!r}: no value for the inputs "
                            f"{missing}")
        return {k: np.asarray(v) for k, v in given.items()}

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        """Outputs of the model for ``inputs`` (a list in graph-input order, or a dict)."""
        from ...runtime.ndarray import array
        feeds = self._feeds(inputs)
        sym, arg, aux = build_symbol(self.model, self.types, feeds)
        names = set(sym.list_arguments())  # a fed running mean is an aux state, given in aux
        args = {**{k: array(v, dtype=v.dtype) for k, v in feeds.items() if k in names}, **arg}
        exe = sym.bind(self.ctx, args, grad_req="null", aux_states=aux)
        outs = [o.asnumpy() for o in exe.forward(is_train=False)]
        return tuple(self._onnx_rank(o, info.name)
                     for o, info in zip(outs, self.model.graph.output))

    def _onnx_rank(self, out: np.ndarray, name: str) -> np.ndarray:
        """MXNet has no 0-d arrays (a full reduction gives shape (1,)); ONNX does."""
        shape = self.types.get(name, (None, None))[0]
        return out.reshape(()) if shape == () and out.size == 1 else out


class SymgraphBackend(_base.Backend):
    """ONNX's backend interface over symgraph's importer and executor."""

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> SymgraphRep:
        """Check ``model`` (a ModelProto, bytes or a path) and return its runnable rep."""
        checked, types = load_checked(model)
        return SymgraphRep(checked, types, device)

    @classmethod
    def run_model(cls, model: Any, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple:
        """``prepare(model, device).run(inputs)``."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: Any, inputs: Any, device: str = "CPU",
                 outputs_info: Optional[Sequence] = None, **kwargs: Any) -> tuple:
        """Run one ``NodeProto`` on ``inputs`` (a model is built around it)."""
        helper, onnx = onnx_module().helper, onnx_module()
        arrays = [np.asarray(v) for v in inputs]
        ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                             a.shape) for n, a in zip(node.input, arrays)]
        outs = [helper.make_empty_tensor_value_info(n) for n in node.output]
        opset = kwargs.get("opset_version", onnx.defs.onnx_opset_version())
        graph = helper.make_graph([node], "run_node", ins, outs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        # the outputs' types are what ONNX infers; the checker in prepare wants them written
        return cls.run_model(onnx.shape_inference.infer_shapes(model), arrays, device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """CPU always; CUDA when symgraph finds a GPU."""
        if _base.Device(device).type == _base.DeviceType.CPU:
            return True
        from ...core.context import num_gpus
        return num_gpus() > 0


prepare = SymgraphBackend.prepare
run_model = SymgraphBackend.run_model
run_node = SymgraphBackend.run_node
supports_device = SymgraphBackend.supports_device
