"""Pretrained model files of ``gluon.model_zoo`` under MXNet 1.9.1's names and checksums.

A model ``name`` is stored as ``<root>/<name>-<first 8 hex digits of its sha1>.params``, the
file MXNet's ``net.save_parameters`` wrote and MXNet's model zoo publishes; ``root`` defaults
to ``~/.mxnet/models`` so that files MXNet downloaded are found. A file whose sha1 differs is
not used. A missing file is downloaded from ``SYMGRAPH_GLUON_REPO`` (MXNet's repository by
default); without a network the DataError says where to put the file.

Example::

    >>> from symgraph.gluon.model_zoo import model_store
    >>> model_store.short_hash("resnet18_v1")
    'a0666292'
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
import zipfile
from typing import Any, Callable, Optional

from ...core import config, fileio
from ...core.base import DataError

__all__ = ["get_model_file", "purge", "short_hash", "load_pretrained", "DEFAULT_ROOT"]

DEFAULT_ROOT = os.path.join("~", ".mxnet", "models")
"""MXNet's default folder of model files (``$MXNET_HOME/models`` with the default home)."""

# The sha1 of each published parameter file, as MXNet 1.9.1's model_store lists them.
_MODEL_SHA1: dict[str, str] = {
    "alexnet": "44335d1f0046b328243b32a26a4fbd62d9057b45",
    "densenet121": "f27dbf2dbd5ce9a80b102d89c7483342cd33cb31",
    "densenet161": "b6c8a95717e3e761bd88d145f4d0a214aaa515dc",
    "densenet169": "2603f878403c6aa5a71a124c4a3307143d6820e9",
    "densenet201": "1cdbc116bc3a1b65832b18cf53e1cb8e7da017eb",
    "inceptionv3": "ed47ec45a937b656fcc94dabde85495bbef5ba1f",
    "mobilenet0.25": "9f83e440996887baf91a6aff1cccc1c903a64274",
    "mobilenet0.5": "8e9d539cc66aa5efa71c4b6af983b936ab8701c3",
    "mobilenet0.75": "529b2c7f4934e6cb851155b22c96c9ab0a7c4dc2",
    "mobilenet1.0": "6b8c5106c730e8750bcd82ceb75220a3351157cd",
    "mobilenetv2_1.0": "36da4ff1867abccd32b29592d79fc753bca5a215",
    "mobilenetv2_0.75": "e2be7b72a79fe4a750d1dd415afedf01c3ea818d",
    "mobilenetv2_0.5": "aabd26cd335379fcb72ae6c8fac45a70eab11785",
    "mobilenetv2_0.25": "ae8f9392789b04822cbb1d98c27283fc5f8aa0a7",
    "resnet18_v1": "a0666292f0a30ff61f857b0b66efc0228eb6a54b",
    "resnet34_v1": "48216ba99a8b1005d75c0f3a0c422301a0473233",
    "resnet50_v1": "0aee57f96768c0a2d5b23a6ec91eb08dfb0a45ce",
    "resnet101_v1": "d988c13d6159779e907140a638c56f229634cb02",
    "resnet152_v1": "671c637a14387ab9e2654eafd0d493d86b1c8579",
    "resnet18_v2": "a81db45fd7b7a2d12ab97cd88ef0a5ac48b8f657",
    "resnet34_v2": "9d6b80bbc35169de6b6edecffdd6047c56fdd322",
    "resnet50_v2": "ecdde35339c1aadbec4f547857078e734a76fb49",
    "resnet101_v2": "18e93e4f48947e002547f50eabbcc9c83e516aa6",
    "resnet152_v2": "f2695542de38cf7e71ed58f02893d82bb409415e",
    "squeezenet1.0": "264ba4970a0cc87a4f15c96e25246a1307caf523",
    "squeezenet1.1": "33ba0f93753c83d86e1eb397f38a667eaf2e9376",
    "vgg11": "dd221b160977f36a53f464cb54648d227c707a05",
    "vgg11_bn": "ee79a8098a91fbe05b7a973fed2017a6117723a8",
    "vgg13": "6bc5de58a05a5e2e7f493e2d75a580d83efde38c",
    "vgg13_bn": "7d97a06c3c7a1aecc88b6e7385c2b373a249e95e",
    "vgg16": "e660d4569ccb679ec68f1fd3cce07a387252a90a",
    "vgg16_bn": "7f01cf050d357127a73826045c245041b0df7363",
    "vgg19": "ad2f660d101905472b83590b59708b71ea22b2e5",
    "vgg19_bn": "f360b758e856f1074a85abd5fd873ed1d98297c3",
}

