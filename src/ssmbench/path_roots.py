"""The roots params.yaml's ``paths`` name, checked before anything is written under them.

Every command writes only under these roots (``ssmbench.cli.common.inside``), so a root
that is the filesystem root or a system folder would let a command write, or ``--force``
delete and rewrite, files of the system: `system_root_problems` refuses them whenever
params.yaml is read. `unwritable_problems` (``ssmbench check``) also names a root that
this user cannot create or write: a file where one of its folders should be, or a folder
without write permission.
"""

from __future__ import annotations

import os
from pathlib import Path

#: folders of the system a root may not be (their subfolders may: /usr/local/data)
SYSTEM_FOLDERS = frozenset(
    Path(p)
    for p in ("/", "/bin", "/boot", "/etc", "/home", "/lib", "/lib32", "/lib64", "/opt",
              "/root", "/run", "/sbin", "/srv", "/tmp", "/usr", "/var")
)  # fmt: skip
#: the kernel's pseudo file systems: no root lies in them (but /dev/shm, a scratch tmpfs)
PSEUDO_FILE_SYSTEMS = (Path("/proc"), Path("/sys"), Path("/dev"))
SCRATCH_IN_PSEUDO = (Path("/dev/shm"),)


def _roots(params: dict) -> list[tuple[str, str, Path]]:
    """(key, value, resolved path) of each of params.yaml's ``paths`` that commands write
    under: not the input paths (``ssmbench.params_file.INPUT_PATHS``: a copy of source data,
    only read, which may well be a read-only folder of the system's)."""
    from ssmbench.params_file import INPUT_PATHS

    paths = params.get("paths")
    if not isinstance(paths, dict):
        return []
    return [
        (key, value, Path(value).expanduser().resolve())
        for key, value in paths.items()
        if isinstance(value, str) and value and key not in INPUT_PATHS
    ]


def system_root_problems(params: dict) -> list[str]:
    """A ``paths`` entry that resolves to the filesystem root, a system folder
    (`SYSTEM_FOLDERS`) or into the kernel's pseudo file systems (/proc, /sys, /dev)."""
    problems = []
    for key, value, resolved in _roots(params):
        pseudo = any(resolved.is_relative_to(p) for p in PSEUDO_FILE_SYSTEMS) and not any(
            resolved.is_relative_to(p) for p in SCRATCH_IN_PSEUDO
        )
        if resolved in SYSTEM_FOLDERS or pseudo:
            what = "the filesystem root" if resolved == Path("/") else "a system folder"
            problems.append(
                f"paths.{key}: {value!r} resolves to {resolved}, {what}; commands write and "
                "replace files under it. Name a folder of the project, or one of your own"
            )
    return problems


def unwritable_problems(params: dict) -> list[str]:
    """A ``paths`` entry this user cannot create or write: the nearest part of it that
    exists is a file, or a folder without write and search permission."""
    problems = []
    for key, value, resolved in _roots(params):
        existing = resolved
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            problems.append(
                f"paths.{key}: {value!r}: {existing} is a file, where a folder of it should "
                "be; move the file aside or name another folder"
            )
        elif not os.access(existing, os.W_OK | os.X_OK):
            made = "" if existing == resolved else f" (to make {resolved} in)"
            problems.append(
                f"paths.{key}: {value!r}: you cannot write in {existing}{made}; make it "
                "writable or name a folder you can write"
            )
    return problems
