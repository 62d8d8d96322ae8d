"""The options of the TIDES family's classifiers (TIDES, S5, MambaS; ``tides.py``): one
frozen ``TIDESConfig`` with every option's default and where it comes from, and
``FamilyOptions``, which of them a family takes from params.yaml and which it fixes.

The defaults are the TIDES reference's UEA settings (uea/main.py:358-390, ``train_trial``;
the module docstring of ``tides.py``, "Facts taken from the reference", cites each), which
are also the defaults of its ``TIDESClassifier``; the layer's own parts (modes, maps,
discretisations, initialisations) are described in ``tides_ssm.py`` and
``tides_parts.py``.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field

from .tides_parts import MODES, PROJ_INITS, RE_MAPS, STEP_MODES
from .tides_scan import DISCRETIZATIONS

__all__ = ["BLOCK_GLUS", "FRAME_OPTIONS", "LAYER_OPTIONS", "FamilyOptions", "TIDESConfig"]

#: The block's feed-forward GLU: the TIDES reference's (with a projection) or S5's plain one.
BLOCK_GLUS = ("expanded", "plain")


def _choice(default: str, choices: tuple[str, ...]) -> str:
    return field(default=default, metadata={"choices": choices})


@dataclass(frozen=True)
class TIDESConfig:
    """Every option of a TIDES-family classifier, defaulting to the reference's UEA
    settings (uea/main.py:358-390; tides/tides.py where a line is named)."""

    # --- the classifier around the layers (``tides._TimeAwareSSMClassifier``)
    #: H: the width of the encoder, of every block and of the head's input
    d_model: int = 64
    #: the number of blocks (BatchNorm -> layer -> GELU -> GLU, residual; tides.py:886-970)
    n_layers: int = 2
    #: the blocks' dropout, after the layer's GELU and after the GLU
    dropout: float = 0.05
    #: the input encoder's GLU layers at the input width before its Linear(C, H)
    encoder_depth: int = 1
    #: the block GLU's inner width, int(H ff_mult)
    ff_mult: float = 1.0
    #: the block's GLU: "expanded" (the TIDES reference's, with a projection) or "plain"
    #: (S5's, w1 z * σ(w2 z); the Log-NCDE benchmark's S5)
    block_glu: str = _choice("expanded", BLOCK_GLUS)
    #: t / (L − 1) from the steps as one more input channel (the Log-NCDE benchmark's S5
    #: ``time``, the drop-rate reference's Mamba models)
    time_channel: bool = False
    #: the observation mask as C more input channels (off in every configuration here)
    mask_channels: bool = False

    # --- the layer (``tides_ssm.TIDESSSM``)
    #: P: the HiPPO-LegS size of the state
    ssm_size: int = 64
    #: the block-diagonal HiPPO blocks (P / ssm_blocks modes each; tides.py:484-504)
    ssm_blocks: int = 8
    #: Re Λ static ("lti") or projected from the input ("input_dependent")
    lambda_re_mode: str = _choice("input_dependent", MODES)
    #: Im Λ, likewise
    lambda_im_mode: str = _choice("lti", MODES)
    #: B and C, likewise
    bc_mode: str = _choice("input_dependent", MODES)
    #: Δ: the physical step times exp(log_step) ("physical"), or learnt from the input and
    #: the step (MambaS' softplus(W [z_t, Δt_t] + b))
    step_mode: str = _choice("physical", STEP_MODES)
    #: the input-dependent B/C's projection: rank r > 0 low-rank, 0 full, < 0 one complex
    #: scale per state times the static B, C
    rank: int = 8
    #: the GLU layers of the Λ projectors before their last Linear (tides.py:546-572)
    lambda_encoder_depth: int = 0
    #: the map of the raw Re Λ (tides.py:507-515, 653-679)
    lambda_re_map: str = _choice("standard", RE_MAPS)
    #: clamp Re Λ <= -1e-4 after the map
    clip_eigs: bool = False
    #: keep half of each block's modes and their conjugates implicit (tides.py:435-440)
    conj_sym: bool = False
    #: real Λ, B, C and state, initialised as the reference's toy models
    real_lambda: bool = False
    #: a second, reverse scan read by its own C
    bidirectional: bool = False
    #: how Λ and B are discretised: "zoh" or "bilinear"
    discretization: str = _choice("zoh", DISCRETIZATIONS)
    #: log_step ~ U[log dt_min, log dt_max] (tides.py:147, 536)
    dt_min: float = 0.001
    dt_max: float = 0.1
    #: RMSNorm on the projections (tides.py:636-649)
    proj_norm: bool = True
    #: the projectors' last weight: zero ("zeros") or N(0, 0.01²) ("random")
    proj_init: str = _choice("zeros", PROJ_INITS)

    @classmethod
    def choices(cls) -> dict[str, tuple[str, ...]]:
        """``{option: its allowed values}`` of the options that name a choice."""
        return {f.name: f.metadata["choices"] for f in dataclasses.fields(cls) if f.metadata}

    @classmethod
    def types(cls) -> dict[str, type]:
        """``{option: its type}`` (int, float, bool or str), in the order of the fields."""
        hints = typing.get_type_hints(cls)
        return {f.name: hints[f.name] for f in dataclasses.fields(cls)}

    def layer_options(self) -> dict:
        """The keyword arguments of ``TIDESSSM`` (besides ``d_model``)."""
        return {name: getattr(self, name) for name in LAYER_OPTIONS}


#: the options of the classifier around the layers; every other option is the layer's
FRAME_OPTIONS = (
    "d_model",
    "n_layers",
    "dropout",
    "encoder_depth",
    "ff_mult",
    "block_glu",
    "time_channel",
    "mask_channels",
)
#: the options the layer takes (``TIDESSSM``'s keyword arguments besides d_model)
LAYER_OPTIONS = tuple(
    f.name for f in dataclasses.fields(TIDESConfig) if f.name not in FRAME_OPTIONS
)


@dataclass(frozen=True)
class FamilyOptions:
    """One family's view of ``TIDESConfig``: the options params.yaml may set for it
    (``names``, in the order its constructor lists them), the values that make it the
    family it is (``fixed``) and where its defaults differ from the config's
    (``defaults``). Every other option keeps the config's default."""

    names: tuple[str, ...]
    fixed: Mapping[str, object] = field(default_factory=dict)
    defaults: Mapping[str, object] = field(default_factory=dict)

    def config(self, family: str, config: TIDESConfig | None, options: Mapping) -> TIDESConfig:
        """The family's config: ``config`` as given (it must hold the fixed values), or
        built from the keyword ``options``; an option the family does not take is a
        TypeError naming it, as an unknown keyword argument is."""
        unknown = sorted(set(options) - set(self.names))
        if unknown:
            raise TypeError(
                f"{family}() got an unexpected keyword argument {unknown[0]!r} (it takes "
                f"{', '.join(self.names)})"
            )
        if config is None:
            return TIDESConfig(**{**self.defaults, **options, **self.fixed})
        if options:
            raise TypeError(f"{family}(): give a config or options by keyword, not both")
        wrong = [name for name, value in self.fixed.items() if getattr(config, name) != value]
        if wrong:
            raise ValueError(
                f"{family} has "
                + ", ".join(f"{name} {self.fixed[name]!r}" for name in wrong)
                + "; the config has "
                + ", ".join(f"{name} {getattr(config, name)!r}" for name in wrong)
            )
        return config

    def parameters(self) -> list[inspect.Parameter]:
        """The options as keyword-only constructor parameters, typed, with the family's
        defaults (what ``hyperparams_of`` and the registry read)."""
        types, default = TIDESConfig.types(), TIDESConfig()
        return [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=self.defaults.get(name, getattr(default, name)),
                annotation=types[name],
            )
            for name in self.names
        ]

    def choices(self) -> dict[str, tuple[str, ...]]:
        """``CHOICES`` of the family: the allowed values of its options that name one."""
        return {k: v for k, v in TIDESConfig.choices().items() if k in self.names}
