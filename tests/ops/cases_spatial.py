"""Cases for the layer, attention and loss ops built as compositions (ops/_composite.py):
sampling grids and samplers, resizing and adaptive pooling, correlation, deformable
convolutions, fft/ifft, count_sketch, the interleaved attention matmuls, stack, SVMOutput and
the contrib elementwise ops. References are float64 numpy written pixel by pixel (or with
np.fft / einsum) from MXNet 1.9.1's documented semantics; tests/ops/test_spatial_mxnet.py
checks the same ops against MXNet itself."""
from __future__ import annotations

from math import ceil, floor

import numpy as np

import symgraph as sg

from .case import Case, away_from, integers, normal, uniform

S = sg.sym
x, y, z, w = S.var("x"), S.var("y"), S.var("z"), S.var("w")


def bilinear(img: np.ndarray, r: float, c: float) -> float:
    """One bilinear sample of a 2-d image at (row r, column c), zero outside."""
    r0, c0 = floor(r), floor(c)
    total = 0.0
    for rr in (r0, r0 + 1):
        for cc in (c0, c0 + 1):
            if 0 <= rr < img.shape[0] and 0 <= cc < img.shape[1]:
                total += (1 - abs(r - rr)) * (1 - abs(c - cc)) * img[rr, cc]
    return total


def bilinear_v1(img: np.ndarray, r: float, c: float) -> float:
    """DeformableConvolution's sample: zero outside [0, H) x [0, W), positions past the last
    row or column moved onto it (MXNet's kernels)."""
    if not (0 <= r < img.shape[0] and 0 <= c < img.shape[1]):
        return 0.0
    return bilinear(img, min(r, img.shape[0] - 1.0), min(c, img.shape[1] - 1.0))


