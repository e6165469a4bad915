"""``symgraph im2rec``: MXNet's ``tools/im2rec.py``: make image lists and pack them into
``.rec``/``.idx`` files.

``symgraph im2rec --list PREFIX ROOT`` writes ``PREFIX.lst`` (``index<TAB>label<TAB>path``;
with ``--recursive`` one label per sub-folder), shuffled with ``random.seed(100)`` as MXNet
does unless ``--no-shuffle``, split by ``--chunks`` / ``--train-ratio`` / ``--test-ratio``.
``symgraph im2rec PREFIX ROOT`` packs every ``PREFIX*.lst`` beside PREFIX into ``.rec`` +
``.idx`` (decoded with Pillow, optionally centre-cropped and resized, re-encoded as JPEG or
PNG; ``--pass-through`` stores the files' bytes unchanged).
"""
from __future__ import annotations

import argparse
import os
import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator, Optional, Sequence

import numpy as np

from ..core import fileio
from ..core.base import DataError
from . import recordio
from .image import codec
from .image.resize import resize

__all__ = ["list_image", "write_list", "make_list", "read_list", "encode_item", "pack_list",
           "add_arguments", "run"]


def list_image(root: str, recursive: bool, exts: Sequence[str]) -> Iterator[tuple]:
    """``(index, relative path, label)`` of the images under ``root`` in sorted order."""
    i = 0
    if not recursive:
        for fname in sorted(os.listdir(root)):
            fpath = os.path.join(root, fname)
            if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                yield (i, os.path.relpath(fpath, root), 0)
                i += 1
        return
    cat: dict[str, int] = {}
    for path, dirs, files in os.walk(root, followlinks=True):
        dirs.sort()
        for fname in sorted(files):
            fpath = os.path.join(path, fname)
            if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                cat.setdefault(path, len(cat))
                yield (i, os.path.relpath(fpath, root), cat[path])
                i += 1
    for path, label in sorted(cat.items(), key=lambda kv: kv[1]):
        print(os.path.relpath(path, root), label)


def write_list(path_out: str, image_list: Sequence[tuple]) -> None:
    """Write ``index<TAB>label...<TAB>path`` lines (labels as ``%f``, as MXNet)."""
    lines = []
    for item in image_list:
        labels = "".join(f"{float(j):f}\t" for j in item[2:])
        lines.append(f"{int(item[0])}\t{labels}{item[1]}\n")
    fileio.write_text(path_out, "".join(lines))


def make_list(args: argparse.Namespace) -> None:
    """The ``--list`` mode: write ``PREFIX[_chunk][_train|_val|_test].lst``."""
    image_list = list(list_image(args.root, args.recursive, args.exts))
    if args.shuffle:
        random.seed(100)  # MXNet's fixed seed: the same folder gives the same list
        random.shuffle(image_list)
    chunk_size = (len(image_list) + args.chunks - 1) // args.chunks
    for i in range(args.chunks):
        chunk = image_list[i * chunk_size:(i + 1) * chunk_size]
        name = args.prefix + (f"_{i}" if args.chunks > 1 else "")
        sep, sep_test = int(chunk_size * args.train_ratio), int(chunk_size * args.test_ratio)
        if args.train_ratio == 1.0:
            write_list(name + ".lst", chunk)
            continue
        if args.test_ratio:
            write_list(name + "_test.lst", chunk[:sep_test])
        if args.train_ratio + args.test_ratio < 1.0:
            write_list(name + "_val.lst", chunk[sep_test + sep:])
        write_list(name + "_train.lst", chunk[sep_test:sep_test + sep])


def read_list(path_in: str) -> Iterator[list]:
    """``[index, path, label...]`` per valid line of a ``.lst`` file (bad lines reported and
    skipped, as MXNet's tool does)."""
    with open(path_in) as fin:
        for lineno, line in enumerate(fin, 1):
            fields = [f.strip() for f in line.strip().split("\t")]
            try:
                if len(fields) < 3:
                    raise ValueError("fewer than 3 fields")
                yield [int(fields[0]), fields[-1]] + [float(f) for f in fields[1:-1]]
            except ValueError as exc:
                print(f"{path_in}: line {lineno} skipped: {exc}")


