"""BucketingModule.save_checkpoint / load: MXNet's files (``prefix-%04d.params``,
``prefix-<key>-symbol.json``, ``prefix.buckets``), read back by symgraph and, where MXNet 1.9.1
is installed, exchanged with it in both directions."""
from __future__ import annotations

import os

import numpy as np
import pytest

import symgraph as sg

from .mxnet_live import mxnet_json

# Named layers: MXNet's save_checkpoint calls sym_gen again outside a fresh name scope, so an
# unnamed layer's saved symbol would not match its saved parameters there.
SYM_GEN = '''
def sym_gen(seq_len):
    emb = mx.sym.Embedding(mx.sym.var("data"), input_dim=10, output_dim=4, name="embed")
    out = mx.sym.FullyConnected(mx.sym.Reshape(emb, shape=(-1, 4)), num_hidden=2, name="fc")
    label = mx.sym.Reshape(mx.sym.var("softmax_label"), shape=(-1,))
    return mx.sym.SoftmaxOutput(out, label, name="softmax"), ("data",), ("softmax_label",)
'''


def _sym_gen():
    space: dict = {"mx": sg}
    exec(SYM_GEN, space)  # noqa: S102 (the one network text both libraries build)
    return space["sym_gen"]


def _shapes(key: int) -> tuple[list, list]:
    return [("data", (2, key))], [("softmax_label", (2, key))]


def _trained(tmp: str) -> sg.mod.BucketingModule:
    mod = sg.mod.BucketingModule(_sym_gen(), default_bucket_key=3)
    mod.bind(*_shapes(3))
    mod.init_params(sg.init.Uniform(1.0))
    mod.switch_bucket(5, *_shapes(5))
    mod.save_checkpoint(os.path.join(tmp, "m"), 2)
    return mod


def _params(mod) -> dict[str, np.ndarray]:
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def test_save_load_round_trip(tmp_path) -> None:
    mod = _trained(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["m-0002.params", "m-3-symbol.json",
                                            "m-5-symbol.json", "m.buckets"]
    back = sg.mod.BucketingModule.load(str(tmp_path / "m"), 2, sym_gen=_sym_gen(),
                                       default_bucket_key=3)
    back.bind(*_shapes(3))
    theirs, ours = _params(mod), _params(back)
    assert sorted(theirs) == sorted(ours)
    for k in theirs:
        np.testing.assert_array_equal(theirs[k], ours[k], err_msg=k)
    with pytest.raises(sg.BindError, match="sym_gen and default_bucket_key are required"):
        sg.mod.BucketingModule.load(str(tmp_path / "m"), 2, sym_gen=_sym_gen())


MX_ROUND = SYM_GEN + '''
import json, sys
import mxnet as mx
import numpy as np
tmp = json.load(sys.stdin)
ours = mx.mod.BucketingModule.load(tmp + "/ours", 2, sym_gen=sym_gen, default_bucket_key=3)
ours.bind([("data", (2, 3))], [("softmax_label", (2, 3))])
mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=3)
mod.bind([("data", (2, 3))], [("softmax_label", (2, 3))])
mod.init_params(mx.init.Uniform(1.0))
mod.switch_bucket(4, [("data", (2, 4))], [("softmax_label", (2, 4))])
mod.save_checkpoint(tmp + "/theirs", 2)
print(json.dumps([{k: v.asnumpy().tolist() for k, v in m.get_params()[0].items()}
                  for m in (ours, mod)]))
'''


@pytest.mark.mxnet
def test_files_exchange_with_mxnet(tmp_path) -> None:
    mod = sg.mod.BucketingModule(_sym_gen(), default_bucket_key=3)
    mod.bind(*_shapes(3))
    mod.init_params(sg.init.Uniform(1.0))
    mod.save_checkpoint(str(tmp_path / "ours"), 2)
    read_by_mx, written_by_mx = mxnet_json(MX_ROUND, str(tmp_path))
    for k, v in _params(mod).items():
        np.testing.assert_array_equal(np.asarray(read_by_mx[k], np.float32), v, err_msg=k)
    back = sg.mod.BucketingModule.load(str(tmp_path / "theirs"), 2, sym_gen=_sym_gen(),
                                       default_bucket_key=3)
    back.bind(*_shapes(3))
    assert sorted(os.listdir(tmp_path))[-3:] == ["theirs-3-symbol.json",
                                                 "theirs-4-symbol.json", "theirs.buckets"]
    for k, v in _params(back).items():
        np.testing.assert_array_equal(np.asarray(written_by_mx[k], np.float32), v, err_msg=k)
