"""Examples of the shape, layout, reduction, indexing and sorting ops."""
from __future__ import annotations

from ._text import call

X = "x = sg.nd.array([[1, 2, 3], [4, 5, 6]])"
M = "m = sg.nd.array([[1, 2], [3, 4]])"

EXAMPLES: dict[str, str] = {
    # reductions
    "sum": call("sg.nd.sum(x, axis=1)", "[ 6. 15.]", "2", (X,)),
    "mean": call("sg.nd.mean(x, axis=0)", "[2.5 3.5 4.5]", "3", (X,)),
    "max": call("sg.nd.max(x, axis=1)", "[3. 6.]", "2", (X,)),
    "min": call("sg.nd.min(x, axis=1)", "[1. 4.]", "2", (X,)),
    "prod": call("sg.nd.prod(x, axis=1)", "[  6. 120.]", "2", (X,)),
    "nansum": call("sg.nd.nansum(sg.nd.array([[1, np.nan], [3, 4]]), axis=1)",
                   "[1. 7.]", "2"),
    "nanprod": call("sg.nd.nanprod(sg.nd.array([[2, np.nan], [3, 4]]), axis=1)",
                    "[ 2. 12.]", "2"),
    "norm": call("sg.nd.norm(sg.nd.array([3, 4]))", "[5.]", "1"),
    "moments": (">>> mean, var = sg.nd.moments(sg.nd.array([1, 2, 3, 4]), axes=(0,))\n"
                ">>> mean.asnumpy(), var.asnumpy()\n"
                "(array([2.5], dtype=float32), array([1.25], dtype=float32))\n"),
    "cumsum": call("sg.nd.cumsum(sg.nd.array([1, 2, 3]))", "[1. 3. 6.]", "3"),
    # shapes
    "Reshape": call("sg.nd.Reshape(sg.nd.array([1, 2, 3, 4, 5, 6]), shape=(2, -1))",
                    "[[1. 2. 3.]\n [4. 5. 6.]]", "2x3"),
    "Flatten": ">>> sg.nd.Flatten(sg.nd.ones((2, 3, 4))).shape\n(2, 12)\n",
    "reshape_like": call("sg.nd.reshape_like(sg.nd.array([1, 2, 3, 4]), sg.nd.zeros((2, 2)))",
                         "[[1. 2.]\n [3. 4.]]", "2x2"),
    "transpose": call("sg.nd.transpose(x)", "[[1. 4.]\n [2. 5.]\n [3. 6.]]", "3x2", (X,)),
    "expand_dims": ">>> sg.nd.expand_dims(sg.nd.array([1, 2]), axis=0).shape\n(1, 2)\n",
    "squeeze": ">>> sg.nd.squeeze(sg.nd.ones((1, 3, 1))).shape\n(3,)\n",
    "SwapAxis": ">>> sg.nd.SwapAxis(sg.nd.ones((1, 2, 3)), dim1=0, dim2=2).shape\n(3, 2, 1)\n",
    "Concat": call("sg.nd.Concat(sg.nd.array([[1, 2]]), sg.nd.array([[3, 4]]), dim=0)",
                   "[[1. 2.]\n [3. 4.]]", "2x2"),
    "SliceChannel": call("left", "[[1.]\n [3.]]", "2x1", (
        M, "left, right = sg.nd.SliceChannel(m, num_outputs=2, axis=1)")),
    "slice": call("sg.nd.slice(x, begin=(0, 1), end=(2, 3))", "[[2. 3.]\n [5. 6.]]", "2x2",
                  (X,)),
    "slice_axis": call("sg.nd.slice_axis(x, axis=1, begin=0, end=2)",
                       "[[1. 2.]\n [4. 5.]]", "2x2", (X,)),
    "slice_like": call("sg.nd.slice_like(x, sg.nd.zeros((1, 2)))", "[[1. 2.]]", "1x2", (X,)),
    "broadcast_to": call("sg.nd.broadcast_to(sg.nd.array([[1, 2]]), shape=(2, 2))",
                         "[[1. 2.]\n [1. 2.]]", "2x2"),
    "broadcast_axis": call("sg.nd.broadcast_axis(sg.nd.array([[1], [2]]), axis=1, size=3)",
                           "[[1. 1. 1.]\n [2. 2. 2.]]", "2x3"),
    "broadcast_like": call("sg.nd.broadcast_like(sg.nd.array([[1], [2]]), x)",
                           "[[1. 1. 1.]\n [2. 2. 2.]]", "2x3", (X,)),
    "tile": call("sg.nd.tile(sg.nd.array([1, 2]), reps=(2,))", "[1. 2. 1. 2.]", "4"),
    "repeat": call("sg.nd.repeat(sg.nd.array([1, 2]), repeats=2)", "[1. 1. 2. 2.]", "4"),
    "reverse": call("sg.nd.reverse(m, axis=1)", "[[2. 1.]\n [4. 3.]]", "2x2", (M,)),
    "pad": call("sg.nd.pad(sg.nd.ones((1, 1, 1, 2)), mode='constant', "
                "pad_width=(0, 0, 0, 0, 1, 1, 0, 0))",
                "[[[[0. 0.]\n   [1. 1.]\n   [0. 0.]]]]", "1x1x3x2"),
    "Cast": call("sg.nd.Cast(sg.nd.array([1.7, -1.7]), dtype='int32')", "[ 1 -1]", "2"),
    "amp_cast": ">>> sg.nd.amp_cast(sg.nd.array([1.5]), dtype='float16').dtype\n"
                "dtype('float16')\n",
    "amp_multicast": (">>> a, b = sg.nd.amp_multicast(sg.nd.array([1], dtype='float16'), "
                      "sg.nd.array([2]), num_outputs=2)\n"
                      ">>> a.dtype, b.dtype  # both take the widest type\n"
                      "(dtype('float32'), dtype('float32'))\n"),
    "shape_array": call("sg.nd.shape_array(x)", "[2 3]", "2", (X,)),
    "size_array": call("sg.nd.size_array(x)", "[6]", "1", (X,)),
    "identity": call("sg.nd.identity(sg.nd.array([1, 2]))", "[1. 2.]", "2"),
    "zeros_like": call("sg.nd.zeros_like(m)", "[[0. 0.]\n [0. 0.]]", "2x2", (M,)),
    "ones_like": call("sg.nd.ones_like(m)", "[[1. 1.]\n [1. 1.]]", "2x2", (M,)),
    # the value passes, the gradient does not: d(stop(x) * x)/dx = x
    "BlockGrad": call("x.grad", "[1. 2.]", "2", (
        "x = sg.nd.array([1, 2])", "x.attach_grad()",
        "with sg.autograd.record():\n...     y = (sg.nd.BlockGrad(x) * x).sum()",
        "y.backward()")),
    "MakeLoss": call("sg.nd.MakeLoss(sg.nd.array([1, 2]))", "[1. 2.]", "2"),
    # indexing
    "argmax": call("sg.nd.argmax(sg.nd.array([[1, 3, 2], [4, 0, 5]]), axis=1)", "[1. 2.]",
                   "2"),
    "argmin": call("sg.nd.argmin(sg.nd.array([[1, 3, 2], [4, 0, 5]]), axis=1)", "[0. 1.]",
                   "2"),
    "argmax_channel": call("sg.nd.argmax_channel(sg.nd.array([[1, 3, 2], [4, 0, 5]]))",
                           "[1. 2.]", "2"),
    "one_hot": call("sg.nd.one_hot(sg.nd.array([1, 0]), depth=3)",
                    "[[0. 1. 0.]\n [1. 0. 0.]]", "2x3"),
    "take": call("sg.nd.take(sg.nd.array([[1, 2], [3, 4], [5, 6]]), sg.nd.array([2, 0]))",
                 "[[5. 6.]\n [1. 2.]]", "2x2"),
    "batch_take": call("sg.nd.batch_take(sg.nd.array([[1, 2], [3, 4], [5, 6]]), "
                       "sg.nd.array([0, 1, 0]))", "[1. 4. 5.]", "3"),
    "pick": call("sg.nd.pick(m, sg.nd.array([1, 0]), axis=1)", "[2. 3.]", "2", (M,)),
    "Embedding": call("sg.nd.Embedding(sg.nd.array([2, 0]), sg.nd.array([[0, 0], [1, 1], "
                      "[2, 2]]), input_dim=3, output_dim=2)", "[[2. 2.]\n [0. 0.]]", "2x2"),
    "where": call("sg.nd.where(sg.nd.array([1, 0, 1]), sg.nd.array([1, 2, 3]), "
                  "sg.nd.array([-1, -2, -3]))", "[ 1. -2.  3.]", "3"),
    "gather_nd": call("sg.nd.gather_nd(m, sg.nd.array([[0, 1], [1, 0]]))", "[2. 3.]", "2",
                      (M,)),  # indices column j is the position (row, col) of output j
    "scatter_nd": call("sg.nd.scatter_nd(sg.nd.array([5, 6]), sg.nd.array([[0, 1], [1, 0]]), "
                       "shape=(2, 2))", "[[0. 5.]\n [6. 0.]]", "2x2"),
    "ravel_multi_index": call("sg.nd.ravel_multi_index(sg.nd.array([[1, 2], [0, 1]]), "
                              "shape=(3, 4))", "[4. 9.]", "2"),
    "unravel_index": call("sg.nd.unravel_index(sg.nd.array([4, 9]), shape=(3, 4))",
                          "[[1. 2.]\n [0. 1.]]", "2x2"),
    "fill_element_0index": call("sg.nd.fill_element_0index(m, sg.nd.array([9, 8]), "
                                "sg.nd.array([1, 0]))", "[[1. 9.]\n [8. 4.]]", "2x2", (M,)),
    "_contrib_index_copy": call(
        "sg.nd.contrib.index_copy(sg.nd.zeros((3, 2)), sg.nd.array([2, 0]), "
        "sg.nd.array([[1, 1], [2, 2]]))", "[[2. 2.]\n [0. 0.]\n [1. 1.]]", "3x2"),
    "_contrib_index_array": (">>> idx = sg.nd.contrib.index_array(sg.nd.zeros((2, 2)))\n"
                             ">>> idx.asnumpy().tolist()  # the (row, col) of each cell\n"
                             "[[[0, 0], [0, 1]], [[1, 0], [1, 1]]]\n"),
    "_contrib_arange_like": call("sg.nd.contrib.arange_like(sg.nd.zeros((4,)))",
                                 "[0. 1. 2. 3.]", "4"),
    "dot": call("sg.nd.dot(m, sg.nd.array([[1], [1]]))", "[[3.]\n [7.]]", "2x1", (M,)),
    "batch_dot": call("sg.nd.batch_dot(sg.nd.array([[[1, 2]]]), sg.nd.array([[[3], [4]]]))",
                      "[[[11.]]]", "1x1x1"),
    # column j of the result is kron(a[:, j], b[:, j])
    "khatri_rao": call("sg.nd.khatri_rao(m, sg.nd.array([[1, 1], [2, 2]]))",
                       "[[1. 2.]\n [2. 4.]\n [3. 4.]\n [6. 8.]]", "4x2", (M,)),
    "diag": call("sg.nd.diag(m)", "[1. 4.]", "2", (M,)),
    # images (sg.nd.image)
    "_image_flip_left_right": call("sg.nd.image.flip_left_right(sg.nd.array([[[1], [2]]]))  "
                                   "# (H, W, C)", "[[[2.]\n  [1.]]]", "1x2x1"),
    "_image_flip_top_bottom": call("sg.nd.image.flip_top_bottom(sg.nd.array([[[1]], [[2]]]))",
                                   "[[[2.]]\n<BLANKLINE>\n [[1.]]]", "2x1x1"),
    # sorting
    "sort": call("sg.nd.sort(sg.nd.array([3, 1, 2]))", "[1. 2. 3.]", "3"),
    "argsort": call("sg.nd.argsort(sg.nd.array([3, 1, 2]))", "[1. 2. 0.]", "3"),
    "topk": call("sg.nd.topk(sg.nd.array([3, 1, 2]), k=2)", "[0. 2.]", "2"),
}
