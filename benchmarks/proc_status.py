"""This process's memory figures from /proc/self/status (Linux), in bytes, for the
benchmarks: VmRSS now, VmHWM its peak, RssAnon / RssFile / RssShmem its parts. They are
the process's own (getrusage's ru_maxrss would carry the parent's peak across fork and
exec). Imported by the scripts beside it (``python benchmarks/<script>.py`` puts this
folder on sys.path)."""

from __future__ import annotations

from pathlib import Path

STATUS = Path("/proc/self/status")


def memory_status() -> dict[str, int]:
    """Every field of /proc/self/status given in kB, in bytes; {} where there is no such
    file (not Linux)."""
    try:
        text = STATUS.read_text(encoding="ascii")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        parts = value.split()
        if len(parts) == 2 and parts[1] == "kB":
            out[key] = int(parts[0]) * 1024
    return out


def memory_bytes(field: str) -> int:
    """One field (``VmRSS``, ``VmHWM``...) in bytes; 0 where it is not there."""
    return memory_status().get(field, 0)
