"""Simulating the instances of one Physiome-ODE model with myokit (step 1 of the protocol,
``ssmbench.data.physiome``): perturbed initial states and constants per instance, a
random window of the solution, failed draws redrawn.

Simulation is compiled: one ``myokit.Simulation`` (C + CVODES) per model, reused for every
instance (``reset``, ``set_constant``, ``set_state``): 1 to 13 ms per instance on
one core (``benchmarks/bench_physiome.py``; about 1 minute for all five models).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from ssmbench.data.errors import DataError
from ssmbench.data.physiome.models import PHYSIOME_MODELS
from ssmbench.data.physiome.myokit_models import (
    import_myokit,
    load_model_files,
    perturbable_constants,
)
from ssmbench.data.physiome.settings import resolve_settings, seed_words


def simulate_physiome(name: str, model_dir: str | os.PathLike, settings: dict | None) -> dict:
    """Simulate the instances of ``name`` from the model files in ``model_dir`` (the raw
    folder ``<raw_dir>/<name>``), compiled once with myokit (C + CVODES).

    Returns ``{"traj": float64 (n_ok, C, n_time_points) clean values of each kept window,
    "times": float64 (n_time_points,) window times from 0, "channels": state names,
    "instance": int64 (n_ok,) simulation index of each, "failed": [indices], "tries":
    total draws, "constants": perturbed constant names, "timings": {...}}``.
    """
    cfg = resolve_settings(name, settings)
    myokit = import_myokit()
    entry = PHYSIOME_MODELS[name]
    model, protocol = load_model_files(entry, Path(model_dir))
    states = [s.qname() for s in model.states()]
    consts = perturbable_constants(model)
    cnames = [v.qname() for v in consts]
    x0 = np.asarray(model.initial_values(as_floats=True), dtype=np.float64)
    c0 = np.asarray([float(v.eval()) for v in consts], dtype=np.float64)

    P, n = cfg["n_time_points"], cfg["n_instances"]
    grid = np.linspace(0.0, cfg["horizon"], 2 * P)
    duration = float(grid[-1] + 0.5 * (grid[1] - grid[0]))
    t0 = time.perf_counter()
    try:
        sim = myokit.Simulation(model, protocol)
        sim.set_tolerance(abs_tol=cfg["abs_tol"], rel_tol=cfg["rel_tol"])
    except Exception as e:  # noqa: BLE001 - compiler / SUNDIALS missing
        raise DataError(
            f"Physiome dataset {name}: myokit could not compile the model ({type(e).__name__}: "
            f"{e}). It needs a C compiler and the SUNDIALS headers (Debian: libsundials-dev)."
        ) from e
    compile_s = time.perf_counter() - t0

    C = len(states)
    traj = np.empty((n, C, P), dtype=np.float64)
    ok = np.zeros(n, dtype=bool)
    failed, tries = [], 0
    t1 = time.perf_counter()
    for i in range(n):
        for k in range(cfg["max_tries"]):
            tries += 1
            rng = np.random.default_rng([*seed_words(cfg), 0, i, k])
            x = x0 * (1.0 + cfg["d_states"] * rng.uniform(-1.0, 1.0, C))
            c = c0 * (1.0 + cfg["d_constants"] * rng.uniform(-1.0, 1.0, c0.size))
            start = int(rng.integers(0, P)) if cfg["random_start"] else 0
            sim.reset()
            for qname, value in zip(cnames, c, strict=True):
                sim.set_constant(qname, float(value))
            try:
                sim.set_state([float(v) for v in x])
                d = sim.run(duration, log=states, log_times=grid)
                values = np.array([np.asarray(d[q], dtype=np.float64) for q in states])
            except (myokit.SimulationError, ArithmeticError, ValueError):
                continue
            if values.shape != (C, 2 * P):
                continue
            window = values[:, start : start + P]
            if not np.isfinite(window).all() or np.abs(window).max() > 1e15:
                continue
            traj[i], ok[i] = window, True
            break
        else:
            failed.append(i)
    simulate_s = time.perf_counter() - t1
    if not ok.any():
        raise DataError(
            f"Physiome dataset {name}: every one of {n} instances failed to simulate "
            f"{cfg['max_tries']} times. Lower benchmarks.physiome.generator.d_states / "
            f"d_constants or the horizon."
        )
    timings = {
        "compile_s": round(compile_s, 3),
        "simulate_s": round(simulate_s, 3),
        "per_instance_ms": round(1000.0 * simulate_s / n, 3),
    }
    return {
        "traj": traj[ok],
        "times": grid[:P].copy(),
        "channels": states,
        "instance": np.flatnonzero(ok).astype(np.int64),
        "failed": failed,
        "tries": tries,
        "constants": cnames,
        "timings": timings,
    }