def _sampler(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    d, g = x, y
    n, c, h, wd = d.shape
    out = np.zeros((n, c) + g.shape[2:])
    for b in range(n):
        for i in range(g.shape[2]):
            for j in range(g.shape[3]):
                col = (g[b, 0, i, j] + 1) * (wd - 1) / 2
                row = (g[b, 1, i, j] + 1) * (h - 1) / 2
                for ch in range(c):
                    out[b, ch, i, j] = bilinear(d[b, ch], row, col)
    return out


def _affine(theta: np.ndarray, h: int, wd: int) -> np.ndarray:
    out = np.zeros((theta.shape[0], 2, h, wd))
    for b in range(theta.shape[0]):
        t = theta[b].reshape(2, 3)
        for i in range(h):
            for j in range(wd):
                xt, yt = -1 + 2 * j / (wd - 1), -1 + 2 * i / (h - 1)
                out[b, :, i, j] = t @ np.array([xt, yt, 1.0])
    return out


def _warp(x: np.ndarray) -> np.ndarray:
    h, wd = x.shape[2:]
    jj, ii = np.meshgrid(np.arange(wd), np.arange(h))
    return np.stack([(x[:, 0] + jj) * 2 / (wd - 1) - 1, (x[:, 1] + ii) * 2 / (h - 1) - 1],
                    axis=1)


def _resize(d: np.ndarray, oh: int, ow: int, align: bool) -> np.ndarray:
    """MXNet's bilinear resize: source index scale*o (align) or scale*(o+.5)-.5 clamped at 0;
    the upper neighbour clamped at the last pixel."""
    def src(n_in: int, n_out: int, o: int) -> tuple[int, int, float]:
        scale = ((n_in - 1) / (n_out - 1) if align else n_in / n_out) if n_out > 1 else 0.0
        s = scale * o if align else max(scale * (o + 0.5) - 0.5, 0.0)
        i0 = int(s)
        return i0, min(i0 + 1, n_in - 1), s - i0
    out = np.zeros(d.shape[:2] + (oh, ow))
    for i in range(oh):
        r0, r1, lr = src(d.shape[2], oh, i)
        for j in range(ow):
            c0, c1, lc = src(d.shape[3], ow, j)
            out[:, :, i, j] = ((1 - lr) * ((1 - lc) * d[:, :, r0, c0] + lc * d[:, :, r0, c1])
                               + lr * ((1 - lc) * d[:, :, r1, c0] + lc * d[:, :, r1, c1]))
    return out


def _adaptive(d: np.ndarray, oh: int, ow: int) -> np.ndarray:
    out = np.zeros(d.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, r1 = floor(i * d.shape[2] / oh), ceil((i + 1) * d.shape[2] / oh)
            c0, c1 = floor(j * d.shape[3] / ow), ceil((j + 1) * d.shape[3] / ow)
            out[:, :, i, j] = d[:, :, r0:r1, c0:c1].mean(axis=(2, 3))
    return out


def _correlation(a: np.ndarray, b: np.ndarray, k: int, md: int, s1: int, s2: int, pad: int,
                 mult: bool) -> np.ndarray:
    """FlowNet correlation as MXNet's CPU loop: windows start at (i*s1+md, j*s1+md)."""
    pa = np.pad(a, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    pb = np.pad(b, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    border = md + (k - 1) // 2
    th = ceil((pa.shape[2] - 2 * border) / s1)
    tw = ceil((pa.shape[3] - 2 * border) / s1)
    r, gw = md // s2, 2 * (md // s2) + 1
    out = np.zeros((a.shape[0], gw * gw, th, tw))
    for t in range(gw * gw):
        oy, ox = (t // gw - r) * s2, (t % gw - r) * s2
        for i in range(th):
            for j in range(tw):
                y1, x1 = i * s1 + md, j * s1 + md
                p = pa[:, :, y1:y1 + k, x1:x1 + k]
                q = pb[:, :, y1 + oy:y1 + oy + k, x1 + ox:x1 + ox + k]
                out[:, t, i, j] = (p * q if mult else np.abs(p - q)).sum(axis=(1, 2, 3))
    return out / (k * k * a.shape[1])


def _deformable(d: np.ndarray, off: np.ndarray, wt: np.ndarray, bias: np.ndarray,
                mask: np.ndarray = None, pad: int = 1, dg: int = 1) -> np.ndarray:
    """Deformable convolution, stride 1, one group, tap by tap; v1's border without a mask."""
    n, c, h, wd = d.shape
    f, _, kh, kw = wt.shape
    ho, wo = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, f, ho, wo)) + bias.reshape(1, -1, 1, 1)
    cpg = c // dg
    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                for ch in range(c):
                    grp = ch // cpg
                    for p in range(kh):
                        for q in range(kw):
                            tap = p * kw + q
                            dy = off[b, grp * 2 * kh * kw + 2 * tap, i, j]
                            dx = off[b, grp * 2 * kh * kw + 2 * tap + 1, i, j]
                            v = (bilinear if mask is not None else bilinear_v1)(
                                d[b, ch], i - pad + p + dy, j - pad + q + dx)
                            if mask is not None:
                                v *= mask[b, grp * kh * kw + tap, i, j]
                            out[b, :, i, j] += wt[:, ch, p, q] * v
    return out


def _fft(x: np.ndarray) -> np.ndarray:
    zz = np.fft.fft(x, axis=-1)
    return np.stack([zz.real, zz.imag], axis=-1).reshape(x.shape[:-1] + (-1,))


def _ifft(x: np.ndarray) -> np.ndarray:
    zz = x[..., 0::2] + 1j * x[..., 1::2]
    return np.fft.ifft(zz, axis=-1).real * zz.shape[-1]


def _sketch(d: np.ndarray, h: np.ndarray, s: np.ndarray, out_dim: int) -> np.ndarray:
    out = np.zeros((d.shape[0], out_dim))
    for j in range(d.shape[1]):
        out[:, int(h[0, j])] += s[0, j] * d[:, j]
    return out


def _heads(t: np.ndarray, heads: int, parts: int, part: int) -> np.ndarray:
    """(batch, heads, seq, dim) projection ``part`` of interleaved (seq, batch, width)."""
    seq, batch, width = t.shape
    return t.reshape(seq, batch, heads, parts, -1)[:, :, :, part].transpose(1, 2, 0, 3)


def _qk(q: np.ndarray, qp: int, k: np.ndarray, kp: int, heads: int) -> np.ndarray:
    qq, kk = _heads(q, heads, qp, 0), _heads(k, heads, kp, 1 if kp == 3 else 0)
    sc = np.einsum("bhqd,bhkd->bhqk", qq, kk) / np.sqrt(qq.shape[-1])
    return sc.reshape(-1, sc.shape[2], sc.shape[3])


def _valatt(kv: np.ndarray, parts: int, att: np.ndarray, heads: int) -> np.ndarray:
    v = _heads(kv, heads, parts, parts - 1)
    a = att.reshape(v.shape[0], heads, att.shape[1], att.shape[2])
    o = np.einsum("bhqk,bhkd->qbhd", a, v)
    return o.reshape(o.shape[0], o.shape[1], -1)


def _svm_loss(margin: float, k: float, linear: bool):
    def loss(x: np.ndarray, y: np.ndarray) -> float:
        t = np.zeros_like(x, dtype=bool)
        t[np.arange(len(x)), y.astype(int)] = True
        hinge = np.where(t, np.maximum(0, margin - x), np.maximum(0, margin + x))
        return float(k * np.sum(hinge if linear else hinge ** 2))
    return loss


THETA = lambda rng: (np.array([1.0, 0.1, 0.05, -0.1, 0.9, 0.1])  # noqa: E731
                     + rng.uniform(-0.1, 0.1, (2, 6)))
ATT = dict(heads=2)
CASES = [
    Case("GridGenerator", lambda: S.GridGenerator(x, transform_type="affine",
                                                  target_shape=(3, 4)),
         {"x": normal(2, 6)}, lambda x: _affine(x, 3, 4), id="GridGenerator-affine"),
    Case("GridGenerator", lambda: S.GridGenerator(x, transform_type="warp"),
         {"x": normal(2, 2, 3, 4)}, _warp, id="GridGenerator-warp"),
    Case("BilinearSampler", lambda: S.BilinearSampler(x, y),
         {"x": normal(2, 2, 4, 5), "y": uniform(2, 2, 3, 3, low=-1.2, high=1.2)}, _sampler),
    Case("SpatialTransformer", lambda: S.SpatialTransformer(x, y, target_shape=(3, 4)),
         {"x": normal(2, 2, 4, 5), "y": THETA},
         lambda x, y: _sampler(x, _affine(y, 3, 4))),
    Case("_contrib_BilinearResize2D", lambda: S.contrib.BilinearResize2D(x, height=5, width=3),
         {"x": normal(1, 2, 3, 4)}, lambda x: _resize(x, 5, 3, True)),
    Case("_contrib_BilinearResize2D",
         lambda: S.contrib.BilinearResize2D(x, mode="to_odd_up", align_corners=False),
         {"x": normal(1, 2, 4, 4)}, lambda x: _resize(x, 5, 5, False), id="resize-odd-up"),
    Case("_contrib_BilinearResize2D", lambda: S.contrib.BilinearResize2D(x, y, mode="like"),
         {"x": normal(1, 2, 3, 4), "y": normal(1, 1, 6, 2)},
         lambda x, y: _resize(x, 6, 2, True), grad_nodes=["x"], id="resize-like"),
    Case("_contrib_AdaptiveAvgPooling2D",
         lambda: S.contrib.AdaptiveAvgPooling2D(x, output_size=(2, 3)),
         {"x": normal(2, 2, 5, 7)}, lambda x: _adaptive(x, 2, 3)),
    Case("Correlation", lambda: S.Correlation(x, y, kernel_size=3, max_displacement=1,
                                              stride1=2, pad_size=2),
         {"x": normal(1, 2, 5, 4), "y": normal(1, 2, 5, 4)},
         lambda x, y: _correlation(x, y, 3, 1, 2, 1, 2, True)),
    Case("Correlation", lambda: S.Correlation(x, y, max_displacement=2, stride2=2, pad_size=2,
                                              is_multiply=False),
         {"x": normal(1, 2, 4, 4), "y": normal(1, 2, 4, 4)},
         lambda x, y: _correlation(x, y, 1, 2, 1, 2, 2, False), id="Correlation-absdiff"),
    Case("_contrib_DeformableConvolution",
         lambda: S.contrib.DeformableConvolution(x, y, z, w, kernel=(2, 2), pad=(1, 1),
                                                 num_filter=2, num_deformable_group=2),
         {"x": normal(1, 2, 3, 3), "y": away_from((0.0,), 1, 16, 4, 4, low=-0.7, high=0.7),
          "z": normal(2, 2, 2, 2), "w": normal(2)},
         lambda x, y, z, w: _deformable(x, y, z, w, dg=2)),
    Case("_contrib_ModulatedDeformableConvolution",
         lambda: S.contrib.ModulatedDeformableConvolution(x, y, S.var("m"), z, w, kernel=(2, 2),
                                                          pad=(1, 1), num_filter=2),
         {"x": normal(1, 2, 3, 3), "y": away_from((0.0,), 1, 8, 4, 4, low=-0.7, high=0.7),
          "m": uniform(1, 4, 4, 4, low=0.2, high=1.0), "z": normal(2, 2, 2, 2), "w": normal(2)},
         lambda x, y, m, z, w: _deformable(x, y, z, w, mask=m)),
    Case("_contrib_fft", lambda: S.contrib.fft(x), {"x": normal(3, 6)}, _fft),
    Case("_contrib_ifft", lambda: S.contrib.ifft(x), {"x": normal(2, 1, 1, 10)}, _ifft),
    Case("_contrib_count_sketch", lambda: S.contrib.count_sketch(x, y, z, out_dim=3),
         {"x": normal(2, 5), "y": lambda rng: np.array([[0, 2, 1, 2, 0]]),
          "z": lambda rng: np.array([[1, -1, 1, 1, -1]])},
         lambda x, y, z: _sketch(x, y, z, 3), grad_nodes=["x"]),
    Case("_contrib_interleaved_matmul_selfatt_qk",
         lambda: S.contrib.interleaved_matmul_selfatt_qk(x, **ATT), {"x": normal(3, 2, 12)},
         lambda x: _qk(x, 3, x, 3, 2)),
    Case("_contrib_interleaved_matmul_selfatt_valatt",
         lambda: S.contrib.interleaved_matmul_selfatt_valatt(x, y, **ATT),
         {"x": normal(3, 2, 12), "y": normal(4, 3, 3)}, lambda x, y: _valatt(x, 3, y, 2)),
    Case("_contrib_interleaved_matmul_encdec_qk",
         lambda: S.contrib.interleaved_matmul_encdec_qk(x, y, **ATT),
         {"x": normal(3, 2, 4), "y": normal(5, 2, 8)}, lambda x, y: _qk(x, 1, y, 2, 2)),
    Case("_contrib_interleaved_matmul_encdec_valatt",
         lambda: S.contrib.interleaved_matmul_encdec_valatt(x, y, **ATT),
         {"x": normal(5, 2, 8), "y": normal(4, 3, 5)}, lambda x, y: _valatt(x, 2, y, 2)),
    Case("stack", lambda: S.stack(x, y, axis=1), {"x": normal(2, 3), "y": normal(2, 3)},
         lambda x, y: np.stack([x, y], axis=1)),
    Case("SVMOutput", lambda: S.SVMOutput(x, y, margin=1.5, regularization_coefficient=0.5),
         {"x": away_from((-1.5, 1.5), 4, 3), "y": integers(0, 3, 4)}, lambda x, y: x,
         grad=False, grad_nodes=["x"], loss=_svm_loss(1.5, 0.5, False)),
    Case("SVMOutput", lambda: S.SVMOutput(x, y, use_linear=True),
         {"x": away_from((-1.0, 1.0), 4, 3), "y": integers(0, 3, 4)}, lambda x, y: x,
         grad=False, grad_nodes=["x"], loss=_svm_loss(1.0, 1.0, True), id="SVMOutput-L1"),
    Case("_contrib_quadratic", lambda: S.contrib.quadratic(x, a=0.5, b=-2.0, c=1.0),
         {"x": normal(3, 4)}, lambda x: 0.5 * x * x - 2 * x + 1),
    Case("_contrib_gradientmultiplier", lambda: S.contrib.gradientmultiplier(x, scalar=3.0),
         {"x": normal(3)}, lambda x: x, grad=False, grad_nodes=["x"],
         loss=lambda x: 3.0 * float(np.sum(x))),
    Case("_contrib_round_ste", lambda: S.contrib.round_ste(x), {"x": away_from((-0.5, 0.5), 6)},
         lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), grad=False, grad_nodes=["x"],
         loss=lambda x: float(np.sum(x))),
    Case("_contrib_sign_ste", lambda: S.contrib.sign_ste(x), {"x": away_from((0.0,), 6)},
         lambda x: np.sign(x), grad=False, grad_nodes=["x"], loss=lambda x: float(np.sum(x))),
]

AVG = np.array([0.2, 0.3, 0.6])


def _kl_loss(x: np.ndarray) -> float:
    """With momentum 1 the average stays the aux value, so the gradient (head gradient plus
    the KL term of the average) is that of sum(x) + sum(x * term)."""
    term = 0.01 * (-0.1 / AVG + 0.9 / (1 - AVG))
    return float(np.sum(x) + np.sum(x * term))


CASES += [
    Case("IdentityAttachKLSparseReg",
         lambda: S.IdentityAttachKLSparseReg(x, penalty=0.01, momentum=1.0, name="kl"),
         {"x": uniform(4, 3, low=0.1, high=0.9)}, lambda x, kl_moving_avg: x,
         aux={"kl_moving_avg": lambda rng: AVG.copy()}, grad=False, loss=_kl_loss,
         also_covers=("_identity_kl_sparse",)),
    Case("_contrib_boolean_mask", lambda: S.contrib.boolean_mask(x, y, num_selected=2),
         {"x": normal(4, 3), "y": lambda rng: np.array([0.0, 1.0, 0.0, 2.0])},
         lambda x, y: x[y != 0], grad_nodes=["x"]),
]
