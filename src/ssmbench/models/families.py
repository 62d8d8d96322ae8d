"""The family table: params.yaml ``family`` name -> model class.

Kept apart from the registry's functions (``registry.py``) so that registering a new
family changes no other family's code digest (``ssmbench.staleness``).
"""

from __future__ import annotations

from .convtran import ConvTranClassifier
from .estimators import ExtraTreesModel, HydraModel, QuantModel
from .fcn import FCNClassifier, MonsterFCNClassifier
from .inception import HInceptionClassifier
from .linodenet import LinODEnetModel
from .logncde import LogNCDEClassifier
from .mamba import Mamba1Classifier, Mamba2Classifier
from .minimal_ssm import MinimalSSMClassifier
from .ms4 import MS4Classifier, S4DClassifier
from .rformer import RFormerClassifier
from .rnn import GRUClassifier, LSTMClassifier
from .tides import MambaSClassifier, S5Classifier, TIDESClassifier
from .transformers import InformerClassifier, ITransformerClassifier, TransformerClassifier

#: family name (params.yaml ``family``) -> model class. A class's constructor declares the
#: hyperparameters it accepts, with their types (``HYPERPARAMS``, ``hyperparams.py``).
FAMILIES: dict[str, type] = {
    "ms4": MS4Classifier,
    "s4d": S4DClassifier,
    "convtran": ConvTranClassifier,
    "mamba1": Mamba1Classifier,
    "mamba2": Mamba2Classifier,
    "gru": GRUClassifier,
    "lstm": LSTMClassifier,
    "fcn": FCNClassifier,
    "fcn_monster": MonsterFCNClassifier,
    "hinception": HInceptionClassifier,
    "transformer": TransformerClassifier,
    "informer": InformerClassifier,
    "itransformer": ITransformerClassifier,
    # time-aware (``INPUTS = ("values", "steps")``): the TIDES paper's family, tides.py
    "tides": TIDESClassifier,
    "s5": S5Classifier,
    "mambas": MambaSClassifier,
    # the TIDES paper's irregular-time baselines: signature patches + causal Transformer,
    # a neural CDE by the Log-ODE method, a latent linear ODE with an observation filter
    "rformer": RFormerClassifier,
    "logncde": LogNCDEClassifier,
    "linodenet": LinODEnetModel,
    # the TIDES paper's Fading Flash models (S5, TIDES, MambaS by their modes)
    "minimal_ssm": MinimalSSMClassifier,
    # non-deep (fit once, no epochs; ``is_estimator``): see estimators.py
    "quant": QuantModel,
    "hydra": HydraModel,
    "extratrees": ExtraTreesModel,
}
