"""Examples of the spatial ops: sampling grids, resizing, correlation, deformable convolution."""
from __future__ import annotations

from ._text import call

# the identity affine transform [[1, 0, 0], [0, 1, 0]]
IDENTITY = "theta = sg.nd.array([[1, 0, 0, 0, 1, 0]])"
IMG = "img = sg.nd.array([[[[1, 2], [3, 4]]]])"

EXAMPLES: dict[str, str] = {
    # channel 0 holds x, channel 1 holds y, both normalised to [-1, 1]
    "GridGenerator": call("sg.nd.GridGenerator(theta, transform_type='affine', "
                          "target_shape=(2, 2))",
                          "[[[[-1.  1.]\n   [-1.  1.]]\n<BLANKLINE>\n"
                          "  [[-1. -1.]\n   [ 1.  1.]]]]", "1x2x2x2", (IDENTITY,)),
    # the grid point (0, 0) is the image centre: the mean of the four pixels
    "BilinearSampler": call("sg.nd.BilinearSampler(img, sg.nd.zeros((1, 2, 1, 1)))",
                            "[[[[2.5]]]]", "1x1x1x1", (IMG,)),
    # MXNet has no defaults for transform_type and sampler_type: spelt out, this runs in both
    "SpatialTransformer": call("sg.nd.SpatialTransformer(img, theta, target_shape=(2, 2), "
                               "transform_type='affine', sampler_type='bilinear')  # identity",
                               "[[[[1. 2.]\n   [3. 4.]]]]", "1x1x2x2", (IMG, IDENTITY)),
    # the 3x3 displacements of a 1x1 map padded by 1: only (0, 0) meets data, 2 * 3
    "Correlation": call("sg.nd.Correlation(sg.nd.full((1, 1, 1, 1), 2), "
                        "sg.nd.full((1, 1, 1, 1), 3), max_displacement=1, pad_size=1)"
                        ".reshape((3, 3))", "[[0. 0. 0.]\n [0. 6. 0.]\n [0. 0. 0.]]", "3x3"),
    # the left and right 2x2 halves of [[0 1 2 3], [4 5 6 7]]
    "_contrib_AdaptiveAvgPooling2D": call(
        "sg.nd.contrib.AdaptiveAvgPooling2D(sg.nd.arange(8).reshape((1, 1, 2, 4)), "
        "output_size=(1, 2))", "[[[[2.5 4.5]]]]", "1x1x1x2"),
    "_contrib_BilinearResize2D": call("sg.nd.contrib.BilinearResize2D(sg.nd.array([[[[1, 3]]]]), "
                                      "height=1, width=3)", "[[[[1. 2. 3.]]]]", "1x1x1x3"),
    # every sample moves one pixel right (offset channels alternate dy, dx): the right
    # column's windows lose the half that falls outside the 3x3 ones
    "_contrib_DeformableConvolution": call(
        "sg.nd.contrib.DeformableConvolution(sg.nd.ones((1, 1, 3, 3)), "
        "sg.nd.tile(sg.nd.array([0, 1]).reshape((1, 2, 1, 1)), (1, 4, 2, 2)), "
        "sg.nd.ones((1, 1, 2, 2)), kernel=(2, 2), num_filter=1, no_bias=True)",
        "[[[[4. 2.]\n   [4. 2.]]]]", "1x1x2x2"),
    # no offsets and every sample weighted by 0.5: half an ordinary convolution (4 / 2)
    "_contrib_ModulatedDeformableConvolution": call(
        "sg.nd.contrib.ModulatedDeformableConvolution(sg.nd.ones((1, 1, 3, 3)), "
        "sg.nd.zeros((1, 8, 2, 2)), sg.nd.full((1, 4, 2, 2), 0.5), sg.nd.ones((1, 1, 2, 2)), "
        "kernel=(2, 2), num_filter=1, no_bias=True)", "[[[[2. 2.]\n   [2. 2.]]]]", "1x1x2x2"),
    # outside training: (x - moving_mean) / sqrt(moving_var + eps), as BatchNorm
    "_contrib_SyncBatchNorm": call(
        "sg.nd.contrib.SyncBatchNorm(sg.nd.array([[1, 3]]), sg.nd.ones(2), sg.nd.zeros(2), "
        "sg.nd.ones(2), 4 * sg.nd.ones(2), eps=1e-5, key='bn0')", "[[0. 1.]]", "1x2"),
}
