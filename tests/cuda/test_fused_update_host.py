"""The host side of the GPU Trainer step without a GPU: ``FusedUpdater.update_multi`` skips
``prepare`` and the pointer-table rows while the same buffers come back, and rebinds when a
gradient buffer, the states or the kernel's table (rebound by someone else) changed. A
subprocess stands a mock in for pycuda (the mock must not leak into other tests)."""
from __future__ import annotations

from .mock_pycuda import run_with_mock_pycuda

SCRIPT = r'''
import contextlib
from symgraph.runtime.cuda import optimizer as co


class Buf:
    def __init__(self, ptr):
        self.ptr = ptr


class Arr:  # what update_multi reads of an NDArray: _buf, _data.ptr, size, dtype
    def __init__(self, ptr, size=4):
        self._buf = self._data = Buf(ptr)
        self.size, self.dtype = size, "float32"


class Fused:  # FusedUpdate's interface, counting what the host asks of it
    def __init__(self, rule, sizes, device_id, dtype):
        self.rule, self.sizes, self.dtype, self._rows = rule, sizes, dtype, None
        self.binds, self.scalars, self.launches = 0, 0, 0

    def bind(self, rows):
        rows = tuple(tuple(r) for r in rows)
        if rows != self._rows:
            self._rows = rows
        self.binds += 1

    def set_scalars(self, rows, stream):
        self.scalars += 1

    def closure(self, stream):
        def go(rc=None):
            self.launches += 1
        return go


co.FusedUpdate = Fused
co.activate = lambda d: contextlib.nullcontext()
upd = co.FusedUpdater(sg.optimizer.create("sgd", learning_rate=0.1), 0)
upd._zeros = lambda w: Buf(0)
w, g = [Arr(100), Arr(200)], [Arr(300), Arr(400)]
upd.update_multi([0, 1], g, w)
f = upd.fused
upd.update_multi([0, 1], g, w)
upd.update_multi([0, 1], g, w)
assert (f.binds, f.scalars, f.launches) == (1, 3, 3), (f.binds, f.scalars, f.launches)
assert upd.optimizer._index_update_count == {0: 3, 1: 3}
g[1] = Arr(500)  # a new gradient buffer
upd.update_multi([0, 1], g, w)
assert f.binds == 2 and f._rows[1][1] == 500, f._rows
f._rows = ((4, 1, 2), (4, 3, 4))  # a tail rebound the kernel's table
upd.update_multi([0, 1], g, w)
assert f.binds == 3 and f._rows[0][1] == 300
upd.states = dict(upd.states)  # set_states: new states
upd.update_multi([0, 1], g, w)
assert f.binds == 4
upd.update_multi([0], g[:1], w[:1])  # another parameter set: another kernel
assert upd.fused is not f and upd.fused.binds == 1 and upd.fused.launches == 1
print("OK")
'''


def test_repeated_steps_skip_the_rebind() -> None:
    run_with_mock_pycuda(SCRIPT)
