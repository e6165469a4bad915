"""Built-in operators. Importing this package registers them all."""
from . import (activation, constant, conv, conv_act_pool, creation, ctc, custom,  # noqa: F401
               deconv, dot, elemwise, fused, indexing, indexing_nd, layout, layout_extra, loss,
               lrn, math, math_extra, nn, norm, norm_l2, norm_layer, pool, rearrange, rnn,
               sequence, shape, sorting, tensor, upsampling)
from . import image  # noqa: F401,E402  (sg.nd.image flips)
