"""Built-in operators. Importing this package registers them all."""
from . import (activation, constant, conv, conv_act_pool, custom, deconv, elemwise,  # noqa: F401
               fused, indexing, layout, loss, nn, norm, pool, shape, tensor)
