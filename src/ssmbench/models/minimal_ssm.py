"""The TIDES paper's Fading Flash models: one minimal real-diagonal SSM whose modes make it
S5, TIDES, TIDES with an input-dependent Λ only, or the Mamba surrogate (MambaS).

Source: github TaylanSoydan/TIDES (MIT): ``fading_flash/tides_toy_paper_figures.py`` at
4b51adc, the same models as ``fading_flash/fading_flash.py`` at 5d42296 (``MinimalSSM``,
``ModelWithEncoder``, ``make_S5`` / ``make_TIDES`` / ``make_TIDES_lambda`` /
``make_Mamba``, ``train_one``); the facts below are taken from them, the code is ours.

Architecture (x: (B, C, L) values, Δ: (B, L) physical step sizes -> (B, L, K) per step)
------------------------------------------------------------------------------------
    u_t = Linear(C, H)(x_t)                                              (B, L, H)
    Re Λ_t = Λ (lti)            or Linear(H, P)(u_t) (input_dependent)    (B, L, P)
    B_t = B (P, H)              or b_t ⊙ B, b_t = Linear(H, P)(u_t)       (B, L, P, H)
    C_t = C (K, P)              or C ⊙ c_t, c_t = Linear(H, P)(u_t)       (B, L, K, P)
    step_t = Δ_t · exp(log_step) (external: Δ is the step)
          or softplus(Linear(H + 1, P)([u_t, Δ_t])) (input_dependent: Δ a feature)
    ZOH, real:  Λ̄ = exp(Re Λ · step),  B̄ = (Λ̄ − 1) / Re Λ · B               (B, L, P)
    h_t = Λ̄_t ⊙ h_{t−1} + B̄_t u_t,   y_t = C_t h_t + D u_t                  (B, L, K)

Initialisation (the reference's): Λ = −linspace(0.5, 3.0, P); B ~ N(0, 1/H) (P, H);
C ~ N(0, 1/P) (K, P); D = 0; log_step ~ U[log 0.1, log 1.0] per state; the projections
of input-dependent modes start with weight 0 and bias Λ (Re Λ), 1 (B and C modulation)
or 0.5413 (the step: softplus(0.5413) = 1), so every mode starts as its LTI form.

The four models (params.yaml ``FF-*``): S5 H = 15, all LTI; TIDES H = 7, Re Λ and B/C
input-dependent; TIDES (Λ-only) H = 11, Re Λ input-dependent; MambaS H = 7, B/C and the
step input-dependent, Δ only a feature. P = 3 in all.

Deviations
----------
* The reference gives the model one Δ per sequence; ours takes Δ per step (B, L) (the
  Fading Flash data hold a constant Δ per sequence, so the two agree there), and a step
  of Δ = 0 carries the state unchanged.
* K (the reference's d_out = 1) is the task's number of outputs; the head is the identity
  (y is read out by C and D, as in the reference), so ``readout`` pools it for a
  sequence-level task.
* The reference registers the LTI Λ as a parameter even when Re Λ is input-dependent,
  where only its initial value is used (the projection's bias) and it is never trained;
  ours keeps it as a buffer there, so TIDES and TIDES (Λ-only) count 141 trainable
  parameters where the reference counts 144 (S5 and MambaS: 144 in both).
* The recurrence is a loop over the L steps, as in the reference (L = 40 here).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import scan_paths
from .frame import SequenceClassifier

#: Each of the three modes' values.
MODES = ("lti", "input_dependent")
STEP_MODES = ("external", "input_dependent")
#: softplus^{-1}(1): the step projection's initial bias (a unit step at initialisation).
UNIT_STEP_BIAS = 0.5413


def _check(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} {value!r} is not one of {allowed}")


class MinimalSSMClassifier(SequenceClassifier):
    """S5 / TIDES / TIDES (Λ-only) / MambaS of the Fading Flash experiment (module
    docstring), by ``lambda_re_mode``, ``bc_mode`` and ``step_mode``."""

    INPUTS = ("values", "steps")
    #: the values each string hyperparameter may take (``ssmbench check`` holds params.yaml
    #: to them before any job runs)
    CHOICES = {"lambda_re_mode": MODES, "bc_mode": MODES, "step_mode": STEP_MODES}
    #: the scan the last forward pass ran (``scan_paths``; None: none has run)
    scan_path: str | None = None

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None,
        d_model: int = 7,
        state_size: int = 3,
        lambda_re_mode: str = "input_dependent",
        bc_mode: str = "input_dependent",
        step_mode: str = "external",
        per_step: bool = False,
    ) -> None:
        super().__init__(n_channels, n_classes, length, per_step)
        _check("lambda_re_mode", lambda_re_mode, MODES)
        _check("bc_mode", bc_mode, MODES)
        _check("step_mode", step_mode, STEP_MODES)
        H, P, K = d_model, state_size, n_classes
        self.lambda_re_mode, self.bc_mode, self.step_mode = lambda_re_mode, bc_mode, step_mode
        self.encoder = nn.Linear(n_channels, H)
        init = -torch.linspace(0.5, 3.0, P)
        if lambda_re_mode == "lti":
            self.Lambda_re = nn.Parameter(init)
        else:  # only the projection's initial bias: not a trained parameter here
            self.register_buffer("Lambda_re", init)
        self.B = nn.Parameter(torch.randn(P, H) / math.sqrt(H))
        self.C = nn.Parameter(torch.randn(K, P) / math.sqrt(P))
        self.D = nn.Parameter(torch.zeros(K, H))
        if step_mode == "external":
            self.log_step = nn.Parameter(torch.empty(P).uniform_(math.log(0.1), math.log(1.0)))
        else:
            self.register_buffer("log_step", torch.zeros(P))
            self.step_proj = self._projection(H + 1, P, UNIT_STEP_BIAS)
        if lambda_re_mode == "input_dependent":
            self.lambda_re_proj = self._projection(H, P, self.Lambda_re.detach())
        if bc_mode == "input_dependent":
            self.b_mod_proj = self._projection(H, P, 1.0)
            self.c_mod_proj = self._projection(H, P, 1.0)
        self.head = nn.Identity()

    @staticmethod
    def _projection(d_in: int, d_out: int, bias) -> nn.Linear:
        """Linear(d_in, d_out) with weight 0 and the given bias: the LTI value at start."""
        proj = nn.Linear(d_in, d_out)
        with torch.no_grad():
            proj.weight.zero_()
            proj.bias.copy_(torch.as_tensor(bias, dtype=proj.bias.dtype).expand(d_out))
        return proj

    @torch.no_grad()
    def effective_decay_rates(self, x: torch.Tensor, dt: float) -> torch.Tensor:
        """x (C,) one input, dt a step size -> (P,) each state's effective continuous-time
        decay rate −Re Λ(u) · step(u, Δ) / Δ: what the model applies per unit of physical
        time (the reference's ``effective_lambda_per_zone``; train/probes.py)."""
        u = self.encoder(x)  # (H,)
        lam = self.lambda_re_proj(u) if self.lambda_re_mode == "input_dependent" else self.Lambda_re
        if self.step_mode == "input_dependent":
            step = F.softplus(self.step_proj(torch.cat([u, u.new_tensor([dt])])))
        else:
            step = dt * torch.exp(self.log_step)
        return -(lam * step) / dt

    def forward(self, x: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        u = self.encoder(x.transpose(-1, -2))  # (B, L, H)
        Bsz, L, _ = u.shape
        P = self.Lambda_re.shape[0]
        if steps is None:  # regular data: a unit step (the MAC count calls it so)
            steps = torch.ones(Bsz, L, dtype=u.dtype, device=u.device)
        if self.lambda_re_mode == "input_dependent":
            lam = self.lambda_re_proj(u)  # (B, L, P)
        else:
            lam = self.Lambda_re.expand(Bsz, L, P)
        if self.bc_mode == "input_dependent":
            B = self.b_mod_proj(u).unsqueeze(-1) * self.B  # (B, L, P, H)
            C = self.C * self.c_mod_proj(u).unsqueeze(-2)  # (B, L, K, P)
        else:
            B, C = self.B, self.C
        if self.step_mode == "input_dependent":
            step = F.softplus(self.step_proj(torch.cat([u, steps.unsqueeze(-1)], dim=-1)))
        else:
            step = steps.unsqueeze(-1) * torch.exp(self.log_step)  # (B, L, P)
        lam_bar = torch.exp(lam * step)  # (B, L, P): 1 where the step is 0
        scale = (lam_bar - 1.0) / lam  # ZOH for a real diagonal Λ
        Bu = torch.einsum("blph,blh->blp", B, u) if B.dim() == 4 else u @ B.T  # (B, L, P)
        Bu = scale * Bu
        h = torch.zeros(Bsz, P, dtype=u.dtype, device=u.device)
        states = []
        self.scan_path = scan_paths.SEQUENTIAL_LOOP
        for t in range(L):
            h = lam_bar[:, t] * h + Bu[:, t]
            states.append(h)
        hs = torch.stack(states, dim=1)  # (B, L, P)
        if C.dim() == 4:
            y = torch.einsum("blkp,blp->blk", C, hs)
        else:
            y = hs @ C.T  # (B, L, K)
        y = y + u @ self.D.T
        return self.readout(y)