def _transform(img: np.ndarray, args: argparse.Namespace) -> np.ndarray:
    """``--center-crop`` to a square, then ``--resize`` the shorter edge (bilinear)."""
    h, w = img.shape[:2]
    if args.center_crop:
        m = abs(h - w) // 2
        img = img[m:m + w] if h > w else img[:, m:m + h]
        h, w = img.shape[:2]
    if args.resize:
        size = args.resize
        new_wh = (size, h * size // w) if h > w else (w * size // h, size)
        img = resize(img, new_wh[0], new_wh[1], 1)
    return img


def encode_item(args: argparse.Namespace, item: list) -> Optional[bytes]:
    """One packed record for a ``read_list`` item, or None (reported) when it fails."""
    fullpath = os.path.join(args.root, item[1])
    label: Any = item[2:] if len(item) > 3 and args.pack_label else item[2]
    header = recordio.IRHeader(0, label, item[0], 0)
    try:
        with open(fullpath, "rb") as fin:
            data = fin.read()
        if args.pass_through:
            return recordio.pack(header, data)
        img = _transform(codec.decode_bgr(data, args.color, f"im2rec {fullpath}"), args)
        return recordio.pack(header, codec.encode_bgr(img, args.quality, args.encoding))
    except (OSError, DataError) as exc:
        print(f"im2rec: skipped {fullpath}: {exc}")
        return None


def pack_list(args: argparse.Namespace, lst: str, working_dir: str) -> int:
    """Pack the images of ``lst`` into ``<lst stem>.rec``/``.idx`` in list order."""
    stem = os.path.join(working_dir, os.path.splitext(os.path.basename(lst))[0])
    items = list(read_list(lst))
    record = recordio.MXIndexedRecordIO(stem + ".idx", stem + ".rec", "w")
    count = 0
    with ThreadPoolExecutor(max(1, args.num_thread)) as pool:
        # map keeps the list's order, so the .rec is the same for any --num-thread
        for item, packed in zip(items, pool.map(lambda it: encode_item(args, it), items)):
            if packed is not None:
                record.write_idx(item[0], packed)
                count += 1
    record.close()
    print(f"im2rec: wrote {count} of {len(items)} images to {stem}.rec")
    return count


def add_arguments(q: argparse.ArgumentParser) -> None:
    """MXNet's im2rec options (same names and defaults)."""
    q.add_argument("prefix", help="prefix of input/output lst and rec files")
    q.add_argument("root", help="folder containing the images")
    q.add_argument("--list", action="store_true", help="make PREFIX.lst from ROOT's images "
                   "instead of packing the PREFIX*.lst files")
    q.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"],
                   help="image file extensions (default: .jpeg .jpg .png)")
    q.add_argument("--chunks", type=int, default=1, help="number of chunks (default: 1)")
    q.add_argument("--train-ratio", type=float, default=1.0, help="default: 1.0")
    q.add_argument("--test-ratio", type=float, default=0.0, help="default: 0")
    q.add_argument("--recursive", action="store_true",
                   help="walk sub-folders, one label per folder")
    q.add_argument("--no-shuffle", dest="shuffle", action="store_false",
                   help="keep the sorted order in the list")
    q.add_argument("--pass-through", action="store_true", help="store the files unchanged")
    q.add_argument("--resize", type=int, default=0, help="resize the shorter edge to this")
    q.add_argument("--center-crop", action="store_true", help="crop the centre square")
    q.add_argument("--quality", type=int, default=95,
                   help="JPEG quality 1-100, or PNG compression 0-9 (default: 95)")
    q.add_argument("--num-thread", type=int, default=1, help="encoding threads (default: 1)")
    q.add_argument("--color", type=int, default=1, choices=[-1, 0, 1],
                   help="1 colour, 0 grey, -1 as stored (default: 1)")
    q.add_argument("--encoding", default=".jpg", choices=[".jpg", ".png"],
                   help="default: .jpg")
    q.add_argument("--pack-label", action="store_true",
                   help="store every label of a multi-label list in the record")


def run(args: argparse.Namespace) -> int:
    """Run the im2rec command; returns the exit status."""
    args.prefix, args.root = os.path.abspath(args.prefix), os.path.abspath(args.root)
    if args.list:
        make_list(args)
        return 0
    working_dir = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    lists = sorted(os.path.join(working_dir, f) for f in os.listdir(working_dir)
                   if f.endswith(".lst") and os.path.join(working_dir, f).startswith(args.prefix))
    if not lists:
        raise DataError(f"im2rec: no .lst file with prefix {args.prefix} (make one with --list)")
    for lst in lists:
        pack_list(args, lst, working_dir)
    return 0
