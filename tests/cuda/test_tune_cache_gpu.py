"""On the device: a second process with the same cache folder times no convolution candidate
and gets the same step; ``SYMGRAPH_AUTOTUNE=0`` times nothing even cold."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]

# Counts conv_choice.graph_ms calls (every timing goes through it) and plan lists built, binds a
# two-convolution net on gpu(0), runs one training step, prints counts and the loss gradient.
CHILD = r'''
import json, numpy as np, symgraph as sg
from symgraph.runtime.cuda import conv_choice, cudnn_graph
counts = {"timed": 0, "plan_lists": 0}
def counted(owner, name, key):
    fn = getattr(owner, name)
    def call(*a, **k):
        counts[key] += 1
        return fn(*a, **k)
    setattr(owner, name, call)
counted(conv_choice, "graph_ms", "timed")
counted(cudnn_graph.GraphCall, "_mode_plans", "plan_lists")
S = sg.sym
x = S.Convolution(S.var("data"), num_filter=16, kernel=(3, 3), pad=(1, 1), name="c1")
x = S.Convolution(S.relu(x), num_filter=8, kernel=(3, 3), stride=(2, 2), name="c2")
net = S.SoftmaxOutput(S.FullyConnected(x, num_hidden=10, name="fc"), name="softmax")
exe = net.simple_bind(sg.gpu(0), data=(8, 3, 16, 16))
rng = np.random.default_rng(0)
for name, arr in exe.arg_dict.items():
    arr[:] = rng.normal(size=arr.shape) * 0.1
exe.arg_dict["softmax_label"][:] = rng.integers(0, 10, size=8)
exe.forward(is_train=True)
exe.backward()
counts["grad"] = exe.grad_dict["c1_weight"].asnumpy().ravel()[:32].tolist()
print(json.dumps(counts))
'''


def child(mode: str, cache: Path) -> dict:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "SYMGRAPH_AUTOTUNE": mode,
           "SYMGRAPH_CACHE_DIR": str(cache)}
    env.pop("SYMGRAPH_CUDNN", None)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mode", ["1", "full"])
def test_warm_process_times_nothing(tmp_path: Path, mode: str) -> None:
    cold, warm = child(mode, tmp_path), child(mode, tmp_path)
    assert cold["timed"] > 0
    assert warm["timed"] == 0
    assert warm["plan_lists"] <= cold["plan_lists"]
    assert warm["grad"] == pytest.approx(cold["grad"], rel=1e-3, abs=1e-6)


def test_mode_0_times_nothing_cold(tmp_path: Path) -> None:
    assert child("0", tmp_path)["timed"] == 0
