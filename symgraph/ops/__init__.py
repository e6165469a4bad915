"""Built-in operators. Importing this package registers them all."""
from . import (activation, conv, deconv, elemwise, fused, indexing, loss, nn, norm, pool,  # noqa: F401
               layout, shape, tensor)  # noqa: F401