MAX_DOWNLOAD = 1 << 30
"""The largest published archive (vgg19_bn) is about 550 MB; more is not a model file."""


def short_hash(name: str) -> str:
    """The 8 hex digits of ``name``'s checksum that its file name carries."""
    if name not in _MODEL_SHA1:
        raise DataError(f"Pretrained model for {name} is not available; known: "
                        f"{', '.join(sorted(_MODEL_SHA1))}")
    return _MODEL_SHA1[name][:8]


def _sha1(path: str) -> str:
    digest = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _urlopen(url: str) -> Any:
    # a timeout, so that a machine without a network fails rather than waits
    return urllib.request.urlopen(url, timeout=60)


def _download(url: str, member: str, target: str,
              opener: Callable[[str], Any]) -> None:
    """Fetch the zip archive at ``url`` and move its ``member`` to ``target``."""
    folder = os.path.dirname(target)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        archive = os.path.join(tmp, "download.zip")
        def write(out: Any) -> None:
            size = 0
            with opener(url) as response:
                for chunk in iter(lambda: response.read(1 << 20), b""):
                    size += len(chunk)
                    if size > MAX_DOWNLOAD:
                        raise DataError(f"{url}: more than {MAX_DOWNLOAD} bytes, not a model "
                                        f"file")
                    out.write(chunk)
        fileio.atomic_write(archive, write)
        try:
            with zipfile.ZipFile(archive) as zf:
                zf.extract(member, tmp)
        except (zipfile.BadZipFile, KeyError) as exc:
            raise DataError(f"{url}: not a model archive holding {member} ({exc})") from None
        os.replace(os.path.join(tmp, member), target)


def get_model_file(name: str, root: str = DEFAULT_ROOT,
                   opener: Optional[Callable[[str], Any]] = None) -> str:
    """The path of model ``name``'s parameter file under ``root``, downloaded when missing.

    ``opener`` (default ``urllib.request.urlopen`` with a timeout) takes a URL and returns a
    readable context manager. Raises DataError naming the expected path when the file is
    neither there with the right sha1 nor downloadable.

    Example: ``get_model_file('squeezenet1.1')`` is
    ``~/.mxnet/models/squeezenet1.1-33ba0f93.params`` (expanded) once that file is there.
    """
    file_name = f"{name}-{short_hash(name)}.params"
    root = os.path.expanduser(root)
    path = os.path.join(root, file_name)
    sha1 = _MODEL_SHA1[name]
    found = os.path.isfile(path)
    if found and _sha1(path) == sha1:
        return path
    repo = config.get("SYMGRAPH_GLUON_REPO").rstrip("/") + "/"
    url = f"{repo}gluon/models/{file_name[:-len('.params')]}.zip"
    why = f"{path} has another sha1 than {sha1}" if found else f"{path} is missing"
    try:
        os.makedirs(root, exist_ok=True)
        _download(url, file_name, path, opener or _urlopen)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DataError(f"pretrained model {name}: {why} and downloading {url} failed "
                        f"({exc}); put MXNet's file {file_name} (sha1 {sha1}) in {root}, or "
                        f"pass root= the folder that holds it") from None
    if _sha1(path) != sha1:
        raise DataError(f"pretrained model {name}: {url} gave a file with sha1 {_sha1(path)}, "
                        f"expected {sha1}; put MXNet's file {file_name} in {root}")
    return path


def load_pretrained(net: Any, name: str, root: str, ctx: Any) -> Any:
    """Load model ``name``'s published parameters into ``net``; returns ``net``."""
    net.load_parameters(get_model_file(name, root=root), ctx=ctx)
    return net


def purge(root: str = DEFAULT_ROOT) -> None:
    """Delete every ``.params`` file in ``root``."""
    root = os.path.expanduser(root)
    for entry in os.listdir(root):
        if entry.endswith(".params"):
            os.remove(os.path.join(root, entry))

