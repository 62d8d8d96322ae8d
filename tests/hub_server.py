"""A tiny stand-in for the Hugging Face Hub's file endpoint, on 127.0.0.1, for offline tests.

``huggingface_hub.hf_hub_download`` (2.4.0, plain HTTP, hf_xet disabled) needs
``/{datasets/}{repo_id}/resolve/{revision}/{filename}``, and ``HfApi.list_repo_files`` the
tree listing ``/api/{datasets|models}/{repo_id}/tree/{revision}`` (a JSON list of
``{"type": "file", "path", "size", "oid", "lfs"}``, one page: no ``Link`` header):

* ``HEAD`` (``get_hf_file_metadata``): ``X-Repo-Commit`` (the commit the revision resolves
  to; without it the client refuses the endpoint), ``ETag`` (a git blob sha1 for files kept
  in git) or ``X-Linked-ETag`` (the sha256 of an LFS file) and ``X-Linked-Size`` /
  ``Content-Length``. Errors carry ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``,
  ``EntryNotFound``), which the client turns into its typed exceptions.
* ``GET``: the bytes; with ``Range: bytes=N-`` a ``206`` with ``Content-Range``. The client
  sends a Range when it retries a dropped transfer (up to 5 times, in the same call) after
  having written some of it: it writes in chunks of ``constants.DOWNLOAD_CHUNK_SIZE``
  (10 MB), so for a smaller file a retry starts again from byte 0.

Test hooks: ``corrupt[filename] = bytes`` serves other bytes under the advertised
checksums; ``cut[filename] = k`` sends every GET of that file only up to byte ``k`` of the
file and then drops the connection (``cut_times`` limits how many GETs are cut).
``requests`` records ``(method, path, range header)`` of every request.
"""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    """``with FakeHub() as hub: hub.add_repo(...); hub.endpoint`` -> ``http://127.0.0.1:port``."""

    def __init__(self):
        self.repos: dict[str, dict] = {}  # "datasets/org/name" -> {commit, files, lfs}
        self.corrupt: dict[str, bytes] = {}
        self.cut: dict[str, int] = {}
        self.cut_times: dict[str, int] = {}
        self.requests: list[tuple[str, str, str | None]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -------------------------------------------------------------- content
    def add_repo(self, repo_id: str, files: dict[str, bytes], commit: str, repo_type="dataset"):
        """Files ending in .npy are served as LFS files (sha256 ETag), the rest as git files."""
        prefix = {"dataset": "datasets/", "model": ""}[repo_type]
        self.repos[prefix + repo_id] = {
            "commit": commit,
            "files": dict(files),
            "lfs": {f for f in files if f.endswith(".npy")},
        }

    # -------------------------------------------------------------- lifecycle
    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeHub:
        hub = self

        class Handler(_Handler):
            pass

        Handler.hub = hub
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

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def count(self, method: str | None = None) -> int:
        with self._lock:
            return sum(1 for m, _, _ in self.requests if method is None or m == method)


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub
    protocol_version = "HTTP/1.0"  # one request per connection: simple and predictable

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_HEAD(self):
        self._serve(body=False)

    def do_GET(self):
        self._serve(body=True)

    # ------------------------------------------------------------------
    def _error(self, code: int, error_code: str, message: str) -> None:
        payload = message.encode()
        self.send_response(code)
        self.send_header("X-Error-Code", error_code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _tree(self, path: str) -> None:
        """The file list of a repo at a revision, as ``HfApi.list_repo_tree`` reads it."""
        import json

        repo_key, _, revision = path[len("api/") :].partition("/tree/")
        repo_key = (
            repo_key.replace("models/", "", 1) if repo_key.startswith("models/") else repo_key
        )
        repo = self.hub.repos.get(repo_key)
        if repo is None:
            return self._error(404, "RepoNotFound", f"Repository {repo_key} not found")
        if revision.strip("/") not in ("main", repo["commit"]):
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        entries = []
        for fname, data in repo["files"].items():
            entry = {"type": "file", "path": fname, "size": len(data), "oid": git_blob_sha1(data)}
            if fname in repo["lfs"]:
                entry["lfs"] = {
                    "oid": hashlib.sha256(data).hexdigest(),
                    "size": len(data),
                    "pointerSize": 134,
                }
            entries.append(entry)
        payload = json.dumps(entries).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _serve(self, body: bool) -> None:
        hub = self.hub
        with hub._lock:
            hub.requests.append((self.command, self.path, self.headers.get("Range")))
        path = unquote(self.path.split("?", 1)[0]).lstrip("/")
        if path.startswith("api/") and "/tree/" in path:
            return self._tree(path)
        if "/resolve/" not in path:
            return self._error(404, "EntryNotFound", f"no route {path}")
        repo_key, rest = path.split("/resolve/", 1)
        repo = hub.repos.get(repo_key)
        if repo is None:
            return self._error(404, "RepoNotFound", f"Repository {repo_key} not found")
        revision, _, filename = rest.partition("/")
        if revision not in ("main", repo["commit"]):
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        if filename not in repo["files"]:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("X-Repo-Commit", repo["commit"])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return

        data = repo["files"][filename]
        served = hub.corrupt.get(filename, data)
        total = len(served)
        start = 0
        rng = self.headers.get("Range")
        if body and rng and rng.startswith("bytes="):
            first, _, last = rng[len("bytes=") :].partition("-")
            start = int(first or 0)
            end = int(last) if last else total - 1
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
            payload = served[start : end + 1]
        else:
            self.send_response(200)
            payload = served
        self.send_header("X-Repo-Commit", repo["commit"])
        if filename in repo["lfs"]:
            sha = hashlib.sha256(data).hexdigest()
            self.send_header("ETag", f'"{sha}"')
            self.send_header("X-Linked-ETag", f'"{sha}"')
            self.send_header("X-Linked-Size", str(len(data)))
        else:
            self.send_header("ETag", f'"{git_blob_sha1(data)}"')
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if not body:
            return

        cut = hub.cut.get(filename)
        if cut is not None:
            with hub._lock:
                left = hub.cut_times.get(filename)
                if left is not None:
                    hub.cut_times[filename] = left - 1
                    if left - 1 <= 0:
                        del hub.cut[filename]
            keep = max(0, cut - start)
            self.wfile.write(payload[:keep])
            self.wfile.flush()
            self.close_connection = True
            try:  # drop the connection mid-body
                import socket

                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.wfile.write(payload)
