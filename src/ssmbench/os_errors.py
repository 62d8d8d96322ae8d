"""What a file operation that the machine refused says: one line naming the file, the
cause and what to do, instead of a traceback.

A full disk, a quota, a read-only or forbidden folder, a folder where a file should be or
a file where a folder should be is the state of the machine, not a bug in the code:
`ssmbench.cli` prints `one_line` for such an `OSError` (`is_refusal`) and exits 1.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

#: what to do about each refusal, after "; "
WHAT_TO_DO = {
    errno.ENOSPC: "free space on its file system (or point params.yaml's paths elsewhere) "
    "and run the command again",
    errno.EDQUOT: "free space within your disk quota (or point params.yaml's paths "
    "elsewhere) and run the command again",
    errno.EFBIG: "the file system takes no file this large; point params.yaml's paths at "
    "one that does and run the command again",
    errno.EROFS: "the file system is read-only; point params.yaml's paths at a writable "
    "folder and run the command again",
    errno.EACCES: "make it accessible to you (or point params.yaml's paths elsewhere) and "
    "run the command again",
    errno.EPERM: "make it accessible to you (or point params.yaml's paths elsewhere) and "
    "run the command again",
    errno.EISDIR: "a folder is where a file should be; move it aside and run the command again",
    errno.ENOTDIR: "a file is where a folder of this path should be; move it aside and run "
    "the command again",
}

#: the refusals that mean the file system has no room for what was written
NO_ROOM = (errno.ENOSPC, errno.EDQUOT)


def is_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is an OSError the machine's state explains (`WHAT_TO_DO`)."""
    return isinstance(exc, OSError) and exc.errno in WHAT_TO_DO


def describe(exc: OSError) -> str:
    """The cause in words and its errno name: ``No space left on device (ENOSPC)``."""
    code = errno.errorcode.get(exc.errno, "") if exc.errno else ""
    cause = exc.strerror or str(exc) or type(exc).__name__
    return f"{cause} ({code})" if code else cause


def one_line(exc: OSError) -> str:
    """``<file>: <cause> (<ERRNO>); <what to do>``: the file first, where it is known."""
    where = f"{exc.filename}: " if exc.filename else ""
    todo = WHAT_TO_DO.get(exc.errno)
    return f"{where}{describe(exc)}" + (f"; {todo}" if todo else "")


def blocking_file(path: str | os.PathLike) -> Path | None:
    """The nearest ancestor of ``path`` that exists but is not a folder (a file where a
    folder of the path should be), or None when there is none."""
    path = Path(path)
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            return parent
    return None


def write_target_problem(path: str | os.PathLike, what: str) -> str | None:
    """Why ``path`` cannot be written as a file (``what`` names it in the message: "the
    tuned file"): a folder is there, or a file is where one of its folders should be;
    None when neither."""
    path = Path(path)
    if path.is_dir():
        return (
            f"{path}: a folder, where {what} should be a file; move the folder aside and run "
            "the command again"
        )
    blocker = blocking_file(path)
    if blocker is not None:
        return (
            f"{blocker}: a file, where a folder of {what} {path} should be; move the file "
            "aside and run the command again"
        )
    return None


def no_room(folder: str | os.PathLike, probe_bytes: int = 1 << 20) -> OSError | None:
    """Whether the file system of ``folder`` has no room: write ``probe_bytes`` to a hidden
    probe file there and fsync it; the error (ENOSPC, EDQUOT) if that fails, else None.
    The probe is always removed. For a write that failed without saying why (numpy's
    "48000 requested and 16352 written", torch's zip writer's "unexpected pos")."""
    probe = Path(folder) / f".ssmbench-space-probe-{os.getpid()}.tmp"
    try:
        with open(probe, "wb") as handle:
            handle.write(b"\0" * probe_bytes)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        return exc if exc.errno in NO_ROOM else None
    finally:
        try:
            probe.unlink(missing_ok=True)
        except OSError:
            pass
    return None
