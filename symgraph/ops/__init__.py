"""Built-in operators. Importing this package registers them all."""
from . import elemwise, nn, tensor  # noqa: F401
