"""The compiler layer: op definitions (``ops/``), graph rewrites and autodiff (``passes/``),
lowering a typed graph to a schedule (``schedule``) and its memory plan (``memory_plan``).
Built on the graph core only (docs/architecture.md lists the few exceptions)."""
