"""Built-in operators. Importing this package registers them all."""
from . import custom, elemwise, fused, nn, tensor  # noqa: F401
