"""``benchmarks/record_feed.py``: its small mode builds a readable record file and prints the
table ("n/a" for the GPU columns without one), and its timing and feeding helpers do what
they say (checked on the CPU, with a tiny network standing in for ResNet-50)."""
from __future__ import annotations

import argparse
import io
import os

import numpy as np
import pytest

import symgraph as sg
from benchmarks import record_feed

pytest.importorskip("PIL")


def table_rows(text: str) -> dict[str, list[str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[2:]]
    return {r[0]: r[1:] for r in rows}


def test_small_mode_prints_iterator_rates(tmp_path, capsys: pytest.CaptureFixture) -> None:
    record_feed.main(["--small", "--threads", "2", "--folder", str(tmp_path)])
    rows = table_rows(capsys.readouterr().out)
    assert set(rows) == {"float32, fp32", "float32, bf16 AMP", "uint8 (no mean/std), -",
                         "float32 on 1 thread (the cost of one core), -"}
    for name, cells in rows.items():  # threads and processes columns
        assert float(cells[0].replace(",", "")) > 0
        assert cells[1] == "-" if "1 thread" in name else float(cells[1].replace(",", "")) > 0
    # --small never touches a GPU: its columns are n/a even on a GPU machine
    assert rows["float32, fp32"][2:] == rows["float32, bf16 AMP"][2:] == ["n/a"] * 4
    assert rows["uint8 (no mean/std), -"][2] == "n/a"


def test_costs_mode_prints_cpu_per_stage_and_per_batch(tmp_path,
                                                        capsys: pytest.CaptureFixture) -> None:
    record_feed.main(["--small", "--costs", "--threads", "2", "--folder", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    rows = {r[0]: r[1:] for r in ([c.strip() for c in ln.strip("|").split("|")]
                                  for ln in lines if ln.startswith(("| float32", "| uint8")))}
    stages = [float(v) for v in rows.pop("float32")]
    assert len(stages) == 5 and min(stages) >= 0 and stages[1] > 0
    assert set(rows) == {"float32, processes", "uint8, processes", "float32, threads",
                         "uint8, threads"}
    for name, cells in rows.items():
        assert float(cells[0]) > 0
        assert (cells[1] != "-") == ("processes" in name)
        assert "processes" not in name or float(cells[1]) >= 0  # a few batches: maybe no tick
    # the workers do the images: the main process's share is far below the threads' all
    assert float(rows["float32, processes"][0]) < float(rows["float32, threads"][0]) / 2


def test_stage_costs_add_up(tmp_path) -> None:
    from benchmarks import record_costs
    prefix = record_feed.build_record(tmp_path, 4, (40, 50))
    it = record_feed.make_iter(prefix, 1, "float32", batch=2, crop=16)
    costs = record_costs.stage_costs(it, prefix, 4)
    assert min(costs.values()) >= 0 and costs["decode"] > 0
    assert costs["total"] == pytest.approx(costs["read"] + costs["decode"] +
                                           costs["augment"] + costs["normalise"])


def test_record_holds_the_synthetic_jpegs(tmp_path) -> None:
    from PIL import Image
    prefix = record_feed.build_record(tmp_path, 5, (30, 40))
    stamp = os.path.getmtime(prefix + ".rec")
    assert record_feed.build_record(tmp_path, 5, (30, 40)) == prefix  # reused, not rewritten
    assert os.path.getmtime(prefix + ".rec") == stamp
    rec = sg.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "r")
    assert sorted(rec.keys) == list(range(5))
    for k in range(5):
        header, payload = sg.recordio.unpack(rec.read_idx(k))
        pic = Image.open(io.BytesIO(payload))
        assert (pic.format, pic.size, header.id, header.label) == ("JPEG", (40, 30), k, k)
        # quality 90: the decoded JPEG stays close to the image it encodes (BGR -> RGB)
        want = record_feed.synthetic_photo(k, (30, 40))[:, :, ::-1].astype(np.float64)
        assert np.abs(np.asarray(pic, np.float64) - want).mean() < 8


class CountingIter:
    """An iterator of ``n`` batches per epoch that records its calls."""

    batch_size = 4

    def __init__(self, n: int) -> None:
        self.n, self.served, self.resets = n, 0, 0

    def next(self) -> str:
        if self.served == self.n:
            raise StopIteration
        self.served += 1
        return "batch"

    def reset(self) -> None:
        self.served, self.resets = 0, self.resets + 1


def test_images_per_second_uses_warm_plus_timed_batches_across_epochs() -> None:
    it, used = CountingIter(3), []
    rate = record_feed.images_per_second(it, 4, 2, used.append)
    assert len(used) == 1 + 4 * 2 and it.resets == 2  # 9 batches of a 3-batch epoch
    assert rate > 0


def tiny_executor(dtype: str, batch: int, crop: int = 16, ctx: object = None) -> object:
    """A one-layer network standing in for ResNet-50 (``dtype`` ignored), on the CPU by
    default."""
    net = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(sg.sym.Flatten(sg.sym.var("data")),
                                                     num_hidden=2, name="fc"), name="softmax")
    return net.simple_bind(ctx or sg.cpu(), grad_req={"data": "null", "softmax_label": "null",
                                                      "fc_weight": "write", "fc_bias": "write"},
                           data=(batch, 3, crop, crop))


def test_fed_rate_copies_each_batch_into_the_executor(tmp_path) -> None:
    prefix = record_feed.build_record(tmp_path, 6, (40, 50))
    it = record_feed.make_iter(prefix, 2, "float32", batch=3, crop=16)
    exe = tiny_executor("float32", 3)
    seen = []
    step = exe.train_step
    exe.train_step = lambda: seen.append(exe.arg_dict["data"].asnumpy().copy()) or step()
    assert record_feed.fed_rate(sg.io.PrefetchingIter(it), exe, 3) > 0
    assert len(seen) == 4
    # ImageNet mean/std: values of normalised 8-bit pixels, and a new batch at each step
    assert all(-2.2 < a.min() and a.max() < 2.7 and a.std() > 0.05 for a in seen)
    assert not np.array_equal(seen[1], seen[2])
    rate, ms = record_feed.train_rate(exe, 2, warm=1)
    assert len(seen) == 4 + 3 and rate == pytest.approx(3e3 / ms)


@pytest.mark.parametrize("where", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_gpu_rows_run_with_a_small_network(tmp_path, where: str) -> None:
    ctx = sg.cpu() if where == "cpu" else sg.gpu(0)
    prefix = record_feed.build_record(tmp_path, 6, (40, 50))
    iters = {(dtype, "threads"): record_feed.make_iter(prefix, 2, dtype, batch=3, crop=16)
             for dtype in ("float32", "uint8")}
    args = argparse.Namespace(workers="threads", batches=2, repeat=1, steps=2, threads=2)
    feed, rows = record_feed.gpu_rows(iters, args, ctx,
                                      lambda dtype, batch: tiny_executor(dtype, batch, ctx=ctx))
    assert sorted(feed) == ["float32", "uint8"] and min(feed.values()) > 0
    assert [r[0] for r in rows] == ["fp32", "bf16 AMP"]
    assert all(rate > 0 and ms > 0 and fed > 0 for _, rate, ms, fed in rows)
    text = record_feed.table({("float32", "threads"): 1.0, ("float32", "processes"): 2.0,
                              ("uint8", "threads"): 3.0, ("uint8", "processes"): 4.0,
                              ("float32", "1 thread"): 5.0}, {"float32": 300.0, "uint8": 9.0},
                             [("fp32", 100.0, 640.0, 90.0)], args)
    assert table_rows(text)["float32, fp32"] == ["1", "2", "300", "100 (640.0)", "3.00", "90"]
