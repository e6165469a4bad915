"""Built-in operators. Importing this package registers them all."""
from . import (activation, constant, conv, deconv, elemwise, fused, indexing, layout,  # noqa: F401
               loss, nn, norm, pool, shape, tensor)  # noqa: F401
