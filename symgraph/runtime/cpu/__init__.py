"""The compiled CPU backend (``SYMGRAPH_CPU=compiled``): the numpy backend's schedule with its
fused elementwise/broadcast groups compiled by numba to one native loop nest each, and its
convolution and max-pooling steps as numba window kernels around BLAS.

Module map: ``render`` prints a group's formulas (``core/expr.py``'s ``PRIMS``) as Python
source; ``kernels`` writes that source to the kernel cache folder and loads it (numba compiles
it, or loads its disk cache); ``pool`` is the backend's one thread pool, over which kernels
split their outer axis; ``group`` turns a ``_fused`` step into kernel launches;
``render_window`` prints sliding-window kernels (im2col, col2im, max pooling) for one geometry
each, which ``layers`` runs around BLAS GEMMs for convolution and pooling steps; ``norm``
runs BatchNorm's normalisation as one group kernel; ``backend`` is
the :class:`~symgraph.runtime.backend.Program` (``compile(schedule, ctx)``), which lists the
steps that fall back to the numpy reference.
"""
