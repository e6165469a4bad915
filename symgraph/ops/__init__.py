"""Built-in operators. Importing this package registers them all."""
from . import conv, custom, elemwise, fused, nn, pool, tensor  # noqa: F401
