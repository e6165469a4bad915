"""The host side of a GPU imperative program's per-step copies without a GPU:
``Program._hand_out`` (``forward``'s and ``train``'s) copies every output slot into a fresh
pool buffer, and ``Program.bind`` every changed input into the buffer the program owns (device
to device, on the legacy default stream), each under ONE activation of the context, whatever
the number of arrays; the CUDA program's ``bind_inputs`` and ``store_all``. A subprocess stands
a mock in for pycuda (the mock must not leak into other tests)."""
from __future__ import annotations

from .mock_pycuda import run_with_mock_pycuda

SCRIPT = r'''
import contextlib
import numpy as np
import pycuda.driver as drv
import symgraph.runtime.cuda.runtime as rt
from symgraph.frontend.imperative import program as ip

activations = []


@contextlib.contextmanager
def activate(device_id):
    activations.append(device_id)
    yield


class Dev:  # what the copies read of a device buffer
    next_ptr = 1000

    def __init__(self, shape, dtype, allocator=None):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.nbytes = int(np.prod(shape)) * self.dtype.itemsize
        self.ptr, Dev.next_ptr = Dev.next_ptr, Dev.next_ptr + 1000
        self.allocator = allocator


class Pool:
    def allocate(self, n):
        return n

    def stop_holding(self):  # (called at exit: runtime.at_exit)
        pass


class Leaf:  # a leaf NDArray as bind reads it: an NDArray with a device _buf
    def __init__(self, shape):
        self._buf = Dev(shape, np.float32)
        self.shape, self.dtype = self._buf.shape, self._buf.dtype


rt.activate, rt.DeviceArray = activate, Dev
tools = types.ModuleType("pycuda.tools")
tools.DeviceMemoryPool = Pool
sys.modules["pycuda.tools"] = pycuda.tools = tools
prog = ip.Program(None, sg.gpu(1), [Leaf((4,)), Leaf((3,))], [False, False], 0)
drv.memcpy_dtod_async.reset_mock()
a, b = Leaf((4,)), Leaf((3,))
prog.bind([a, b])
owned = list(prog.bound)  # buffers the program owns now
assert prog.arrays == {"_in0": owned[0], "_in1": owned[1]}
copies = [c.args for c in drv.memcpy_dtod_async.call_args_list]
assert copies == [(owned[0]._buf.ptr, a._buf.ptr, 16), (owned[1]._buf.ptr, b._buf.ptr, 12)]
assert activations.count(1) == 3, activations  # two allocations (once), then one for both
activations.clear()
prog.bind([a, Leaf((3,))])  # into the same owned buffers, both copied under one activation
assert prog.bound == owned and prog.arrays["_in1"] is owned[1]
assert len(drv.memcpy_dtod_async.call_args_list) == 4 and activations == [1], activations

# Program.train hands its outputs out from the run's slots: one pool buffer per output slot,
# copied from the slot's pointer (shape and dtype from the schedule), under one activation.
from symgraph.runtime.cuda.backend import CudaEnv, CudaProgram


class Sched:
    shapes = {3: (64,), 5: (2, 5), 6: (0,)}
    dtypes = {3: np.dtype(np.float32), 5: np.dtype(np.float64), 6: np.dtype(np.float32)}


class Run:
    schedule = Sched()


drv.memcpy_dtod_async.reset_mock()
activations.clear()
env = CudaEnv([0, 0, 0, 7000, 0, 8000, 9000])
bufs = ip.Program(None, sg.gpu(3), [], [], 3)._hand_out(Run(), env, [3, 5, 6])
assert activations == [3], activations
assert [(b.shape, b.dtype) for b in bufs] == [((64,), np.float32), ((2, 5), np.float64),
                                              ((0,), np.float32)]
copies = [c.args for c in drv.memcpy_dtod_async.call_args_list]
assert copies == [(bufs[0].ptr, 7000, 256), (bufs[1].ptr, 8000, 80)], copies

# The CUDA program's batched binding and stores: bind_inputs as bind_input per pair;
# store_all stores every slot whose step does not already write into its target.
class Prog:
    stored = []

    def store(self, env, slot, target, accumulate):
        self.stored.append((slot, target, accumulate))


prog, env = Prog(), CudaEnv([0] * 4)
a, b = (sg.nd.NDArray(Dev((n,), np.float32), sg.gpu(0)) for n in (4, 3))
CudaProgram.bind_inputs(prog, env, [(1, a), (3, b)])
assert env.ptrs == [0, a._buf.ptr, 0, b._buf.ptr] and env.keep == {1: a._buf, 3: b._buf}
env.ptrs[0] = b._buf.ptr  # slot 0 is redirected into b: nothing to store
CudaProgram.store_all(prog, env, [(0, b, False), (2, a, False), (1, b, True)])
assert Prog.stored == [(2, a, False), (1, b, True)], Prog.stored
print("OK")
'''


def test_copies_under_one_activation() -> None:
    run_with_mock_pycuda(SCRIPT)
