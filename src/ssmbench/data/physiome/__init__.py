"""Physiome-ODE (TIDES' irregular-time regression task): generated from myokit models, or
the official archive from Zenodo.

Sources read (facts and figures taken from them; the code here is our own):

* Paper: Klötergens et al., "Physiome-ODE: A Benchmark for Irregularly Sampled
  Multivariate Time Series Forecasting Based on Biological ODEs", ICLR 2025,
  https://arxiv.org/abs/2502.07489.
* Code: https://github.com/kloetergensc/Physiome-ODE -- ``data_creation/README.md``,
  ``data_creation/generate_raw_data.py`` (the σ grids), ``data_creation/generate_imts.py``
  (observation/forecast split, z-score, drop, noise, masks, folds) and
  ``resources/Top50_final.csv`` (the chosen horizon and perturbations of each of the 50
  models). That repository ships ``data_creation/generate.py`` (the simulator) only as a
  ``.pyc``; its source and ``generate_benchmark.py`` were read in the fork
  https://github.com/lannguyen0910/Physiome-ODE (``data_creation/``).
* Data: Zenodo record 11492058 (https://zenodo.org/records/11492058), one file
  ``final.zip`` (about 0.7 GB) holding ``final/<dataset>/<fold>/{train,valid,test}.pt``
  (layout as the TIDES code places it, https://github.com/TaylanSoydan/TIDES
  ``README.md`` l.56; TIDES feeds them through ``tides/tides_collate.py``). Mode
  ``"zenodo"`` prepares its 50 datasets (by leaderboard code, ``official.py``) one folder
  per fold (``official_prepare.py``; docs/physiome_official_format.md).

**The published protocol** (and our implementation of it, mode ``"generate"``):

1. *Simulate.* 2000 instances per model (``n_instances``). Instance ``i`` draws every
   initial state ``x0`` and every constant ``c`` uniformly in ``x (1 ± d)`` (``d_states``,
   ``d_constants``), solves the ODE on ``linspace(0, horizon, 2 n_time_points)``
   (``n_time_points = 100``; the reference's ``generate_benchmark.py`` passes ``T/2`` and
   simulates to ``2 (T/2)``) and keeps ``n_time_points`` consecutive points from a uniform
   random start in ``0..n_time_points-1`` (``rand_start``), relabelled to start at time 0.
   A failed or non-finite (or ``|x| > 1e15``) simulation is redrawn, up to 10 tries.
   Tolerances ``atol = rtol = 1e-6`` as the reference's LSODA.
2. *Split in time.* With ``t_max`` the window's last time, the observed part is
   ``t <= 0.5 t_max`` and the forecast part ``0.5 t_max < t < t_max`` (strictly: the last
   grid point is used by neither, as in the reference): 50 + 49 of the 100 points.
   Timestamps are divided by ``t_max`` (so ``T`` lies in ``[0, 1)``).
3. *Normalise.* Per-channel z-score (mean and unbiased std over all instances and both
   parts, before the drop), then drop every instance with any ``|z| > 10`` (``max_abs``)
   in either part.
4. *Corrupt.* Add Gaussian noise of standard deviation 0.05 (``noise``) to every value
   (observed and forecast: the targets are noisy too), then hide each value independently
   with probability 0.8 (``mask_rate``; observed if ``u > 0.8``), separately for inputs
   and targets. A time step is kept only if an *odd* number of its channels is observed:
   the reference's ``T_MASK``/``TY_MASK`` (``t_drop = 0``) write ``bool & count > 0``,
   which binds as ``(bool & count) > 0`` (``row_selection: odd_count``; ``any_observed`` is
   the stated intent). The remaining steps are irregularly spaced.
5. *Folds.* 5 folds of 70/20/10 (train/validation/test), each an independent re-split of
   all instances with its own shuffle, noise and masks (``folds: reference``, the default;
   sizes by torch's ``random_split`` rounding). Metric: MSE over the observed forecast
   values.

The package, one thing per module:

* ``models.py``: the model table (``PHYSIOME_MODELS``, ``PINNED_SHA256``) and the sources.
* ``settings.py``: the defaults, the params.yaml keys and their checks (``resolve_settings``).
* ``myokit_models.py``: reading the model files with myokit (``load_model_files``).
* ``simulate.py``: step 1 (``simulate_physiome``).
* ``dataset.py``: steps 2 to 5 with disjoint folds (``folds: disjoint``) and the prepared
  arrays (``build_dataset``, ``fold_assignment``).
* ``reference_folds.py``: steps 2 to 5 as the archive's ``generate_imts.py``
  (``folds: reference``): per-fold arrays in the official files' shape
  (``build_reference_folds``).
* ``zenodo.py``: mode ``"zenodo"``, the official archive from Zenodo.
* ``official.py``: the archive's 50 datasets by leaderboard code (``OFFICIAL_DATASETS``).
* ``official_files.py``: reading a fold's ``.pt`` files without running pickled code.
* ``official_prepare.py``: folds in the official dict form -> the per-fold prepared
  folder (``prepare_from_folds``; the archive: ``prepare_official``).
* ``fetch.py``: ``fetch_physiome`` (either mode) and the pre-flight ``locate_physiome``.
* ``prepare.py``: ``prepare_physiome``, the prepared folder and its ``meta.json``.
* ``source.py``: the ``physiome`` source (its `Source`, ``ssmbench.data.source_registry``);
  ``catalog.py``: its catalog rows (the ``physiome`` and ``physiome_ode`` benchmarks);
  ``params.schema.yaml``: the settings it reads.

The download machinery (resume, checksum, safe extraction, stage-then-replace) is shared
with the other sources: ``ssmbench.data.download``.

**Deviations from the reference, and why** (also in ``meta["deviations"]``):

With ``folds: disjoint`` only (``folds: reference`` follows the reference there):

* *Normalisation statistics.* The reference z-scores with the mean and standard deviation
  (``torch.std``, ddof 1) of *all* instances, test included. We use the instances that are
  in no fold's test set (half of them: see the folds below), over both parts of the
  window, from the clean values, before the drop. No test row of any fold enters them.
* *Folds.* The reference draws five independent random 70/20/10 splits (seed = fold), each
  with its own noise and masks, so the test sets of different folds overlap. Ours: one
  noise and mask realisation (one ``X.npy`` for all folds) and one random permutation:
  fold k's test set is block k of ``round(0.1 N)`` rows (the five test sets are disjoint),
  its validation set the next ``round(0.2 N)`` rows (cyclically), the rest training. The
  split is drawn over the simulated instances before the drop, so after a drop the parts
  are 70/20/10 up to the dropped rows (sizes in ``meta["fold_sizes"]``).

Always:
* *Forecast channels.* For models with more than 10 states the reference scores only the
  10 channels of highest JGD (its Top50 ``channel_scores``); we compute no JGD and every
  channel is a target (``forecast_channels: "all"``). Only DiFrancescoNoble1985 (16 states)
  is concerned.
* *Failures.* The reference aborts the dataset when an instance fails 10 times; we skip
  that instance and count it (``meta["n_failed"]``).
* *Models.* Six models instead of the reference's 50: the five myokit ships (two overlap
  by name: Hodgkin-Huxley 1952 and DiFrancesco-Noble 1985, from other files than the
  reference's CellML exports: other parametrisations and perturbed constants) and
  ``HOD01``, our myokit transcription of the reference's hodgkin_huxley_1952_variant01
  (its 8 constants and its 10 ms stimulus; ``model_files/``); solver CVODES (BDF, myokit)
  instead of LSODA; no ``max_step`` limit.
"""

from __future__ import annotations

import importlib

#: the names this package offers, each from the module that defines it, imported on first
#: use: importing a module of the package (the source table imports ``source.py``) imports
#: no numpy or myokit until a name that needs them is asked for
_EXPORTS = {
    "DEFAULTS": "ssmbench.data.physiome.settings",
    "DEVIATIONS": "ssmbench.data.physiome.prepare",
    "MYOKIT_PINNED": "ssmbench.data.physiome.models",
    "PHYSIOME_MODELS": "ssmbench.data.physiome.models",
    "PINNED_SHA256": "ssmbench.data.physiome.models",
    "build_dataset": "ssmbench.data.physiome.dataset",
    "fetch_physiome": "ssmbench.data.physiome.fetch",
    "fold_assignment": "ssmbench.data.physiome.dataset",
    "load_model_files": "ssmbench.data.physiome.myokit_models",
    "locate_physiome": "ssmbench.data.physiome.fetch",
    "prepare_physiome": "ssmbench.data.physiome.prepare",
    "resolve_settings": "ssmbench.data.physiome.settings",
    "seed_words": "ssmbench.data.physiome.settings",
    "simulate_physiome": "ssmbench.data.physiome.simulate",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
