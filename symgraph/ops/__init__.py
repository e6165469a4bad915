"""Built-in operators. Importing this package registers them all."""
from . import (activation, constant, conv, conv_act_pool, creation, ctc,  # noqa: F401
               custom, deconv, dot, elemwise, fused, indexing, indexing_nd, layout, layout_extra, loss, lrn, math,
               math_extra, nn, norm, pool, rearrange, rnn, shape, sorting, tensor, upsampling)
