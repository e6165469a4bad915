"""``gluon.model_zoo.vision`` against data MXNet 1.9.1 wrote (``tests/data/model_zoo``, made
by ``tests/data/model_zoo_golden.py``): every model's parameter names and shapes, a few
models' outputs with seeded weights; pretrained files, export and bad input."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.gluon.model_zoo import model_store, vision
from tests.data.model_zoo_golden import (GOLDEN_OUTPUTS, HERE, NAMES, draw_input,
                                         draw_params, input_shape)

TABLE = json.loads(gzip.decompress((HERE / "params.json.gz").read_bytes()))


def _structure(name: str) -> list:
    """As the golden script's ``mxnet_structure``, on symgraph's model."""
    net = vision.get_model(name)
    sym = net(sg.sym.var("data"))
    args, _, auxs = sym.infer_shape(data=input_shape(name, published=True))
    shapes = dict(zip(sym.list_arguments(), args))
    shapes.update(zip(sym.list_auxiliary_states(), auxs))
    return [[key, p.name[len(net.prefix):], list(shapes[p.name])]
            for key, p in net._collect_params_with_prefix().items()]


def _seeded(name: str, **kwargs: object) -> tuple:
    """Model ``name`` with the golden script's seeded weights, and its seeded input."""
    net = vision.get_model(name, **kwargs)
    net.initialize()
    x = sg.nd.array(draw_input(input_shape(name)))
    net(x)
    params = net._collect_params_with_prefix()
    drawn = draw_params({k: p.shape for k, p in params.items()})
    for key, p in params.items():
        p.set_data(sg.nd.array(drawn[key]))
    return net, x


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    """Within 1e-4 relative to the output's scale (float32 sums in another order)."""
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


def test_the_table_lists_every_get_model_name() -> None:
    assert sorted(TABLE) == sorted(NAMES) == sorted(vision.MODELS)


@pytest.mark.parametrize("name", NAMES)
def test_parameter_names_and_shapes_equal_mxnet(name: str) -> None:
    got, want = _structure(name), TABLE[name]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == w, f"{name}: {g} vs MXNet's {w}"


@pytest.mark.parametrize("name", GOLDEN_OUTPUTS)
def test_outputs_equal_mxnet_with_seeded_weights(name: str) -> None:
    net, x = _seeded(name)
    want = np.load(HERE / "outputs.npz")[name]
    assert_close(net(x).asnumpy(), want)


def test_get_model_is_case_insensitive_and_names_the_options() -> None:
    assert isinstance(vision.get_model("ResNet18_V2"), vision.ResNetV2)
    assert isinstance(vision.get_model("mobilenetv2_0.5"), vision.MobileNetV2)
    with pytest.raises(sg.AttrError, match="(?s)resnet19_v1 is not supported.*resnet18_v1"):
        vision.get_model("resnet19_v1")


def test_named_variants_fix_their_arguments_as_mxnet() -> None:
    assert vision.resnet50_v2.__name__ == "resnet50_v2"
    bn = vision.vgg11_bn(batch_norm=False)  # MXNet's vgg11_bn overrides the keyword
    assert any(isinstance(b, sg.gluon.nn.BatchNorm) for b in bn.features._children.values())
    assert not any(isinstance(b, sg.gluon.nn.BatchNorm)
                   for b in vision.vgg11().features._children.values())


def test_bad_arguments_are_refused_by_name() -> None:
    with pytest.raises(sg.AttrError, match="Invalid number of layers: 20"):
        vision.get_resnet(1, 20)
    with pytest.raises(sg.AttrError, match="Invalid resnet version: 3"):
        vision.get_resnet(3, 18)
    with pytest.raises(sg.AttrError, match="SqueezeNet version 1.2"):
        vision.SqueezeNet("1.2")
    with pytest.raises(sg.AttrError, match="same length"):
        vision.VGG([1, 1], [64])


def test_wrong_input_channels_name_the_layer_and_leave_the_input() -> None:
    net = vision.resnet18_v1(classes=4)
    net.initialize()
    net(sg.nd.zeros((1, 3, 32, 32)))
    x = np.ones((1, 4, 32, 32), np.float32)
    data = sg.nd.array(x)
    with pytest.raises(sg.ShapeError, match=r"conv0.*\(64, 3, 7, 7\)"):
        net(data).asnumpy()
    np.testing.assert_array_equal(data.asnumpy(), x)


def test_too_small_an_input_for_squeezenet_is_a_shape_error() -> None:
    net = vision.squeezenet1_1(classes=4)
    net.initialize()
    with pytest.raises(sg.ShapeError, match="pool"):
        net(sg.nd.zeros((1, 3, 64, 64))).asnumpy()


