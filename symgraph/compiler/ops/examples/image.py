"""Examples of the image augmentations, image.resize, contrib.hawkesll and
contrib.BatchNormWithReLU."""
from __future__ import annotations

from ._text import call

HAWKES = ("ll, state = sg.nd.contrib.hawkesll(sg.nd.array([[1.0]]), sg.nd.array([0.5]), "
          "sg.nd.array([1.0]), sg.nd.array([[0.0]]), sg.nd.array([[1.0]]), "
          "sg.nd.array([[0]], dtype='int32'), sg.nd.array([1.0]), sg.nd.array([2.0]))",)

EXAMPLES: dict[str, str] = {
    # + 0.1 * 55.46 * (-0.5675, -0.5808, -0.5836): the first principal component
    "_image_adjust_lighting": call("sg.nd.image.adjust_lighting(sg.nd.full((1, 1, 3), 100), "
                                   "alpha=(0.1, 0, 0))", "[[[96.8526 96.7789 96.7634]]]",
                                   "1x1x3"),
    "_image_random_brightness": call(
        "sg.nd.image.random_brightness(sg.nd.full((1, 2, 1), 10), min_factor=2, max_factor=2)",
        "[[[20.]\n  [20.]]]", "1x2x1"),
    # factor 0: every value becomes the image's mean luma
    "_image_random_contrast": call(
        "sg.nd.image.random_contrast(sg.nd.array([[[0], [4]]]), min_factor=0, max_factor=0)",
        "[[[2.]\n  [2.]]]", "1x2x1"),
    # factor 0: the luma 0.299 * 100 + 0.587 * 50
    "_image_random_saturation": call(
        "sg.nd.image.random_saturation(sg.nd.array([[[100, 50, 0]]]), min_factor=0, "
        "max_factor=0)", "[[[59.25 59.25 59.25]]]", "1x1x3"),
    # a third of a turn: red becomes green
    "_image_random_hue": call("sg.nd.image.random_hue(sg.nd.array([[[255, 0, 0]]]), "
                              "min_factor=1/3, max_factor=1/3)", "[[[  0. 255.   0.]]]",
                              "1x1x3"),
    "_image_random_lighting": call("sg.nd.image.random_lighting(sg.nd.full((1, 1, 3), 9), "
                                   "alpha_std=0)", "[[[9. 9. 9.]]]", "1x1x3"),
    "_image_random_color_jitter": call(
        "sg.nd.image.random_color_jitter(sg.nd.full((1, 1, 3), 9), brightness=0, contrast=0, "
        "saturation=0, hue=0)", "[[[9. 9. 9.]]]", "1x1x3"),
    # a flip or not: the set of values stays
    "_image_random_flip_left_right": call(
        "sg.nd.sort(sg.nd.image.random_flip_left_right(sg.nd.array([[[2], [1]]])), axis=1)",
        "[[[1.]\n  [2.]]]", "1x2x1"),
    "_image_random_flip_top_bottom": call(
        "sg.nd.sort(sg.nd.image.random_flip_top_bottom(sg.nd.array([[[2]], [[1]]])), axis=0)",
        "[[[1.]]\n<BLANKLINE>\n [[2.]]]", "2x1x1"),
    # width 2 -> 3, bilinear with OpenCV's half-pixel centres
    "_image_resize": call("sg.nd.image.resize(sg.nd.array([[[0], [4]]]), size=(3, 1))",
                          "[[[0.]\n  [2.]\n  [4.]]]", "1x3x1"),
    # one event at t=1 of a window (0, 2]: log 1 - 1 - (1 + 0.5 (1 - e^-1))
    "_contrib_hawkesll": call("ll", "[-2.3161]", "1", HAWKES),
    # inference: (x - 0) / sqrt(1 + eps), then relu
    "_contrib_BatchNormWithReLU": call(
        "sg.nd.contrib.BatchNormWithReLU(sg.nd.array([[-1.0], [2.0]]), sg.nd.ones((1,)), "
        "sg.nd.zeros((1,)), sg.nd.zeros((1,)), sg.nd.ones((1,)))", "[[0.   ]\n [1.999]]", "2x1"),
}
