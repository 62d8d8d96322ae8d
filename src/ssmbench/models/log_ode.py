"""The Log-ODE method's fixed-step Heun solver, on the reference's own time grid.

Source: Walker et al. 2024, github Benjamin-Walker/log-neural-cdes at 5612f00 (MIT):
``models/LogNeuralCDEs.py:96-152`` and ``run_experiment.py`` (diffrax.Heun,
ConstantStepSize, dt0), ``data_dir/datasets.py:143-145`` (the intervals). The code is
written here.

Facts: Heun with ConstantStepSize dt0 from ts[0] = 0 to ts[-1] = (L - 1) / L (not T = 1);
the vector field at time t uses log-signature idx - 1, idx = searchsorted(intervals, t)
(left), divided by that interval's width. Stage times are j dt0 and (j + 1) dt0 (clipped to
the end with diffrax's 1e-6 float32 tolerance), so a step may mix two intervals, as there.

Why tabulated, and not torchdiffeq's fixed-grid ``heun2``: which log-signature each stage
reads is decided by the reference's float32 times, including the wrap-around at t = 0 (JAX's
index -1: the *last* window, divided by -T); a solver calling f(t, y) with its own float
times would put boundary stages on the other side. ``log_ode_schedule`` computes the stages
once per (L, s, dt0) in numpy as the reference's float32 arithmetic does; ``heun`` is the
six-line update over them. The stage coefficients dt / |I| are float64 of those float32
values (the reference's float32 quotients differ in the 7th digit).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from .logsignature import check_stepsize

__all__ = ["CLIP_TOLERANCE", "LogODESchedule", "heun", "log_ode_schedule"]

#: diffrax's float32 tolerance for clipping the last step to t1 (``_clip_to_end``).
CLIP_TOLERANCE = 1e-6


@dataclass(frozen=True)
class LogODESchedule:
    """The reference's Heun steps over the log-signature intervals of a series of L samples.

    ``stages[j] = (k1, k2)``: the log-signature windows read by step j's two stages (at t_j
    and t_{j+1}; interval k reads window k; -1: the last window, at t = 0),
    ``coefficients[j]`` their dt_j / |I_k| (-dt_0 / T at t = 0), ``times`` the N + 1 step
    times t_0 = 0 .. t_N = (L - 1) / L, ``widths`` the n interval widths (T = 1)."""

    n_intervals: int
    widths: tuple[float, ...]
    times: tuple[float, ...]
    stages: tuple[tuple[int, int], ...]
    coefficients: tuple[tuple[float, float], ...]

    @property
    def n_steps(self) -> int:
        return len(self.stages)


@lru_cache(maxsize=64)
def log_ode_schedule(length: int, stepsize: int, dt0: float | None = None) -> LogODESchedule:
    """Heun with constant step ``dt0`` from 0 to (L - 1) / L over the intervals
    [k s / L, (k + 1) s / L], k < ceil(L / s), the last ending at T = 1 (datasets.py:143-145,
    LogNeuralCDEs.py:137-148). dt0 None: 1 / ceil(L / s). Times are formed as the reference
    forms them, in float32: ts_l = fl32(1/L) l, t_{j+1} = t_j + dt0 accumulated (diffrax's
    ConstantStepSize), clipped to ts_{L-1} once within 1e-6 of it; a stage at time t reads
    log-signature idx - 1 divided by intervals[idx] - intervals[idx - 1], idx =
    searchsorted(intervals, t): at t = 0 the last one, divided by -T (the reference's
    wrap-around, kept). The coefficients dt / divisor are float64 of those float32 values."""
    check_stepsize(stepsize, length)
    n_int = -(-length // stepsize)
    step = 1.0 / n_int if dt0 is None else float(dt0)
    if not step > 0:
        raise ValueError(f"hyperparameter 'dt0' must be positive, got {dt0!r}")
    f32 = np.float32
    grid = f32(1.0 / length) * np.arange(length, dtype=f32)  # (T / L) arange(L), T = 1
    bounds = np.concatenate([grid[::stepsize], np.ones(1, f32)])  # n_int + 1
    end, step32 = grid[-1], f32(step)
    times = [f32(0.0)]
    while times[-1] < end:
        nxt = f32(times[-1] + step32)
        if nxt > f32(end - f32(CLIP_TOLERANCE)):  # diffrax's _clip_to_end
            nxt = end
        times.append(nxt)
    times32 = np.asarray(times, dtype=f32)
    idx = np.searchsorted(bounds, times32, side="left")  # LogNeuralCDEs.py:101-103
    rows = idx - 1  # the log-signature read: logsig[idx - 1], -1 (the last) at t = 0
    divisors = bounds.astype(np.float64)[idx] - bounds.astype(np.float64)[idx - 1]
    widths = np.diff(bounds.astype(np.float64))
    dts = np.diff(times32.astype(np.float64))
    stages = tuple(zip(rows[:-1].tolist(), rows[1:].tolist(), strict=True))
    coefficients = tuple(
        (float(dt / w1), float(dt / w2))
        for dt, w1, w2 in zip(dts, divisors[:-1], divisors[1:], strict=True)
    )
    return LogODESchedule(
        n_intervals=n_int,
        widths=tuple(widths.tolist()),
        times=tuple(times32.astype(np.float64).tolist()),
        stages=stages,
        coefficients=coefficients,
    )


def heun(step_fn, y0: torch.Tensor, coefficients, states: list | None = None) -> torch.Tensor:
    """Fixed-step Heun: y_{j+1} = y_j + (k1 + k2) / 2, k1 = step_fn(j, 0, y_j, c1),
    k2 = step_fn(j, 1, y_j + k1, c2), where ``step_fn(j, stage, y, c)`` returns the stage's
    increment dt · F(t, y) (c the stage's coefficient). ``states`` collects y_1 .. y_N."""
    y = y0
    for j, (c1, c2) in enumerate(coefficients):
        k1 = step_fn(j, 0, y, c1)
        k2 = step_fn(j, 1, y + k1, c2)
        y = y + 0.5 * (k1 + k2)
        if states is not None:
            states.append(y)
    return y
