"""Log-NCDE: a neural controlled differential equation solved by the Log-ODE method.

Sources
-------
* Walker, McLeod, Qin, Cheng, Lyons & Salvi (2024), "Log Neural Controlled Differential
  Equations: The Lie Brackets Make a Difference", ICML 2024.
* Reference repository, https://github.com/Benjamin-Walker/log-neural-cdes at commit 5612f00
  (MIT; JAX, equinox, diffrax, signax): ``models/LogNeuralCDEs.py`` (``LogNeuralCDE``),
  ``models/NeuralCDEs.py`` (``VectorField``), ``models/generate_model.py`` (solver defaults),
  ``data_dir/generate_paths.py`` (``calc_paths``, ``hall_basis_logsig``),
  ``data_dir/hall_set.py`` (``HallSet``), ``data_dir/datasets.py`` (time channel, intervals),
  ``train.py`` (the Lip(2) penalty, the loss), ``run_experiment.py`` (Heun,
  ConstantStepSize, dt0), ``experiment_configs/repeats/log_ncde/<dataset>.json``. Facts were
  taken from it (cited below); the code is written here, in PyTorch.
* Log-signatures: pysiglib 4.0.0 (``pysiglib.log_sig``, method 1), see below.

Notation: B batch, C input channels, d = C + ``time_channel`` path channels, L length,
s = ``stepsize``, H = ``hidden_dim``, w = ``vf_width``, K outputs, D = d (depth 1) or
d + d(d - 1)/2 (depth 2) log-signature coordinates.

Model (x: (B, C, L))
--------------------
    X   = [t, x] (B, L, d): t_l = l / L (the reference's ``(T / L) arange(L)``, T = 1)
    ℓ_k = logsig of window k of the based path (0, X_0, ..., X_{L-1})    (B, W, D)
    h_0 = Linear(d, H)(X_0)                                 (``linear1`` of the first sample)
    dh/dt = (ℓ^1_k · f(h) + Σ_{a<b} ℓ^{ab}_k [f_a, f_b](h)) / |I_k|     for t in I_k
    logits = Linear(H, K)(h(t_1))                                           (``linear2``)
  f: R^H -> R^{d x H}, f(h) = tanh(MLP(h)) with ``vf_depth`` hidden SiLU layers of width w
  (equinox MLP: vf_depth + 1 Linear layers), f_a its a-th block of H rows (the reference
  reshapes the output to (d, H)); [f_a, f_b] = (Df_b) f_a - (Df_a) f_b, the reference's
  ``jvps[a, b] - jvps[b, a]`` with ``jvps[i, j] = J_{f_j} f_i`` (LogNeuralCDEs.py:112-126).

Hyperparameters (ours -> the reference's JSON keys)
---------------------------------------------------
``hidden_dim`` -> hidden_dim; ``vf_depth`` -> vf_depth (hidden layers of the vector-field
MLP); ``vf_width`` -> vf_width; ``depth`` -> depth (the Log-ODE / log-signature depth, 1 or 2);
``stepsize`` -> stepsize (samples per log-signature window); ``lambd`` -> lambd (the Lip(2)
weight: ``regulariser()``); ``time_channel`` -> time; ``dt0`` -> dt0 (Heun's constant step on
the time axis [0, T = 1]; None: 1 / ceil(L / s), one step per interval, EigenWorms' value);
``scale`` -> scale (every weight and bias of the vector field divided by it at
initialisation; 1000 in every repeat config, create_model's default is 1.0). Fixed as
there: T = 1, Heun with ConstantStepSize (run_experiment.py:213-214), max_steps is not
needed (fixed steps). The training keys (lr, batch_size, num_steps, early stopping) are the
protocol's.

Facts taken from the reference
------------------------------
* Vector field (NeuralCDEs.py:43-82, LogNeuralCDEs.py:80-90): eqx.nn.MLP(H, d H, width w,
  depth vf_depth, activation silu, final_activation tanh); equinox's Linear init
  U(-1/sqrt(in), 1/sqrt(in)) for weight and bias (= torch's nn.Linear default), then every
  weight and bias / scale. linear1 = Linear(d, H), linear2 = Linear(H, K), default init.
* Data (datasets.py:357-401, 103-150): the time channel (T / L) arange(L) is channel 0; the
  initial state reads X_0 (incl. t = 0); intervals = t at samples 0, s, 2s, ... < L, then T.
* Log-signature windows and the Hall basis: ``logsignature.py`` (generate_paths.py,
  hall_set.py); the Heun grid: ``log_ode.py`` (LogNeuralCDEs.py:96-152).
* Lip(2) penalty (train.py:83-98): lambd Σ_layers [mean_rows ||W_row||_2 + ||b||_2] over the
  vector field's Linear layers, added to the batch's mean loss.
* Classification output: softmax(linear2(h(t_1))) with loss -Σ y log(p + 1e-8)
  (train.py:99-102); here logits, for the protocol's cross-entropy.

Log-signatures (pysiglib 4.0.0, ``logsignature.windowed_logsignature``) do not depend on
the weights: they are computed without grad and kept per series by a
``LogSignatureCache`` (keyed by the series' bytes and the model's depth, stepsize and time
channel), so each row of a dataset is computed once per run, whatever batches it comes
in. ``forward(x, steps, logsig=...)`` takes ``model.logsignature(x, steps)`` computed
elsewhere (the same numbers). The computation is ~2% of a training step (EigenWorms,
batch 32: 0.16-0.26 s against 8-16 s forward + backward on a shared 2-core CPU).

Physical time: ``time_channel`` makes the model take ``steps`` (``INPUTS``): the channel is
t_l = (Σ_{i<=l} Δ_i - Δ_0) / L, i.e. l / L for unit steps (the reference's channel exactly)
and the physical times in units of the nominal step otherwise. The solver's intervals stay
the sample grid (the reference's intervals are the first training series' times, the same
grid for every series).

Deviations
----------
* The last, shorter log-signature window starts at its own previous point (the
  reference's at the previous series' last point): ``logsignature.py``.
* The Heun stages are tabulated from the reference's float32 times (``log_ode.py``),
  so a stage on an interval boundary falls on the same side as there.
* Kept from the reference on purpose (so the numbers are its): at t = 0 searchsorted gives
  idx = 0, so the first Heun stage reads the *last* window's log-signature divided by
  intervals[0] - intervals[-1] = -T (JAX's negative index wraps around): its k1 is
  -dt0 ℓ_last · f(h_0), ~0 (|I| / T of a regular stage), and window 0 loses that stage's
  weight (on EigenWorms its total weight is 1.0 with the wrap-around, 1.5 without); the
  basepoint jump 0 -> X_0 in window 0; the integration ending at (L - 1) / L, so the last
  interval is integrated
  over its first (L - 1 - (n - 1) s) / (L - (n - 1) s) only (none of it when that interval
  is one sample wide: Heartbeat, EthanolConcentration); when L % s == 0 the window holding
  the last increment has no interval and is unused (SCP1, SCP2, EthanolConcentration); and
  Heun's steps on the dt0 grid, not on the intervals, so most steps mix two intervals and a
  log-signature's total weight (the sum of its stages' dt / |I| / 2, 1 for an exact Log-ODE)
  is 0.96-1.0 on EigenWorms (the last window's 0.70), 0.58-1.15 on SCP2, 0.5-2.0 on
  EthanolConcentration (dt0 1/1752 against intervals of 1/1751) (``log_ode_schedule``).
* ``per_step`` (ours; the reference's regression reads tanh(linear2(h)) at saveat times
  every output_step / L with diffrax's linear interpolation): one output per sample l at
  t_l = l / L, linear2 of h linearly interpolated between the Heun steps' states, no tanh.
  As in the reference's log-ODE, h(t) already holds the window of t, up to s - 1 samples
  ahead of l.
* Random draws come from torch's generator (the reference's from JAX keys).

Computation (``VectorField.stage``, once per Heun stage; B rows, w = vf_width)
------------------------------------------------------------------------------
The reference's depth-2 term is a vmapped Jacobian-vector product per pair of channels
(LogNeuralCDEs.py:112-126). Here it is the same sum in closed form. With Λ the
antisymmetric matrix of the areas (Λ_ab = ℓ^{ab}, Λ_ba = -ℓ^{ab}, a < b),
    Σ_{a<b} ℓ^{ab} (J_b f_a - J_a f_b) = Σ_{a,b} Λ_ab J_b f_a = Σ_b J_b v_b,  v_b = Σ_a Λ_ab f_a,
and f = tanh ∘ Linear ∘ (SiLU ∘ Linear)^n gives J_b = diag(1 - f_b²) W_b M, W_b the last
layer's rows of block b and M = ∂a/∂h = diag(s_n) W_n ... diag(s_1) W_1 (w, H) the hidden
layers' Jacobian (s_l = silu'(z_l); n = vf_depth, M = I for n = 0). Per stage:
    a       the hidden layers (with s_l; with Mᵀ if H < d, below)                  (B, w)
    f       tanh(Linear(a))                                                     (B, d, H)
    [p ; v] = table @ f, table = [ℓ^1 ; Λᵀ] (``stage_tables``: formed for all windows
            once per forward pass; one bmm for both levels)                 (B, 1 + d, H)
    u_b     = M v_b                                                              (B, d, w)
    out     = c (p + Σ_b (1 - f_b²) ⊙ W_b u_b), c = dt / |I|                       (B, H)
M v_b is formed the cheaper way (``VectorField.jacobian_form``): H < d (Heartbeat,
MotorImagery), Mᵀ (B, H, w) is pushed along the hidden layers (H tangents, one (B H, w) x
(w, w) product per layer after the first) and applied to v in one bmm; otherwise
(EigenWorms, SCP1, SCP2) the d vectors v_b go through the hidden layers ((B d, ·) x (·, w)
products). Against the per-tangent form (the d tangents f_a pushed through the hidden
layers, Λᵀ applied to them; tests/logncde_oracle.py, which tests/test_logncde.py holds
this path to: outputs and gradients, float64 to 1e-10, float32 to 1e-5) that is, in MACs
per row and stage, 0.40M against 0.99M on MotorImagery's configuration (d = 64, H = 16,
w = 64, vf_depth 3), 1.0M against 2.9M on Heartbeat's, within 5% of it on the others
(forward and backward, batch 32, 50 Heun steps: 0.46 s against 0.77 s on MotorImagery, 0.80 s
against 1.86 s on Heartbeat, 0.10 s against 0.11 s on EigenWorms). Gradients are autograd's.

Speed (benchmarks/bench_logncde_epoch.py, docs/benchmarks.md; 1 thread of a 2-core CPU
shared with other work, float32, MotorImagery's shape and configuration, batch 32): a
training epoch (264 rows in 9 batches, then the validation pass over 57 rows) takes 48 s
against S5-logncde's 23 s (2.1x; random data) and 40 s against 23 s on the prepared
MotorImagery (1.7x); the per-tangent form takes 85 s (3.7x S5-logncde's). The windows'
log-signatures, 2.4-3.4 s for the 321 rows, are computed in the first epoch only (the
cache). At batch 32 the stage's matrix products take ~60% of its time and the ~35 ops'
dispatch (forward; about twice that backward) most of the rest: a batch of 4 rows costs
~40% of a batch of 32. Measured and not used: a hand-written backward per stage (one
autograd node instead of ~40) 7% faster, the same products; recomputing each Heun step in
the backward (checkpointing) slower; ``torch.compile`` of the stage 19% faster per epoch
after ~60 s of compilation (break-even after ~6 epochs), optional in the benchmark only.

Parameter count (EigenWorms' repeat config: C = 6 + time, hidden_dim 128, vf_depth 2,
vf_width 32, depth 2, stepsize 12, K = 5; ``param_count``)
------------------------------------------------------------------------------------------
vector field H w + w + (vf_depth - 1)(w² + w) + w d H + d H = 4128 + 1056 + 29568 = 34752,
linear1 d H + H = 1024, linear2 H K + K = 645: 36421, ours and the reference's (its
trainable leaves are vf.mlp, linear1, linear2; ``intervals`` and ``pairs`` are excluded by
train.py's filter_spec). The reference's own ``LogNeuralCDE`` built from the six repeat
configs (jax 0.10.2, equinox 0.13.8, diffrax 0.7.2, outside the test suite) counts EigenWorms
36,421, EthanolConcentration 29,700, Heartbeat 164,210, MotorImagery 77,042, SCP1 91,458,
SCP2 36,034: ours on each (tests/test_logncde.py ``REFERENCE_COUNTS``).

MACs (``count_macs``; see ssmbench.complexity)
----------------------------------------------
ptflops' hooks count ``initial`` (linear1) and ``head`` (linear2). The Heun loop calls the
vector field's layers functionally and the meta device skips the loop, so ``count_macs``
adds them, as ptflops counts a Linear (rows x in x out + out per call), at each of the 2 N
stages: that is ``convention="paper"``. ``"full"`` adds the per-stage tensor work of
``VectorField.stage`` (above): the activations, table @ f ((1 + d) d H at depth 2, d H at
depth 1), the scale, at depth 2 silu', Mᵀ, M v_b, W_b u_b and the products with 1 - f²,
and the Heun update (3 H).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .frame import SequenceClassifier
from .log_ode import LogODESchedule, heun, log_ode_schedule
from .logsignature import (
    DEPTHS,
    LogSignatureCache,
    check_depth,
    check_stepsize,
    hall_pairs,
    logsig_dim,
    n_windows,
    windowed_logsignature,
)

__all__ = ["LogNCDEClassifier", "VectorField", "param_count", "reference_time_channel"]

#: The windows' stage tables (W, B, 1 + d, d) are formed once per forward pass up to this many
#: elements (128 MB in float32; MotorImagery's 188 x 32 x 65 x 64: 25M), else at every stage.
PRECOMPUTED_TABLES_MAX = 2**25


@lru_cache(maxsize=32)
def _area_slots(n_channels: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat positions in a (1 + d, d) stage table of Λᵀ[b, a] = ℓ^{ab} and Λᵀ[a, b] = -ℓ^{ab}
    (a < b in the Hall order; Λᵀ is rows 1..d)."""
    a, b = hall_pairs(n_channels)
    return ((1 + b) * n_channels + a).to(device), ((1 + a) * n_channels + b).to(device)


