"""``gluon.model_zoo.vision`` live against MXNet 1.9.1 (one subprocess for all models): MXNet
builds each model, gives it the seeded weights and saves its parameters; symgraph's model
of the same name loads the file and predicts the same. MXNet also imports two models that
symgraph hybridized and exported. Marked ``mxnet``; skipped without MXNet."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.gluon.model_zoo import model_store, vision
from tests.data.model_zoo_golden import draw_input, input_shape

from .test_model_zoo import _seeded, assert_close
from .test_mxnet_gluon import _mxnet

pytestmark = pytest.mark.mxnet

ROOT = Path(__file__).resolve().parents[2]
LIVE = ["resnet18_v1", "resnet50_v1", "resnet18_v2", "resnet50_v2", "vgg11", "vgg13_bn",
        "alexnet", "densenet121", "squeezenet1.0", "squeezenet1.1", "inceptionv3",
        "mobilenet0.5", "mobilenet1.0", "mobilenetv2_0.75", "mobilenetv2_1.0"]
EXPORTED = ["resnet18_v1", "mobilenetv2_0.25"]

CHILD = '''
import json, sys
import numpy as np
import mxnet as mx
sys.path.insert(0, sys.argv[1])
from tests.data.model_zoo_golden import draw_input, input_shape, mxnet_outputs
out = sys.argv[2]
names, exported = json.loads(sys.argv[3]), json.loads(sys.argv[4])
for name in names:
    np.save(f"{out}/{name}.npy", mxnet_outputs(mx, name, f"{out}/{name}.params"))
for name in exported:
    net = mx.gluon.SymbolBlock.imports(f"{out}/sg-{name}-symbol.json", ["data"],
                                       f"{out}/sg-{name}-0000.params")
    x = mx.nd.array(draw_input(input_shape(name)))
    np.save(f"{out}/sg-{name}.npy", net(x).asnumpy())
vision = mx.gluon.model_zoo.vision
names = [n for n in dir(vision) if not n.startswith("_")
         and not isinstance(getattr(vision, n), type(vision))]
json.dump({"sha1": mx.gluon.model_zoo.model_store._model_sha1, "names": names},
          open(f"{out}/api.json", "w"))
'''


@pytest.fixture(scope="module")
def mxnet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Files MXNet wrote: ``<name>.params`` and ``.npy`` per LIVE model, ``sg-<name>.npy``
    per EXPORTED one, ``api.json`` (its model_store table and vision's public names)."""
    exe = _mxnet()
    out = tmp_path_factory.mktemp("zoo")
    for name in EXPORTED:
        net, x = _seeded(name)
        net.hybridize()
        np.save(out / f"ours-{name}.npy", net(x).asnumpy())
        net.export(str(out / f"sg-{name}"))
    run = subprocess.run([exe, "-c", CHILD, str(ROOT), str(out), json.dumps(LIVE),
                          json.dumps(EXPORTED)], capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stderr[-3000:]
    return out


@pytest.mark.parametrize("name", LIVE)
def test_symgraph_predicts_as_mxnet_from_its_file(name: str, mxnet_dir: Path) -> None:
    net = vision.get_model(name)
    net.load_parameters(str(mxnet_dir / f"{name}.params"))
    x = sg.nd.array(draw_input(input_shape(name)))
    assert_close(net(x).asnumpy(), np.load(mxnet_dir / f"{name}.npy"))


@pytest.mark.parametrize("name", EXPORTED)
def test_mxnet_imports_what_symgraph_exported(name: str, mxnet_dir: Path) -> None:
    assert_close(np.load(mxnet_dir / f"sg-{name}.npy"), np.load(mxnet_dir / f"ours-{name}.npy"))


def test_names_and_checksums_are_mxnets(mxnet_dir: Path) -> None:
    api = json.loads((mxnet_dir / "api.json").read_text())
    assert sorted(vision.__all__) == sorted(api["names"])
    assert model_store._MODEL_SHA1 == api["sha1"]
