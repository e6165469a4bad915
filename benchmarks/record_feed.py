"""Can ``ImageRecordIter`` feed ResNet-50 training on the GPU? Images/s of both, side by side.

    PYTHONPATH=. python3 benchmarks/record_feed.py [--images 1024] [--threads N] [--batches 12]
                                                  [--repeat 3] [--steps 20] [--small]
                                                  [--workers processes|threads] [--costs]

The data is a ``.rec``/``.idx`` pair of ``--images`` synthetic ImageNet-like JPEGs (500x375,
quality 90, smooth gradients and blobs under sensor-like noise, so that decoding costs what a
photo of that size costs), written once with ``sg.recordio.pack_img`` into a cache folder
(``SYMGRAPH_CACHE_DIR``'s ``record_feed`` subfolder, default ``~/.cache/symgraph``) and reused.

The iterator runs the ImageNet training recipe: shorter edge resized to 256, random 224x224
crop, random mirror, ImageNet mean/std, batch 64, shuffled, ``preprocess_threads`` = the cores
this process may use (``--threads``), float32 NCHW; also uint8 (no mean/std: the narrow type
to ship to a GPU that normalises). MXNet 1.9.1's ImageRecordIter refuses float16 and bfloat16
output ("unknown dtype"), and so does symgraph's. Each is measured preparing samples on
threads (MXNet's way) and on worker processes (``SYMGRAPH_IO_PROCESSES=1``: threads share the
GIL), and once on one thread (the cost of one core). Rates are images per second over
``--batches`` batches, the median of ``--repeat`` runs, after one warm batch (which includes
spawning the workers); the way ``--workers`` does not pick, and the single thread, run once
over a third of the batches (bounding the run's time where they crawl).

With a GPU: the ``--workers`` iterators' batches copied into a gpu(0) array (copy waited for),
ResNet-50 v1 (Gluon model zoo, 224 px, batch 64) training steps per second in float32 and
bfloat16 AMP (``--steps`` back-to-back ``train_step`` calls, waited for), the ratio feed /
consumption, and the images/s of training fed by the iterator (``PrefetchingIter``, as MXNet's
own iterator prefetches; copy and step included). Without a GPU those columns say "n/a".

``--costs`` (CPU only) prints CPU times instead (``record_costs.py``): per image and stage on
one core, and per batch the main process's CPU beside the workers' CPU per image, the two
numbers that bound the feed on a machine of more cores than this one.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symgraph as sg  # noqa: E402
from symgraph.core import config  # noqa: E402

SIZE = (375, 500)  # height, width: a typical ImageNet photo
QUALITY = 90
MEAN = (123.68, 116.779, 103.939)
STD = (58.393, 57.12, 57.375)
BATCH, CROP, SHORT_EDGE = 64, 224, 256
WORKERS = {"threads": "0", "processes": "1"}  # SYMGRAPH_IO_PROCESSES of each way
SMALL = {"images": 40, "batches": 2, "repeat": 1, "batch": 8, "size": (150, 200)}


# -- the record file -----------------------------------------------------------------------------
def _field(rng: np.random.Generator, cells: tuple, size: tuple, method: int) -> np.ndarray:
    """Random colours on a ``cells`` grid, smoothly upscaled to ``size`` (int16 HWC)."""
    from PIL import Image
    small = rng.integers(0, 256, cells + (3,), dtype=np.uint8)
    return np.asarray(Image.fromarray(small).resize(size[::-1], method), np.int16)


def synthetic_photo(seed: int, size: tuple = SIZE) -> np.ndarray:
    """A BGR uint8 image whose JPEG costs about what a photo's does: a smooth colour field
    (low frequencies), finer detail (middle ones) and sensor-like noise (high ones)."""
    rng = np.random.default_rng(seed)
    h, w = size
    img = _field(rng, (5, 7), size, 3) // 2 + _field(rng, (h // 6, w // 6), size, 2) // 2
    img += rng.integers(-14, 15, (h, w, 3), dtype=np.int16)
    return np.clip(img, 0, 255).astype(np.uint8)


def _encoded(k: int, size: tuple) -> bytes:
    header = sg.recordio.IRHeader(0, float(k % 1000), k, 0)
    return sg.recordio.pack_img(header, synthetic_photo(k, size), quality=QUALITY)


def build_record(folder: Path, images: int, size: tuple = SIZE, threads: int = 1) -> str:
    """Prefix of ``folder``/synthetic-N-HxW.{rec,idx}, written unless a complete pair is
    there already (the ``.idx`` is renamed into place last, so a partial write is redone)."""
    prefix = folder / f"synthetic-{images}-{size[0]}x{size[1]}-q{QUALITY}"
    rec, idx = Path(f"{prefix}.rec"), Path(f"{prefix}.idx")
    if rec.exists() and idx.exists():
        return str(prefix)
    folder.mkdir(parents=True, exist_ok=True)
    tmp_idx = Path(f"{prefix}.idx.part")
    writer = sg.recordio.MXIndexedRecordIO(str(tmp_idx), str(rec), "w")
    with ThreadPoolExecutor(threads) as pool:  # Pillow's encoder releases the GIL
        for k, record in enumerate(pool.map(lambda i: _encoded(i, size), range(images))):
            writer.write_idx(k, record)
    writer.close()
    os.replace(tmp_idx, idx)
    return str(prefix)


def cache_folder() -> Path:
    """``record_feed`` in the kernel cache folder (``SYMGRAPH_CACHE_DIR``)."""
    base = config.get("SYMGRAPH_CACHE_DIR") or os.path.join("~", ".cache", "symgraph")
    return Path(base).expanduser() / "record_feed"


# -- the iterator --------------------------------------------------------------------------------
def make_iter(prefix: str, threads: int, dtype: str, batch: int = BATCH, crop: int = CROP,
              workers: str = "threads", prefetch: int = 4) -> Any:
    """ImageRecordIter on the ImageNet training recipe (mean/std only for float output),
    preparing samples on threads or worker processes (``SYMGRAPH_IO_PROCESSES``), up to
    ``prefetch`` batches ahead."""
    norm = {} if dtype != "float32" else dict(
        mean_r=MEAN[0], mean_g=MEAN[1], mean_b=MEAN[2], std_r=STD[0], std_g=STD[1],
        std_b=STD[2])
    with config.override("SYMGRAPH_IO_PROCESSES", WORKERS[workers]):  # read when it is made
        return sg.io.ImageRecordIter(
            path_imgrec=prefix + ".rec", path_imgidx=prefix + ".idx",
            data_shape=(3, crop, crop), batch_size=batch, resize=SHORT_EDGE * crop // CROP,
            rand_crop=True, rand_mirror=True, shuffle=True, preprocess_threads=threads,
            dtype=dtype, prefetch_buffer=prefetch, **norm)


def next_batch(it: Any) -> Any:
    """The next batch, starting a new epoch when one ends."""
    try:
        return it.next()
    except StopIteration:
        it.reset()
        return it.next()


def images_per_second(it: Any, batches: int, repeat: int,
                      use: Callable[[Any], None] = lambda b: None) -> float:
    """Median over ``repeat`` runs of images/s of ``batches`` batches, each given to ``use``
    (which must wait for what it queues), after one warm batch."""
    use(next_batch(it))
    rates = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(batches):
            use(next_batch(it))
        rates.append(batches * it.batch_size / (time.perf_counter() - start))
    return statistics.median(rates)


def to_device(target: Any) -> Callable[[Any], None]:
    """A ``use`` that copies the batch's data into ``target`` and waits for the copy."""
    def use(batch: Any) -> None:
        target[:] = batch.data[0]
        target.wait_to_read()
    return use


