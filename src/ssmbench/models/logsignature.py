"""Windowed log-signatures of a path, as the Log-NCDE reference forms them.

Source: Walker et al. 2024 (Log Neural CDEs), github Benjamin-Walker/log-neural-cdes at
5612f00 (MIT): ``data_dir/generate_paths.py`` (``calc_paths``, ``hall_basis_logsig``) and
``data_dir/hall_set.py`` (``HallSet``). Facts were taken from it; the code is written here.

Windows (generate_paths.py:23-80): a zero row is prepended (basepoint), the path (L + 1
points) is cut into windows of s = ``stepsize`` points, each prefixed with the last point of
the previous window (the first with 0), the remainder a last, shorter window; signax
signature -> log -> the Hall basis of hall_set.py (depth 1: the increments). The Hall basis's
degree-2 elements are [e_a, e_b], a < b, in lexicographic order (hall_set.py ``grow_up``),
their coordinates the Lévy areas A_ab = ½ ∫ (X^a dX^b - X^b dX^a); the model drops the Hall
vector's leading 0 (``logsig_t[1:]``).

Library and basis: ``windowed_logsignature`` calls ``pysiglib.log_sig(..., method=1)``
(pysiglib 4.0.0, CPU; a tensor on another device goes through the CPU and back; on the meta
device only the shape is formed). At depth <= 2 pysiglib's methods 1, 2 (Lyndon basis) and 3
give the same coordinates, in the reference's order: increments, then [e_a, e_b] for a < b
lexicographically; checked against the reference's own ``HallSet(d, 2).t2l_matrix`` applied
to pysiglib's expanded (method 0) log-signature, and in tests/test_logncde.py against Lévy
areas computed directly. At depth 3 the Lyndon and the reference's Hall bases differ: only
depths 1 and 2 exist here, as in the reference's model. ``backend="torch"`` computes the same
from the increments in torch (exact for piecewise-linear paths).

Deviation: the last, shorter window. The reference prefixes it a second time with
``prepend`` applied across the batch (generate_paths.py:71), so its first point is the
previous *series'* last point in the batch of 128 (0 for the first): that window's
log-signature holds a jump from another series. Here it starts at its own previous point,
like every other window. Of the six UEA configs it changes EigenWorms' window 1499 of 1499
and MotorImagery's 188 of 188; on SCP1 and SCP2 (L % s == 0) that window is unused by the
model, Heartbeat and EthanolConcentration have none ((L + 1) % s == 0).

Log-signatures do not depend on a model's weights: ``LogSignatureCache`` keeps them per
series (keyed by the series' bytes), so each row of a dataset is computed once per
(depth, stepsize, time channel) and process, whatever the batches it comes in.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from functools import lru_cache

import torch

__all__ = [
    "DEPTHS",
    "LOGSIG_BACKENDS",
    "LogSignatureCache",
    "check_depth",
    "check_stepsize",
    "hall_pairs",
    "logsig_dim",
    "n_windows",
    "windowed_logsignature",
]

DEPTHS = (1, 2)
#: How ``windowed_logsignature`` computes: pysiglib (the default) or the increments in torch.
LOGSIG_BACKENDS = ("pysiglib", "torch")
#: pysiglib's log-signature method: at depth <= 2 the reference's Hall basis (see above).
PYSIGLIB_METHOD = 1


def logsig_dim(n_channels: int, depth: int) -> int:
    """Coordinates of a depth-``depth`` log-signature of a ``n_channels``-dimensional path:
    d, or d + d(d - 1)/2 (the Hall basis's letters and brackets [e_a, e_b], a < b)."""
    check_depth(depth)
    return n_channels + (n_channels * (n_channels - 1) // 2 if depth == 2 else 0)


@lru_cache(maxsize=32)
def hall_pairs(n_channels: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(a, b), a < b, of the degree-2 Hall basis elements [e_a, e_b] in the reference's order
    (lexicographic, 0-based): coordinate ``n_channels + m`` of a depth-2 log-signature is the
    Lévy area A_{a_m b_m}. (Cached CPU tensors: do not modify.)"""
    a, b = torch.triu_indices(n_channels, n_channels, offset=1)
    return a, b


def check_depth(depth) -> None:
    if isinstance(depth, bool) or depth not in DEPTHS:
        raise ValueError(
            f"hyperparameter 'depth' must be one of {DEPTHS} (the Log-ODE depths of the "
            f"reference's Log-NCDE), got {depth!r}"
        )


def check_stepsize(stepsize, length: int | None) -> None:
    if isinstance(stepsize, bool) or not isinstance(stepsize, int) or stepsize < 1:
        raise ValueError(f"hyperparameter 'stepsize' must be a positive integer, got {stepsize!r}")
    if length is not None and stepsize > length:
        raise ValueError(
            f"hyperparameter 'stepsize' = {stepsize} is longer than the series (L = {length}): "
            f"each log-signature window holds 'stepsize' samples"
        )


def n_windows(length: int, stepsize: int) -> int:
    """Windows of the based path (L + 1 points): ceil((L + 1) / s), the reference's count."""
    return -(-(length + 1) // stepsize)


def _window_points(path: torch.Tensor, stepsize: int) -> torch.Tensor:
    """(B, L, d) -> (B, W, s + 1, d): window k is points k s - 1 .. (k + 1) s - 1 of the
    based path (0, X_0, ..., X_{L-1}); window 0 starts with the basepoint twice (the
    reference prefixes it with 0), the last is padded with its last point (which adds
    nothing to a signature)."""
    batch, length, dim = path.shape
    windows = n_windows(length, stepsize)
    pad = windows * stepsize + 1 - (length + 2)
    parts = [path.new_zeros(batch, 2, dim), path]
    if pad > 0:
        parts.append(path[:, -1:].expand(batch, pad, dim))
    based = torch.cat(parts, dim=1)  # (B, W s + 1, d)
    return based.unfold(1, stepsize + 1, stepsize).transpose(-1, -2)  # (B, W, s + 1, d)


def _torch_logsignature(points: torch.Tensor, depth: int) -> torch.Tensor:
    """Log-signatures (..., D) of piecewise-linear paths (..., n, d) from their increments:
    level 1 the total increment, level 2 the Lévy areas ½ Σ_m (q_m^a Δ_m^b - q_m^b Δ_m^a),
    q_m the point before increment m relative to the start."""
    increments = points.diff(dim=-2)  # (..., n - 1, d)
    level1 = increments.sum(dim=-2)
    if depth == 1:
        return level1
    before = increments.cumsum(dim=-2) - increments
    moment = torch.einsum("...mi,...mj->...ij", before, increments)
    a, b = hall_pairs(points.shape[-1])
    area = 0.5 * (moment[..., a, b] - moment[..., b, a])
    return torch.cat([level1, area], dim=-1)


_PREPARED: set[tuple[int, int]] = set()


def _pysiglib_logsignature(windows: torch.Tensor, depth: int) -> torch.Tensor:
    """pysiglib's log-signatures of (N, n, d) CPU float paths -> (N, D)."""
    import pysiglib

    dim = windows.shape[-1]
    if (dim, depth) not in _PREPARED:  # cheap for method 1 (no basis projection to build)
        pysiglib.prepare_log_sig(dim, depth, method=PYSIGLIB_METHOD)
        _PREPARED.add((dim, depth))
    return pysiglib.log_sig(windows, depth, method=PYSIGLIB_METHOD)


def windowed_logsignature(
    path: torch.Tensor, depth: int, stepsize: int, backend: str = "pysiglib"
) -> torch.Tensor:
    """The reference's per-window log-signatures (``calc_paths``) of paths (B, L, d).

    Returns (B, W, D), W = ceil((L + 1) / s), D = ``logsig_dim(d, depth)``, in the reference's
    Hall basis without its leading 0: window k of the based path (0, X_0, ..., X_{L-1}),
    points k s - 1 .. min((k + 1) s - 1, L) (window 0 from the basepoint: 0 -> X_0 and the
    next s - 2 increments). Computed without grad, in the path's dtype (float16/bfloat16 via
    float32) and on its device (pysiglib runs on the CPU; on the meta device only the shape
    is formed). ``backend="torch"``: the same numbers from the increments in torch.
    """
    check_depth(depth)
    if path.dim() != 3:
        raise ValueError(f"path must be (B, L, d), got shape {tuple(path.shape)}")
    check_stepsize(stepsize, path.shape[1])
    if backend not in LOGSIG_BACKENDS:
        raise ValueError(f"backend must be one of {LOGSIG_BACKENDS}, got {backend!r}")
    batch, length, dim = path.shape
    windows, out_dim = n_windows(length, stepsize), logsig_dim(dim, depth)
    if path.device.type == "meta":
        return path.new_empty(batch, windows, out_dim)
    with torch.no_grad():
        work = path.detach()
        if work.dtype not in (torch.float32, torch.float64):
            work = work.float()
        points = _window_points(work, stepsize)  # (B, W, s + 1, d)
        if stepsize == 1:  # one segment per window: its increment, zero area (exact)
            increments = points[:, :, 1] - points[:, :, 0]
            out = torch.cat([increments, increments.new_zeros(batch, windows, out_dim - dim)], -1)
        elif backend == "torch":
            out = _torch_logsignature(points, depth)
        else:
            flat = points.reshape(batch * windows, stepsize + 1, dim).cpu().contiguous()
            out = _pysiglib_logsignature(flat, depth).view(batch, windows, out_dim)
        return out.to(device=path.device, dtype=path.dtype)


class LogSignatureCache:
    """Per-series log-signatures: ``get(path, depth, stepsize)`` returns
    ``windowed_logsignature(path, depth, stepsize)`` (B, W, D), computing only the series not
    seen before. A series is keyed by a digest of its bytes (with depth, stepsize, L, d and
    dtype), so a row met again in another batch, epoch or evaluation pass is not recomputed.
    Least recently used series are dropped beyond ``max_bytes``. A deep copy (ptflops) or a
    pickle starts empty."""

    def __init__(self, max_bytes: int = 2**30) -> None:
        self.max_bytes = max_bytes
        self.entries: OrderedDict[bytes, torch.Tensor] = OrderedDict()
        self.nbytes = 0

    @staticmethod
    def _keys(path: torch.Tensor, depth: int, stepsize: int) -> list[bytes]:
        rows = path.detach().cpu().contiguous()
        tag = f"{depth}:{stepsize}:{tuple(rows.shape[1:])}:{rows.dtype}".encode()
        keys = []
        for row in rows.view(torch.uint8).numpy():  # the bytes of any dtype
            digest = hashlib.blake2b(tag, digest_size=16)
            digest.update(row.tobytes())
            keys.append(digest.digest())
        return keys

    def get(self, path: torch.Tensor, depth: int, stepsize: int) -> torch.Tensor:
        if path.device.type == "meta":
            return windowed_logsignature(path, depth, stepsize)
        keys = self._keys(path, depth, stepsize)
        missing = [i for i, key in enumerate(keys) if key not in self.entries]
        if missing:
            fresh = windowed_logsignature(path[missing], depth, stepsize).cpu()
            for i, value in zip(missing, fresh, strict=True):
                self._put(keys[i], value)
        for key in keys:
            if key in self.entries:
                self.entries.move_to_end(key)
        rows = [self.entries[key] if key in self.entries else None for key in keys]
        if any(r is None for r in rows):  # a batch larger than the budget: no caching
            return windowed_logsignature(path, depth, stepsize)
        return torch.stack(rows).to(device=path.device, dtype=path.dtype)

    def _put(self, key: bytes, value: torch.Tensor) -> None:
        value = value.clone()
        self.entries[key] = value
        self.nbytes += value.numel() * value.element_size()
        while self.nbytes > self.max_bytes and self.entries:
            _, dropped = self.entries.popitem(last=False)
            self.nbytes -= dropped.numel() * dropped.element_size()

    def clear(self) -> None:
        self.entries.clear()
        self.nbytes = 0

    def __deepcopy__(self, memo) -> LogSignatureCache:
        return LogSignatureCache(self.max_bytes)

    def __getstate__(self) -> dict:
        return {"max_bytes": self.max_bytes}

    def __setstate__(self, state) -> None:
        self.__init__(state["max_bytes"])
