"""The family table: params.yaml ``family`` name -> model class.

Kept apart from the registry's functions (``registry.py``) so that registering a new
family changes no other family's code digest (``ssmbench.staleness``).

Besides the built-in names, the table answers for any ``package.module:Class`` a params
entry names (``imported.py``): a researcher's own model, imported where it is named.
"""

from __future__ import annotations

from .convtran import ConvTranClassifier
from .estimators import ExtraTreesModel, HydraModel, QuantModel
from .fcn import FCNClassifier, MonsterFCNClassifier
from .imported import FamilyImportError, import_family, is_import_path
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


class FamilyTable(dict):
    """The built-in families by name; a ``package.module:Class`` key is imported on first
    use (``imported.import_family``) and kept apart from the built-ins, so iterating the
    table lists the built-ins only. A key that is neither is not in the table;
    ``imported.entry_problems`` says why an import path fails."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._imported: dict[str, type] = {}

    def __missing__(self, family: str) -> type:
        if not is_import_path(family):
            raise KeyError(family)
        if family not in self._imported:
            try:
                self._imported[family] = import_family(family)
            except FamilyImportError as exc:
                raise KeyError(str(exc)) from None
        return self._imported[family]

    def __contains__(self, family: object) -> bool:
        try:
            self[family]
        except (KeyError, TypeError):
            return False
        return True

    def get(self, family, default=None):
        return self[family] if family in self else default


#: family name (params.yaml ``family``) -> model class. A class's constructor declares the
#: hyperparameters it accepts, with their types (``HYPERPARAMS``, ``hyperparams.py``).
FAMILIES: dict[str, type] = FamilyTable(
    {
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
)
