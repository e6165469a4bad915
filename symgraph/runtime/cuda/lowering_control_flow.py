"""The ``unrolled`` family of the control-flow ops (``_foreach``, ``_while_loop``, ``_cond``).

Their GPU lowering is a graph rewrite, not a kernel: the CUDA backend's ``FORWARD_PIPELINE``
starts with ``passes/unroll_control_flow.py``, which replaces every such node by its bodies'
ops (each step's kernels in the one program, replayed in one CUDA graph). A step of these ops
therefore never reaches lowering; one that does comes from a schedule built without that
pipeline, and is refused here by name instead of running on the host.
"""
from __future__ import annotations

from ...core.base import BindError, where
from .actions import StepCtx, family


@family("unrolled")
def lower_unrolled(ctx: StepCtx, params: dict) -> list:
    """Refuse: the node should have been unrolled by ``params["pass"]`` before lowering."""
    node = ctx.step.node
    raise BindError(f"{where(node.name, node.op)}control flow is unrolled into the graph by "
                    f"passes/{params['pass']}.py (the CUDA backend's FORWARD_PIPELINE) before "
                    f"lowering; this schedule was built without it")
