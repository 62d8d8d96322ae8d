"""One run at a time in a project folder: the project lock.

A running `snakemake` (its main process) and each `dvc repro` stage hold an exclusive
``fcntl.flock`` on ``.ssmbench/project.lock`` in the folder they run in, for as long as
they run; a second one is refused with a message that names the first (pid, host, command
line, start time) and says what to do. Without it, a second Snakemake in the same folder
runs the jobs the first is running, and one with nothing to do deletes the first's
``.snakemake/locks`` on its way out (Snakemake removes the whole folder when it unlocks).

The lock belongs to the open file, which is never handed to a child process
(non-inheritable): the kernel releases it when its process exits, however it exits
(SIGKILL too), so it never outlives its process and there is never a stale lock to clear.
The file itself stays; it holds the JSON description of its last holder, which is read only
while the lock is held. A process whose ancestor holds the lock (a command run by
``ssmbench locked``, a Snakemake inside it) runs under that lock: its ancestor holds it for
as long as it runs. The lock file is never followed through a symbolic link (a link
would have its description written into whatever file it points to).

Who takes it (``snakemake_takes_lock``): the Snakefile calls ``hold_for_snakemake`` while
it is parsed, before Snakemake touches ``.snakemake/locks``. Snakemake parses the Snakefile
in every process, its jobs too (a cluster job runs ``snakemake --mode remote --nolock``),
so only the main process (``workflow.is_main_process``) of a command that changes the
project takes the lock: a dry run (``-n``), ``--unlock``, ``--nolock`` and the listing and
reporting flags (``--summary``, ``--list-rules``, ``--dag``, ``--report`` ...) neither take
it nor are refused. The DVC stages that run no Snakemake run under ``ssmbench locked``.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import shlex
import socket
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

__all__ = [
    "LOCK_FILE",
    "Holder",
    "ProjectBusy",
    "ProjectLockError",
    "acquire",
    "hold_for_snakemake",
    "holder",
    "holder_at",
    "open_lock",
    "try_lock",
    "release",
    "snakemake_takes_lock",
]

#: the lock file, relative to the project folder (the working directory of the command)
LOCK_FILE = Path(".ssmbench") / "project.lock"

#: How long a refused taker tries again before it gives up (seconds): a process that only
#: looks at the lock (``holder``) holds it shared for a moment, and a taker that has just
#: taken it writes its description a moment later.
_SETTLE_SECONDS = 0.5

#: Snakemake's flags (its parsed argument names) of the commands that change nothing in
#: the project: a dry run, --unlock (it clears Snakemake's own .snakemake/locks only) and
#: the listings and reports.
READ_ONLY_FLAGS = (
    "dryrun",
    "unlock",
    "lint",
    "list_target_rules",
    "list_rules",
    "print_compilation",
    "containerize",
    "generate_unit_tests",
    "dag",
    "rulegraph",
    "filegraph",
    "d3dag",
    "list_conda_envs",
    "list_changes",
    "list_input_changes",
    "list_params_changes",
    "list_untracked",
    "summary",
    "detailed_summary",
    "archive",
    "export_cwl",
    "version",
)
#: Snakemake's flags that change the project whatever else is given (they ignore -n).
WRITING_FLAGS = (
    "cleanup_metadata",
    "cleanup_shadow",
    "conda_cleanup_envs",
    "conda_create_envs_only",
    "container_cleanup_images",
)

#: lock file (lock_path) -> the descriptor this process holds it through
_HELD: dict[Path, int] = {}


class ProjectLockError(Exception):
    """The lock file cannot be opened or locked (permissions, a file system without locks)."""


class ProjectBusy(Exception):
    """Another process holds the project lock; the message names it and says what to do."""

    def __init__(self, message: str, holder: Holder | None):
        super().__init__(message)
        self.holder = holder


@dataclass(frozen=True)
class Holder:
    """What a holder writes into the lock file about itself."""

    pid: int
    host: str
    command: str
    started: str  # ISO 8601, local time with its offset
    parent: str = ""  # the parent process: "pid: command line", where it can be read
    group: int = 0  # its process group (0: not known): the group Snakemake's jobs run in

    @classmethod
    def of_this_process(cls) -> Holder:
        parent = os.getppid()
        parent_command = _command_line(parent) if parent > 1 else ""  # 1: no parent left
        return cls(
            pid=os.getpid(),
            host=socket.gethostname(),
            command=_command_line(os.getpid()) or _one_line([sys.executable, *sys.argv]),
            started=datetime.now().astimezone().isoformat(timespec="seconds"),
            parent=f"{parent}: {parent_command}" if parent_command else "",
            group=os.getpgid(0),
        )

    @classmethod
    def from_text(cls, text: str) -> Holder | None:
        """The description of a lock file's text; None for an empty or partly written one."""
        try:
            data = json.loads(text)
            return cls(
                pid=int(data["pid"]),
                host=str(data["host"]),
                command=str(data["command"]),
                started=str(data["started"]),
                parent=str(data.get("parent", "")),
                group=int(data.get("group", 0)),
            )
        except (ValueError, TypeError, KeyError):
            return None

    def to_text(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"


def _command_line(pid: int) -> str:
    """A process's command line as `ps` shows it, on one line ('' where /proc cannot
    tell)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return _one_line([part.decode(errors="replace") for part in raw.split(b"\0") if part])


def _one_line(argv: list[str]) -> str:
    return shlex.join(argv).replace("\n", "\\n")


def lock_path(root: str | os.PathLike = ".") -> Path:
    """The lock file of the project folder ``root`` (the folder resolved, the file not:
    a link in its place is refused, never followed)."""
    return Path(root).resolve() / LOCK_FILE


def open_lock(path: Path, write: bool = True) -> int:
    if path.is_symlink():
        raise ProjectLockError(
            f"the lock file {path} is a symbolic link (to {os.readlink(path)}); remove "
            "it: ssmbench makes the file itself, and writing through the link would "
            "overwrite the file it points to"
        )
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise ProjectLockError(
            f"{folder} is a file, not a folder: move it away; ssmbench keeps a lock file "
            f"({path.name}) in that folder"
        )
    try:
        if not write:  # enough to look at the lock: a read-only checkout can be looked at
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        folder.mkdir(parents=True, exist_ok=True)
        # no O_TRUNC: the file holds the description of whoever holds the lock now;
        # O_NOFOLLOW: a link made between the check above and here is refused too
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        return os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ProjectLockError(
                f"the lock file {path} is a symbolic link; remove it: ssmbench makes "
                "the file itself"
            ) from None
        raise ProjectLockError(
            f"cannot open the lock file {path}: {exc.strerror}; its folder must be writable "
            "(`snakemake --nolock` runs without the project lock)"
        ) from None


def _ancestors() -> set[int]:
    """The pids of this process's parent, its parent's parent... (Linux /proc; empty
    where it cannot be read)."""
    found: set[int] = set()
    pid = os.getppid()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        pid = int(stat.rpartition(")")[2].split()[1])
    return found


def try_lock(fd: int, path: Path, operation: int) -> bool:
    import fcntl

    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    except OSError as exc:
        raise ProjectLockError(
            f"cannot lock the project lock {path}: {exc.strerror} (the file system may not "
            "support locks: run from one that does; `snakemake --nolock` runs without the "
            "lock)"
        ) from None


def acquire(root: str | os.PathLike = ".", refused: str | None = None) -> Path:
    """Take the project lock of the folder `root` for this process, until it exits (or
    ``release``), and write this process's description into it; a second call in the same
    process is a no-op. Raises ProjectBusy, whose message names the holder and what to do
    (`refused` names the command that was refused, default: this process's command line)."""
    import fcntl

    path = lock_path(root)
    if path in _HELD:
        return path
    fd = open_lock(path)
    deadline = time.monotonic() + _SETTLE_SECONDS
    while not try_lock(fd, path, fcntl.LOCK_EX):
        if time.monotonic() >= deadline:
            os.close(fd)
            found = holder(root)
            if _held_by_an_ancestor(found):
                return path  # that ancestor holds the project for as long as this runs
            raise ProjectBusy(busy_message(path, found, refused), found)
        time.sleep(0.05)
    os.set_inheritable(fd, False)  # the lock ends with this process, not with a child
    text = Holder.of_this_process().to_text().encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, text, 0)
    _HELD[path] = fd
    return path


def _held_by_an_ancestor(found: Holder | str | None) -> bool:
    return (
        isinstance(found, Holder)
        and found.host == socket.gethostname()
        and found.pid in _ancestors()
    )


def release(root: str | os.PathLike = ".") -> None:
    """Give the lock back before this process exits (exiting gives it back as well)."""
    fd = _HELD.pop(lock_path(root), None)
    if fd is not None:
        os.close(fd)


def holder(root: str | os.PathLike = ".") -> Holder | None | str:
    """Who holds the project lock of `root`, without taking it: None when nobody does, the
    holder's description, or "unknown" when it is held but its description cannot be
    read (a holder that has just taken it writes its description a moment later)."""
    path = lock_path(root)
    if path in _HELD:
        return Holder.from_text(path.read_text()) or "unknown"
    return holder_at(path)


def holder_at(path: Path) -> Holder | None | str:
    """Who holds the lock file ``path`` (`holder`'s answers), without taking it."""
    import fcntl

    if not path.exists():
        return None
    fd = open_lock(path, write=False)
    try:
        # shared: two processes that only look never exclude each other
        if try_lock(fd, path, fcntl.LOCK_SH):
            return None
        deadline = time.monotonic() + _SETTLE_SECONDS
        while True:
            found = Holder.from_text(os.pread(fd, 1 << 16, 0).decode(errors="replace"))
            if found is not None or time.monotonic() >= deadline:
                return found or "unknown"
            time.sleep(0.05)
    finally:
        os.close(fd)


def _age(started: str) -> str:
    try:
        since = datetime.now().astimezone() - datetime.fromisoformat(started)
        seconds = int(since.total_seconds())
    except (ValueError, TypeError):  # not an ISO time, or one without its offset
        return ""
    if seconds < 120:
        return f" ({seconds} s ago)"
    if seconds < 7200:
        return f" ({seconds // 60} min ago)"
    return f" ({seconds // 3600} h {seconds % 3600 // 60} min ago)"


def describe(found: Holder | str | None) -> str:
    """The lines naming a holder, indented, for the messages."""
    if not isinstance(found, Holder):
        return (
            "  a process whose description could not be read (`fuser -v FILE` or `lsof FILE`, "
            "on the host that runs it, names it)"
        )
    lines = [
        f"  pid      {found.pid} on host {found.host}",
        f"  command  {found.command}",
        f"  started  {found.started}{_age(found.started)}",
    ]
    if found.parent:
        lines.append(f"  parent   {found.parent}")
    return "\n".join(lines)


def busy_message(path: Path, found: Holder | str | None, refused: str | None = None) -> str:
    refused = refused or _command_line(os.getpid()) or _one_line([sys.executable, *sys.argv])
    if isinstance(found, Holder):
        who = f"pid {found.pid}"
        where = "" if found.host == socket.gethostname() else f" (on host {found.host})"
        if found.group > 0 and found.group != os.getpgid(0):
            leader = _command_line(found.group) if not where else ""
            stop = (
                f"kill -TERM -- -{found.group}{where} (its process group"
                f"{f', led by: {leader}' if leader else ''}: a Snakemake and the jobs it "
                "runs; each training job checkpoints and exits). SIGTERM to Snakemake "
                f"alone (kill {found.pid}) starts no new job but lets the running ones finish"
            )
        else:
            stop = f"kill {found.pid}{where}"
    else:
        who, stop = "that process", "find it with `fuser -v FILE`, then kill PID"
    return (
        f"this project is busy: another process holds its lock {path}\n"
        f"{describe(found)}\n"
        f"Refused: {refused}\n"
        "  (two runs in one folder would run the same jobs)\n"
        f"What to do: wait for {who} to finish, then run this again.\n"
        "  The lock goes with its process, however that ends (killed too): there is nothing\n"
        f"  to clear by hand. If {who} is gone, run this again; if it is still running\n"
        f"  and no longer wanted, stop it: {stop}.\n"
        "  Deleting the lock file does not stop that run, it only lets a second one in.\n"
        "  Never refused: snakemake -n, snakemake --unlock, ssmbench status."
    )


def snakemake_takes_lock(argv: list[str], main_process: bool) -> bool:
    """Whether a Snakemake process with command line `argv` (sys.argv: the program, then
    its arguments) takes the project lock: its main process (not a job's, which Snakemake
    starts with --mode remote/subprocess and --nolock), unless --nolock is given or the
    command changes nothing (READ_ONLY_FLAGS, a deletion with -n, --report without
    --report-after-run). A command line Snakemake's parser cannot read takes it."""
    if not main_process:
        return False
    from snakemake.cli import get_argument_parser

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            args, _ = get_argument_parser().parse_known_args(argv[1:])
    except SystemExit:
        return True
    flag = vars(args).get
    if flag("nolock"):
        return False
    if any(flag(name) for name in WRITING_FLAGS):
        return True
    if flag("delete_all_output") or flag("delete_temp_output"):
        return not flag("dryrun")
    if flag("report") is not None and not flag("report_after_run"):
        return False
    return not any(flag(name) not in (None, False) for name in READ_ONLY_FLAGS)


def hold_for_snakemake(main_process: bool, argv: list[str] | None = None, root=".") -> None:
    """What the Snakefile calls while Snakemake parses it, in the project folder: take the
    project lock if this Snakemake process takes it (``snakemake_takes_lock``), or exit
    with the message naming its holder (status 1, no traceback). A main process that
    takes no lock says which process holds the project, if one does."""
    argv = sys.argv if argv is None else argv
    if snakemake_takes_lock(argv, main_process):
        try:
            acquire(root)
        except (ProjectBusy, ProjectLockError) as exc:
            sys.exit(f"snakemake: error: {exc}")
        return
    if not main_process:
        return
    try:
        found = holder(root)
    except ProjectLockError:
        return  # the note is a courtesy: a lock file that cannot be read refuses nothing
    if found is not None:
        print(
            f"note: another process holds this project's lock {lock_path(root)}; this "
            "command takes no lock and is not refused, but what it lists may be running "
            f"there:\n{describe(found)}",
            file=sys.stderr,
            flush=True,
        )
