"""Built-in operators. Importing this package registers them all."""
from . import (activation, constant, conv, custom, deconv, elemwise, fused, indexing,  # noqa: F401
               layout, loss, nn, norm, pool, shape, tensor)
