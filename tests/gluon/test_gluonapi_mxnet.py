"""The new Gluon API against MXNet 1.9.1 run live (a subprocess): the same transform outputs
on one image, the same summary table, and a model saved by symgraph's ``Block.save`` loaded by
MXNet's ``Block.load``. Marked ``mxnet``; skipped when MXNet 1.9.1 is not available."""
from __future__ import annotations

import json

import numpy as np
import pytest

import symgraph as sg

from ._mxnet_child import run_child

pytestmark = pytest.mark.mxnet

# run by both processes: ``mx`` is mxnet or symgraph
CODE = '''
def run(mx, img, x, prefix, load):
    import contextlib, io
    T = mx.gluon.data.vision.transforms
    nd_img = mx.nd.array(img, dtype="uint8")
    out = {"resize": T.Resize((7, 5))(nd_img).asnumpy().tolist(),
           "resize_keep": T.Resize(6, keep_ratio=True)(nd_img).asnumpy().tolist(),
           "crop": T.CropResize(1, 2, 4, 3, (6, 5), 1)(nd_img).asnumpy().tolist(),
           "center": T.CenterCrop(4)(nd_img).asnumpy().tolist(),
           "tensor": T.Compose([T.ToTensor(), T.Normalize((0.1, 0.2, 0.3), (0.4, 0.5, 0.6))])(
               nd_img).asnumpy().tolist(),
           "flip": mx.nd.image.flip_left_right(nd_img).asnumpy().tolist()}
    net = mx.gluon.nn.Sequential()
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(5, in_units=4),
                mx.gluon.nn.Dense(3, activation="relu", in_units=5))
    net.initialize()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        net.summary(mx.nd.array(x))
    out["summary"] = buf.getvalue()
    if load:
        net.load(prefix)
        out["loaded"] = net(mx.nd.array(x)).asnumpy().tolist()
    return out
'''

CHILD = CODE + '''
import json, sys
import numpy as np
import mxnet as mx
d = np.load(sys.argv[1])
json.dump(run(mx, d["img"], d["x"], str(d["prefix"]), True), open(sys.argv[2], "w"))
'''


def test_transforms_summary_and_save_match_mxnet(tmp_path):
    rng = np.random.default_rng(5)
    img = rng.integers(0, 256, (9, 8, 3)).astype(np.uint8)
    x = rng.normal(size=(2, 4)).astype(np.float32)
    net = sg.gluon.nn.Sequential()
    with net.name_scope():
        net.add(sg.gluon.nn.Dense(5, in_units=4),
                sg.gluon.nn.Dense(3, activation="relu", in_units=5))
    net.initialize()
    want_loaded = net(sg.nd.array(x)).asnumpy()
    prefix = str(tmp_path / "sgmodel")
    net.save(prefix)
    namespace: dict = {}
    exec(CODE, namespace)  # the same function, run here on symgraph
    mine = namespace["run"](sg, img, x, prefix, False)
    path = run_child(tmp_path, CHILD, {"img": img, "x": x, "prefix": np.array(prefix)},
                     "out.json")
    theirs = json.loads(path.read_text())
    for key in ("resize", "resize_keep", "crop", "center"):  # uint8: within one level
        np.testing.assert_allclose(mine[key], theirs[key], atol=1, err_msg=key)
    np.testing.assert_allclose(mine["tensor"], theirs["tensor"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(mine["flip"], theirs["flip"])
    assert mine["summary"].splitlines()[3:] == theirs["summary"].splitlines()[3:]
    np.testing.assert_allclose(theirs["loaded"], want_loaded, rtol=1e-5, atol=1e-6)