def test_relu6_clips_to_zero_and_six() -> None:
    from symgraph.gluon.model_zoo.vision.mobilenet import RELU6
    x = np.array([-2.0, 0.5, 5.5, 6.5, 100.0], np.float32)
    np.testing.assert_array_equal(RELU6()(sg.nd.array(x)).asnumpy(), np.clip(x, 0, 6))


@pytest.mark.parametrize("name", ["resnet18_v1", "mobilenetv2_0.25"])
def test_hybridize_and_export_reload_the_same_predictions(name: str, tmp_path: Path) -> None:
    net, x = _seeded(name)
    eager = net(x).asnumpy()
    net.hybridize()
    assert_close(net(x).asnumpy(), eager)
    net.export(str(tmp_path / name))
    saved = sg.nd.load(str(tmp_path / f"{name}-0000.params"))
    full = {"arg:" + k if "running" not in k else "aux:" + k for k in net.collect_params()}
    assert set(saved) == full
    back = sg.gluon.SymbolBlock.imports(str(tmp_path / f"{name}-symbol.json"), "data",
                                        str(tmp_path / f"{name}-0000.params"))
    assert_close(back(x).asnumpy(), eager)


def _publish(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> tuple:
    """A parameter file of ``name`` registered with its real sha1, and the model's output."""
    net, x = _seeded(name)
    path = tmp_path / "made.params"
    net.save_parameters(str(path))
    monkeypatch.setitem(model_store._MODEL_SHA1, name,
                        hashlib.sha1(path.read_bytes()).hexdigest())
    return path, x, net(x).asnumpy()


def test_pretrained_reads_the_checked_file_from_root(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path, x, want = _publish(tmp_path, "squeezenet1.1", monkeypatch)
    root = tmp_path / "models"
    root.mkdir()
    target = root / f"squeezenet1.1-{model_store.short_hash('squeezenet1.1')}.params"
    os.replace(path, target)
    net = vision.get_model("squeezenet1.1", pretrained=True, root=str(root))
    assert_close(net(x).asnumpy(), want)


def test_missing_file_without_network_says_where_to_put_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMGRAPH_GLUON_REPO", (tmp_path / "no-repo").as_uri())
    with pytest.raises(sg.DataError, match=r"squeezenet1\.1-33ba0f93\.params.*"
                       + str(tmp_path / "models")):
        vision.squeezenet1_1(pretrained=True, root=str(tmp_path / "models"))


def test_a_file_with_another_sha1_is_not_used(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMGRAPH_GLUON_REPO", (tmp_path / "no-repo").as_uri())
    bad = tmp_path / f"alexnet-{model_store.short_hash('alexnet')}.params"
    bad.write_bytes(b"not MXNet's file")
    with pytest.raises(sg.DataError, match="another sha1"):
        vision.alexnet(pretrained=True, root=str(tmp_path))
    assert bad.read_bytes() == b"not MXNet's file"


def test_a_missing_file_is_downloaded_from_the_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = "mobilenet0.25"
    path, x, want = _publish(tmp_path, name, monkeypatch)
    stem = f"{name}-{model_store.short_hash(name)}"
    repo = tmp_path / "repo"
    (repo / "gluon" / "models").mkdir(parents=True)
    with zipfile.ZipFile(repo / "gluon" / "models" / f"{stem}.zip", "w") as zf:
        zf.write(path, f"{stem}.params")
    monkeypatch.setenv("SYMGRAPH_GLUON_REPO", repo.as_uri())
    net = vision.get_model(name, pretrained=True, root=str(tmp_path / "models"))
    assert_close(net(x).asnumpy(), want)
    assert (tmp_path / "models" / f"{stem}.params").is_file()
    model_store.purge(str(tmp_path / "models"))
    assert not os.listdir(tmp_path / "models")


def test_short_hash_of_an_unknown_model() -> None:
    with pytest.raises(sg.DataError, match="resnet7_v1 is not available"):
        model_store.short_hash("resnet7_v1")


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["resnet18_v2", "mobilenetv2_0.25", "squeezenet1.1"])
@pytest.mark.parametrize("hybrid", [False, True])
def test_gpu_outputs_equal_mxnet_with_seeded_weights(name: str, hybrid: bool,
                                                     tmp_path: Path) -> None:
    net, x = _seeded(name)
    path = tmp_path / "seeded.params"
    net.save_parameters(str(path))
    gpu = vision.get_model(name)
    gpu.load_parameters(str(path), ctx=sg.gpu())
    if hybrid:
        gpu.hybridize()
    got = gpu(x.as_in_context(sg.gpu())).asnumpy()
    # cuDNN/cuBLAS sum in other orders (TF32 stays off by default): float32 tolerance
    np.testing.assert_allclose(got, np.load(HERE / "outputs.npz")[name], rtol=1e-3,
                               atol=1e-3 * max(1.0, np.abs(got).max()))
