"""The host side of a data-parallel step (``parallel/step.py``): enqueue order, host waits,
staging threads and phase times, checked with recording stand-ins for devices, streams and
the communicator (no GPU needed)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.models import mlp
from symgraph.training.parallel.step import PHASES, DeviceSlice, StepQueue, stage_copies


class _Device:
    """Records stage/launch/update; fills on the pool when given one."""

    def __init__(self, k: int, log: list) -> None:
        self.k, self.log, self.pools = k, log, []

    def stage(self, pool):
        self.pools.append(pool)
        self.log.append(f"stage{self.k}")
        return lambda: self.log.append(f"ready{self.k}")

    def launch(self, ready) -> None:
        ready()
        self.log.append(f"launch{self.k}")

    def update(self) -> None:
        self.log.append(f"update{self.k}")


class _Comm:
    """A GPU-like communicator: marks are step numbers, waits are logged."""

    def __init__(self, log: list) -> None:
        self.log, self.marks, self.waits = log, 0, []

    def mark(self) -> int:
        self.log.append("mark")
        self.marks += 1
        return self.marks - 1

    def wait(self, mark: int) -> None:
        self.log.append(f"wait{mark}")
        self.waits.append(mark)


def test_enqueue_order_and_one_wait_per_step() -> None:
    log: list = []
    devices, comm, queue = [_Device(0, log), _Device(1, log)], _Comm(log), StepQueue()
    for step in range(4):
        del log[:]
        queue.run(devices, lambda: log.append("allreduce"), comm)
        wait = [f"wait{step - 2}"] if step >= 2 else []
        # devices 1.. are staged first (on threads) so that device 0, filled by the host,
        # can be launched at once; each device's copy and graph are queued back to back
        assert log == wait + ["stage1", "stage0", "ready0", "launch0", "ready1", "launch1",
                              "allreduce", "update0", "update1", "mark"]
    assert comm.waits == [0, 1]  # only ever the step before last
    assert devices[0].pools == [None] * 4
    assert all(p is not None for p in devices[1].pools)
    queue.close()


def test_without_threads_each_device_is_staged_right_before_its_launch(monkeypatch) -> None:
    monkeypatch.setenv("SYMGRAPH_STAGE_THREADS", "0")
    log: list = []
    devices = [_Device(0, log), _Device(1, log)]
    StepQueue().run(devices, lambda: log.append("allreduce"), _Comm(log))
    assert log == ["stage0", "ready0", "launch0", "stage1", "ready1", "launch1",
                   "allreduce", "update0", "update1", "mark"]
    assert devices[1].pools == [None]


def test_one_device_and_host_communicator_never_wait() -> None:
    log: list = []
    queue = StepQueue()

    class Plain:  # a host communicator: no mark, no wait
        pass
    dev = _Device(0, log)
    for _ in range(3):
        queue.run([dev], lambda: None, Plain())
    assert dev.pools == [None] * 3 and queue.marks == [] and "wait" not in " ".join(log)


def test_phase_times_collected_only_on_request() -> None:
    queue, log = StepQueue(), []
    queue.run([_Device(0, log)], lambda: None, _Comm(log))
    assert queue.times is None
    queue.times = {}
    for _ in range(3):
        queue.run([_Device(0, log)], lambda: None, _Comm(log))
    assert set(queue.times) == set(PHASES) - {"batch"} and queue.steps == 4
    assert all(v >= 0 for v in queue.times.values())


def test_stage_copies_run_on_a_thread_above_the_threshold() -> None:
    queue = StepQueue()
    pool = queue.pool(1)
    seen: list = []
    src = np.arange(1000, dtype=np.float32)
    dst = np.zeros_like(src)

    def copy(d, s) -> None:
        seen.append(threading.get_ident())
        np.copyto(d, s)
    ready = stage_copies([(dst, src)], pool, copy, min_bytes=src.nbytes)
    ready()
    assert seen[0] != threading.get_ident() and np.array_equal(dst, src)
    small = np.zeros_like(src)
    ready = stage_copies([(small, src)], pool, copy, min_bytes=src.nbytes + 1)
    assert seen[1] == threading.get_ident() and np.array_equal(small, src)  # done inline
    queue.close()


def test_stage_copy_errors_reach_the_host() -> None:
    queue = StepQueue()

    def copy(d, s) -> None:
        raise ValueError("boom")
    ready = stage_copies([(np.zeros(4), np.zeros(4))], queue.pool(1), copy, min_bytes=0)
    with pytest.raises(ValueError, match="boom"):
        ready()
    queue.close()


class _Staging:
    """Stands in for ``cuda.staging.Staging``: records reserve/send with the stream."""

    def __init__(self, log: list) -> None:
        self.log, self.filled = log, {}

    def reserve(self, target):
        buf = np.zeros(target.shape, np.float32)
        self.log.append(("reserve", target.name))
        return buf, [None, None]

    def send(self, target, buf, entry, stream) -> None:
        self.log.append(("send", target.name, stream))
        self.filled[target.name] = buf.copy()


class _Target:
    def __init__(self, name: str, shape: tuple) -> None:
        self.name, self.shape = name, shape


class _Exe:
    def __init__(self, log: list, shapes: dict) -> None:
        self.log = log
        self.arg_dict = {n: _Target(n, s) for n, s in shapes.items()}
        self.train_program = type("P", (), {"stream": "stream-A"})()

    def train_step(self) -> None:
        self.log.append(("train_step",))


def test_device_slice_copies_its_slice_then_runs_the_step() -> None:
    log: list = []
    x = np.arange(24, dtype=np.float64).reshape(6, 4)  # cast to the buffer's float32
    y = np.arange(6, dtype=np.float32)
    exe, staging = _Exe(log, {"data": (3, 4), "label": (3,)}), _Staging(log)
    dev = DeviceSlice(exe, slice(3, 6), {"data": x, "label": y}, staging,
                      lambda: log.append(("update",)))
    ready = dev.stage(None)
    assert log == [("reserve", "data"), ("reserve", "label")]
    dev.launch(ready)
    dev.update()
    assert log[2:] == [("send", "data", "stream-A"), ("send", "label", "stream-A"),
                       ("train_step",), ("update",)]
    np.testing.assert_array_equal(staging.filled["data"], x[3:6].astype(np.float32))
    np.testing.assert_array_equal(staging.filled["label"], y[3:6])


def test_module_step_times_cover_every_phase() -> None:
    rng = np.random.RandomState(0)
    x, y = rng.rand(16, 784).astype(np.float32), rng.randint(0, 10, 16).astype(np.float32)
    mod = sg.mod.Module(mlp.build(), context=[sg.cpu(0), sg.cpu(1)])
    mod.bind([("data", (16, 784))], [("softmax_label", (16,))])
    mod.init_params(sg.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    batch = sg.io.DataBatch([sg.nd.array(x)], [sg.nd.array(y)])
    assert mod.step_times is None
    mod.step_times = {}
    for _ in range(2):
        mod.forward_backward_update(batch)
    assert mod.step_count == 2 and set(mod.step_times) == set(PHASES)
    assert mod.step_times["launch"] > 0 and mod.step_times["allreduce"] > 0


def test_benchmark_profile_prints_every_phase(monkeypatch, capsys) -> None:
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import multi_gpu
    monkeypatch.setattr(multi_gpu, "_sync", lambda mod: None)  # CPU: nothing queued
    rng = np.random.RandomState(0)
    mod = sg.mod.Module(mlp.build(), context=[sg.cpu(0), sg.cpu(1)])
    mod.bind([("data", (8, 784))], [("softmax_label", (8,))])
    mod.init_params(sg.init.Xavier())
    mod.init_optimizer(optimizer="sgd")
    batch = sg.io.DataBatch([sg.nd.array(rng.rand(8, 784).astype(np.float32))],
                            [sg.nd.array(rng.randint(0, 10, 8).astype(np.float32))])
    multi_gpu._profile_run("mlp 2 CPUs", mod, batch, 2)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("mlp 2 CPUs: wall ") and "samples/s" in out[0]
    assert [line.split()[0] for line in out[1:]] == list(PHASES)
