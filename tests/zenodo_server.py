"""A stand-in for Zenodo's REST API on 127.0.0.1, for offline tests of the Physiome-ODE
download (``ssmbench.data.physiome.zenodo``).

Routes (those the client uses):

* ``GET /api/records/<id>``: the record's JSON, ``{"id", "files": [{"key", "size",
  "checksum": "md5:<hex>", "links": {"self", "content"}}]}`` (Zenodo's own shape).
* ``GET /api/records/<id>/files/<key>/content``: the file; ``Range: bytes=N-`` gives a
  ``206`` with ``Content-Range``.

Test hooks: ``corrupt[key] = bytes`` serves other bytes under the advertised checksum;
``cut[key] = k`` sends every GET of that file only up to byte ``k`` of the file and then
drops the connection (``cut_times[key]`` limits how many GETs are cut). ``requests`` logs
``(method, path, range header)``.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote


class FakeZenodo:
    """``with FakeZenodo() as z: z.add_record("11492058", {"final.zip": data}); z.url``."""

    def __init__(self):
        self.records: dict[str, dict[str, bytes]] = {}
        self.corrupt: dict[str, bytes] = {}
        self.cut: dict[str, int] = {}
        self.cut_times: dict[str, int] = {}
        self.requests: list[tuple[str, str, str | None]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def add_record(self, record: str, files: dict[str, bytes]) -> None:
        self.records[str(record)] = dict(files)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeZenodo:
        owner = self

        class Handler(_Handler):
            zenodo = owner

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None

    def __enter__(self) -> FakeZenodo:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def count(self, method: str | None = None, contains: str = "") -> int:
        with self._lock:
            return sum(
                1 for m, p, _ in self.requests if (method is None or m == method) and contains in p
            )


class _Handler(BaseHTTPRequestHandler):
    zenodo: FakeZenodo
    protocol_version = "HTTP/1.0"  # one request per connection

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):
        z = self.zenodo
        with z._lock:
            z.requests.append(("GET", self.path, self.headers.get("Range")))
        parts = unquote(self.path.split("?", 1)[0]).strip("/").split("/")
        # api/records/<id>  or  api/records/<id>/files/<key>/content
        if len(parts) < 3 or parts[:2] != ["api", "records"] or parts[2] not in z.records:
            return self._send(404, b'{"status": 404, "message": "not found"}', "application/json")
        record, files = parts[2], z.records[parts[2]]
        if len(parts) == 3:
            base = f"{z.url}/api/records/{record}/files"
            body = {
                "id": int(record) if record.isdigit() else record,
                "files": [
                    {
                        "id": hashlib.sha1(key.encode()).hexdigest(),
                        "key": key,
                        "size": len(data),
                        "checksum": "md5:" + hashlib.md5(data).hexdigest(),
                        "links": {
                            "self": f"{base}/{key}",
                            "content": f"{base}/{key}/content",
                        },
                    }
                    for key, data in files.items()
                ],
            }
            return self._send(200, json.dumps(body).encode(), "application/json")
        if len(parts) == 6 and parts[3] == "files" and parts[5] == "content":
            key = parts[4]
            if key not in files:
                return self._send(404, b'{"status": 404}', "application/json")
            return self._file(key, z.corrupt.get(key, files[key]))
        return self._send(404, b'{"status": 404}', "application/json")

    def _send(self, code: int, payload: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _file(self, key: str, served: bytes) -> None:
        z = self.zenodo
        total, start = len(served), 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            first, _, last = rng[len("bytes=") :].partition("-")
            start = int(first or 0)
            if start >= total:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{total}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            end = int(last) if last else total - 1
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
            payload = served[start : end + 1]
        else:
            self.send_response(200)
            payload = served
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()

        cut = z.cut.get(key)
        if cut is not None:
            with z._lock:
                left = z.cut_times.get(key)
                if left is not None:
                    z.cut_times[key] = left - 1
                    if left - 1 <= 0:
                        z.cut.pop(key, None)
            self.wfile.write(payload[: max(0, cut - start)])
            self.wfile.flush()
            self.close_connection = True
            try:  # drop the connection mid-body
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.wfile.write(payload)
