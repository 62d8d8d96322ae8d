"""The report's error type, in a module of its own: the CLI names it for every command, and
importing it must not load pandas (``aggregate``) into each training job."""

from __future__ import annotations


class RecordError(ValueError):
    """A run record that cannot be used; the message names the file."""
