"""The ``.ts`` file format of the UEA/aeon archives (classification files): the reader.

A ``.ts`` file is a header of ``@tag value`` lines, ``@data``, then one case per line: each
channel's values separated by commas, channels by colons, the label last. See
``read_ts`` for what is accepted and what raises.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ssmbench.data.errors import DataError


class TsFile:
    """A parsed ``.ts`` file: per-case float64 arrays ``(C, L_i)`` (NaN = padding)."""

    def __init__(self, path, series, labels, header, class_values, n_padding_nan):
        self.path = path
        self.series: list[np.ndarray] = series
        self.labels: list[str] = labels
        self.header: dict[str, str] = header
        self.class_values: list[str] = class_values
        self.n_padding_nan: int = n_padding_nan

    @property
    def n_channels(self) -> int:
        return self.series[0].shape[0]


def read_ts(path: str | os.PathLike) -> TsFile:
    """Read a classification ``.ts`` file (the UEA/aeon format) with exact label strings.

    Our own reader rather than ``aeon.datasets.load_from_ts_file``: aeon lower-cases the
    labels and reports errors without the line; this one keeps the labels' case and
    raises :class:`DataError` naming the file and line for any malformed or truncated
    content. Trailing NaNs of a series are kept as NaN (padding); any other NaN or an
    infinite value raises. A UTF-8 byte order mark before the header is dropped.
    """
    path = Path(path)
    header: dict[str, str] = {}
    class_values: list[str] | None = None
    series: list[np.ndarray] = []
    labels: list[str] = []
    n_channels: int | None = None
    interior_nan = 0
    interior_lines: list[int] = []
    n_padding = 0
    in_data = False
    hint = "The file looks truncated or malformed; fetch it again."

    try:
        # utf-8-sig: a byte order mark before the header (an editor that adds one) is dropped
        f = open(path, encoding="utf-8-sig", errors="replace")
    except OSError as e:
        raise DataError(f"{path}: cannot open it ({e}). Run the fetch step first.") from e
    with f:
        for lineno, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if not in_data:
                if not line.startswith("@"):
                    raise DataError(  # the line is not quoted: never a file's content
                        f"{path}: line {lineno}: expected a header tag (@...) or @data, "
                        f"found a line of {len(line)} characters that is neither. {hint}"
                    )
                tokens = line.split()
                key = tokens[0][1:].lower()
                if key == "data":
                    in_data = True
                    if class_values is None:
                        raise DataError(
                            f"{path}: no @classLabel tag before @data, so it is not a "
                            f"classification file. Check that this is the UEA dataset."
                        )
                    if header.get("timestamps", "false").lower() == "true":
                        raise DataError(
                            f"{path}: @timeStamps true is not supported (no UEA dataset "
                            f"uses it). Use a file without timestamps."
                        )
                    continue
                header[key] = " ".join(tokens[1:])
                if key == "classlabel":
                    flag = tokens[1].lower() if len(tokens) > 1 else ""
                    if flag != "true" or len(tokens) < 3:
                        raise DataError(
                            f"{path}: line {lineno}: '@classLabel {header[key]}' — expected "
                            f"'@classLabel true <label> <label> ...' for a classification "
                            f"dataset. {hint}"
                        )
                    class_values = tokens[2:]
                continue

            parts = line.split(":")
            label = parts[-1].strip()
            chans = parts[:-1]
            if n_channels is None:
                n_channels = len(chans)
                dims = header.get("dimensions")
                if dims is not None and dims.isdigit() and int(dims) != n_channels:
                    raise DataError(
                        f"{path}: line {lineno}: {n_channels} channels but the header says "
                        f"@dimensions {dims}. {hint}"
                    )
                if n_channels == 0:
                    raise DataError(f"{path}: line {lineno}: no ':'-separated channels. {hint}")
                univariate = header.get("univariate", "").lower()
                if univariate == "true" and n_channels != 1:
                    raise DataError(
                        f"{path}: line {lineno}: {n_channels} channels but the header says "
                        f"@univariate true. {hint}"
                    )
            if len(chans) != n_channels:
                raise DataError(
                    f"{path}: line {lineno} (case {len(series) + 1}): {len(chans)} channels, "
                    f"expected {n_channels}. {hint}"
                )
            allowed = {c.casefold() for c in class_values}
            if label.casefold() not in allowed:
                raise DataError(
                    f"{path}: line {lineno} (case {len(series) + 1}): label {label!r} is not "
                    f"one of the @classLabel values {class_values}. {hint}"
                )
            try:
                arrays = [
                    np.array(ch.replace("?", "NaN").split(","), dtype=np.float64) for ch in chans
                ]
            except ValueError as e:
                raise DataError(
                    f"{path}: line {lineno} (case {len(series) + 1}): a value is not a "
                    f"number ({e}). {hint}"
                ) from None
            length = len(arrays[0])
            if any(len(a) != length for a in arrays):
                raise DataError(
                    f"{path}: line {lineno} (case {len(series) + 1}): channels have "
                    f"different lengths {sorted({len(a) for a in arrays})}. {hint}"
                )
            if header.get("equallength", "").lower() == "true":
                sl = header.get("serieslength")
                if sl is not None and sl.isdigit() and int(sl) != length:
                    raise DataError(
                        f"{path}: line {lineno} (case {len(series) + 1}): {length} values "
                        f"per channel but the header says @seriesLength {sl}. {hint}"
                    )
            case = np.stack(arrays)
            if np.isinf(case).any():
                raise DataError(
                    f"{path}: line {lineno} (case {len(series) + 1}): infinite values. "
                    f"Replace the file with a clean copy."
                )
            nan = np.isnan(case)
            if nan.any():
                # Per channel: NaNs after the last real value are padding.
                real = ~nan
                last = np.where(real.any(axis=1), length - np.argmax(real[:, ::-1], axis=1), 0)
                interior = sum(int(nan[c, : last[c]].sum()) for c in range(n_channels))
                if interior:
                    interior_nan += interior
                    interior_lines.append(lineno)
                case_len = int(last.max())
                n_padding += int(nan.sum()) - interior
                if case_len == 0:
                    raise DataError(
                        f"{path}: line {lineno} (case {len(series) + 1}): the series has "
                        f"only missing values. Remove the case or use a clean copy."
                    )
                case = case[:, :case_len]
            series.append(case)
            labels.append(label)

    if not in_data:
        raise DataError(f"{path}: no @data line. {hint}")
    if not series:
        raise DataError(f"{path}: no data rows after @data. {hint}")
    if interior_nan:
        raise DataError(
            f"{path}: {interior_nan} missing value(s) (NaN or '?') inside series, first on "
            f"line(s) {interior_lines[:5]}. Only trailing NaNs (padding) are accepted; we "
            f"do not impute. Use a copy without missing values."
        )
    return TsFile(path, series, labels, header, class_values, n_padding)
