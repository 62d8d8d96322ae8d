"""Small wheels made here and a package index serving them on 127.0.0.1, for the offline
tests of pip's download and install (nothing reaches the internet).

``make_wheel(folder, name, version, requires)`` writes a pure-Python wheel whose module
(the name with ``_`` for ``-``) holds ``VERSION``; ``make_sdist(folder, name, version)``
the source of the same, built by a backend of its own (no build requirement to fetch);
``installed_metadata(env, ...)`` writes only a distribution's ``.dist-info`` into a folder,
as pip installs one, for reading with ``importlib.metadata``; ``with WheelIndex(folder) as
index:`` serves the wheels and sources of ``folder`` as a PEP 503 simple index at
``index.url``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import io
import re
import tarfile
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _metadata(name: str, version: str, requires: list[str]) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    return "\n".join([*lines, *(f"Requires-Dist: {r}" for r in requires)]) + "\n"


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def make_wheel(folder: Path, name: str, version: str, requires: list[str] = ()) -> Path:
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": f"VERSION = {version!r}\n".encode(),
        f"{info}/METADATA": _metadata(name, version, list(requires)).encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: ssmbench-tests\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [_record_line(path, data) for path, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as whl:
        for member, data in files.items():
            whl.writestr(member, data)
    return path


#: the in-tree build backend of make_sdist's package: the wheel make_wheel would write
_BACKEND = r"""
import base64, hashlib, os, zipfile

NAME, VERSION = "@NAME@", "@VERSION@"
MODULE = NAME.replace("-", "_")
INFO = f"{MODULE}-{VERSION}.dist-info"
META = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
WHEEL = "Wheel-Version: 1.0\nGenerator: ssmbench-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    os.makedirs(os.path.join(metadata_directory, INFO))
    for name, text in (("METADATA", META), ("WHEEL", WHEEL)):
        with open(os.path.join(metadata_directory, INFO, name), "w") as f:
            f.write(text)
    return INFO


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {f"{MODULE}/__init__.py": f"VERSION = {VERSION!r}\n", f"{INFO}/METADATA": META,
             f"{INFO}/WHEEL": WHEEL}
    record = []
    for path, text in files.items():
        digest = hashlib.sha256(text.encode()).digest()
        b64 = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        record.append(f"{path},sha256={b64},{len(text.encode())}")
    files[f"{INFO}/RECORD"] = "\n".join([*record, f"{INFO}/RECORD,,"]) + "\n"
    name = f"{MODULE}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as whl:
        for path, text in files.items():
            whl.writestr(path, text)
    return name
"""


def make_sdist(folder: Path, name: str, version: str) -> Path:
    module = name.replace("-", "_")
    top = f"{module}-{version}"
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
        'backend-path = ["."]\n',
        "backend.py": _BACKEND.replace("@NAME@", name).replace("@VERSION@", version),
        "PKG-INFO": _metadata(name, version, []),
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{top}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for member, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{member}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def installed_metadata(env: Path, name: str, version: str, requires: list[str] = ()) -> None:
    info = env / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(_metadata(name, version, list(requires)))


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


class WheelIndex:
    """The wheels of a folder as a simple index (``/simple/<name>/``) on 127.0.0.1."""

    def __init__(self, wheels: Path):
        self.root = wheels.parent / f"{wheels.name}-index"
        projects: dict[str, list[Path]] = {}
        for whl in sorted([*wheels.glob("*.whl"), *wheels.glob("*.tar.gz")]):
            project = re.sub(r"[-_.]+", "-", whl.name.split("-")[0]).lower()
            projects.setdefault(project, []).append(whl)
        for project, files in projects.items():
            page = self.root / "simple" / project
            page.mkdir(parents=True)
            links = []
            for whl in files:
                (self.root / "files").mkdir(exist_ok=True)
                (self.root / "files" / whl.name).write_bytes(whl.read_bytes())
                sha = hashlib.sha256(whl.read_bytes()).hexdigest()
                links.append(f'<a href="../../files/{html.escape(whl.name)}#sha256={sha}">'
                             f"{html.escape(whl.name)}</a>")  # fmt: skip
            (page / "index.html").write_text("<html><body>" + "".join(links) + "</body></html>")

    def __enter__(self) -> WheelIndex:
        handler = functools.partial(_Quiet, directory=str(self.root))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/simple/"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
