"""CUDA library lookup: the toolkit before the nvidia-* wheels (or on request after), errors that say how to install."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from symgraph.core.base import ExecutionError
from symgraph.runtime.cuda import libs


@pytest.fixture
def fake_site(tmp_path, monkeypatch):
    """A site-packages with nvidia/cudnn/lib/libcudnn.so.9 built from a one-line C file."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    lib = tmp_path / "site" / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    src = tmp_path / "fake.c"
    src.write_text("int cudnnConvolutionForward(void) { return 42; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib / "libcudnn.so.9"), str(src)],
                   check=True)
    monkeypatch.setattr(libs, "site_dirs", lambda: [str(tmp_path / "site")])
    monkeypatch.setattr(libs, "_LOADED", {})
    return lib


def test_wheel_folder_first_on_request(fake_site, monkeypatch):
    monkeypatch.setenv("SYMGRAPH_CUDA_LIBS", "wheels")
    order = libs.candidates("cudnn")
    assert order[0] == str(fake_site / "libcudnn.so.9")
    assert order.index("libcudnn.so.9") < order.index("/usr/local/cuda/lib64/libcudnn.so.9")
    handle = libs.load("cudnn")
    assert handle._name == str(fake_site / "libcudnn.so.9")
    assert handle.cudnnConvolutionForward() == 42


def test_system_libraries_first_by_default(fake_site, monkeypatch):
    monkeypatch.delenv("SYMGRAPH_CUDA_LIBS", raising=False)
    order = libs.candidates("cudnn")
    wheel = order.index(str(fake_site / "libcudnn.so.9"))
    assert order[0] == "libcudnn.so.9"
    assert wheel > order.index("/usr/local/cuda/lib64/libcudnn.so.9")


def test_missing_library_says_what_where_and_how(tmp_path, monkeypatch):
    monkeypatch.setattr(libs, "site_dirs", lambda: [str(tmp_path)])
    monkeypatch.setattr(libs, "_LOADED", {})
    monkeypatch.setattr(libs, "LIBRARIES", {
        "nccl": libs.Library("NCCL", "nccl", "nvidia-nccl-cu12", ("libnccl_symgraph_none.so.2",))})
    assert libs.load("nccl", required=False) is None
    with pytest.raises(libs.GPUUnavailable) as info:
        libs.load("nccl")
    msg = str(info.value)
    for part in ("NCCL", "libnccl_symgraph_none.so.2", str(tmp_path / "nvidia" / "nccl" / "lib"),
                 "pip install 'symgraph[cuda]'", "nvidia-nccl-cu12"):
        assert part in msg, part
    assert isinstance(info.value, ImportError)  # `except ImportError` probes keep working


def test_missing_pycuda_says_how_to_install(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_pycuda(name, *args, **kwargs):
        if name.startswith("pycuda"):
            raise ImportError("No module named 'pycuda'")
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_pycuda)
    with pytest.raises(libs.GPUUnavailable, match=r"pip install 'symgraph\[cuda\]'"):
        libs.require_pycuda()


def test_missing_nvcc_says_where_and_how(monkeypatch):
    from symgraph.runtime.cuda import compiler
    monkeypatch.setattr(compiler, "nvcc_candidates", lambda: [])
    with pytest.raises(ExecutionError, match=r"nvcc not found.*CUDA_HOME.*install the CUDA"):
        compiler.compile_module("__global__ void k() {}", "sm_90")
