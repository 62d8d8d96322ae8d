"""How a run reads X, from params.yaml's ``protocol.reading`` and X's shape: into memory
once (``memory``, X within ``in_memory_max_gb``) or in block-shuffled epochs from disk
(``blocks``, with ``block_mb`` blocks and ``buffer_blocks`` windows). `plan_reading`
decides; ``ssmbench.train.batch_order`` reads accordingly; ``ssmbench.config`` asks it,
from the catalog's size, which datasets get a split job of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ssmbench.setting_defaults import setting_defaults

#: the keys of protocol.reading: the schema's (ssmbench.setting_defaults holds their defaults)
READING_KEYS = tuple(setting_defaults()["reading"])
MEMORY, BLOCKS = "memory", "blocks"
GB, MB = 1e9, 1 << 20


def reading_settings(settings: dict) -> dict:
    """``settings["reading"]`` (a run's resolved settings hold every key), checked: an
    unknown or missing key or a bad value raises ValueError naming its params.yaml key."""
    reading = dict(settings["reading"])
    unknown = sorted(set(reading) - set(READING_KEYS))
    missing = [key for key in READING_KEYS if key not in reading]
    if unknown or missing:
        raise ValueError(
            f"protocol.reading: unknown key(s) {unknown}, missing key(s) {missing} (known: "
            f"{sorted(READING_KEYS)})"
        )
    problems = []
    budget = reading["in_memory_max_gb"]
    if isinstance(budget, bool) or not isinstance(budget, int | float) or budget < 0:
        problems.append(f"protocol.reading.in_memory_max_gb: {budget!r}, must be a number >= 0 "
                        "(0: never read into memory)")  # fmt: skip
    block = reading["block_mb"]
    if isinstance(block, bool) or not isinstance(block, int | float) or not block > 0:
        problems.append(f"protocol.reading.block_mb: {block!r}, must be a number > 0")
    buffer = reading["buffer_blocks"]
    if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
        problems.append(f"protocol.reading.buffer_blocks: {buffer!r}, must be an integer >= 1")
    if problems:
        raise ValueError("; ".join(problems))
    return reading


@dataclass(frozen=True)
class ReadingPlan:
    """How one run reads X (`plan_reading`); ``describe()`` is what its record keeps."""

    mode: str  # MEMORY or BLOCKS
    x_bytes: int
    row_bytes: int
    in_memory_max_gb: float
    block_rows: int | None = None  # BLOCKS: training rows per block
    buffer_blocks: int | None = None  # BLOCKS: blocks shuffled together

    def describe(self) -> dict:
        out = {"mode": self.mode, "x_gb": round(self.x_bytes / GB, 6),
               "in_memory_max_gb": self.in_memory_max_gb}  # fmt: skip
        if self.mode == BLOCKS:
            out.update(block_rows=self.block_rows, buffer_blocks=self.buffer_blocks,
                       block_mb=round(self.block_rows * self.row_bytes / MB, 6))  # fmt: skip
        return out

    def message(self) -> str:
        size = f"X is {self.x_bytes / GB:.3f} GB"
        if self.mode == MEMORY:
            return (f"reading: {size} <= protocol.reading.in_memory_max_gb "
                    f"{self.in_memory_max_gb:g}: read into memory once, each epoch a full "
                    "shuffle")  # fmt: skip
        return (
            f"reading: {size} > protocol.reading.in_memory_max_gb {self.in_memory_max_gb:g}: "
            f"BLOCK-SHUFFLED from disk: blocks of {self.block_rows:,} consecutive training "
            f"rows ({self.block_rows * self.row_bytes / MB:.2f} MB), shuffled, then rows "
            f"shuffled within windows of {self.buffer_blocks} blocks "
            f"({self.block_rows * self.buffer_blocks:,} rows)"
        )


def plan_reading(settings: dict, x_shape: tuple[int, ...], itemsize: int = 4) -> ReadingPlan:
    """The run's reading mode from ``protocol.reading`` and X's shape (N, C, L)."""
    reading = reading_settings(settings)
    row_bytes = int(np.prod(x_shape[1:], dtype=np.int64)) * int(itemsize)
    x_bytes = int(x_shape[0]) * row_bytes
    budget = float(reading["in_memory_max_gb"])
    if x_bytes <= budget * GB:
        return ReadingPlan(MEMORY, x_bytes, row_bytes, budget)
    block_rows = max(1, int(float(reading["block_mb"]) * MB // max(1, row_bytes)))
    return ReadingPlan(BLOCKS, x_bytes, row_bytes, budget, block_rows,
                       int(reading["buffer_blocks"]))  # fmt: skip
