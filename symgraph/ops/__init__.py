"""Built-in operators. Importing this package registers them all."""
from . import constant, conv, elemwise, fused, nn, pool, tensor  # noqa: F401
