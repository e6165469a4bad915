"""Built-in operators. Importing this package registers them all."""
from . import constant, elemwise, fused, nn, tensor  # noqa: F401
