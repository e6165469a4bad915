"""gluon.contrib.nn and the new samplers against MXNet 1.9.1 run live (a subprocess): the
same pixel shuffles, concurrent parameter names and sampler sequences. Marked ``mxnet``;
skipped when MXNet 1.9.1 is not available (``SYMGRAPH_MXNET_PYTHON``)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg

from ._mxnet_child import run_child

pytestmark = pytest.mark.mxnet

# run by both processes: ``mx`` is mxnet or symgraph, ``contrib_data`` where each keeps
# IntervalSampler
CODE = '''
def run(mx, contrib_data, x1, x2, x3):
    from_contrib = mx.gluon.contrib.nn
    out = {"shuffle1": from_contrib.PixelShuffle1D(3)(mx.nd.array(x1)).asnumpy().tolist(),
           "shuffle2": from_contrib.PixelShuffle2D((2, 3))(mx.nd.array(x2)).asnumpy().tolist(),
           "shuffle3": from_contrib.PixelShuffle3D(2)(mx.nd.array(x3)).asnumpy().tolist()}
    net = from_contrib.HybridConcurrent(axis=1)
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(3), from_contrib.Identity(), mx.gluon.nn.Dense(2))
    out["names"] = sorted(k[len(net.prefix):] for k in net.collect_params())
    out["interval"] = list(contrib_data.IntervalSampler(10, 4))
    out["interval_once"] = list(contrib_data.IntervalSampler(10, 4, rollover=False))
    ds = mx.gluon.data.SimpleDataset(list(range(10)))
    out["filter"] = list(mx.gluon.data.FilterSampler(lambda v: v % 3 == 1, ds))
    return out
'''

CHILD = CODE + '''
import json, sys
import numpy as np
import mxnet as mx
from mxnet.gluon.contrib import data as contrib_data
inputs = np.load(sys.argv[1])
with open(sys.argv[2], "w") as f:
    json.dump(run(mx, contrib_data, inputs["x1"], inputs["x2"], inputs["x3"]), f)
'''


def test_contrib_layers_and_samplers_match_mxnet(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    xs = {"x1": rng.normal(size=(2, 6, 3)), "x2": rng.normal(size=(1, 12, 2, 3)),
          "x3": rng.normal(size=(1, 16, 2, 1, 3))}
    xs = {k: v.astype(np.float32) for k, v in xs.items()}
    want = json.loads(run_child(tmp_path, CHILD, xs, "out.json").read_text())
    ns: dict = {}
    exec(CODE, ns)
    got = ns["run"](sg, sg.gluon.contrib.data, xs["x1"], xs["x2"], xs["x3"])
    assert set(got) == set(want)
    for key in want:
        if key.startswith("shuffle"):
            np.testing.assert_array_equal(np.array(got[key]), np.array(want[key]), key)
        else:
            assert got[key] == want[key], key