# -- the GPU ------------------------------------------------------------------------------------
def resnet50_executor(dtype: str, batch: int) -> Any:
    from benchmarks.amp_step import bind
    from benchmarks.first_step import resnet50
    return bind(resnet50(dtype), (batch, 3, CROP, CROP), False)


def train_rate(exe: Any, steps: int, warm: int = 5) -> tuple[float, float]:
    """(images/s, ms/step) of ``steps`` back-to-back ``train_step`` calls, from the first
    queued to every one finished (``waitall``): the rate at which the GPU consumes batches."""
    for _ in range(warm):
        exe.train_step()
    sg.nd.waitall()
    start = time.perf_counter()
    for _ in range(steps):
        exe.train_step()
    sg.nd.waitall()
    ms = (time.perf_counter() - start) * 1e3 / steps
    return exe.arg_dict["data"].shape[0] * 1e3 / ms, ms


def fed_rate(feed: Any, exe: Any, steps: int) -> float:
    """Images/s of training steps each fed the next batch of ``feed`` (a PrefetchingIter:
    read on a thread, as MXNet's iterator is), data copy included; the last step waited for."""
    data, label = exe.arg_dict["data"], exe.arg_dict["softmax_label"]

    def step(batch: Any) -> None:
        data[:] = batch.data[0]
        label[:] = batch.label[0]
        exe.train_step()
    step(next_batch(feed))
    sg.nd.waitall()
    start = time.perf_counter()
    for _ in range(steps):
        step(next_batch(feed))
    sg.nd.waitall()
    return steps * feed.batch_size / (time.perf_counter() - start)