def reference_time_channel(
    batch: int, length: int, steps: torch.Tensor | None, like: torch.Tensor
) -> torch.Tensor:
    """(B, L) times t_l = l / L (the reference's (T / L) arange(L), T = 1); with step sizes Δ
    (B, L): (Σ_{i<=l} Δ_i - Δ_0) / L, which is l / L for unit steps."""
    if steps is None:
        t = torch.arange(length, dtype=like.dtype, device=like.device) / length
        return t.expand(batch, length)
    if tuple(steps.shape) != (batch, length):
        raise ValueError(f"steps must be (B, L) = {(batch, length)}, got {tuple(steps.shape)}")
    steps = steps.to(like.dtype)
    return (torch.cumsum(steps, dim=1) - steps[:, :1]) / length


# ------------------------------------------------------------------------- vector field
class VectorField(nn.Module):
    """f: R^H -> R^{d x H}: ``vf_depth`` hidden Linear + SiLU layers of width w, then
    Linear(w, d H) and tanh (eqx.nn.MLP, NeuralCDEs.py:43-82); every weight and bias divided
    by ``scale`` after torch's default init (equinox's)."""

    def __init__(self, hidden_dim: int, n_paths: int, width: int, depth: int, scale: float) -> None:
        super().__init__()
        self.hidden_dim, self.n_paths = hidden_dim, n_paths
        sizes = [hidden_dim] + [width] * depth
        self.hidden = nn.ModuleList(
            nn.Linear(i, o) for i, o in zip(sizes[:-1], sizes[1:], strict=True)
        )
        self.last = nn.Linear(sizes[-1], n_paths * hidden_dim)
        #: M v_b through the Jacobian M (H tangents) when H < d, else the d vectors v_b
        #: pushed through the hidden layers: whichever pushes fewer vectors
        self.jacobian_form = hidden_dim < n_paths
        with torch.no_grad():
            for layer in self.linears():
                layer.weight.div_(scale)
                layer.bias.div_(scale)

    def linears(self) -> list[nn.Linear]:
        return [*self.hidden, self.last]

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """f(y) (B, d, H)."""
        a = y
        for layer in self.hidden:  # F.linear: counted by count_macs, not by ptflops' hooks
            a = F.silu(F.linear(a, layer.weight, layer.bias))
        out = torch.tanh(F.linear(a, self.last.weight, self.last.bias))
        return out.view(y.shape[0], self.n_paths, self.hidden_dim)

    def hidden_layers(self, y: torch.Tensor, depth2: bool):
        """The last hidden layer's activations a (B, w) and, for the depth-2 term, what
        carries v_b to M v_b (M = ∂a/∂y = diag(s_n) W_n ... diag(s_1) W_1, s_l = silu'(z_l)):
        with ``jacobian_form`` Mᵀ (B, H, w), the H unit tangents pushed along the layers,
        else the slopes s_l (B, w) to push the d vectors v_b with (``_push``). No hidden
        layer: a = y, M = I (None)."""
        batch = y.shape[0]
        a, m_t, slopes = y, None, []
        for layer in self.hidden:
            z = F.linear(a, layer.weight, layer.bias)  # (B, w)
            if not depth2:
                a = F.silu(z)
                continue
            sig = torch.sigmoid(z)
            a = z * sig  # silu(z)
            slope = torch.addcmul(sig, a, 1 - sig)  # silu'(z) = σ + z σ (1 - σ)  (B, w)
            if not self.jacobian_form:
                slopes.append(slope)
            elif m_t is None:  # (diag(s_1) W_1)ᵀ  (B, H, w)
                m_t = layer.weight.t() * slope[:, None, :]
            else:  # (diag(s_l) W_l M)ᵀ: one (B H, w) x (w, w) product  (B, H, w)
                pushed = m_t.reshape(-1, m_t.shape[-1]) @ layer.weight.t()
                m_t = pushed.view(batch, self.hidden_dim, -1) * slope[:, None, :]
        return a, (m_t if self.jacobian_form else slopes or None)

    def _push(self, v: torch.Tensor, carry) -> torch.Tensor:
        """M v_b (B, d, w) of v (B, d, H), ``carry`` from ``hidden_layers``."""
        if carry is None:  # no hidden layer
            return v
        if self.jacobian_form:
            return torch.bmm(v, carry)  # (B, d, H) x (B, H, w)
        for layer, slope in zip(self.hidden, carry, strict=True):  # (B d, ·) x (·, w)
            v = F.linear(v, layer.weight) * slope[:, None, :]
        return v

    def stage_tables(self, logsig: torch.Tensor) -> torch.Tensor:
        """Stage tables (..., R, d) of log-signatures (..., D): depth 1, R = 1: ℓ^1; depth 2,
        R = 1 + d: row 0 ℓ^1, rows 1..d Λᵀ, Λ the antisymmetric matrix of the areas
        (Λ_ab = ℓ^{ab}, Λ_ba = -ℓ^{ab}, a < b), so that ``table @ f`` (f (d, H)) is
        [Σ_a ℓ^a f_a ; v_1 .. v_d], v_b = Σ_a Λ_ab f_a."""
        d = self.n_paths
        if logsig.shape[-1] == d:
            return logsig.unsqueeze(-2)
        lead = logsig.shape[:-1]
        table = logsig.new_zeros(*lead, (1 + d) * d)
        table[..., :d] = logsig[..., :d]
        lower, upper = _area_slots(d, logsig.device)
        areas = logsig[..., d:]
        table.index_copy_(-1, lower, areas)
        table.index_copy_(-1, upper, -areas)
        return table.view(*lead, 1 + d, d)

    def last_blocks(self) -> torch.Tensor:
        """W_bᵀ (d, w, H): the last layer's rows of block b, transposed, contiguous."""
        d, h = self.n_paths, self.hidden_dim
        return self.last.weight.view(d, h, -1).transpose(1, 2).contiguous()

    def stage(
        self,
        y: torch.Tensor,
        table: torch.Tensor,
        scale: float = 1.0,
        blocks: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """scale (ℓ^1 · f(y) + Σ_{a<b} ℓ^{ab} [f_a, f_b](y)) for (B, H) states and (B, R, d)
        ``stage_tables``: the Log-ODE vector field times dt (LogNeuralCDEs.py:100-131) with
        ``scale`` = dt / |I|. The brackets' sum is Σ_b J_b v_b with J_b = diag(1 - f_b²) W_b M
        (the module docstring). ``blocks``: ``last_blocks()``, if formed (once per pass)."""
        batch, d, h = y.shape[0], self.n_paths, self.hidden_dim
        depth2 = table.shape[-2] > 1
        a, carry = self.hidden_layers(y, depth2)
        fields = torch.tanh(F.linear(a, self.last.weight, self.last.bias)).view(batch, d, h)
        rows = torch.bmm(table, fields)  # [Σ_a ℓ^a f_a ; v_1 .. v_d]  (B, R, H)
        out = rows[:, 0]  # (B, H)
        if depth2:
            v = rows[:, 1:]  # v_b = Σ_a Λ_ab f_a  (B, d, H)
            u = self._push(v, carry)  # M v_b  (B, d, w)
            u = u.transpose(0, 1).contiguous()  # block-major  (d, B, w)
            if blocks is None:
                blocks = self.last_blocks()
            r = torch.bmm(u, blocks)  # W_b M v_b, block-major  (d, B, H)
            tangent = 1 - fields * fields  # tanh' of block b  (B, d, H)
            out = out + (tangent * r.transpose(0, 1)).sum(dim=1)
        return out * scale

    def increment(self, y: torch.Tensor, logsig: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        """``stage`` of (B, D) log-signatures: scale times the Log-ODE vector field at y."""
        return self.stage(y, self.stage_tables(logsig), scale)


class LogNCDEClassifier(SequenceClassifier):
    """Log-NCDE (Walker et al. 2024): see the module docstring. x (B, C, L) -> logits
    (B, K), or (B, L, K) with ``per_step``; defaults: the reference's EigenWorms config."""

    TEST_PARAMS = {"hidden_dim": 8, "vf_depth": 2, "vf_width": 8, "depth": 2, "stepsize": 1,
                   "scale": 1.0}  # fmt: skip
    CHOICES = {"depth": DEPTHS}
    INT_MINIMUM = {"vf_depth": 0}

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        hidden_dim: int = 128,
        vf_depth: int = 2,
        vf_width: int = 32,
        depth: int = 2,
        stepsize: int = 12,
        lambd: float = 1.0e-3,
        time_channel: bool = True,
        dt0: float | None = None,
        scale: float = 1000.0,
        per_step: bool = False,
    ) -> None:
        super().__init__(n_channels, n_classes, length, per_step)
        check_depth(depth)
        check_stepsize(stepsize, length)
        for name, value, minimum in (
            ("hidden_dim", hidden_dim, 1), ("vf_width", vf_width, 1), ("vf_depth", vf_depth, 0)
        ):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(f"hyperparameter {name!r} must be an integer >= {minimum}, "
                                 f"got {value!r}")  # fmt: skip
        if not lambd >= 0:
            raise ValueError(f"hyperparameter 'lambd' must be >= 0, got {lambd!r}")
        if not scale > 0:
            raise ValueError(f"hyperparameter 'scale' must be positive, got {scale!r}")
        if dt0 is not None and not dt0 > 0:
            raise ValueError(f"hyperparameter 'dt0' must be positive, got {dt0!r}")
        self.hidden_dim, self.depth, self.stepsize = hidden_dim, depth, stepsize
        self.lambd, self.dt0, self.time_channel = float(lambd), dt0, time_channel
        if time_channel:  # the time channel reads the physical step sizes
            self.INPUTS = ("values", "steps")
        self.n_paths = n_channels + int(time_channel)
        self.logsig_dim = logsig_dim(self.n_paths, depth)
        self.initial = nn.Linear(self.n_paths, hidden_dim)  # the reference's linear1
        self.vf = VectorField(hidden_dim, self.n_paths, vf_width, vf_depth, float(scale))
        self.head = nn.Linear(hidden_dim, n_classes)  # the reference's linear2
        self._logsig_cache = LogSignatureCache()

    @classmethod
    def length_problem(cls, hyper: dict, length: int) -> str | None:
        """Why ``hyper`` cannot read series of ``length`` samples, or None."""
        try:
            check_stepsize(hyper["stepsize"], length)
        except ValueError as exc:
            return str(exc)
        return None

    # ----------------------------------------------------------------------- inputs
    def input_path(self, x: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """The path the model reads: (B, L, d), the time channel first where set."""
        batch, _, length = x.shape
        path = x.transpose(1, 2)
        if self.time_channel:
            t = reference_time_channel(batch, length, steps, x)
            path = torch.cat([t.unsqueeze(-1), path], dim=-1)
        return path

    def logsignature(self, x: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """The windows' log-signatures (B, W, D) the model integrates (without grad)."""
        return windowed_logsignature(self.input_path(x, steps), self.depth, self.stepsize)

    def _cached_logsignature(self, path: torch.Tensor) -> torch.Tensor:
        return self._logsig_cache.get(path, self.depth, self.stepsize)

    # ----------------------------------------------------------------------- forward
    def schedule(self, length: int) -> LogODESchedule:
        return log_ode_schedule(length, self.stepsize, self.dt0)

    def forward(
        self,
        x: torch.Tensor,
        steps: torch.Tensor | None = None,
        logsig: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x (B, C, L), steps (B, L) the physical step sizes (read by the time channel; None:
        unit steps), logsig: ``self.logsignature(x, steps)`` if already computed (e.g. from
        a cache on disk) -> (B, K), or (B, L, K) per step."""
        batch, channels, length = x.shape
        if channels != self.n_channels:
            raise ValueError(f"expected {self.n_channels} channels, got {channels}")
        check_stepsize(self.stepsize, length)
        if not self.time_channel:
            steps = None
        path = self.input_path(x, steps)
        if logsig is None:
            logsig = self._cached_logsignature(path)
        expected = (batch, n_windows(length, self.stepsize), self.logsig_dim)
        if tuple(logsig.shape) != expected:
            raise ValueError(f"logsig must be {expected}, got {tuple(logsig.shape)}")
        logsig = logsig.to(x.dtype)
        plan = self.schedule(length)
        stages = plan.stages
        h0 = self.initial(path[:, 0])  # (B, H), from the first sample
        if x.device.type == "meta":  # shapes only (complexity.mmac): the loop's work is
            # count_macs's; meta kernels of small ops cost ~1 ms each in Python
            if not self.per_step:
                return self.head(h0)
            return self.head(h0.unsqueeze(1).expand(batch, length, self.hidden_dim))

        # once per forward pass: the windows' stage tables [ℓ^1 ; Λᵀ], window-major so that a
        # stage reads a contiguous (B, R, d) (unless large: then per stage; no grad, every
        # stage's bmm saves a view), and the last layer's blocks W_bᵀ (d, w, H)
        n_win, rows = logsig.shape[1], (1 + self.n_paths if self.depth == 2 else 1)
        tables = None
        if batch * n_win * rows * self.n_paths <= PRECOMPUTED_TABLES_MAX:
            tables = self.vf.stage_tables(logsig.transpose(0, 1)).contiguous()  # (W, B, R, d)
        blocks = self.vf.last_blocks() if self.depth == 2 else None

        def step_fn(j: int, stage: int, y: torch.Tensor, c: float) -> torch.Tensor:
            k = stages[j][stage]
            table = self.vf.stage_tables(logsig[:, k]) if tables is None else tables[k]
            return self.vf.stage(y, table, c, blocks)

        states = [h0] if self.per_step else None
        h = heun(step_fn, h0, plan.coefficients, states)
        if not self.per_step:
            return self.head(h)  # (B, K)
        return self.head(self._states_at_samples(states, plan, length))  # (B, L, K)

    @staticmethod
    def _states_at_samples(states: list, plan: LogODESchedule, length: int) -> torch.Tensor:
        """The states at t_l = l / L, linearly interpolated between the steps' (B, L, H)."""
        stacked = torch.stack(states, dim=1)  # (B, N + 1, H)
        times = np.asarray(plan.times)
        t = np.arange(length) / length
        right = np.clip(np.searchsorted(times, t, side="left"), 1, max(len(times) - 1, 1))
        if len(times) == 1:  # no step (L = 1)
            return stacked[:, [0] * length]
        left = right - 1
        frac = (t - times[left]) / (times[right] - times[left])
        frac = torch.as_tensor(np.clip(frac, 0.0, 1.0), dtype=stacked.dtype,
                               device=stacked.device)[None, :, None]  # fmt: skip
        lo = stacked[:, torch.as_tensor(left, device=stacked.device)]
        hi = stacked[:, torch.as_tensor(right, device=stacked.device)]
        return lo + frac * (hi - lo)

    # ----------------------------------------------------------------------- penalty
    def regulariser(self) -> torch.Tensor:
        """The reference's Lip(2) penalty (train.py:83-98): ``lambd`` Σ over the vector
        field's Linear layers of mean_rows ||W_row||_2 + ||b||_2; add it to the batch's mean
        loss (0 when lambd = 0)."""
        total = sum(
            layer.weight.norm(dim=-1).mean() + layer.bias.norm() for layer in self.vf.linears()
        )
        return self.lambd * total

    # ----------------------------------------------------------------------- MACs
    def count_macs(self, inputs: tuple, output, convention: str) -> int:
        """The Heun loop's MACs for the whole batch of one forward call (ptflops' hooks count
        ``initial`` and ``head``): ``"paper"`` the vector field's Linear layers at every
        stage, as ptflops counts a Linear (rows x in x out + out per call); ``"full"`` adds
        the tensor work (see the module docstring). The same on the meta device, which
        skips the loop."""
        x = inputs[0]
        batch, _, length = x.shape
        stages = 2 * self.schedule(length).n_steps
        d, h = self.n_paths, self.hidden_dim
        layers = self.vf.linears()
        per_stage = sum(batch * m.in_features * m.out_features + m.out_features for m in layers)
        if convention != "full":
            return stages * per_stage
        widths = [layer.out_features for layer in self.vf.hidden]
        last_in = widths[-1] if widths else h
        rows = 1 + d if self.depth == 2 else 1
        # SiLU and tanh, table @ f (Σ_i ℓ^i f_i; depth 2: v = Λᵀ f), the scale, the Heun update
        work = sum(widths) + d * h + rows * d * h + h + 3 * h
        if self.depth == 2:
            work += 3 * sum(widths)  # silu'(z) = σ + a (1 - σ)
            fan_in = [h, *widths[:-1]]
            if widths and self.vf.jacobian_form:  # Mᵀ: diag(s_1) W_1, (B H, w) x (w, w)
                work += h * widths[0] + sum(
                    h * i * o + h * o for i, o in zip(fan_in[1:], widths[1:], strict=True)
                )
                work += d * h * last_in  # u_b = M v_b
            else:  # u_b = M v_b: the d vectors through the hidden layers
                work += sum(d * i * o + d * o for i, o in zip(fan_in, widths, strict=True))
            work += d * last_in * h  # W_b u_b
            work += 3 * d * h  # 1 - f², the product, Σ_b
        return stages * (per_stage + batch * work)


def param_count(
    n_channels: int, n_classes: int, hidden_dim: int, vf_depth: int, vf_width: int,
    time_channel: bool = True,
) -> int:  # fmt: skip
    """The reference's trainable parameters (eqx.nn.MLP + two eqx.nn.Linear): vector field
    H w + w + (vf_depth - 1)(w² + w) + w d H + d H (vf_depth 0: H d H + d H), linear1
    d H + H, linear2 H K + K, d = C + time."""
    d, h, w = n_channels + int(time_channel), hidden_dim, vf_width
    if vf_depth == 0:
        vf = h * d * h + d * h
    else:
        vf = h * w + w + (vf_depth - 1) * (w * w + w) + w * d * h + d * h
    return vf + (d * h + h) + (h * n_classes + n_classes)
