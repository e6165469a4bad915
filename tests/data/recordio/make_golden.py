"""Make the RecordIO golden files with MXNet 1.9.1 (run under its Python, with opencv-python):

    /tmp/mxvenv/bin/python tests/data/recordio/make_golden.py /path/to/mxnet/tools/im2rec.py

MXNet's own ``tools/im2rec.py`` (tag 1.9.1) lists and packs a few generated PNG images
(``--recursive``: one label per folder; ``--encoding .png``: lossless, so any decoder gives
the same pixels), and ``mx.io.ImageRecordIter`` reads them back; its batches are stored in
``batches.npz`` for tests/image/test_golden_recordio.py.
"""
import os
import subprocess
import sys

import cv2
import mxnet as mx
import numpy as np
from cases import CASES  # beside this script: the test reads the same table

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [(12, 14), (14, 12), (12, 12), (13, 15), (16, 12)]  # (h, w) of each image


def make_images(root):
    rng = np.random.RandomState(7)
    for i, (h, w) in enumerate(SIZES):
        folder = os.path.join(root, "cat" if i % 2 else "dog")
        os.makedirs(folder, exist_ok=True)
        # smooth gradients plus noise: resizing tests see structure, not only noise
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([yy * 255 // h, xx * 255 // w, (yy + xx) * 127 // (h + w)], axis=2)
        img = np.clip(img + rng.randint(-20, 21, img.shape), 0, 255).astype(np.uint8)
        cv2.imwrite(os.path.join(folder, f"img{i}.png"), img)


def compact(data):
    """uint8 where the values are pixel values (keeps the file a few KB)."""
    small = data.astype(np.uint8)
    return small if np.array_equal(small, data) else data


def read_all(name, **kwargs):
    it = mx.io.ImageRecordIter(path_imgrec=os.path.join(HERE, "golden.rec"), batch_size=2,
                               preprocess_threads=1, **kwargs)
    out = {}
    # two epochs where round_batch's carry-over shows (5 images, batches of 2); the float
    # case keeps one batch (the file stays small)
    for epoch in range(2 if name == "raw" else 1):
        for j, batch in enumerate(it):
            if name == "plain" and j:
                break
            key = f"{name}/e{epoch}b{j}"
            out[key + "/data"] = compact(batch.data[0].asnumpy())
            out[key + "/label"] = batch.label[0].asnumpy()
            out[key + "/pad"] = np.array(batch.pad)
        it.reset()
    return out


def main(im2rec):
    root = os.path.join(HERE, "images")
    make_images(root)
    prefix = os.path.join(HERE, "golden")
    subprocess.check_call([sys.executable, im2rec, "--list", "--recursive", prefix, root])
    subprocess.check_call([sys.executable, im2rec, "--encoding", ".png", prefix, root])
    with open(os.path.join(HERE, "golden.lst")) as f, \
            open(os.path.join(HERE, "multi.lst"), "w") as g:
        for line in f:
            idx, label, path = line.rstrip("\n").split("\t")
            g.write(f"{idx}\t{label}\t{int(idx) * 0.5:f}\t{path}\n")
    batches = {}
    for name, kwargs in CASES.items():
        batches.update(read_all(name, **kwargs))
    np.savez_compressed(os.path.join(HERE, "batches.npz"), **batches)


if __name__ == "__main__":
    main(sys.argv[1])