# -- the report ----------------------------------------------------------------------------------
def fmt(value: Optional[float], digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def host_rates(prefix: str, args: argparse.Namespace, batch: int, crop: int) -> tuple:
    """({(dtype, workers): img/s}, {(dtype, args.workers): iterator}) on the host, and the
    one-thread float32 rate under ("float32", "1 thread")."""
    rates, iters = {}, {}
    for workers in WORKERS:
        # threads may crawl where the GIL is fought over: once, over a third of the batches
        batches, repeat = ((args.batches, args.repeat) if workers == args.workers else
                           (max(1, args.batches // 3), 1))
        for dtype in ("float32", "uint8"):
            it = make_iter(prefix, args.threads, dtype, batch, crop, workers)
            rates[dtype, workers] = images_per_second(it, batches, repeat)
            if workers == args.workers:  # the others go: their prefetching would compete
                iters[dtype, workers] = it
            del it
    one = make_iter(prefix, 1, "float32", batch, crop)
    rates["float32", "1 thread"] = images_per_second(one, max(1, args.batches // 3), 1)
    return rates, iters


def gpu_rows(iters: dict, args: argparse.Namespace, ctx: Any = None,
             build: Callable[[str, int], Any] = None) -> tuple[dict, list[tuple]]:
    """Device feed rates per output dtype, and (label, train img/s, ms/step, fed img/s) per
    training dtype, all with ``args.workers``' iterators; ``ctx`` (default gpu(0)) and
    ``build`` (default ResNet-50 on gpu(0)) are parameters so that a test can run this on
    the CPU with a small network."""
    ctx, build = ctx or sg.gpu(0), build or resnet50_executor
    feed = {}
    for dtype in ("float32", "uint8"):
        it = iters[dtype, args.workers]
        target = sg.nd.zeros(it.provide_data[0].shape, ctx, dtype=dtype)
        feed[dtype] = images_per_second(it, args.batches, args.repeat, to_device(target))
    first = iters["float32", args.workers]
    prefetched = sg.io.PrefetchingIter(first)
    rows = []
    for dtype, label in (("float32", "fp32"), ("bfloat16", "bf16 AMP")):
        exe = build(dtype, first.batch_size)
        rate, ms = train_rate(exe, args.steps)
        rows.append((label, rate, ms, fed_rate(prefetched, exe, args.steps)))
        del exe
    return feed, rows


def table(host: dict, feed: dict, gpu: list[tuple], args: argparse.Namespace) -> str:
    w = args.workers
    lines = [f"| ImageRecordIter output, training | threads: img/s (host) | processes: img/s "
             f"(host) | {w} -> gpu(0) img/s | ResNet-50 b64 training img/s (ms/step) | "
             f"feed / training | training fed by the iterator ({w}), img/s |",
             "|---|---|---|---|---|---|---|"]
    for label, rate, ms, fed in gpu or [("fp32", None, None, None),
                                        ("bf16 AMP", None, None, None)]:
        ratio = None if rate is None else feed["float32"] / rate
        train = "n/a" if rate is None else f"{rate:,.0f} ({ms:.1f})"
        lines.append(f"| float32, {label} | {fmt(host['float32', 'threads'])} | "
                     f"{fmt(host['float32', 'processes'])} | {fmt(feed.get('float32'))} | "
                     f"{train} | {fmt(ratio, 2)} | {fmt(fed)} |")
    lines.append(f"| uint8 (no mean/std), - | {fmt(host['uint8', 'threads'])} | "
                 f"{fmt(host['uint8', 'processes'])} | {fmt(feed.get('uint8'))} | - | - | - |")
    lines.append(f"| float32 on 1 thread (the cost of one core), - | "
                 f"{fmt(host['float32', '1 thread'])} | - | - | - | - | - |")
    return f"preprocess_threads={args.threads}\n\n" + "\n".join(lines)


def main(argv: Optional[list] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--batches", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--workers", choices=WORKERS, default="processes",
                    help="the iterators that feed the GPU")
    ap.add_argument("--small", action="store_true", help="tiny sizes, no GPU (a test)")
    ap.add_argument("--folder", type=Path, default=None, help="record cache folder")
    ap.add_argument("--costs", action="store_true",
                    help="CPU only: per-stage CPU per image and the main process's CPU per "
                         "batch (benchmarks/record_costs.py), instead of the rates")
    args = ap.parse_args(argv)
    if args.small:
        args.images, args.batches, args.repeat = SMALL["images"], SMALL["batches"], 1
    size = SMALL["size"] if args.small else SIZE
    start = time.perf_counter()
    prefix = build_record(args.folder or cache_folder(), args.images, size, args.threads)
    print(f"record: {prefix}.rec ({os.path.getsize(prefix + '.rec') / 2**20:.1f} MiB, "
          f"{args.images} images {size[1]}x{size[0]}), ready in "
          f"{time.perf_counter() - start:.1f} s")
    batch, crop = (SMALL["batch"], 64) if args.small else (BATCH, CROP)
    if args.costs:
        from benchmarks.record_costs import report
        print(f"preprocess_threads={args.threads}\n\n"
              f"{report(prefix, args.threads, args.batches, batch, crop)}")
        return
    host, iters = host_rates(prefix, args, batch, crop)
    feed: dict = {}
    gpu: list[tuple] = []
    if not args.small and sg.context.num_gpus() > 0:
        feed, gpu = gpu_rows(iters, args)
    print(table(host, feed, gpu, args))
    print(f"\ntotal {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
