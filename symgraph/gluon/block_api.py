"""The rest of MXNet 1.9's ``Block`` API, mixed into :class:`~symgraph.gluon.Block`: forward
hooks with handles, ``summary``, parameter files (``save_parameters``/``load_parameters``
under structural names), ``save``/``load`` of architecture and parameters,
``register_op_hook``, ``share_parameters``, ``reset_ctx`` and ``optimize_for``."""
from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any, Callable, Optional

from ..core import fileio
from ..core.base import AttrError, DataError, GraphError
from .hooks import HookHandle
from .parameter_dict import DtypeRule, load_file, load_named


class HybridizedError(GraphError, AssertionError):
    """An operation that needs the imperative path was asked of a hybridized block (an
    AssertionError too, as MXNet asserts)."""


def _shape_str(args: Any) -> str:
    """MXNet's summary shape column: nested lists/tuples of shapes, outer brackets dropped."""
    def shapes(a: Any) -> Any:
        if isinstance(a, (list, tuple)):
            return [shapes(x) for x in a]
        return a.shape if hasattr(a, "shape") else a
    got = shapes(args)
    return str(got)[1:-1] if isinstance(got, list) else str(got)


def _traced(outputs: Any) -> bool:
    from ..frontend.symbol import Symbol
    if isinstance(outputs, (list, tuple)):
        return any(_traced(o) for o in outputs)
    return isinstance(outputs, Symbol)


def _print_summary(rows: "OrderedDict[str, tuple]") -> None:
    line = "{:>20}  {:>42} {:>15}"
    print("-" * 80)
    print(line.format("Layer (type)", "Output Shape", "Param #"))
    print("=" * 80)
    total = trainable = shared = 0
    for layer, (shape, n, t, s) in rows.items():
        print(line.format(layer, shape, n))
        total, trainable, shared = total + n, trainable + t, shared + s
    print("=" * 80)
    print("Parameters in forward computation graph, duplicate included")
    print(f"   Total params: {total}")
    print(f"   Trainable params: {trainable}")
    print(f"   Non-trainable params: {total - trainable}")
    print(f"Shared params in forward computation graph: {shared}")
    print(f"Unique parameters in model: {total - shared}")
    print("-" * 80)


def _structure(blk: Any, index: list, into: dict) -> None:
    """MXNet's ``-model.json`` entry of ``blk`` (and its children, depth first)."""
    entry: dict = {"orig_name": blk.name}
    into[type(blk).__name__.lower() + str(index[0])] = entry
    graph = getattr(blk, "_cached_graph", None)
    if graph is not None:
        # (a deferred shape inference traces a block that is not hybridized: not saved)
        entry["hybridized"] = bool(graph) and blk._active
        if entry["hybridized"]:
            entry["inputs"] = [s.tojson() for s in graph[0]]
            entry["symbol"] = graph[1].tojson()
    children: dict = {}
    entry["children"] = children
    for key, child in blk._children.items():
        index[0] += 1
        children[child.name] = key  # (load finds the key by the child's restored name)
        _structure(child, index, entry)


def _restore(blk: Any, index: list, saved: dict, where: str) -> None:
    """Give ``blk`` and its children the names they had when :meth:`save` ran."""
    key = type(blk).__name__.lower() + str(index[0])
    entry = saved.get(key)
    if entry is None:
        raise DataError(f"{where}: no entry {key!r} for block {blk.name!r}; the file was "
                        f"saved from another architecture (it has {sorted(saved)[:6]})")
    blk._name = entry["orig_name"]
    if entry.get("hybridized"):
        blk._active = True
    renamed: "OrderedDict[str, Any]" = OrderedDict()
    for child in list(blk._children.values()):
        index[0] += 1
        _restore(child, index, entry, where)
        name = entry["children"].get(child.name)
        if name is None:
            raise DataError(f"{where}: block {blk.name!r} has a child {child.name!r} that "
                            f"it did not have when saved")
        renamed[name] = child
    blk._children.clear()
    blk._children.update(renamed)


