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
* The depth-2 term is the reference's Jacobian-vector products contracted early (same
  numbers, tests/test_logncde.py checks it against ``torch.func.jvp`` and the reference's
  pair loop): Σ_{a<b} ℓ^{ab} (J_b f_a - J_a f_b) = Σ_b s_b ⊙ W_b (Σ_a Λ_ab g_a), Λ the
  antisymmetric matrix of the areas, g_a the tangent f_a pushed through the hidden layers
  (forward mode), W_b the last layer's rows of block b and s_b = 1 - f_b² (tanh'). The d
  tangents share one matmul per hidden layer and the last layer is applied once instead of
  d times (per stage: d (H w + (vf_depth - 1) w²) + d² w + d H w MACs, instead of d times the
  MLP).
* Random draws come from torch's generator (the reference's from JAX keys).

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
stages: that is ``convention="paper"``. ``"full"`` adds the per-stage tensor work: the
activations, the depth-1 contraction d H, the log-signature's scaling, the depth-2 tangents
and contraction (above) and the derivative products, 1 - f², and the Heun update (3 H).
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

#: Up to this many path channels the area matrix Λ is filled pairwise (faster for small d).
DENSE_AREAS_MAX = 64
#: The windows' area matrices (B, W, d, d) are formed once per forward pass up to this many
#: elements (128 MB in float32; MotorImagery's 32 x 188 x 64²: 25M), else at every stage.
PRECOMPUTED_AREAS_MAX = 2**25


@lru_cache(maxsize=32)
def _upper_flat_index(n_channels: int, device: torch.device) -> torch.Tensor:
    a, b = hall_pairs(n_channels)
    return (a * n_channels + b).to(device)


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
        with torch.no_grad():
            for layer in self.linears():
                layer.weight.div_(scale)
                layer.bias.div_(scale)

    def linears(self) -> list[nn.Linear]:
        return [*self.hidden, self.last]

    def _primal(self, y: torch.Tensor, keep: bool):
        """f(y) as (B, d, H) and, with ``keep``, the hidden layers' SiLU derivatives."""
        derivatives = []
        a = y
        for layer in self.hidden:  # F.linear: counted by count_macs, not by ptflops' hooks
            z = F.linear(a, layer.weight, layer.bias)
            a = F.silu(z)
            if keep:
                sig = torch.sigmoid(z)
                derivatives.append(sig * (1 + z * (1 - sig)))  # silu'(z)
        out = torch.tanh(F.linear(a, self.last.weight, self.last.bias))
        return out.view(y.shape[0], self.n_paths, self.hidden_dim), derivatives

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """f(y) (B, d, H)."""
        return self._primal(y, keep=False)[0]

    def area_matrices(self, areas: torch.Tensor) -> torch.Tensor:
        """Λᵀ (..., d, d) of degree-2 coordinates (..., d(d - 1)/2): Λ_ab = ℓ^{ab},
        Λ_ba = -ℓ^{ab} (a < b), so that (Λᵀ g)_b = Σ_a Λ_ab g_a."""
        d = self.n_paths
        lead = areas.shape[:-1]
        if d <= DENSE_AREAS_MAX:
            a, b = hall_pairs(d)
            lam_t = areas.new_zeros(*lead, d, d)
            lam_t[..., b, a] = areas
            lam_t[..., a, b] = -areas
            return lam_t
        # Λᵀ = Uᵀ - U, U the upper triangle: one scatter (3x faster at d = 1346)
        upper = areas.new_zeros(*lead, d * d)
        upper.index_copy_(-1, _upper_flat_index(d, areas.device), areas)
        upper = upper.view(*lead, d, d)
        return upper.transpose(-1, -2) - upper

    def increment(
        self,
        y: torch.Tensor,
        logsig: torch.Tensor,
        scale: float = 1.0,
        lam_t: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """scale (ℓ^1 · f(y) + Σ_{a<b} ℓ^{ab} [f_a, f_b](y)) for (B, H) states and (B, D)
        log-signatures: the Log-ODE vector field times dt (LogNeuralCDEs.py:100-131) with
        ``scale`` = dt / |I|. ``lam_t``: ``area_matrices`` of ``logsig``'s areas, if formed."""
        d = self.n_paths
        depth2 = logsig.shape[-1] > d
        fields, derivatives = self._primal(y, keep=depth2)
        level1 = logsig[:, None, :d] * scale
        out = torch.bmm(level1, fields).squeeze(1)  # Σ_i ℓ^i f_i  (B, H)
        if not depth2:
            return out
        g = fields  # the d tangents f_a, pushed forward through the hidden layers
        for layer, derivative in zip(self.hidden, derivatives, strict=True):
            g = F.linear(g, layer.weight) * derivative[:, None, :]
        if lam_t is None:
            lam_t = self.area_matrices(logsig[:, d:])
        u = torch.bmm(lam_t, g) * scale  # u_b = Σ_a Λ_ab g_a  (B, d, w)
        w_blocks = self.last.weight.view(d, self.hidden_dim, -1)  # W_b (d, H, w)
        v = torch.einsum("bjw,jhw->bjh", u, w_blocks)  # W_b u_b
        return out + ((1 - fields.square()) * v).sum(dim=1)  # Σ_b tanh'_b ⊙ W_b u_b


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

        # the windows' Λᵀ once (no grad; every stage's bmm saves a view of it), unless large
        lam_all = None
        n_win, d = logsig.shape[1], self.n_paths
        if self.depth == 2 and batch * n_win * d * d <= PRECOMPUTED_AREAS_MAX:
            lam_all = self.vf.area_matrices(logsig[..., d:])  # (B, W, d, d)

        def step_fn(j: int, stage: int, y: torch.Tensor, c: float) -> torch.Tensor:
            k = stages[j][stage]
            lam_t = None if lam_all is None else lam_all[:, k]
            return self.vf.increment(y, logsig[:, k], c, lam_t)

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
        # SiLU and tanh, ℓ^1's scaling, Σ_i ℓ^i f_i, the Heun update
        work = sum(widths) + d * h + d + d * h + 3 * h
        if self.depth == 2:
            fan_in = [h, *widths[:-1]]
            work += sum(3 * o for o in widths)  # silu'(z)
            work += sum(d * i * o + d * o for i, o in zip(fan_in, widths, strict=True))  # tangents
            work += d * d * last_in + d * last_in  # u_b = Σ_a Λ_ab g_a, its scaling
            work += d * h * last_in  # W_b u_b
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
