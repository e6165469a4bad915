"""The CUDA backend: lowers a :class:`~symgraph.compiler.schedule.Schedule` to one CUDA module of generated
kernels plus cuBLAS calls, and runs it on ``sg.gpu(i)``.

Module map (only ``runtime``, ``backend``, ``cublas``, ``graphs``, ``optimizer`` and ``staging``
import pycuda/ctypes CUDA libraries, and only when a GPU context is used; ``import symgraph``
never imports pycuda):

* ``actions``  - the vocabulary of lowering: action types, ``StepCtx``, the family table,
  ``launch`` (imports no lowering module);
* ``codegen``  - C source for elementwise groups from their scalar expression DAG, and the
  frames every kernel shares (``kernel_source``, ``grid_stride_kernel``);
* ``kernels_<x>`` - C templates only (a ``render_*`` function per kernel): ``conv`` (im2col /
  col2im), ``pool``, ``conv_pool``, ``reduce``, ``dense`` (softmax, loss sums), ``index``,
  ``layout``, ``views``, ``random`` (Philox-4x32-10), ``sort``;
* ``lowering_<x>`` - lowering functions only, one per family (``StepCtx`` -> actions), named as
  the ``kernels_<x>`` module whose templates they render; ``lowering_elementwise``,
  ``lowering_fused`` (``_fused`` groups, inline epilogues), ``lowering_norm`` and
  ``lowering_amp`` render through ``codegen`` or compose other families;
* ``lowering`` - imports every ``lowering_*`` module (so the family table is full) and offers
  ``lower_step``; ``plan`` lowers a whole schedule (pure Python, so CI renders and compiles
  every kernel);
* ``compiler`` - one ``nvcc --cubin`` call per module, cached on disk;
* ``runtime``  - primary context, device arrays (``sg.nd`` on the GPU);
* ``cublas``, ``graphs`` - ctypes bindings of cuBLAS and of the driver's stream capture;
* ``libs``    - finds pycuda and the cuBLAS/cuDNN/NCCL libraries (``nvidia-*`` wheels first),
  with errors that say what was looked for, where, and how to install it;
* ``backend``  - ``compile(schedule, ctx)``: the program the executor runs (an action -> launch
  table); ``conv_choice`` - cuDNN or the generated path (direct tensor-core kernels of
  ``kernels_conv_mma`` for narrow channels-last layers of 16-32 channels, else im2col), per
  convolution call, timed as CUDA graph replays; ``tune_cache`` - what a
  ``SYMGRAPH_AUTOTUNE`` mode lists and times, winners remembered on disk;
  ``cudnn`` - ctypes binding; its descriptors read the node's window (``ops/geometry.py``);
  ``cudnn_graph`` - cuDNN's graph (backend) API plans of one convolution call;
* ``update_kernel`` - the fused multi-tensor optimizer update printed from an optimizer's rule
  (pure Python); ``optimizer`` - its launch and the device-state updater ``Module`` uses;
* ``staging``  - pinned rings for ``fit``'s async per-batch copies in and out.

Environment: ``SYMGRAPH_CUDA_GRAPHS=0`` turns CUDA graph replay off; ``SYMGRAPH_TF32=1`` lets
cuBLAS use TF32 tensor cores (off by default: results then match float32 to ~1e-6);
``SYMGRAPH_CACHE_DIR`` moves the kernel cache (default ``~/.cache/symgraph``);
``SYMGRAPH_DEBUG=2`` prints every generated module; ``SYMGRAPH_CUDNN=0`` never uses cuDNN,
``=1`` always does where it has an algorithm, the default measures each convolution call once
and keeps the faster of cuDNN and the generated path;
``SYMGRAPH_CUDNN_API=legacy`` times cuDNN's legacy algorithms only (not its graph API's engines);
``SYMGRAPH_NHWC=0`` keeps float16/bfloat16 convolutions NCHW (``passes/channel_last.py``).
"""
