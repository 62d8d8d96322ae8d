"""The TIDES layer's parts (``tides_ssm.TIDESSSM``): the values of its string options, the
HiPPO-LegS (DPLR) initialisation, the Re Λ maps and their inverses, and the small modules
it is built of: the GLUs, the GLU encoder (also the classifier's input encoder and the Λ
projectors), the low-rank B/C heads and the RMSNorm of real or complex numbers. Sources
and facts: ``tides.py``'s module docstring, whose line numbers (tides.py:N) are the
reference's.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

#: the values of the string hyperparameters (``CHOICES``; the constructor checks them too)
MODES = ("lti", "input_dependent")
RE_MAPS = ("standard", "exp", "stable", "softplus")
STEP_MODES = ("physical", "input_dependent")
PROJ_INITS = ("zeros", "random")

RMS_EPS = 1e-6  # the reference's RMSNorm eps
_CLIP = -1e-4  # clip_eigs: Re Λ <= -1e-4


def check_choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


# --- initialisation ---------------------------------------------------------------------------


def hippo_dplr(N: int) -> tuple[np.ndarray, np.ndarray]:
    """HiPPO-LegS in its normal (diagonal) part: Λ (N,) complex and the unitary V (N, N) with
    A + p p^T = V diag(Λ) V^H (up to Re Λ, replaced by the mean of the diagonal, -1/2)."""
    q = np.sqrt(1 + 2 * np.arange(N))
    A = -(np.tril(q[:, None] * q[None, :]) - np.diag(np.arange(N)))  # HiPPO-LegS (N, N)
    p = np.sqrt(np.arange(N) + 0.5)
    S = A + p[:, None] * p[None, :]  # normal: -1/2 I + skew-symmetric
    imag, V = np.linalg.eigh(S * -1j)
    return np.mean(np.diagonal(S)) + 1j * imag, V


def block_diag(*blocks: np.ndarray) -> np.ndarray:
    rows, cols = sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)
    out = np.zeros((rows, cols), dtype=np.result_type(*blocks))
    r = c = 0
    for b in blocks:
        out[r : r + b.shape[0], c : c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def lambda_re_map(raw: torch.Tensor, name: str, clip: bool = False) -> torch.Tensor:
    """Re Λ from its raw parameter (or projection) under the map ``name``."""
    if name == "exp":
        re = -torch.exp(raw)
    elif name == "stable":
        re = -1.0 / (raw**2 + 0.5)
    elif name == "softplus":
        re = -F.softplus(raw)
    elif name == "standard":
        re = raw
    else:
        check_choice("lambda_re_map", name, RE_MAPS)
    return torch.clamp(re, max=_CLIP) if clip else re


def lambda_re_inverse(re: np.ndarray, name: str) -> np.ndarray:
    """The raw value whose map is ``re`` (< 0); ``stable`` saturates at -2 as the reference."""
    if name == "exp":
        return np.log(-re)
    if name == "stable":
        return np.sqrt(np.maximum(0.0, -1.0 / re - 0.5))
    if name == "softplus":
        return np.log(np.expm1(-re))
    return re


def as_parameter(values: np.ndarray | torch.Tensor) -> nn.Parameter:
    return nn.Parameter(torch.as_tensor(np.asarray(values), dtype=torch.float32).clone())


def real_view(z: np.ndarray, c: int) -> np.ndarray:
    """A complex array as (..., 2) (re, im), or a real one as (..., 1)."""
    return np.stack([z.real, z.imag], axis=-1) if c == 2 else np.real(z)[..., None]


# --- small modules ----------------------------------------------------------------------------


class GLU(nn.Module):
    """w1(x) * sigmoid(w2(x)), both Linear(d, d) (tides.py:311-320)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.w1, self.w2 = nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w1(x) * torch.sigmoid(self.w2(x))


class ExpandedGLU(nn.Module):
    """proj(w1(x) * sigmoid(w2(x))), d -> int(d ff_mult) -> d (tides.py:323-334)."""

    def __init__(self, d: int, ff_mult: float = 1.0) -> None:
        super().__init__()
        inner = int(d * ff_mult)
        if inner < 1:
            raise ValueError(f"ff_mult {ff_mult} leaves no feed-forward width (d = {d})")
        self.w1, self.w2 = nn.Linear(d, inner), nn.Linear(d, inner)
        self.proj = nn.Linear(inner, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.w1(x) * torch.sigmoid(self.w2(x)))


class GluEncoder(nn.Module):
    """``depth`` residual GLUs at width d_in, then Linear(d_in, d_out) (tides.py:367-395)."""

    def __init__(self, d_in: int, d_out: int, depth: int = 0) -> None:
        super().__init__()
        self.glu_layers = nn.ModuleList([GLU(d_in) for _ in range(depth)])
        self.linear = nn.Linear(d_in, d_out)

    @property
    def last(self) -> nn.Linear:
        return self.linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for glu in self.glu_layers:
            x = x + glu(x)
        return self.linear(x)


class LowRankHead(nn.Module):
    """Linear(d_in, r) -> Linear(r, d_out) for r > 0, Linear(d_in, d_out) for r <= 0
    (tides.py:402-421)."""

    def __init__(self, d_in: int, d_out: int, rank: int) -> None:
        super().__init__()
        self.down = nn.Linear(d_in, rank) if rank > 0 else None
        self.up = nn.Linear(rank if rank > 0 else d_in, d_out)

    @property
    def last(self) -> nn.Linear:
        return self.up

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(self.down(x) if self.down is not None else x)


class FieldRMSNorm(nn.Module):
    """RMSNorm of real or complex numbers stored as (..., c): z / sqrt(mean |z|² + 1e-6) * w,
    the mean over ``size`` entries of one axis of the numbers (tides.py:341-364)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, z: torch.Tensor, dim: int) -> torch.Tensor:
        # z (..., size, ..., c); dim < -1 counts from the end of the numbers' real view
        power = z.square() if z.size(-1) == 1 else z.square().sum(-1, keepdim=True)  # |z|²
        inv_rms = 1 / torch.sqrt(power.mean(dim=dim, keepdim=True) + RMS_EPS)
        weight = self.weight.reshape(-1, *([1] * (-dim - 1)))  # along ``dim``
        return z * inv_rms * weight


def init_last(head: GluEncoder | LowRankHead, bias: np.ndarray, proj_init: str) -> None:
    """The projector's last layer: weight 0 (or N(0, 0.01²)), bias the HiPPO values."""
    with torch.no_grad():
        if proj_init == "zeros":
            head.last.weight.zero_()
        else:
            head.last.weight.normal_(0.0, 0.01)
        head.last.bias.copy_(torch.as_tensor(np.asarray(bias).reshape(-1), dtype=torch.float32))