class BlockAPI:
    """Methods of ``Block`` built on its children, hooks and parameters."""

    _children: "OrderedDict[str, Any]"
    # False for containers that only run their children (Sequential): no row of their own
    _summary_row = True
    _forward_hooks: "OrderedDict[int, Callable]"
    _forward_pre_hooks: "OrderedDict[int, Callable]"

    def register_forward_pre_hook(self, hook: Callable) -> HookHandle:
        """``hook(block, inputs)`` before every forward; returns a handle to ``detach()``.

        Example::

            >>> import symgraph as sg
            >>> h = sg.gluon.nn.Dense(2).register_forward_pre_hook(lambda b, x: None)
            >>> h.detach()
        """
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook: Callable) -> HookHandle:
        """``hook(block, inputs, outputs)`` after every forward; returns a handle."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def register_op_hook(self, callback: Callable, monitor_all: bool = False) -> None:
        """``callback(name, op_name, array)`` on every op output (with ``monitor_all``, on
        its inputs too) of the hybridized blocks under this one; names are bytes, as in
        MXNet."""
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def summary(self, *inputs: Any) -> None:
        """Print MXNet's table of each layer's output shape and parameter count, running
        forward once on ``inputs`` (the block must be initialised and not hybridized)."""
        rows: "OrderedDict[str, tuple]" = OrderedDict()
        rows["Input"] = (_shape_str(inputs), 0, 0, 0)
        seen: set = set()

        def hook(block: Any, _: Any, outputs: Any) -> None:
            if _traced(outputs):  # (a deferred shape inference tracing the block)
                return
            n = trainable = shared = 0
            for p in block.params.values():
                size = p.data().size
                n += size
                trainable += 0 if p.grad_req == "null" else size
                shared += size if id(p) in seen else 0
                seen.add(id(p))
            rows[f"{type(block).__name__}-{len(rows)}"] = (_shape_str(outputs), n, trainable,
                                                           shared)

        handles: list[HookHandle] = []

        def attach(block: Any) -> None:
            if getattr(block, "_active", False):
                raise HybridizedError(f'"{block.name}" must not be hybridized to print '
                                      f"summary")
            if block._summary_row:
                handles.append(block.register_forward_hook(hook))
        try:
            self.apply(attach)
            self(*inputs)
            _print_summary(rows)
        finally:
            for h in handles:
                h.detach()

    def save_parameters(self, filename: str, deduplicate: bool = False) -> None:
        """Write parameters under structural names (``conv1.weight``)."""
        from ..runtime import ndarray as nd
        params = self._collect_params_with_prefix()
        if deduplicate:
            seen: dict[int, str] = {}
            params = {k: v for k, v in params.items() if seen.setdefault(id(v), k) == k}
        nd.save(filename, {k: nd.array(v._reduce(), dtype=v.dtype) for k, v in params.items()})

    def load_parameters(self, filename: str, ctx: Any = None, allow_missing: bool = False,
                        ignore_extra: bool = False, cast_dtype: bool = False,
                        dtype_source: str = "current") -> None:
        """Read :meth:`save_parameters` output; a file of another network raises DataError
        naming the parameter and the file, and changes nothing; a saved dtype other than a
        parameter's needs ``cast_dtype`` (then ``dtype_source`` 'current' casts, 'saved' keeps)."""
        loaded = load_file(filename)
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if loaded and not any("." in k for k in loaded):  # full names (legacy save_params)
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra,
                                       self.prefix, cast_dtype, dtype_source)
            return
        load_named(params, loaded, f"file '{filename}'", ctx, allow_missing, ignore_extra,
                   DtypeRule(cast_dtype, dtype_source))

    def save_params(self, filename: str) -> None:
        """Deprecated MXNet name: full parameter names without this block's prefix."""
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename: str, ctx: Any = None, allow_missing: bool = False,
                    ignore_extra: bool = False) -> None:
        """Deprecated MXNet name of :meth:`load_parameters`."""
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def save(self, prefix: str) -> None:
        """Write ``prefix-model.json`` (the block tree, with each hybridized block's traced
        symbol) and ``prefix-model.params`` (:meth:`save_parameters`), MXNet 1.9's format.

        Example::

            >>> net.save('mymodel'); net2.load('mymodel')        # doctest: +SKIP
        """
        model: dict = {}
        _structure(self, [0], model)
        fileio.write_text(prefix + "-model.json", json.dumps(model))
        self.save_parameters(prefix + "-model.params")

    def load(self, prefix: str) -> None:
        """Read :meth:`save`'s files into this block, built the same way (children created
        in the same order): names and child keys as saved, then the parameters."""
        where = prefix + "-model.json"
        with open(where) as fp:
            model = json.load(fp)
        _restore(self, [0], model, where)
        self.load_parameters(prefix + "-model.params")

    def share_parameters(self, shared: Any) -> "BlockAPI":
        """Use the Parameters of ``shared`` (a dict or ParameterDict keyed by structural
        names such as ``0.weight``, or by full names) in place of this block's own."""
        mine = self._collect_params_with_prefix()
        full = {p.name: k for k, p in mine.items()}
        for key, param in shared.items():
            path = key if key in mine else full.get(key)
            if path is None:
                continue
            *chain, attr = path.split(".")
            owner: Any = self
            for step in chain:
                owner = owner._children[step]
            old = owner._reg_params[attr]
            setattr(owner, attr, param)
            owner.params._params.pop(old.name, None)
            owner.params._params[param.name] = param
        return self

    def reset_ctx(self, ctx: Any) -> None:
        """Move every parameter of this block and its children to ``ctx``."""
        self.collect_params().reset_ctx(ctx)

    def optimize_for(self, x: Any, *args: Any, backend: Optional[str] = None,
                     clear: bool = False, static_alloc: bool = False,
                     static_shape: bool = False, inline_limit: int = 2,
                     forward_bulk_size: Optional[int] = None,
                     backward_bulk_size: Optional[int] = None, **kwargs: Any) -> None:
        """Hybridize and trace on ``x, *args`` without running. symgraph's own pipeline is the
        only backend: a named ``backend`` (or backend options) is refused by name."""
        if backend is not None or kwargs:
            raise AttrError(f"{self.name}: optimize_for backend={backend!r} (options "
                            f"{sorted(kwargs)}) is not supported; symgraph compiles every "
                            f"hybridized block through its own passes (use backend=None)")
        if not hasattr(self, "_cached"):
            raise GraphError(f"{self.name}: optimize_for needs a HybridBlock, got "
                             f"{type(self).__name__}")
        self.hybridize(True, static_alloc=static_alloc, static_shape=static_shape)
        from .cached_op import prepare_cached
        prepare_cached(self, (x,) + args)
