"""The CUDA program's action -> launch table and the cuDNN/generated choice, without a GPU:
a subprocess stands a mock in for pycuda (the real one is absent here; the mock must not leak
into other tests), builds a CudaProgram for a training graph with every kind of action, and
builds each action's launch closure through ``launches.LAUNCHES``."""
from __future__ import annotations

from .mock_pycuda import run_with_mock_pycuda

SCRIPT = r'''
from symgraph.runtime.cuda import runtime
runtime.device_info = lambda d: {"arch": "sm_90", "sm_count": 132}
import contextlib
runtime.activate = lambda d: contextlib.nullcontext()
from symgraph.runtime.cuda import backend
backend.device_info = runtime.device_info
backend.activate = runtime.activate
from symgraph.runtime.cuda.actions import flat_actions
x = sg.sym.var("x")
net = sg.sym.Convolution(x, kernel=(3, 3), num_filter=2, name="c")
net = sg.sym.BatchNorm(sg.sym.Dropout(sg.sym.relu(net), p=0.5), name="bn")
net = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(net, num_hidden=3, name="fc"), name="sm")
exe = net.simple_bind(sg.cpu(), x=(2, 1, 6, 6))
prog = backend.compile(exe._train.schedule, None)
prog.workspace, prog.ws_bytes = 0, 0
prog.module = mock.MagicMock()
env = prog.new_env()
seen = set()
backend.cudnn.available = lambda: False
for acts in prog.actions:
    for a in acts:
        fn = prog.closure(a, env)
        assert callable(fn), a
        seen.add(type(a).__name__)
        for b in flat_actions([a]):
            seen.add(type(b).__name__)
assert seen >= {"Choice", "ConvCall", "Copy", "Fill", "Gemm", "Kernel", "Switch"}, seen
backend.cudnn.available = lambda: True
import tempfile
from symgraph.runtime.cuda import tune_cache
backend.cudnn.identity = lambda dev: {"device": "mock"}
tune_cache.shared = lambda: tune_cache.TuneCache(tempfile.mkdtemp())  # nothing remembered
backend.cudnn.plan = lambda dev, geom, filters, dtype="float32": mock.MagicMock()
backend.conv_choice.time_ms = lambda closures, stream: 1.0 if len(closures) == 1 else 2.0
prog.choices.clear()
from symgraph.runtime.cuda.actions import Choice
ch = [a for acts in prog.actions for a in acts if isinstance(a, Choice)]
for a in ch:
    prog.closure(a, env)
    assert prog.choices[a] is a.primary  # timed faster (1 closure < 2): cuDNN kept
backend.conv_choice.time_ms = lambda closures, stream: 2.0 if len(closures) == 1 else 1.0
prog.choices.clear()
for a in ch:
    prog.closure(a, env)
    assert prog.choices[a] is a.fallback
backend.conv_choice.time_ms = lambda closures, stream: 1.0 if len(closures) == 1 else 0.95
prog.choices.clear()
for a in ch:
    prog.closure(a, env)
    assert prog.choices[a] is a.primary  # generated code 5% faster alone: within the margin
assert ch
print("OK")
'''


def test_every_action_has_a_launch_and_choice_keeps_the_faster() -> None:
    run_with_mock_pycuda(SCRIPT)
