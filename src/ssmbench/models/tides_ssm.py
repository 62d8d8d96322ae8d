"""The TIDES layer (``TIDESSSM``). Its parts (the HiPPO (DPLR) initialisation, the Re Λ
maps, the GLU encoder, the low-rank B/C heads and the RMSNorms) are in ``tides_parts.py``;
the classifiers built of it, and the sources, facts and deviations of the whole family, in
``tides.py``.

The parallel mode (``TIDESSSM.forward``) runs time first, (L, B, ...): the per-step
quantities of a chunk of steps (Λ, Δ, B_t u_t), the zero-order hold and the recurrence from
the state the previous chunk ended in, the readout; the whole sequence is one chunk up to
WHOLE_ELEMENTS, above it chunks of CHUNK_ELEMENTS run under checkpointing. The zero-order
hold and the recurrence are one fused kernel on the CPU (``tides_cpu_scan.zoh_scan``, when
``use_fused`` and the kernel takes the inputs); elsewhere, with the bilinear
discretisation, or when the kernel cannot take the inputs (a ``numba_runtime.fallback``
line says why), (Λ̄, B̄u) by ``tides_scan.zoh_elements`` (or ``discretize``) and the
recurrence by ``tides_scan.linear_scan``, the same arithmetic. The projected B_t, C_t are
never formed: their products (the drive, the readout, the RMS of their columns and rows)
are autograd Functions over blocks of TOKEN_BLOCK tokens (``tides_products.py``). The
recurrent and step modes form every B_t, C_t and run the recurrence step by step (the
reference's arithmetic)."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from . import numba_runtime, scan_paths, tides_cpu_scan
from .tides_parts import (
    MODES,
    PROJ_INITS,
    RE_MAPS,
    RMS_EPS,
    STEP_MODES,
    FieldRMSNorm,
    GluEncoder,
    LowRankHead,
    as_parameter,
    block_diag,
    check_choice,
    hippo_dplr,
    init_last,
    lambda_re_inverse,
    lambda_re_map,
    real_view,
)
from .tides_products import drive_products, quadratic_forms, readout_products, write_steps
from .tides_scan import DISCRETIZATIONS, discretize, linear_scan, recurrent_scan, zoh_elements

_MAMBAS_STEP_BIAS = 0.5413  # softplus(0.5413) = 1.0000
_TOY_DECAYS = (0.5, 3.0)  # real Λ: -linspace(0.5, 3.0, P)


# --- the layer --------------------------------------------------------------------------------


class TIDESSSM(nn.Module):
    """(B, L, H) inputs and (B, L) steps -> (B, L, H); see the module docstring."""

    #: the parallel mode runs the whole sequence at once while its widest intermediate (the
    #: (B, L, H r) products of the projected B_t / C_t, or the (B, L, S) complex elements)
    #: holds at most this many numbers (256 MiB of float32) ...
    WHOLE_ELEMENTS = 2**26
    #: ... and above, chunks of time steps whose widest intermediate holds this many at most
    #: (16 MiB), checkpointed
    CHUNK_ELEMENTS = 2**22
    #: tokens per block of the projected B_t / C_t products on CPU (their ((r + 1) H)
    #: intermediates then stay in the cache); other devices: all at once
    TOKEN_BLOCK = 512
    #: the static SSM leaves (those a mode keeps LTI): the TIDES reference's "ssm" group
    #: (train.optim, param_groups: tides: lr without weight decay)
    CORE_PARAMETERS = ("Lambda_re", "Lambda_im", "B", "C")
    #: the scan the last forward pass (or step) ran (``scan_paths``; None: none has run)
    scan_path: str | None = None
    #: run the parallel mode's ZOH and recurrence by the fused CPU kernel
    #: (``tides_cpu_scan.zoh_scan``) where it takes the inputs; False: the reference
    #: (``zoh_elements`` and ``linear_scan``) always
    use_fused = True

    def __init__(
        self,
        d_model: int,
        ssm_size: int,
        ssm_blocks: int = 1,
        lambda_re_mode: str = "lti",
        lambda_im_mode: str = "lti",
        bc_mode: str = "lti",
        step_mode: str = "physical",
        lambda_re_map: str = "standard",
        clip_eigs: bool = False,
        conj_sym: bool = False,
        real_lambda: bool = False,
        bidirectional: bool = False,
        discretization: str = "zoh",
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
        rank: int = 8,
        lambda_encoder_depth: int = 0,
        proj_norm: bool = True,
        proj_init: str = "zeros",
    ) -> None:
        super().__init__()
        for name, value, allowed in (
            ("lambda_re_mode", lambda_re_mode, MODES),
            ("lambda_im_mode", lambda_im_mode, MODES),
            ("bc_mode", bc_mode, MODES),
            ("step_mode", step_mode, STEP_MODES),
            ("lambda_re_map", lambda_re_map, RE_MAPS),
            ("discretization", discretization, DISCRETIZATIONS),
            ("proj_init", proj_init, PROJ_INITS),
        ):
            check_choice(name, value, allowed)
        if ssm_size < 1 or ssm_blocks < 1 or ssm_size % ssm_blocks:
            raise ValueError(f"ssm_size {ssm_size} is not a multiple of ssm_blocks {ssm_blocks}")
        block = ssm_size // ssm_blocks
        if conj_sym and block % 2:
            raise ValueError(f"conj_sym needs an even block size, got {block}")
        if real_lambda and (conj_sym or lambda_im_mode != "lti"):
            raise ValueError("real_lambda has no Im Λ: no conj_sym, lambda_im_mode 'lti'")
        if step_mode == "physical" and not 0 < dt_min <= dt_max:
            raise ValueError(f"need 0 < dt_min <= dt_max, got {dt_min}, {dt_max}")
        if lambda_encoder_depth < 0:
            raise ValueError(f"lambda_encoder_depth must be >= 0, got {lambda_encoder_depth}")
        H = d_model
        self.d_model, self.ssm_size = H, ssm_size
        self.lambda_re_mode, self.lambda_im_mode, self.bc_mode = (
            lambda_re_mode,
            lambda_im_mode,
            bc_mode,
        )
        self.step_mode, self.lambda_re_map, self.clip_eigs = step_mode, lambda_re_map, clip_eigs
        self.real, self.bidirectional, self.discretization = (
            real_lambda,
            bidirectional,
            discretization,
        )
        self.rank = rank
        self.c = 1 if real_lambda else 2
        self.dirs = 2 if bidirectional else 1
        self.n_modes = ssm_size // 2 if conj_sym else ssm_size  # n: the parameterised modes
        any_input_dependent = "input_dependent" in (lambda_re_mode, lambda_im_mode, bc_mode) or (
            step_mode == "input_dependent"
        )
        # conj_sym with anything input-dependent: every state is explicit, static parts are
        # expanded to [v, conj v]; with everything LTI the conjugates stay implicit (2 Re)
        self.expand_conj = conj_sym and any_input_dependent
        self.S = 2 * self.n_modes if self.expand_conj else self.n_modes
        self.out_scale = 2.0 if conj_sym and not any_input_dependent else 1.0
        #: run the layer one time step at a time (``recurrent_scan``) instead of the scan
        self.recurrent = False
        #: time steps per chunk of the projected B_t / C_t work (None: from CHUNK_ELEMENTS)
        self.chunk_steps: int | None = None

        n, S, c = self.n_modes, self.S, self.c
        # --- static Λ, B, C (HiPPO, or the toy models' real initialisation)
        if real_lambda:
            lam = np.tile(-np.linspace(*_TOY_DECAYS, block), ssm_blocks).astype(complex)  # (n,)
            B0 = (torch.randn(n, H, dtype=torch.float64) / math.sqrt(H)).numpy()
            C0 = [(torch.randn(H, n, dtype=torch.float64) / math.sqrt(n)).numpy()]
            if bidirectional:
                C0.append((torch.randn(H, n, dtype=torch.float64) / math.sqrt(n)).numpy())
        else:
            lam_block, V = hippo_dplr(block)
            keep = block // 2 if conj_sym else block
            lam = np.tile(lam_block[:keep], ssm_blocks)  # (n,)
            V_blocks = block_diag(*[V[:, :keep]] * ssm_blocks)  # (P, n)
            V_inv = block_diag(*[V.conj().T[:keep]] * ssm_blocks)  # (n, P)
            std = 1.0 / math.sqrt(ssm_size)
            B0 = V_inv @ (torch.randn(ssm_size, H, dtype=torch.float64) * std).numpy()  # (n, H)

            def draw_c() -> np.ndarray:
                re = torch.randn(H, ssm_size, dtype=torch.float64) * std
                im = torch.randn(H, ssm_size, dtype=torch.float64) * std
                return (re.numpy() + 1j * im.numpy()) @ V_blocks  # (H, n)

            C0 = [draw_c() for _ in range(self.dirs)]
        self.D = nn.Parameter(torch.randn(H))
        if step_mode == "physical":
            self.log_step = nn.Parameter(
                torch.empty(n).uniform_(math.log(dt_min), math.log(dt_max))
            )
        # the static values as every state sees them (expanded when ``expand_conj``)
        lam_full = np.concatenate([lam, lam.conj()]) if self.expand_conj else lam  # (S,)
        B_full = np.concatenate([B0, B0.conj()]) if self.expand_conj else B0  # (S, H)
        C_full = np.concatenate(
            [np.concatenate([Cd, Cd.conj()], axis=1) if self.expand_conj else Cd for Cd in C0],
            axis=1,
        )  # (H, dirs S)

        # --- Λ: static parameters or projectors
        if lambda_re_mode == "lti":
            self.Lambda_re = as_parameter(lambda_re_inverse(lam.real, lambda_re_map))
        else:
            self.lambda_re_proj = GluEncoder(H, S, lambda_encoder_depth)
            init_last(
                self.lambda_re_proj, lambda_re_inverse(lam_full.real, lambda_re_map), proj_init
            )
        if not real_lambda and lambda_im_mode == "lti":
            self.Lambda_im = as_parameter(lam.imag)
        elif not real_lambda:
            self.lambda_im_proj = GluEncoder(H, S, lambda_encoder_depth)
            init_last(self.lambda_im_proj, lam_full.imag, proj_init)
        # --- B, C: static (LTI, or modulated per state) or projected
        modulated = bc_mode == "input_dependent" and rank < 0
        if bc_mode == "lti" or modulated:
            self.B = as_parameter(real_view(B0, c))  # (n, H, c)
            self.C = as_parameter(real_view(np.concatenate(C0, axis=1), c))  # (H, dirs n, c)
        if bc_mode == "input_dependent":
            if modulated:  # one scale per state, 1 + 0i at the start
                b_out, c_out = S * c, self.dirs * S * c
                b_bias = real_view(np.ones(S, dtype=complex), c)
                c_bias = real_view(np.ones(self.dirs * S, dtype=complex), c)
            else:  # the whole matrix, the HiPPO values at the start
                b_out, c_out = S * H * c, H * self.dirs * S * c
                b_bias, c_bias = real_view(B_full, c), real_view(C_full, c)
            self.b_proj = LowRankHead(H, b_out, max(rank, 0))
            self.c_proj = LowRankHead(H, c_out, max(rank, 0))
            init_last(self.b_proj, b_bias, proj_init)
            init_last(self.c_proj, c_bias, proj_init)
        if step_mode == "input_dependent":  # MambaS: Δ = softplus(W [z_t, Δt_t] + b)
            self.step_proj = nn.Linear(H + 1, S)
            with torch.no_grad():
                self.step_proj.weight.zero_()
                self.step_proj.bias.fill_(_MAMBAS_STEP_BIAS)
        # --- RMSNorm on the projections
        norm = proj_norm
        self.lambda_re_norm = FieldRMSNorm(S) if norm and lambda_re_mode != "lti" else None
        self.lambda_im_norm = (
            FieldRMSNorm(S) if norm and not real_lambda and lambda_im_mode != "lti" else None
        )
        self.b_norm = FieldRMSNorm(S) if norm and bc_mode != "lti" else None
        self.c_norm = FieldRMSNorm(self.dirs * S) if norm and bc_mode != "lti" else None

    # --- numbers stored as (..., c) -----------------------------------------------------------

    def _field(self, z: torch.Tensor) -> torch.Tensor:
        """(..., c) real view -> complex (..., ) (real with ``real_lambda``)."""
        return torch.view_as_complex(z.contiguous()) if self.c == 2 else z.squeeze(-1)

    def _view(self, z: torch.Tensor) -> torch.Tensor:
        """complex (or real) (...) -> (..., c) real view."""
        return torch.view_as_real(z) if self.c == 2 else z.unsqueeze(-1)

    def _conj_sign(self, like: torch.Tensor) -> torch.Tensor:
        return torch.tensor([1.0, -1.0][: self.c], dtype=like.dtype, device=like.device)

    def _static_B(self) -> torch.Tensor:  # (S, H, c)
        if not self.expand_conj:
            return self.B
        return torch.cat([self.B, self.B * self._conj_sign(self.B)], dim=0)

    def _static_C(self) -> torch.Tensor:  # (H, dirs S, c), per direction [C, conj C]
        if not self.expand_conj:
            return self.C
        parts = self.C.chunk(self.dirs, dim=1)
        return torch.cat([p for d in parts for p in (d, d * self._conj_sign(d))], dim=1)

    # --- per-step quantities ------------------------------------------------------------------
    # Layout-agnostic: u (..., H), steps (...), the time axis wherever the caller has it (the
    # parallel mode runs time first, (L, B, ...); the recurrent and step modes (B, 1, ...)).

    def _lambda_parts(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(Re Λ, Im Λ), each (S,) static or (..., S) input-dependent, real; Im Λ None with
        real_lambda."""
        if self.lambda_re_mode == "lti":
            re = lambda_re_map(self.Lambda_re, self.lambda_re_map, self.clip_eigs)  # (n,)
            re = torch.cat([re, re]) if self.expand_conj else re
        else:
            raw = self.lambda_re_proj(u)  # (..., S)
            if self.lambda_re_norm is not None:
                raw = self.lambda_re_norm(raw.unsqueeze(-1), dim=-2).squeeze(-1)
            re = lambda_re_map(raw, self.lambda_re_map, self.clip_eigs)
        if self.real:
            return re, None
        if self.lambda_im_mode == "lti":
            im = self.Lambda_im  # (n,)
            im = torch.cat([im, -im]) if self.expand_conj else im
        else:
            im = self.lambda_im_proj(u)  # (..., S)
            if self.lambda_im_norm is not None:
                im = self.lambda_im_norm(im.unsqueeze(-1), dim=-2).squeeze(-1)
        return re, im

    def _lambda(self, u: torch.Tensor) -> torch.Tensor:
        """Λ: (S,) static, or (..., S) input-dependent; complex (real with real_lambda)."""
        re, im = self._lambda_parts(u)
        return re if im is None else torch.complex(*torch.broadcast_tensors(re, im))

    def _delta(self, u: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """Δ (..., S): the physical step times each state's learnt scale (MambaS: a
        projection of [z_t, Δt_t])."""
        if self.step_mode == "input_dependent":
            return F.softplus(self.step_proj(torch.cat([u, steps.unsqueeze(-1)], dim=-1)))
        scale = torch.exp(self.log_step)  # (n,)
        scale = torch.cat([scale, scale]) if self.expand_conj else scale
        return steps.unsqueeze(-1) * scale  # (..., S)

    def _scales(self, head: LowRankHead, norm: FieldRMSNorm | None, u: torch.Tensor):
        """Per-state modulation (rank < 0): (..., m) complex (real), m = S or dirs S."""
        z = head(u).unflatten(-1, (-1, self.c))  # (..., m, c)
        return self._field(norm(z, dim=-2) if norm is not None else z)

    # --- projected B_t, C_t (rank >= 0) -----------------------------------------------------
    # B_t = reshape(W z_t + b), z_t = down(u_t) (u_t itself for rank 0), is affine in z_t: so
    # B_t u_t, Re(C_t x_t) and the RMS of B_t's columns and C_t's rows (quadratic forms in
    # z_t, through the small Gram matrices of W) follow from W and b without forming each
    # step's (S, H) matrices ("factored": per step two (r + 1) H x (S c) products, blocks of
    # steps at once, the functions above). The recurrent and step modes form them
    # ("materialised", the reference's arithmetic); the tests hold the two equal.

    @staticmethod
    def _code(head: LowRankHead, u: torch.Tensor) -> torch.Tensor:
        return head.down(u) if head.down is not None else u  # (..., r)

    def _row_power(self, W: torch.Tensor, bias: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """sum_m (W[h, m] . z + bias[h, m])² for every h: W (H, m, r), bias (H, m), z (..., r)
        -> (..., H). With ẑ = [z, 1] and Ŵ = [W, bias] it is ẑ^T (Ŵ^T Ŵ) ẑ: the products of
        (ẑ ⊗ ẑ) ((r + 1)² numbers per step) with the H Gram matrices."""
        Wb = torch.cat([W, bias.unsqueeze(-1)], dim=-1)  # (H, m, r + 1)
        gram = torch.einsum("hmk,hml->hkl", Wb, Wb).flatten(1)  # (H, (r + 1)²)
        r = z.size(-1)
        power = quadratic_forms(z.reshape(-1, r), gram, self._token_block(z))
        # a sum of squares: only rounding can take it below 0
        return torch.clamp(power, min=0).view(*z.shape[:-1], -1)

    def _token_block(self, u: torch.Tensor) -> int | None:
        """Tokens per block of the factored products: TOKEN_BLOCK on CPU, one block else."""
        return self.TOKEN_BLOCK if u.device.type == "cpu" else None

    def _drive_factored(self, u: torch.Tensor) -> torch.Tensor:
        """B_t u_t, B_t projected: u (..., H) -> (..., S)."""
        S, H, c = self.S, self.d_model, self.c
        z = self._code(self.b_proj, u)  # (..., r)
        r = z.size(-1)
        W = self.b_proj.up.weight.view(S, H, c, r)
        bias = self.b_proj.up.bias.view(S, H, c)
        # B_t u_t = sum_{h, k} W[s, h, k] z_k u_h + sum_h bias[s, h] u_h = (ẑ ⊗ u) W', with
        # ẑ = [z, 1] and W' ((r + 1) H, S c) holding W and the bias
        W_all = torch.cat(
            [W.permute(3, 1, 0, 2).reshape(r, H, S * c), bias.permute(1, 0, 2).reshape(1, H, -1)]
        ).view((r + 1) * H, S * c)
        if self.b_norm is not None:  # each input column h over the S states
            power = self._row_power(
                W.transpose(0, 1).reshape(H, S * c, r), bias.transpose(0, 1).reshape(H, S * c), z
            )
            u = u * torch.rsqrt(power / S + RMS_EPS)  # (..., H): the column's 1/RMS on its input
            W_all = W_all * self.b_norm.weight.repeat_interleave(c)  # the norm's weight
        out = drive_products(u.reshape(-1, H), z.reshape(-1, r), W_all, self._token_block(u))
        return self._field(out.view(*u.shape[:-1], S, c))

    def _readout_factored(self, u: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Re(C_t x_t), C_t projected: u (..., H), x (..., dirs S) -> (..., H)."""
        H, dS, c = self.d_model, self.dirs * self.S, self.c
        z = self._code(self.c_proj, u)  # (..., r)
        r = z.size(-1)
        W = self.c_proj.up.weight.view(H, dS, c, r)
        bias = self.c_proj.up.bias.view(H, dS, c)
        # Re(C x) = sum over (s, c) of C[h, s, c] x̂[s, c], x̂ = (Re x, Im x), C's imaginary
        # part negated; the norm's weight (per state) folded into C's columns; as x̂ W' ẑ with
        # W' (dS c, (r + 1) H) holding W and the bias, ẑ = [z, 1]
        sign = self._conj_sign(W)  # (c,)
        if self.c_norm is not None:
            sign = self.c_norm.weight.unsqueeze(-1) * sign  # (dS, c)
        W_all = torch.cat(
            [
                (W * sign.unsqueeze(-1)).permute(1, 2, 3, 0).reshape(dS * c, r, H),
                (bias * sign).permute(1, 2, 0).reshape(dS * c, 1, H),
            ],
            dim=1,
        ).view(dS * c, (r + 1) * H)
        xs = self._view(x).reshape(-1, dS * c)  # (N, dS c), a view of x
        y = readout_products(xs, z.reshape(-1, r), W_all, self._token_block(u))
        y = y.view(*x.shape[:-1], H)
        if self.c_norm is not None:  # each output row h over the states
            power = self._row_power(W.reshape(H, dS * c, r), bias.reshape(H, dS * c), z)
            y = y * torch.rsqrt(power / dS + RMS_EPS)
        return y

    def _drive_materialised(self, u: torch.Tensor) -> torch.Tensor:
        """B_t u_t from the formed B_t (..., S, H): the reference's arithmetic."""
        Bt = self.b_proj(u).unflatten(-1, (self.S, self.d_model, self.c))  # (..., S, H, c)
        if self.b_norm is not None:
            Bt = self.b_norm(Bt, dim=-3)  # each input column over the S states
        return self._field(torch.einsum("...shc,...h->...sc", Bt, u))

    def _readout_materialised(self, u: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Re(C_t x_t) from the formed C_t (..., H, dirs S)."""
        Ct = self.c_proj(u).unflatten(-1, (self.d_model, self.dirs * self.S, self.c))
        if self.c_norm is not None:
            Ct = self.c_norm(Ct, dim=-2)  # each output row over the states
        # Re(C x) = C_re x_re - C_im x_im
        return torch.einsum("...hsc,...sc->...h", Ct * self._conj_sign(Ct), self._view(x))

    def _projected_bc(self) -> bool:
        return self.bc_mode == "input_dependent" and self.rank >= 0

    def _drive(self, u: torch.Tensor, materialise: bool = False) -> torch.Tensor:
        """B_t u_t: (..., H) -> (..., S) complex (real)."""
        if self._projected_bc():
            return self._drive_materialised(u) if materialise else self._drive_factored(u)
        B = self._static_B()  # (S, H, c)
        bu = self._field((u @ B.permute(1, 0, 2).flatten(1)).unflatten(-1, (self.S, self.c)))
        if self.bc_mode == "input_dependent":  # diag(s_t) B u_t
            bu = self._scales(self.b_proj, self.b_norm, u) * bu
        return bu

    def _readout(self, u: torch.Tensor, x: torch.Tensor, materialise: bool = False):
        """Re(C_t x_t): x (..., dirs S) states -> (..., H)."""
        if self._projected_bc():
            if materialise:
                return self._readout_materialised(u, x)
            return self._readout_factored(u, x)
        if self.bc_mode == "input_dependent":  # C diag(s_t) x_t
            x = self._scales(self.c_proj, self.c_norm, u) * x
        C = self._static_C()  # (H, dS, c)
        return self._view(x).flatten(-2) @ (C * self._conj_sign(C)).flatten(1).T

    def _chunk_length(self, batch: int, length: int) -> int:
        """Time steps per chunk of the parallel mode: ``chunk_steps``; else the whole length
        while the widest per-step intermediate (the (B, H r) products of the projected B_t /
        C_t, the (B, S) complex elements) over it fits WHOLE_ELEMENTS numbers, and as many
        steps as fit CHUNK_ELEMENTS above."""
        if self.chunk_steps:
            return self.chunk_steps
        r = self.rank if self.rank > 0 else self.d_model
        wide = self.d_model * r if self._projected_bc() else 0
        per_step = batch * max(wide, self.dirs * self.S * self.c)
        if per_step * length <= self.WHOLE_ELEMENTS:
            return length
        return max(1, self.CHUNK_ELEMENTS // per_step)

    def chunked(self, batch: int, length: int) -> bool:
        """Whether the parallel mode splits (batch, length) inputs into checkpointed chunks
        of time steps (an input too large to hold the layer's intermediates whole)."""
        return self._chunk_length(batch, length) < length

    def _chunked(self, fn, *tensors: torch.Tensor) -> torch.Tensor:
        """``fn`` over chunks of time steps (dim 0, time first), so that its per-step
        intermediates of at most CHUNK_ELEMENTS numbers exist at once; recomputed in the
        backward pass. (The bidirectional layer's B_t u_t and readout.)"""
        L, B = tensors[0].shape[:2]
        T = self._chunk_length(B, L)
        if T >= L:
            return fn(*tensors)
        parts = []
        for piece in zip(*(t.split(T) for t in tensors), strict=True):
            if torch.is_grad_enabled():
                parts.append(checkpoint(fn, *piece, use_reentrant=False))
            else:
                parts.append(fn(*piece))
        return torch.cat(parts, dim=0)

    def _elements(self, u: torch.Tensor, steps: torch.Tensor, materialise: bool = False):
        """The recurrence's (Λ̄_t, B̄_t u_t), each (..., S), formed: the recurrent and step
        modes (``materialise``), and bilinear: complex arithmetic through ``discretize``;
        else (ZOH) ``zoh_elements``, the elements of the parallel mode's reference path
        (``_states``)."""
        delta = self._delta(u, steps)
        if materialise or self.discretization != "zoh":
            lam_bar, gain = discretize(self._lambda(u), delta, self.discretization)
            drive = self._drive(u, materialise)
            return lam_bar, gain * drive
        re, im = self._lambda_parts(u)
        return zoh_elements(re, im, delta, self._drive(u))

    # --- forward ------------------------------------------------------------------------------

    def forward(self, u: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """u (B, L, H), steps (B, L) -> (B, L, H). ``self.recurrent``: step by step."""
        if self.recurrent:
            self.scan_path = scan_paths.SEQUENTIAL_RECURRENT
            return self._forward_recurrent(u, steps)
        # time first: each step of the scan, and each chunk of steps, is one contiguous block
        u_t = u.transpose(0, 1).contiguous()  # (L, B, H)
        steps_t = steps.transpose(0, 1)  # (L, B)
        if self.bidirectional:
            return self._forward_bidirectional(u_t, steps_t).transpose(0, 1).contiguous()
        return self._forward_causal(u_t, steps_t)

    def _states(self, u: torch.Tensor, steps: torch.Tensor, drive, h0=None) -> torch.Tensor:
        """The parallel mode's states, time first: u (T, B, H), steps (T, B), ``drive`` (u) ->
        B_t u_t (T, B, S), h0 (B, S) (None: zeros; not bidirectional) -> (T, B, dirs S), the
        forward direction's states then the reverse one's. ZOH: the fused kernel
        (``tides_cpu_scan``) where ``use_fused`` and it takes the inputs, else (and bilinear)
        ``zoh_elements`` (``discretize``) and ``linear_scan``."""
        delta = self._delta(u, steps)
        if self.discretization != "zoh":
            lam_bar, gain = discretize(self._lambda(u), delta, self.discretization)
            return self._linear_states(lam_bar, gain * drive(u), h0)
        re, im = self._lambda_parts(u)
        bu = drive(u)
        if self.use_fused:
            reason = tides_cpu_scan.unsupported(re, im, delta, bu, h0, self.bidirectional)
            if reason is None:
                self.scan_path = scan_paths.FUSED_TIDES_CPU
                return tides_cpu_scan.zoh_scan(re, im, delta, bu, h0, both=self.bidirectional)
            numba_runtime.fallback("tides_cpu_scan.zoh_scan", reason)
        return self._linear_states(*zoh_elements(re, im, delta, bu), h0)

    def _linear_states(self, a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None):
        """The reference scans of the elements a, b (T, B, S) -> (T, B, dirs S)."""
        self.scan_path = scan_paths.CHUNKED_LINEAR
        if self.bidirectional:
            return torch.cat([linear_scan(a, b), linear_scan(a, b, reverse=True)], dim=-1)
        return linear_scan(a, b, h0)

    def _causal_chunk(self, u: torch.Tensor, steps: torch.Tensor, h0: torch.Tensor | None):
        """T steps from the state h0 (B, S) (None: zeros): u (T, B, H), steps (T, B) ->
        (outputs (T, B, H), the state after the last step (B, S))."""
        x = self._states(u, steps, self._drive, h0)  # (T, B, S)
        return self._output(u, x), x[-1].clone()  # a copy: a view would keep all of x

    def _forward_causal(self, u: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """u (L, B, H), steps (L, B) -> (B, L, H). Chunks of time steps one after the other,
        each from the state the previous one ended in. Several chunks run under
        checkpointing (recomputed in the backward pass), so that the layer's intermediates
        exist for one chunk at a time: memory O(B L H) for the inputs and outputs,
        O(T B (S + H r)) for the rest."""
        L, B, H = u.shape
        T = self._chunk_length(B, L)
        if T >= L:
            return self._causal_chunk(u, steps, None)[0].transpose(0, 1).contiguous()
        out, state, start = u.new_empty(B, L, H), None, 0
        # split, not slices: the backward then joins the chunks' gradients once
        for u_chunk, steps_chunk in zip(u.split(T), steps.split(T), strict=True):
            args = (u_chunk, steps_chunk, state)
            if torch.is_grad_enabled() and u.requires_grad:
                # reentrant: the first pass builds no autograd graph (whose small nodes,
                # kept until the backward, would scatter the heap between chunks)
                y, state = checkpoint(
                    self._causal_chunk, *args, use_reentrant=True, preserve_rng_state=False
                )
            elif torch.is_grad_enabled():
                y, state = checkpoint(self._causal_chunk, *args, use_reentrant=False)
            else:
                y, state = self._causal_chunk(*args)
            # each chunk's outputs go to their place at once (nothing a chunk allocates
            # outlives it: chunk after chunk reuses the same memory)
            out = write_steps(out, y, start)
            start += y.size(0)
        return out

    def _forward_bidirectional(self, u: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """Both directions scan the same (Λ̄_t, B̄_t u_t) over the whole sequence."""
        x = self._states(u, steps, lambda v: self._chunked(self._drive, v))  # (L, B, 2S)
        return self._chunked(self._output, u, x)  # (L, B, H)

    def _output(self, u: torch.Tensor, x: torch.Tensor, materialise: bool = False):
        y = self._readout(u, x, materialise)
        if self.out_scale != 1.0:
            y = y * self.out_scale
        return y + self.D * u

    def _forward_recurrent(self, u: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """Each step's quantities from that step's input alone, then the recurrence."""
        L = u.size(1)
        per_step = [self._elements(u[:, t : t + 1], steps[:, t : t + 1], True) for t in range(L)]
        a = torch.cat([e[0] for e in per_step], dim=1)  # (B, L, S)
        b = torch.cat([e[1] for e in per_step], dim=1)
        x = recurrent_scan(a, b)
        if self.bidirectional:
            x = torch.cat([x, recurrent_scan(a, b, reverse=True)], dim=-1)
        outputs = [self._output(u[:, t : t + 1], x[:, t : t + 1], True) for t in range(L)]
        return torch.cat(outputs, dim=1)

    def step(
        self, u_t: torch.Tensor, dt_t: torch.Tensor, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One time step: u_t (B, H), dt_t (B,), state (B, S) (None: zeros) -> (y_t, state)."""
        if self.bidirectional:
            raise ValueError("a bidirectional layer has no step mode (it reads the future)")
        self.scan_path = scan_paths.SEQUENTIAL_RECURRENT
        a, b = self._elements(u_t.unsqueeze(1), dt_t.unsqueeze(1), True)  # (B, 1, S)
        h = b[:, 0] if state is None else a[:, 0] * state + b[:, 0]
        return self._output(u_t.unsqueeze(1), h.unsqueeze(1), True)[:, 0], h

    def count_macs(self, inputs: tuple, output: torch.Tensor, convention: str) -> int:
        """The layer's own work (see the module docstring); ptflops counts its Linears."""
        Bsz, L, H = inputs[0].shape
        S, dS, c = self.S, self.dirs * self.S, self.c
        per = 0
        if self._projected_bc() and not self.recurrent:
            # the B and C heads' last Linear, which the factored form applies to its weights
            # (ptflops' count of calling it, as the reference and the recurrent mode do)
            up_b, up_c = self.b_proj.up, self.c_proj.up
            per += (up_b.in_features + 1) * up_b.out_features
            per += (up_c.in_features + 1) * up_c.out_features
        if convention != "full":
            return Bsz * L * per
        mul = 4 if c == 2 else 1  # one product of two numbers of the field
        per += S  # Δ (a step times a scale, or a softplus)
        per += S + (2 * S if self.lambda_re_norm is not None else 0)  # Re Λ map (+ norm)
        per += 2 * S if self.lambda_im_norm is not None else 0
        per += (c + mul) * S  # ΛΔ and the gain's division (exp / expm1 not counted)
        per += c * S * H + mul * S  # B u and the gain
        per += mul * dS  # the scan: a_t h_{t-1} + b_t per direction
        per += c * H * dS  # Re(C x)
        if self._projected_bc():  # the norms, 2 per element of B_t and C_t
            per += (2 * c * S * H if self.b_norm is not None else 0) + (
                2 * c * H * dS if self.c_norm is not None else 0
            )
        elif self.bc_mode == "input_dependent":  # the modulation and its norms
            per += mul * (S + dS) + (2 * c * (S + dS) if self.b_norm is not None else 0)
        per += 2 * H  # D u and the sum
        return Bsz * L * per


# --- blocks and classifiers ------------------------------------------------------------------
