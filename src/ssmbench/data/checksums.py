"""Checksums of raw files: the one file hasher of the data layer, and the reader of the
``SHA256SUMS`` lists that a local copy of a dataset may carry.

Every source hashes through :func:`file_digests`, which computes any set of digests in one
pass over the file (a 57 GB MONSTER ``X`` is read once for its sha256 and git blob sha1, a
Zenodo archive once for its md5 and sha256).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from ssmbench.data.errors import DataError

SUMS_FILE = "SHA256SUMS"
#: the name :func:`file_digests` gives git's blob hash (sha1 of ``blob <size>\\0`` + bytes)
GIT_BLOB_SHA1 = "git-sha1"
CHUNK = 1 << 20


def file_digests(path: Path, algorithms: Iterable[str] = ("sha256",)) -> dict[str, str]:
    """{algorithm: lower-case hex digest} of the file at ``path``, in one read. An algorithm
    is a :mod:`hashlib` name or :data:`GIT_BLOB_SHA1`."""
    hashers = {}
    for algo in algorithms:
        if algo == GIT_BLOB_SHA1:
            hashers[algo] = hashlib.sha1(f"blob {Path(path).stat().st_size}\0".encode())
        else:
            hashers[algo] = hashlib.new(algo, usedforsecurity=False)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            for h in hashers.values():
                h.update(chunk)
    return {algo: h.hexdigest() for algo, h in hashers.items()}


def sha256_file(path: Path) -> str:
    return file_digests(path)["sha256"]


def read_sha256sums(path: Path) -> dict[str, str]:
    """``SHA256SUMS`` (``sha256sum`` output) as {relative path: lower-case hex digest}."""
    sums: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise DataError(
            f"{path}: not a text checksum list ({e}); it must be plain `sha256sum` output. "
            f"Replace or remove it."
        ) from e
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) != 2 or len(parts[0]) != 64:
            raise DataError(
                f"{path}: line {lineno} is not '<sha256>  <path>' ({line[:80]!r}). "
                f"Fix or remove the checksum file (regenerate it with sha256sum)."
            )
        rel = parts[1].strip().lstrip("*")
        rel = rel[2:] if rel.startswith("./") else rel
        sums[rel] = parts[0].lower()
    return sums


def listed_sha256(
    root: Path, folder: Path, name: str, file_names: Iterable[str], sums_file: str = SUMS_FILE
) -> tuple[dict[str, str], str | None]:
    """The sha256 of each of ``file_names`` listed in ``<root>/SHA256SUMS`` (paths
    ``<name>/<file>``) or in ``<folder>/SHA256SUMS`` (bare file names), the latter winning.
    ``sums_file`` names another list of the same form (e.g. ``SHA256SUMS.xz``).

    Returns ({file name: sha256}, the checksum file(s) used, or None when none lists any).
    A list that resolves (through symbolic links) outside ``root`` is refused unread, as
    the data files are: a link could bring any file of the machine into the error messages.
    """
    expected: dict[str, str] = {}
    used = []
    file_names = list(file_names)
    for sums_path, prefix in ((root / sums_file, f"{name}/"), (folder / sums_file, "")):
        if not sums_path.is_file():
            continue
        if not sums_path.resolve().is_relative_to(Path(root).resolve()):
            raise DataError(
                f"{sums_path}: a symbolic link to a file outside {root}; put the checksum "
                "list itself there (or remove the link)"
            )
        sums = read_sha256sums(sums_path)
        for fname in file_names:
            if prefix + fname in sums:
                expected[fname] = sums[prefix + fname]
                used.append(str(sums_path))
    return expected, (", ".join(sorted(set(used))) or None)
