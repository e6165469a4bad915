"""The image augmentation ops, image.resize, contrib.hawkesll, contrib.BatchNormWithReLU and
LeakyReLU's rrelu: MXNet 1.9.1 live for the deterministic ones, properties every draw has for
the random ones (their draws are not MXNet's), and typed errors for bad input."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, ShapeError
from tests.cuda.graphs import unrolled

from ..mxnet_live import mxnet_json

pytestmark = pytest.mark.mxnet

RNG = np.random.default_rng(7)
IMG = RNG.uniform(0, 255, (5, 7, 3))
HAWKES = dict(lda=RNG.uniform(0.5, 2, (3, 2)), alpha=RNG.uniform(0.1, 0.5, 2),
              beta=RNG.uniform(0.5, 2, 2), state=RNG.uniform(0, 1, (3, 2)),
              lags=RNG.uniform(0.1, 1, (3, 4)), marks=RNG.integers(0, 2, (3, 4)),
              valid_length=np.array([2.0, 4.0, 0.0]), max_time=np.array([6.0, 5.0, 3.0]))
BN = dict(x=RNG.normal(size=(2, 3, 4, 5)), gamma=RNG.uniform(0.5, 1.5, 3), beta=RNG.normal(size=3),
          mm=RNG.normal(size=3), mv=RNG.uniform(0.5, 2, 3), dy=RNG.normal(size=(2, 3, 4, 5)))

MX_SCRIPT = """
import json, sys
import mxnet as mx
import numpy as np
p = {k: np.array(v) for k, v in json.load(sys.stdin).items()}
nd, out = mx.nd, {}
img = nd.array(p["img"])
out["lighting"] = nd.image.adjust_lighting(img, alpha=(0.1, -0.2, 0.3)).asnumpy()
out["resize"] = nd.image.resize(img, size=(4, 3)).asnumpy()
out["resize_up"] = nd.image.resize(img, size=(11, 8)).asnumpy()
out["resize_ratio"] = nd.image.resize(img, size=4, keep_ratio=True).asnumpy()
out["resize_nearest"] = nd.image.resize(img, size=(10, 3), interp=0).asnumpy()
out["resize_u8"] = nd.image.resize(img.astype("uint8"), size=(4, 3)).asnumpy()
h = [nd.array(p[k], dtype="int32" if k == "marks" else "float64") for k in
     ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")]
for k in (0, 1, 2):
    h[k].attach_grad()
with mx.autograd.record():
    ll, st = nd.contrib.hawkesll(*h)
ll.backward()
out.update(ll=ll.asnumpy(), st=st.asnumpy(), dlda=h[0].grad.asnumpy(),
           dalpha=h[1].grad.asnumpy(), dbeta=h[2].grad.asnumpy())
x, g, mm = nd.array(p["bn_x"]), nd.array(p["bn_gamma"]), nd.array(p["bn_mm"])
x.attach_grad(); g.attach_grad()
with mx.autograd.record():
    y = nd.contrib.BatchNormWithReLU(x, g, nd.array(p["bn_beta"]), mm, nd.array(p["bn_mv"]),
                                     fix_gamma=False)
y.backward(nd.array(p["bn_dy"]))
out.update(bn=y.asnumpy(), bn_dx=x.grad.asnumpy(), bn_dg=g.grad.asnumpy(), bn_mm=mm.asnumpy())
out["rrelu"] = nd.LeakyReLU(nd.array(p["bn_x"]), act_type="rrelu")[0].asnumpy()
print(json.dumps({k: v.astype(float).tolist() for k, v in out.items()}))
"""


@pytest.fixture(scope="module")
def mx_out() -> dict:
    payload = {"img": IMG.tolist(), **{k: v.tolist() for k, v in HAWKES.items()},
               **{f"bn_{k}": v.tolist() for k, v in BN.items()}}
    return {k: np.array(v) for k, v in mxnet_json(MX_SCRIPT, payload).items()}


def test_image_ops_match_mxnet(mx_out: dict) -> None:
    img, nd = sg.nd.array(IMG, dtype="float32"), sg.nd
    got = {"lighting": nd.image.adjust_lighting(img, alpha=(0.1, -0.2, 0.3)),
           "resize": nd.image.resize(img, size=(4, 3)),
           "resize_up": nd.image.resize(img, size=(11, 8)),
           "resize_ratio": nd.image.resize(img, size=4, keep_ratio=True),
           "resize_nearest": nd.image.resize(img, size=(10, 3), interp=0)}
    for k, v in got.items():
        np.testing.assert_allclose(v.asnumpy(), mx_out[k], rtol=1e-5, atol=1e-3, err_msg=k)
    u8 = nd.image.resize(img.astype("uint8"), size=(4, 3)).asnumpy()
    assert u8.dtype == np.uint8  # OpenCV's fixed-point weights may round the other way
    assert np.abs(u8.astype(int) - mx_out["resize_u8"]).max() <= 1


def test_hawkesll_matches_mxnet(mx_out: dict) -> None:
    xs = [sg.nd.array(v, dtype="int32" if k == "marks" else "float64")
          for k, v in HAWKES.items()]
    for v in xs[:3]:
        v.attach_grad()
    with sg.autograd.record():
        ll, st = sg.nd.contrib.hawkesll(*xs)
    ll.backward()
    for k, v in {"ll": ll, "st": st, "dlda": xs[0].grad, "dalpha": xs[1].grad,
                 "dbeta": xs[2].grad}.items():
        np.testing.assert_allclose(v.asnumpy(), mx_out[k], rtol=1e-6, atol=1e-9, err_msg=k)


def test_batchnorm_relu_and_rrelu_match_mxnet(mx_out: dict) -> None:
    x, g, mm = (sg.nd.array(BN[k]) for k in ("x", "gamma", "mm"))
    x.attach_grad()
    g.attach_grad()
    with sg.autograd.record():
        y = sg.nd.contrib.BatchNormWithReLU(x, g, sg.nd.array(BN["beta"]), mm,
                                            sg.nd.array(BN["mv"]), fix_gamma=False)
    y.backward(sg.nd.array(BN["dy"]))
    for k, v in {"bn": y, "bn_dx": x.grad, "bn_dg": g.grad, "bn_mm": mm}.items():
        np.testing.assert_allclose(v.asnumpy(), mx_out[k], rtol=1e-4, atol=1e-5, err_msg=k)
    rrelu = sg.nd.LeakyReLU(sg.nd.array(BN["x"]), act_type="rrelu")[0].asnumpy()
    np.testing.assert_allclose(rrelu, mx_out["rrelu"], rtol=1e-6, atol=1e-7)


def test_rrelu_training_slopes_lie_in_the_bounds() -> None:
    x = sg.nd.array(-np.ones((400,)))
    with sg.autograd.record():
        y, mask = sg.nd.LeakyReLU(x, act_type="rrelu", lower_bound=0.2, upper_bound=0.4)
    slopes = -y.asnumpy()
    np.testing.assert_array_equal(slopes, mask.asnumpy())
    assert 0.2 <= slopes.min() < 0.22 and 0.38 < slopes.max() < 0.4 and slopes.std() > 0.03


def _ratio(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    return (y / x).reshape(x.shape[0], -1)


def test_random_brightness_draws_one_factor_per_image_in_range() -> None:
    x = RNG.uniform(1, 255, (6, 3, 4, 3))
    y = sg.nd.image.random_brightness(sg.nd.array(x, dtype="float64"), min_factor=0.5,
                                      max_factor=1.5).asnumpy()
    r = _ratio(y, x)
    assert np.allclose(r, r[:, :1]) and r.min() >= 0.5 and r.max() < 1.5
    assert np.unique(np.round(r[:, 0], 9)).size == 6  # one draw per image


def test_draws_repeat_after_seeding() -> None:
    x = sg.nd.array(IMG)
    runs = []
    for _ in range(2):
        sg.random.seed(11)
        runs.append(sg.nd.image.random_color_jitter(x, brightness=0.3, contrast=0.3,
                                                    saturation=0.3, hue=0.1).asnumpy())
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.allclose(runs[0], IMG)


def test_jitter_composition_applies_the_active_stage() -> None:
    """The GPU's composition (ranked positions, selects) with brightness alone: x * f."""
    sym = sg.sym.image.random_color_jitter(sg.sym.var("x"), brightness=0.4, contrast=0,
                                           saturation=0, hue=0)
    x = RNG.uniform(1, 255, (3, 4, 5, 3))
    flat = unrolled(sym, {"x": x.shape}, "float64")
    y = flat.eval(ctx=sg.cpu(), x=sg.nd.array(x, dtype="float64"))[0].asnumpy()
    r = _ratio(y, x)
    assert np.allclose(r, r[:, :1]) and r.min() >= 0.6 and r.max() < 1.4


def test_uint8_images_saturate() -> None:
    x = sg.nd.array(np.full((2, 2, 3), 200), dtype="uint8")
    y = sg.nd.image.random_brightness(x, min_factor=2.0, max_factor=2.0)
    assert y.dtype == np.uint8 and (y.asnumpy() == 255).all()
    z = sg.nd.image.adjust_lighting(sg.nd.array(np.zeros((1, 1, 3)), dtype="uint8"),
                                    alpha=(0.1, 0.0, 0.0))  # -3.1 per channel: clipped to 0
    assert (z.asnumpy() == 0).all()


@pytest.mark.parametrize("call, err, match", [
    (lambda x: sg.nd.image.random_brightness(x.reshape((5, 21)), min_factor=0.5,
                                             max_factor=1.0), ShapeError,
     "_image_random_brightness.*shape \\(5, 21\\)"),
    (lambda x: sg.nd.image.random_contrast(x, min_factor=2.0, max_factor=1.0), ShapeError,
     "min_factor <= max_factor.*2.0 and 1.0"),
    (lambda x: sg.nd.image.adjust_lighting(x, alpha=(0.1, 0.2)), ShapeError,
     "alpha needs 3 values"),
    (lambda x: sg.nd.image.resize(x, size=(4, 3), interp=3), AttrError, "interp=3"),
    (lambda x: sg.nd.image.resize(x, size=(0, 3)), AttrError, "size=\\(0, 3\\)"),
])
def test_bad_input_is_a_typed_error(call, err, match) -> None:
    x = sg.nd.array(IMG)
    with pytest.raises(err, match=match):
        call(x).asnumpy()
    np.testing.assert_array_equal(x.asnumpy(), IMG.astype(np.float32))


def test_hawkesll_shape_error_names_the_input() -> None:
    xs = [sg.nd.array(v, dtype="int32" if k == "marks" else "float64")
          for k, v in HAWKES.items()]
    xs[1] = sg.nd.array(np.ones(3))
    with pytest.raises(ShapeError, match="alpha has shape \\(3,\\), expected \\(2,\\)"):
        sg.nd.contrib.hawkesll(*xs)[0].asnumpy()
