"""Small wheels made here and a package index serving them on 127.0.0.1, for the offline
tests of pip's download and install (nothing reaches the internet).

``make_wheel(folder, name, version, requires)`` writes a pure-Python wheel whose module
(the name with ``_`` for ``-``) holds ``VERSION``; ``installed_metadata(env, ...)`` writes
only a distribution's ``.dist-info`` into a folder, as pip installs one, for reading with
``importlib.metadata``; ``with WheelIndex(folder) as index:`` serves the wheels of
``folder`` as a PEP 503 simple index at ``index.url``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import re
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
        for whl in sorted(wheels.glob("*.whl")):
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
