"""Types on the IR: the shape and dtype of every entry.

``infer_shape`` and ``infer_type`` are MXNet's bidirectional fixpoint inferences over a graph;
their result is a :class:`~symgraph.core.types.table.TypeTable` that travels with the graph
(``Graph.types``) through autodiff, the passes and lowering.
"""
