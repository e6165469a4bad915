"""Built-in operators. Importing this package registers them all."""
from . import (activation, constant, conv, conv_act_pool, creation, ctc,  # noqa: F401
               custom, deconv, dot, elemwise, fused, indexing, layout, layout_extra, loss, lrn,
               math, nn, norm, pool, rnn, shape, sorting, tensor, upsampling)
