"""The detection ops' GPU lowering (``cuda/lowering_detection.py``), checked without and with a
GPU.

Without a GPU: an SSD-style training and inference graph (convolution, L2Normalization,
MultiBoxPrior, MultiBoxTarget, softmax, MultiBoxDetection) lowers to a program with no host
step, in float32, float16 and bfloat16; every detection kernel of those programs and of the
MXNet comparison cases compiles with nvcc for sm_90 (``test_detection_kernels_host.py`` runs
them on the CPU). With a GPU (``-m gpu``): each comparison case of
``tests/ops/test_detection_mxnet.py`` and the SSD graph against the numpy backend.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Host, Kernel, flat_actions
from symgraph.runtime.cuda.plan import lower_schedule
from tests.ops import test_detection_mxnet as live

S = sg.sym
CLASSES, SIZES, RATIOS = 3, (0.3, 0.5), (1.0, 2.0, 0.5)
SHAPES = {"data": (2, 3, 8, 8), "label": (2, 4, 5)}
DETECTION_KERNELS = ("multibox", "box_", "bipartite", "_roi", "deformable", "proposal")


def ssd() -> Any:
    """A one-scale SSD head: anchors on an L2-normalised feature map, class and box
    predictions, MultiBoxTarget's training targets and losses, and the detections."""
    feat = S.Activation(S.Convolution(S.var("data"), kernel=(3, 3), pad=(1, 1), num_filter=8,
                                      name="body"), act_type="relu")
    feat = S.L2Normalization(feat, mode="channel", name="norm")
    anchors = S.contrib.MultiBoxPrior(feat, sizes=SIZES, ratios=RATIOS, clip=True)
    k = len(SIZES) + len(RATIOS) - 1
    cls = S.Convolution(feat, kernel=(3, 3), pad=(1, 1), num_filter=k * (CLASSES + 1),
                        name="cls")
    cls = S.transpose(S.reshape(S.transpose(cls, axes=(0, 2, 3, 1)), shape=(0, -1, CLASSES + 1)),
                      axes=(0, 2, 1))
    loc = S.Flatten(S.transpose(S.Convolution(feat, kernel=(3, 3), pad=(1, 1),
                                              num_filter=k * 4, name="loc"), axes=(0, 2, 3, 1)))
    loc_t, loc_m, cls_t = S.contrib.MultiBoxTarget(anchors, S.var("label"), cls,
                                                   negative_mining_ratio=3)
    cls_loss = S.SoftmaxOutput(cls, cls_t, ignore_label=-1, use_ignore=True, multi_output=True,
                               normalization="valid", name="cls_prob")
    loc_loss = S.make_loss(S.smooth_l1(loc_m * (loc - loc_t), scalar=1.0), name="loc_loss")
    det = S.contrib.MultiBoxDetection(S.softmax(cls, axis=1), loc, anchors, nms_threshold=0.45)
    return S.Group([cls_loss, loc_loss, S.BlockGrad(det)])


def _label() -> np.ndarray:
    lab = np.full(SHAPES["label"], -1.0)
    lab[0, :2] = [[0, 0.1, 0.1, 0.5, 0.6], [2, 0.4, 0.3, 0.9, 0.8]]
    lab[1, :1] = [[1, 0.2, 0.2, 0.7, 0.5]]
    return lab


def _schedules(dtype: str) -> list:
    exe = ssd().simple_bind(sg.cpu(), type_dict={k: dtype for k in SHAPES},
                            grad_req={k: "null" if k in SHAPES else "write"
                                      for k in ssd().list_arguments()}, **SHAPES)
    return [exe._train.schedule, exe._infer.schedule]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_ssd_graph_has_no_host_step(dtype: str) -> None:
    ops = set()
    for sch in _schedules(dtype):
        ops |= {st.node.op for st in sch.steps}
        acts = [a for step in lower_schedule(sch, 132).actions for a in flat_actions(step)]
        assert not [a.step.node.op for a in acts if isinstance(a, Host)], dtype
    assert {"_contrib_MultiBoxPrior", "_contrib_MultiBoxTarget", "_contrib_MultiBoxDetection",
            "L2Normalization"} <= ops


def _case_kernels(dtype: str, names: tuple = tuple(live.CASES)) -> dict:
    kernels = {}
    for expr, inputs, wrt in (live.CASES[n] for n in names):
        names = "abcdef"[:len(inputs)]
        y = eval(expr, {"nd": S}, {n: S.var(n) for n in names})  # noqa: S307 (cases' table)
        y = S.Group(list(y)) if isinstance(y, (list, tuple)) else y
        exe = y.simple_bind(sg.cpu(), type_dict={n: dtype for n in names},
                            grad_req={n: "write" if k in wrt else "null"
                                      for k, n in enumerate(names)},
                            **{n: np.shape(v) for n, v in zip(names, inputs)})
        for act in lower_schedule(exe._train.schedule, 132).actions:
            for a in flat_actions(act):
                if isinstance(a, Kernel) and any(s in a.kernel.name for s in DETECTION_KERNELS):
                    kernels[a.kernel.name] = a.kernel
    return kernels


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_every_detection_kernel_compiles_for_sm90() -> None:
    """The narrow kernels (the registry-wide compile test covers float32 ones): every case in
    float16, the ROI ops (whose gradients add bfloat16 atomically) in bfloat16 too."""
    kernels = _case_kernels("float16")
    kernels.update(_case_kernels("bfloat16", ("roi_pool", "roi_align_ps", "psroi")))
    assert len(kernels) >= 25
    cubin = compiler.run_nvcc(compiler.module_source(list(kernels.values())), "sm_90",
                              compiler.find_nvcc())
    assert all(name.encode() in cubin for name in kernels)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(live.CASES))
def test_gpu_matches_cpu(name: str) -> None:
    want, got = (live._symgraph(*live.CASES[name], ctx) for ctx in (sg.cpu(), sg.gpu()))
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=name)


@pytest.mark.gpu
def test_ssd_graph_on_gpu_matches_cpu() -> None:
    rng = np.random.default_rng(3)
    sym = ssd()
    shapes, _, _ = sym.infer_shape(**SHAPES)
    values = {n: rng.normal(size=s) * 0.3 for n, s in zip(sym.list_arguments(), shapes)}
    values.update(data=rng.uniform(size=SHAPES["data"]), label=_label())

    def run(ctx: Any) -> list:
        args = {k: sg.nd.array(v, ctx) for k, v in values.items()}
        exe = sym.bind(ctx, args, grad_req="null")
        return [o.asnumpy() for o in exe.forward(is_train=False)]
    for w, g in zip(run(sg.cpu()), run(sg.gpu())):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)
