"""Built-in operators. Importing this package registers them all."""
from . import (activation, constant, conv, conv_act_pool, creation, custom,  # noqa: F401
               deconv, dot, elemwise, fused, indexing, layout, layout_extra, loss, lrn, math,
               nn, norm, pool, rnn, sequence, shape, sorting, tensor, upsampling)
