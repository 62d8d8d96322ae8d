"""The non-deep baselines of the MS4N study: QUANT, Hydra and extremely randomised trees.

They are not trained by gradient descent, so they do not go through the deep protocol's
epochs and early stopping; ``ssmbench.train.protocol`` fits each once on the fold's
training rows and scores it on the fold's test rows, writing a record of the same shape
(``params``/``mmac`` null: "not applicable"; the report's figures place them at the MS4N
paper's proxies of 20K parameters and 1 FLOP, ``COMPLEXITY_PROXY``).

Sources
-------
* **QUANT**: Dempster, Schmidt & Webb (2024), "QUANT: a minimalist interval method for time
  series classification" (https://github.com/angus924/quant); used through aeon's
  ``QUANTClassifier`` (aeon 1.6): quantiles over dyadic intervals of the series, its
  first difference, second difference and Fourier transform (``interval_depth`` 6,
  ``quantile_divisor`` 4), then ExtraTrees with 200 trees, entropy criterion,
  ``max_features`` 0.1 (QUANT's own settings, aeon's defaults).
* **Hydra**: Dempster, Schmidt & Webb (2023), "Hydra: competing convolutional kernels for
  fast and accurate time series classification" (https://github.com/angus924/hydra);
  through aeon's ``HydraClassifier`` (8 kernels per group, 64 groups; a ridge classifier
  with cross-validated regularisation on the standardised features).
* **ExtraTrees** (the MS4N paper's "ET", from the MONSTER benchmark's baselines):
  scikit-learn's ``ExtraTreesClassifier`` on the raw series flattened to C·L features.
  We use QUANT's forest settings (200 trees, entropy, ``max_features`` 0.1) for the
  standalone forest too; the MONSTER paper's exact ET settings were not available to us.

Choices and deviations
----------------------
* Training rows: the deep models train on the fold's non-test rows minus a 10%
  validation split used for early stopping. These models have nothing to stop early or
  select, so by default (``fit_on_validation: true``) they fit on *all* non-test rows, as
  the MONSTER benchmark's baselines did; ``fit_on_validation: false`` fits on the deep
  models' training rows only and scores the validation rows (recorded as val loss and
  accuracy). The test rows are never seen before scoring.
* Seeds: the run's seed is the estimator's ``random_state``.
* Loss: the test "loss" is the log loss of ``predict_proba`` (Hydra's ridge classifier
  has no probabilities: aeon returns one-hot, so its log loss is clipped at 1e-15).
* Unequal-length UEA series arrive zero-padded, as for every model (``data/uea.py``).
* The whole training part is loaded into memory (aeon and scikit-learn need arrays); on
  the largest MONSTER sets this needs the memory the MONSTER authors used.
"""

from __future__ import annotations

import numpy as np

__all__ = ["COMPLEXITY_PROXY", "ExtraTreesModel", "HydraModel", "QuantModel"]

#: What the MS4N paper's figures plot for models without parameters or MACs.
COMPLEXITY_PROXY = {"params": 20_000, "mmac": 1e-6}


class _Estimator:
    """The estimator contract: ``fit(X, y)`` on float32 (N, C, L) and int64 labels,
    ``predict_proba(X) -> (N, K)`` over the classes 0..K-1 (a class absent from the
    training rows gets probability 0)."""

    KIND = "estimator"
    HYPERPARAMS: dict[str, type] = {}

    def __init__(self, n_channels: int, n_classes: int, length: int | None = None, **hp):
        self.n_channels, self.n_classes, self.length = n_channels, n_classes, length
        self.fit_on_validation = bool(hp.pop("fit_on_validation", True))
        self.hyperparams = hp
        self.random_state = 0
        self.n_jobs = 1
        self._estimator = None

    def configure(self, random_state: int, n_jobs: int = 1) -> _Estimator:
        self.random_state, self.n_jobs = int(random_state), max(1, int(n_jobs))
        return self

    def _make(self):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _features(self, X: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(X, dtype=np.float32)

    def fit(self, X: np.ndarray, y: np.ndarray) -> _Estimator:
        self._estimator = self._make()
        self._estimator.fit(self._features(X), np.asarray(y, dtype=np.int64))
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        proba = np.asarray(self._estimator.predict_proba(self._features(X)), dtype=np.float64)
        full = np.zeros((len(proba), self.n_classes))
        full[:, np.asarray(self._estimator.classes_, dtype=np.int64)] = proba
        return full


class QuantModel(_Estimator):
    TEST_PARAMS = {"n_estimators": 20}
    HYPERPARAMS = {
        "interval_depth": int,
        "quantile_divisor": int,
        "n_estimators": int,
        "max_features": float,
        "fit_on_validation": bool,
    }

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        interval_depth: int = 6,
        quantile_divisor: int = 4,
        n_estimators: int = 200,
        max_features: float = 0.1,
        fit_on_validation: bool = True,
    ) -> None:
        super().__init__(
            n_channels,
            n_classes,
            length,
            interval_depth=interval_depth,
            quantile_divisor=quantile_divisor,
            n_estimators=n_estimators,
            max_features=max_features,
            fit_on_validation=fit_on_validation,
        )

    def _make(self):
        from aeon.classification.interval_based import QUANTClassifier
        from sklearn.ensemble import ExtraTreesClassifier

        hp = self.hyperparams
        forest = ExtraTreesClassifier(
            n_estimators=hp["n_estimators"],
            max_features=hp["max_features"],
            criterion="entropy",
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )
        return QUANTClassifier(
            interval_depth=hp["interval_depth"],
            quantile_divisor=hp["quantile_divisor"],
            estimator=forest,
            random_state=self.random_state,
        )


class HydraModel(_Estimator):
    TEST_PARAMS = {"n_groups": 8}
    HYPERPARAMS = {"n_kernels": int, "n_groups": int, "fit_on_validation": bool}

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        n_kernels: int = 8,
        n_groups: int = 64,
        fit_on_validation: bool = True,
    ) -> None:
        super().__init__(
            n_channels,
            n_classes,
            length,
            n_kernels=n_kernels,
            n_groups=n_groups,
            fit_on_validation=fit_on_validation,
        )

    def _make(self):
        from aeon.classification.convolution_based import HydraClassifier

        return HydraClassifier(
            n_kernels=self.hyperparams["n_kernels"],
            n_groups=self.hyperparams["n_groups"],
            n_jobs=self.n_jobs,
            random_state=self.random_state,
        )


class ExtraTreesModel(_Estimator):
    TEST_PARAMS = {"n_estimators": 20}
    HYPERPARAMS = {
        "n_estimators": int,
        "max_features": float,
        "fit_on_validation": bool,
    }

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        n_estimators: int = 200,
        max_features: float = 0.1,
        fit_on_validation: bool = True,
    ) -> None:
        super().__init__(
            n_channels,
            n_classes,
            length,
            n_estimators=n_estimators,
            max_features=max_features,
            fit_on_validation=fit_on_validation,
        )

    def _make(self):
        from sklearn.ensemble import ExtraTreesClassifier

        return ExtraTreesClassifier(
            n_estimators=self.hyperparams["n_estimators"],
            max_features=self.hyperparams["max_features"],
            criterion="entropy",
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )

    def _features(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        return X.reshape(len(X), -1)  # (N, C * L): the raw series as features
