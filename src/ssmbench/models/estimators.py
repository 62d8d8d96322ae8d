"""The non-deep baselines of the MS4N study: QUANT, Hydra and extremely randomised trees.

They are not trained by gradient descent, so they do not go through the deep protocol's
epochs and early stopping; ``ssmbench.train.protocol`` fits each once on the fold's
training rows and scores it on the fold's test rows, writing a record of the same shape
(``params``/``mmac`` null: "not applicable"; the report's figures place them at the MS4N
paper's proxies of 20K parameters and 1 FLOP, ``ssmbench.report.style.COMPLEXITY_PROXY``).

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
* Unequal-length UEA series arrive zero-padded, as for every model (``data/uea/prepare.py``).
* The whole training part is loaded into memory (aeon and scikit-learn need arrays); on
  the largest MONSTER sets this needs the memory the MONSTER authors used.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np

from .hyperparams import ConstructorHyperparams

__all__ = ["Estimator", "ExtraTreesModel", "HydraModel", "QuantModel"]


class Estimator:
    """The estimator contract: ``fit(X, y)`` on float32 (N, C, L) and int64 labels,
    ``predict_proba(X) -> (N, K)`` over the classes 0..K-1 (a class absent from the
    training rows gets probability 0).

    A family is a subclass with a static ``make(random_state, n_jobs, *, **hyperparameters)``
    that returns the unfitted aeon/scikit-learn classifier. Its keyword-only parameters
    (annotated, with their defaults) and ``fit_on_validation`` are the family's
    constructor hyperparameters: the class's signature is
    ``(n_channels, n_classes, length=None, *, <make's keywords>, fit_on_validation=True)``.
    """

    KIND = "estimator"
    HYPERPARAMS = ConstructorHyperparams()
    make: Callable

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        contract = [
            p
            for p in inspect.signature(Estimator, eval_str=True).parameters.values()
            if p.kind is not p.VAR_KEYWORD
        ]
        own = [
            p
            for p in inspect.signature(cls.make, eval_str=True).parameters.values()
            if p.kind is p.KEYWORD_ONLY
        ]
        cls.__signature__ = inspect.Signature(contract[:3] + own + contract[3:])

    def __init__(
        self,
        n_channels: int,
        n_classes: int,
        length: int | None = None,
        *,
        fit_on_validation: bool = True,
        **hyperparams,
    ) -> None:
        bound = inspect.signature(type(self)).bind(
            n_channels, n_classes, length, fit_on_validation=fit_on_validation, **hyperparams
        )
        bound.apply_defaults()
        self.n_channels, self.n_classes, self.length = n_channels, n_classes, length
        self.fit_on_validation = bool(fit_on_validation)
        contract = ("n_channels", "n_classes", "length", "fit_on_validation")
        self.hyperparams = {k: v for k, v in bound.arguments.items() if k not in contract}
        self.random_state = 0
        self.n_jobs = 1
        self._estimator = None

    def configure(self, random_state: int, n_jobs: int = 1) -> Estimator:
        self.random_state, self.n_jobs = int(random_state), max(1, int(n_jobs))
        return self

    def _features(self, X: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(X, dtype=np.float32)

    def fit(self, X: np.ndarray, y: np.ndarray) -> Estimator:
        self._estimator = self.make(self.random_state, self.n_jobs, **self.hyperparams)
        self._estimator.fit(self._features(X), np.asarray(y, dtype=np.int64))
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        proba = np.asarray(self._estimator.predict_proba(self._features(X)), dtype=np.float64)
        full = np.zeros((len(proba), self.n_classes))
        full[:, np.asarray(self._estimator.classes_, dtype=np.int64)] = proba
        return full


class QuantModel(Estimator):
    """QUANT: aeon's ``QUANTClassifier`` with QUANT's own ExtraTrees forest."""

    #: the MS4N paper's group of the family (its Figures 3 and 7; report.style colours)
    GROUP = "NonDL"

    TEST_PARAMS = {"n_estimators": 20}

    @staticmethod
    def make(
        random_state: int,
        n_jobs: int,
        *,
        interval_depth: int = 6,
        quantile_divisor: int = 4,
        n_estimators: int = 200,
        max_features: float = 0.1,
    ):
        from aeon.classification.interval_based import QUANTClassifier
        from sklearn.ensemble import ExtraTreesClassifier

        forest = ExtraTreesClassifier(
            n_estimators=n_estimators,
            max_features=max_features,
            criterion="entropy",
            random_state=random_state,
            n_jobs=n_jobs,
        )
        return QUANTClassifier(
            interval_depth=interval_depth,
            quantile_divisor=quantile_divisor,
            estimator=forest,
            random_state=random_state,
        )


class HydraModel(Estimator):
    """Hydra: aeon's ``HydraClassifier``."""

    #: the MS4N paper's group of the family (its Figures 3 and 7; report.style colours)
    GROUP = "NonDL"

    TEST_PARAMS = {"n_groups": 8}

    @staticmethod
    def make(random_state: int, n_jobs: int, *, n_kernels: int = 8, n_groups: int = 64):
        from aeon.classification.convolution_based import HydraClassifier

        return HydraClassifier(
            n_kernels=n_kernels, n_groups=n_groups, n_jobs=n_jobs, random_state=random_state
        )


class ExtraTreesModel(Estimator):
    """ExtraTrees (the MS4N paper's "ET") on the raw series flattened to C·L features."""

    #: the MS4N paper's group of the family (its Figures 3 and 7; report.style colours)
    GROUP = "NonDL"

    TEST_PARAMS = {"n_estimators": 20}

    @staticmethod
    def make(random_state: int, n_jobs: int, *, n_estimators: int = 200, max_features: float = 0.1):
        from sklearn.ensemble import ExtraTreesClassifier

        return ExtraTreesClassifier(
            n_estimators=n_estimators,
            max_features=max_features,
            criterion="entropy",
            random_state=random_state,
            n_jobs=n_jobs,
        )

    def _features(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        return X.reshape(len(X), -1)  # (N, C * L): the raw series as features
