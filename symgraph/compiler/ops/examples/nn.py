"""Examples of the neural-network layers, losses and sequence ops."""
from __future__ import annotations

from ._text import call

# softmax([0, log 3]) = [1, 3] / 4
P = "x = sg.nd.array([[0, np.log(3)]])"
SEQ = ("x = sg.nd.array([[1, 2], [3, 4], [5, 6]])  # (time, batch)",
       "lengths = sg.nd.array([1, 2])")
IMG = "img = sg.nd.arange(9).reshape((1, 1, 3, 3))"

EXAMPLES: dict[str, str] = {
    "LeakyReLU": call("sg.nd.LeakyReLU(sg.nd.array([-2, 3]), slope=0.5)", "[-1.  3.]", "2"),
    "softmax": call("sg.nd.softmax(x)", "[[0.25 0.75]]", "1x2", (P,)),
    "log_softmax": call("sg.nd.log_softmax(x)  # log(0.25), log(0.75)",
                        "[[-1.3863 -0.2877]]", "1x2", (P,)),
    "softmin": call("sg.nd.softmin(x)", "[[0.75 0.25]]", "1x2", (P,)),
    "SoftmaxActivation": call("sg.nd.SoftmaxActivation(x)", "[[0.25 0.75]]", "1x2", (P,)),
    "Dropout": call("sg.nd.Dropout(sg.nd.array([1, 2]), p=0.5)  # outside training: identity",
                    "[1. 2.]", "2"),
    # y = x w^T + b: [1 + 2, 1 - 2 + 10]
    "FullyConnected": call("sg.nd.FullyConnected(sg.nd.array([[1, 2]]), sg.nd.array([[1, 1], "
                           "[1, -1]]), sg.nd.array([0, 10]), num_hidden=2)", "[[3. 9.]]",
                           "1x2"),
    # each 2x2 window of ones sums to 4
    "Convolution": call("sg.nd.Convolution(sg.nd.ones((1, 1, 3, 3)), sg.nd.ones((1, 1, 2, 2)), "
                        "kernel=(2, 2), num_filter=1, no_bias=True)",
                        "[[[[4. 4.]\n   [4. 4.]]]]", "1x1x2x2"),
    # each output cell counts the input cells whose 2x2 window covers it
    "Deconvolution": call("sg.nd.Deconvolution(sg.nd.ones((1, 1, 2, 2)), sg.nd.ones((1, 1, 2, "
                          "2)), kernel=(2, 2), num_filter=1, no_bias=True)",
                          "[[[[1. 2. 1.]\n   [2. 4. 2.]\n   [1. 2. 1.]]]]", "1x1x3x3"),
    "Pooling": call("sg.nd.Pooling(sg.nd.array([[[[1, 2], [3, 4]]]]), kernel=(2, 2), "
                    "pool_type='avg')", "[[[[2.5]]]]", "1x1x1x1"),
    "UpSampling": call("sg.nd.UpSampling(sg.nd.array([[[[1, 2]]]]), scale=2, "
                       "sample_type='nearest')",
                       "[[[[1. 1. 2. 2.]\n   [1. 1. 2. 2.]]]]", "1x1x2x4"),
    # inference: (x - moving_mean) / sqrt(moving_var + eps), gamma fixed to 1
    "BatchNorm": call("sg.nd.BatchNorm(sg.nd.array([[1, 3]]), sg.nd.ones(2), sg.nd.zeros(2), "
                      "sg.nd.ones(2), 4 * sg.nd.ones(2), eps=1e-5)", "[[0. 1.]]", "1x2"),
    "LayerNorm": call("sg.nd.LayerNorm(sg.nd.array([[1, 3]]), sg.nd.ones(2), sg.nd.zeros(2))",
                      "[[-1.  1.]]", "1x2"),
    "GroupNorm": call("sg.nd.GroupNorm(sg.nd.array([[[1], [3]]]), sg.nd.ones(1), "
                      "sg.nd.zeros(1), num_groups=1)", "[[[-1.]\n  [ 1.]]]", "1x2x1"),
    "InstanceNorm": call("sg.nd.InstanceNorm(sg.nd.array([[[1, 3]]]), sg.nd.ones(1), "
                         "sg.nd.zeros(1), eps=1e-5)", "[[[-1.  1.]]]", "1x1x2"),
    "L2Normalization": call("sg.nd.L2Normalization(sg.nd.array([[3, 4]]))", "[[0.6 0.8]]",
                            "1x2"),
    # 2 / (knorm + alpha / nsize * 2^2) ** beta = 2 / 5
    "LRN": call("sg.nd.LRN(sg.nd.full((1, 1, 1, 1), 2), nsize=1, alpha=1.0, beta=1.0, "
                "knorm=1.0)", "[[[[0.4]]]]", "1x1x1x1"),
    # one tanh step, parameters (w_ih, w_hh, b_ih, b_hh) = (2, 0, 0, 0): tanh(2 * 0.5)
    "RNN": call("sg.nd.RNN(sg.nd.full((1, 1, 1), 0.5), sg.nd.array([2, 0, 0, 0]), "
                "sg.nd.zeros((1, 1, 1)), state_size=1, num_layers=1, mode='rnn_tanh')",
                "[[[0.7616]]]", "1x1x1"),
    # one step, two equally likely classes (0 is the blank): -log(1/2)
    "CTCLoss": call("sg.nd.CTCLoss(sg.nd.zeros((1, 1, 2)), sg.nd.array([[1]]))", "[0.6931]",
                    "1"),
    "softmax_cross_entropy": call("sg.nd.softmax_cross_entropy(x, sg.nd.array([1]))  "
                                  "# -log(0.75)", "[0.2877]", "1", (P,)),
    "SoftmaxOutput": call("sg.nd.SoftmaxOutput(x, sg.nd.array([1]))  # forward: softmax",
                          "[[0.25 0.75]]", "1x2", (P,)),
    "LinearRegressionOutput": call("sg.nd.LinearRegressionOutput(sg.nd.array([[1, 2]]), "
                                   "sg.nd.array([[0, 0]]))  # forward: identity",
                                   "[[1. 2.]]", "1x2"),
    "LogisticRegressionOutput": call("sg.nd.LogisticRegressionOutput(sg.nd.array([[0, "
                                     "np.log(3)]]), sg.nd.array([[0, 1]]))  # forward: sigmoid",
                                     "[[0.5  0.75]]", "1x2"),
    "MAERegressionOutput": call("sg.nd.MAERegressionOutput(sg.nd.array([[1, 2]]), "
                                "sg.nd.array([[0, 0]]))  # forward: identity",
                                "[[1. 2.]]", "1x2"),
    "SequenceMask": call("sg.nd.SequenceMask(x, lengths, use_sequence_length=True)",
                         "[[1. 2.]\n [0. 4.]\n [0. 0.]]", "3x2", SEQ),
    "SequenceReverse": call("sg.nd.SequenceReverse(x, lengths, use_sequence_length=True)",
                            "[[1. 4.]\n [3. 2.]\n [5. 6.]]", "3x2", SEQ),
    "SequenceLast": call("sg.nd.SequenceLast(x, lengths, use_sequence_length=True)",
                         "[1. 4.]", "2", SEQ),
    "depth_to_space": call("sg.nd.depth_to_space(sg.nd.array([[[[0]], [[1]], [[2]], [[3]]]]), "
                           "block_size=2)", "[[[[0. 1.]\n   [2. 3.]]]]", "1x1x2x2"),
    "space_to_depth": call("sg.nd.space_to_depth(sg.nd.array([[[[0, 1], [2, 3]]]]), "
                           "block_size=2).reshape((4,))  # shape (1, 4, 1, 1), flattened",
                           "[0. 1. 2. 3.]", "4"),
    "Crop": ">>> sg.nd.Crop(sg.nd.ones((1, 1, 4, 4)), h_w=(2, 2)).shape\n(1, 1, 2, 2)\n",
    # row k of the result holds the pixel at offset k of the 2x2 window, for each position
    "im2col": call("sg.nd.im2col(img, kernel=(2, 2))",
                   "[[[0. 1. 3. 4.]\n  [1. 2. 4. 5.]\n  [3. 4. 6. 7.]\n  [4. 5. 7. 8.]]]",
                   "1x4x4", (IMG,)),
    # summing the columns back counts how many windows cover each pixel
    "col2im": call("sg.nd.col2im(sg.nd.ones((1, 4, 4)), output_size=(3, 3), kernel=(2, 2))",
                   "[[[[1. 2. 1.]\n   [2. 4. 2.]\n   [1. 2. 1.]]]]", "1x1x3x3"),
    "_contrib_allclose": call("sg.nd.contrib.allclose(sg.nd.array([1, 2]), "
                              "sg.nd.array([1, 2.0000001]))", "1", ""),
    "_contrib_div_sqrt_dim": call("sg.nd.contrib.div_sqrt_dim(sg.nd.array([[2, 4, 6, 8]]))",
                                  "[[1. 2. 3. 4.]]", "1x4"),
}
