"""Getting raw files safely, for every source (UEA, MONSTER, Physiome-ODE): an HTTP
download that resumes and verifies, safe zip extraction, and the stage-then-replace
install that keeps the previous good copy when anything fails.

* :func:`check_url` and :func:`opener`: downloads use https (plain http only to a loopback
  host, for tests against a local server), and every redirect is held to the same rule.
* :func:`download_verified`: into ``<target>.part``, resuming a partial transfer with an
  HTTP ``Range`` request, retrying an interrupted one, checking size and checksum, and only
  then renaming it to ``target``.
* :func:`safe_extract`: refuses a whole zip archive if any member is absolute, has a ``..``
  component, is a symlink, would land outside the target, repeats a name or clashes with a
  folder of another member (``a`` and ``a/b``), or if the archive holds more members, more
  uncompressed bytes or a higher compression ratio than its caps (declared in the zip
  directory, and counted while extracting, since a header can lie).
* :func:`copy_file`: a copy that is a file of its own (never a hard link), shared
  copy-on-write where the filesystem offers it.
* :func:`staging` and :func:`install_staged`: files (or folders) are staged as hidden
  siblings in the raw folder, checked, and renamed over the old ones together; the old
  ``provenance.json`` goes first, since it no longer describes the folder meanwhile.

Why not ``pooch`` (1.9.0): its ``retrieve``/``fetch`` download into a temporary file that
is deleted when a transfer fails or a hash does not match, and retry from byte 0, so an
interrupted 0.7 GB Zenodo transfer cannot be resumed with ``Range`` (a tested behaviour);
its ``HTTPDownloader`` follows redirects through ``requests`` with no hook to hold each hop
to the https rule; its ``Unzip`` processor extracts what ``zipfile`` accepts (sanitising
``..`` and absolute names) where we refuse the whole archive; and it hashes in a separate
pass per algorithm, where the Zenodo archive needs md5 (to verify) and sha256 (to record)
from one read. Each would be replaced rather than reused, so the little code here stays
our own, on the standard library alone. UEA downloads through aeon and MONSTER through
``huggingface_hub``; both then verify and install with the functions here.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import posixpath
import shutil
import stat
import urllib.error
import urllib.parse
import urllib.request
import uuid
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ssmbench.data.checksums import CHUNK, file_digests
from ssmbench.data.errors import DataError
from ssmbench.data.provenance import PROVENANCE
from ssmbench.io import swap_into_place
from ssmbench.os_errors import is_refusal

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
#: caps of :func:`safe_extract`: the Physiome-ODE archive (Zenodo 11492058 final.zip, about
#: 0.7 GB, some 800 members) fits many times over; a zip bomb does not
MAX_EXTRACT_BYTES = 20 * 2**30
MAX_EXTRACT_MEMBERS = 100_000
#: ... and the members extracted may expand at most this much over their compressed size
#: once past RATIO_FREE_BYTES (zeros deflate about 1000:1; pickled float tensors barely)
MAX_EXTRACT_RATIO = 200
RATIO_FREE_BYTES = 16 * 2**20


# --------------------------------------------------------------------------- URLs
def check_url(url: str, what: str = "the download URL") -> str:
    """``url`` without a trailing slash if it is https, or http to a loopback host (for
    tests against a local server); otherwise DataError naming ``what``."""
    parts = urllib.parse.urlsplit(str(url))
    host = (parts.hostname or "").lower()
    if parts.scheme == "https" and host:
        return str(url).rstrip("/")
    if parts.scheme == "http" and host in LOOPBACK_HOSTS:
        return str(url).rstrip("/")
    raise DataError(
        f"{what} is {url!r}: downloads must use https (plain http only to 127.0.0.1, "
        f"localhost or ::1). Fix it in params.yaml."
    )


class _SafeRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        check_url(newurl, f"a redirect from {req.full_url}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def opener(url: str) -> urllib.request.OpenerDirector:
    """An opener that holds redirects to the https rule; no proxy for a loopback host."""
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    handlers = [_SafeRedirect()]
    if host in LOOPBACK_HOSTS:
        handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(*handlers)


# --------------------------------------------------------------------------- download
class _Interrupted(Exception):
    pass


def download_verified(
    url: str,
    target: Path,
    checksum: str,
    size: int | None,
    *,
    retries: int,
    timeout: float,
    checksum_from: str = "the source",
    retries_setting: str = "the number of retries",
) -> str:
    """Download ``url`` to ``target`` through ``<target>.part``: resume a partial transfer
    with a Range request, retry an interrupted one up to ``retries`` times, check the size
    and ``checksum`` (``"<hashlib algorithm>:<hex>"``, e.g. ``"md5:..."``), and only then
    rename it to ``target``. Returns its sha256. An interrupted transfer leaves the
    ``.part`` (a later call resumes it); a wrong checksum deletes it. ``checksum_from`` and
    ``retries_setting`` name, in the error messages, where the checksum came from and the
    setting that raises the retries."""
    url = check_url(url)
    algo, _, want = checksum.partition(":")
    part = target.with_name(target.name + ".part")
    target.parent.mkdir(parents=True, exist_ok=True)
    last: Exception | None = None
    for _attempt in range(retries + 1):
        have = part.stat().st_size if part.is_file() else 0
        if size is not None and have > size:
            part.unlink()
            have = 0
        if size is None or have < size:
            try:
                _transfer(url, part, have, timeout)
            except _Interrupted as e:
                last = e
                continue
        got = part.stat().st_size
        if size is not None and got != size:
            last = _Interrupted(f"{got} of {size} bytes")
            if got > size:
                part.unlink()
            continue
        digests = file_digests(part, dict.fromkeys((algo, "sha256")))
        if digests[algo] != want:
            part.unlink()
            raise DataError(
                f"{target.name} downloaded from {url} is corrupt: {algo} {digests[algo]}, but "
                f"{checksum_from} says {want}. It was deleted; run the fetch again. The "
                f"previous copy, if any, was kept."
            )
        os.replace(part, target)
        return digests["sha256"]
    raise DataError(
        f"{target.name} from {url}: the transfer was interrupted {retries + 1} time(s) "
        f"({last}). The partial file {part} is kept and a later fetch resumes it; run the "
        f"fetch again (or raise {retries_setting}). The previous copy, if any, was kept."
    )


def _transfer(url: str, part: Path, have: int, timeout: float) -> None:
    headers = {"Range": f"bytes={have}-"} if have else {}
    req = urllib.request.Request(url, headers=headers)
    try:
        with opener(url).open(req, timeout=timeout) as resp:
            status = resp.status
            if have and status == 206:
                content_range = resp.headers.get("Content-Range", "")
                if not content_range.startswith(f"bytes {have}-"):
                    raise _Interrupted(f"unexpected Content-Range {content_range!r}")
                mode = "ab"
            elif status == 200:
                mode = "wb"  # the server ignored the Range: start again
            else:
                raise _Interrupted(f"HTTP {status}")
            expected = resp.headers.get("Content-Length")
            written = 0
            with open(part, mode) as f:
                while True:
                    chunk = resp.read(CHUNK)
                    if not chunk:
                        break
                    f.write(chunk)
                    written += len(chunk)
                f.flush()
                os.fsync(f.fileno())
            if expected is not None and written != int(expected):
                raise _Interrupted(f"got {written} of {expected} bytes")
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # range beyond the end: restart from scratch
            part.unlink(missing_ok=True)
            raise _Interrupted("HTTP 416 on resume; restarting") from e
        raise DataError(f"{url}: HTTP {e.code} {e.reason}.") from e
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        raise _Interrupted(f"{type(e).__name__}: {e}") from e


# --------------------------------------------------------------------------- extraction
def _unsafe_member(info: zipfile.ZipInfo) -> str | None:
    """Why a zip member may not be extracted (None if it may)."""
    name = info.filename
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "is an absolute or Windows path"
    parts = PurePosixPath(name).parts
    if any(p == ".." for p in parts):
        return "has a '..' component (zip-slip)"
    if "\x00" in name:
        return "has a NUL byte in its name"
    return None


def _refused(archive: Path, member: str, why: str) -> DataError:
    return DataError(
        f"{archive}: member {member!r} {why}; the archive is refused and nothing was "
        f"extracted from it."
    )


def _check_names(archive: Path, members: list[zipfile.ZipInfo]) -> None:
    """Refuse a repeated member name, and a file whose name is also a folder of another
    member (``a`` and ``a/b``): either would overwrite or fail halfway through. Names are
    compared as the paths they extract to (``x/./y``, ``x//y`` and ``x/y`` are one)."""
    files: set[str] = set()
    folders: set[str] = set()
    for info in members:
        name = posixpath.normpath(info.filename.rstrip("/"))
        parts = PurePosixPath(name).parts
        if info.is_dir():
            if name in files:
                raise _refused(archive, info.filename, f"is a folder and also a file {name!r}")
            folders.add(name)
        else:
            if name in files:
                twice = "" if name == info.filename else f" (as {name!r}, the path it extracts to)"
                raise _refused(archive, info.filename, f"appears twice in the archive{twice}")
            if name in folders:
                raise _refused(archive, info.filename, "is a file and a folder of other members")
            files.add(name)
        for k in range(1, len(parts)):
            parent = "/".join(parts[:k])
            if parent in files:
                raise _refused(
                    archive, info.filename, f"lies under {parent!r}, which is a file member"
                )
            folders.add(parent)


def safe_extract(
    archive: Path,
    target: Path,
    prefix: str = "",
    *,
    max_bytes: int = MAX_EXTRACT_BYTES,
    max_members: int = MAX_EXTRACT_MEMBERS,
    max_ratio: float = MAX_EXTRACT_RATIO,
) -> list[str]:
    """Extract the members of zip ``archive`` under ``prefix`` into ``target``; return
    their relative paths. Refuses the whole archive (DataError naming the member) if any
    member is absolute, has a ``..`` component, is a symlink, resolves outside ``target``,
    repeats a name or clashes with another member's folder; and if the archive has more
    than ``max_members`` members or the members under ``prefix`` more than ``max_bytes``
    uncompressed bytes (declared, or counted while extracting: what was extracted is then
    deleted) or, past :data:`RATIO_FREE_BYTES`, more than ``max_ratio`` times their
    compressed size. A corrupt archive or member raises DataError naming it."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    root = target.resolve()
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as e:
        raise DataError(f"{archive}: not a readable zip archive ({e}); fetch it again.") from e
    out = []
    with zf:
        members = zf.infolist()
        if len(members) > max_members:
            raise _refused(
                archive,
                members[max_members].filename,
                f"is member {max_members + 1}, over the cap of {max_members} members",
            )
        for info in members:
            why = _unsafe_member(info)
            if why is None:
                dest = (target / info.filename).resolve()
                if dest != root and root not in dest.parents:
                    why = "resolves outside the target folder"
            if why is not None:
                raise _refused(archive, info.filename, why)
        _check_names(archive, members)
        chosen = [m for m in members if not prefix or m.filename.startswith(prefix)]
        declared = compressed = 0
        for info in chosen:
            declared += info.file_size
            compressed += info.compress_size
            if declared > RATIO_FREE_BYTES and declared > max_ratio * max(compressed, 1):
                raise _refused(
                    archive,
                    info.filename,
                    f"brings the uncompressed size to {declared} bytes from {compressed} "
                    f"compressed, over the cap of {max_ratio}:1 (a zip bomb)",
                )
            if declared > max_bytes:
                raise _refused(
                    archive,
                    info.filename,
                    f"brings the declared uncompressed size to {declared} bytes, over the "
                    f"cap of {max_bytes} bytes",
                )
        written = 0
        for info in chosen:
            dest = target / info.filename
            if info.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                with zf.open(info) as src, open(dest, "wb") as dst:
                    # zipfile stops at the declared size; count anyway, so the cap holds
                    # whatever the reader does with a header that lies
                    while chunk := src.read(CHUNK):
                        written += len(chunk)
                        if written > max_bytes:
                            raise _refused(
                                archive,
                                info.filename,
                                f"extracts to more than the cap of {max_bytes} bytes "
                                f"(its header declares {info.file_size})",
                            )
                        dst.write(chunk)
            except DataError:
                _remove_written(target, [*out, info.filename])
                raise
            except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as e:
                # a damaged member (a broken deflate stream: zlib.error): nothing this
                # call extracted is left behind, the partial member included
                _remove_written(target, [*out, info.filename])
                if is_refusal(e):  # the target folder's fault (a full disk), not the archive's
                    if e.filename is None:
                        e.filename = str(dest)
                    raise
                raise DataError(
                    f"{archive}: member {info.filename!r} is corrupt ({e}); nothing was "
                    "extracted; fetch the archive again."
                ) from e
            out.append(info.filename)
    return out


def _remove_written(target: Path, members: list[str]) -> None:
    """The files an extraction wrote (not the folder's other files)."""
    for rel in members:
        (target / rel).unlink(missing_ok=True)


# --------------------------------------------------------------------------- copy
def copy_file(src: Path, dst: Path) -> None:
    """Copy ``src`` to the new file ``dst``: a file of its own, never a hard link, so that
    editing one (a user's source file, a prepared ``X.npy``) never changes the other.
    ``os.copy_file_range`` lets the kernel share blocks copy-on-write (a reflink on btrfs
    or XFS) or copy on the server (NFS), so a many-GB file costs no read through this
    process; where it is not offered (another filesystem, another OS), the bytes are copied
    in chunks. Either way the memory used is small."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        size = os.fstat(fin.fileno()).st_size
        try:
            done = 0
            while done < size:
                n = os.copy_file_range(fin.fileno(), fout.fileno(), size - done)
                if n == 0:
                    break  # the source shrank while copying: what is copied is hashed
                done += n
            return
        except (AttributeError, OSError):  # not offered here: copy the bytes
            fin.seek(0)
            fout.seek(0)
            fout.truncate()
        shutil.copyfileobj(fin, fout, CHUNK)


# --------------------------------------------------------------------------- install
def staged_path(dest: Path, fname: str) -> Path:
    """A hidden temporary in ``dest`` for the new copy of ``fname``."""
    return dest / f".{fname}.tmp-{uuid.uuid4().hex}"


@contextlib.contextmanager
def staging(dest: Path) -> Iterator[dict[str, Path]]:
    """Create ``dest`` and yield an empty ``{file name: staged path}`` to fill (with
    :func:`staged_path`); whatever is still staged when the block ends (because it failed
    before :func:`install_staged`) is deleted, so the old files stay as they were."""
    dest.mkdir(parents=True, exist_ok=True)
    staged: dict[str, Path] = {}
    try:
        yield staged
    finally:
        for tmp in staged.values():
            if tmp.is_dir():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink(missing_ok=True)


def install_staged(staged: dict[str, Path], dest: Path) -> None:
    """Rename each verified staged file (or folder) over ``dest/<name>``. The old provenance
    goes first: it no longer describes the folder while files are swapped."""
    (dest / PROVENANCE).unlink(missing_ok=True)
    for fname, path in staged.items():
        if path.is_dir():
            swap_into_place(path, dest / fname)
        else:
            os.replace(path, dest / fname)
