"""The one archive format of ``ssmbench offline``: an uncompressed tar of plain files, the
first of them ``SHA256SUMS`` (the sha256 of every other member), written whole or not at
all and read back only into a fresh staging folder, member by member, checked.

Writing (:func:`write_archive`): the members are given as {member name: file}; the tar is
written to a hidden temporary beside the target and renamed into place
(``ssmbench.io.atomic_write``), so a killed pack leaves no half archive under the name.
Each member is a regular file, mode 0644, owned by no one, dated 0: the same files give the
same archive. The members are compressed files already (``.xz``, wheels), so the tar itself
is not compressed: reading it can never expand it.

Reading (:func:`extracted`) refuses the whole archive, with a DataError naming the member
and what is wrong, before anything outside the staging folder is written:

* a member that is not a regular file (a symbolic or hard link, a folder, a device, a
  sparse file, whose declared size is not what it holds);
* a name that is absolute, holds a ``..`` component, a backslash or a NUL, repeats a name,
  or leads (through the staging folder's own paths) outside the staging folder;
* a member whose sha256 is not the one ``SHA256SUMS`` lists for it, a member the list does
  not name, a name the list holds that the archive lacks, an archive without the list.

The staging folder is deleted when the block ends, whatever happens. The standard library
alone: ``ssmbench offline unpack`` runs this before the project's packages are installed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import shutil
import tarfile
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath

from ssmbench.data.checksums import CHUNK, SUMS_FILE, read_sha256sums, sha256_file
from ssmbench.data.errors import DataError
from ssmbench.io import atomic_write

#: the first member of every archive: ``<sha256>  <member>`` for each other member
SUMS = SUMS_FILE


def member_problem(name: str) -> str | None:
    """Why ``name`` may not be the name of a member (None if it may): a plain relative
    path of named parts, as :func:`write_archive` writes them."""
    if not name or "\x00" in name:
        return "has an empty name or a NUL byte in it"
    if "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "is an absolute or Windows path"
    parts = PurePosixPath(name).parts
    if any(part == ".." for part in parts):
        return "has a '..' component: it would land outside the folder it is extracted to"
    if posixpath.normpath(name) != name or any(part == "." for part in parts):
        return "is not a plain relative path (it holds '.', '//' or a trailing '/')"
    return None


def _refused(archive: Path, member: str, why: str) -> DataError:
    return DataError(
        f"{archive}: member {member!r} {why}. The archive is refused: nothing of it was "
        f"installed. Make it again (ssmbench offline pack / records) and copy it whole."
    )


def write_archive(out: Path, members: Mapping[str, Path]) -> dict[str, str]:
    """Write the tar ``out`` holding ``members`` ({member name: file}) after their
    ``SHA256SUMS``; return {member name: sha256}. Names are checked first
    (:func:`member_problem`); a file that changes while it is read fails the write (its
    sha256 is taken in the same read that copies it, then compared)."""
    out = Path(out)
    for name in members:
        if (why := member_problem(name)) is not None or name == SUMS:
            raise ValueError(f"{name!r} cannot be an archive member: {why or 'reserved'}")
    sums = {name: sha256_file(path) for name, path in sorted(members.items())}
    listing = "".join(f"{digest}  {name}\n" for name, digest in sums.items()).encode()

    def write(tmp: Path) -> None:
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
            _add(tar, SUMS, len(listing), _BytesReader(listing))
            for name, path in sorted(members.items()):
                with open(path, "rb") as handle:
                    size = os.fstat(handle.fileno()).st_size
                    reader = _HashingReader(handle)
                    _add(tar, name, size, reader)
                if reader.hexdigest() != sums[name]:
                    raise DataError(f"{path}: changed while it was packed; pack again")

    atomic_write(out, write)
    return sums


def _add(tar: tarfile.TarFile, name: str, size: int, fileobj) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    tar.addfile(info, fileobj)


class _BytesReader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def read(self, n: int = -1) -> bytes:
        end = len(self.data) if n < 0 else self.pos + n
        piece, self.pos = self.data[self.pos : end], min(end, len(self.data))
        return piece


class _HashingReader:
    def __init__(self, handle):
        self.handle, self.hash = handle, hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        piece = self.handle.read(n)
        self.hash.update(piece)
        return piece

    def hexdigest(self) -> str:
        return self.hash.hexdigest()


@contextlib.contextmanager
def extracted(archive: Path, parent: Path) -> Iterator[dict[str, Path]]:
    """Extract and check ``archive`` into a new hidden folder of ``parent``; yield
    {member name: extracted file} (``SHA256SUMS`` left out: every file it names is
    checked). The folder is deleted when the block ends. DataError: the refusals of the
    module docstring, or a file that is no tar archive."""
    archive, parent = Path(archive), Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    staging = parent / f".ssmbench-unpack-{uuid.uuid4().hex}"
    staging.mkdir()
    try:
        yield _extract_checked(archive, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _extract_checked(archive: Path, staging: Path) -> dict[str, Path]:
    root = staging.resolve()
    digests: dict[str, str] = {}
    files: dict[str, Path] = {}
    try:
        tar = tarfile.open(archive, "r:")
    except tarfile.ReadError as exc:
        raise DataError(
            f"{archive}: not an uncompressed tar archive ({exc}); ssmbench offline writes "
            f"plain .tar files (a copy compressed on the way must be decompressed first)"
        ) from exc
    with tar:
        try:
            for info in tar:
                why = _unsafe(info)
                dest = staging / info.name
                if why is None and not dest.resolve().is_relative_to(root):
                    why = "resolves outside the folder it is extracted to"
                if why is None and (info.name in files or dest.exists()):
                    why = "appears twice in the archive (or is a folder of another member)"
                if why is None and any(str(p) in files for p in PurePosixPath(info.name).parents):
                    why = "lies under another member, which is a file"
                if why is not None:
                    raise _refused(archive, info.name, why)
                dest.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(info)
                digest = hashlib.sha256()
                with open(dest, "wb") as out:
                    for chunk in iter(lambda source=source: source.read(CHUNK), b""):
                        digest.update(chunk)
                        out.write(chunk)
                files[info.name], digests[info.name] = dest, digest.hexdigest()
        except (tarfile.TarError, EOFError) as exc:
            raise DataError(
                f"{archive}: damaged or truncated tar archive ({exc}); nothing of it was "
                f"installed. Copy it again from where it was made."
            ) from exc
    if SUMS not in files:
        raise DataError(
            f"{archive}: holds no {SUMS}, so its members cannot be checked; nothing of it "
            f"was installed. Make it with ssmbench offline pack / records."
        )
    try:
        listed = read_sha256sums(files.pop(SUMS))
    except DataError as exc:
        raise _refused(archive, SUMS, f"is not a checksum list ({exc})") from exc
    digests.pop(SUMS)
    for name, digest in digests.items():
        if name not in listed:
            raise _refused(archive, name, f"is not listed in its {SUMS}")
        if listed[name] != digest:
            raise _refused(
                archive, name, f"has sha256 {digest}, but its {SUMS} lists {listed[name]} "
                "(changed or damaged since it was packed)",
            )  # fmt: skip
    if missing := sorted(set(listed) - set(digests)):
        raise _refused(archive, missing[0], f"is listed in its {SUMS} but not in the archive")
    return files


def _unsafe(info: tarfile.TarInfo) -> str | None:
    """Why the member ``info`` may not be extracted (None if it may)."""
    if info.issym() or info.islnk():
        return f"is a {'symbolic' if info.issym() else 'hard'} link (to {info.linkname!r})"
    if info.issparse():
        return "is a sparse file (its declared size is not what it holds)"
    if not info.isreg():
        return "is not a regular file (a folder, a device or a pipe)"
    return member_problem(info.name)
