"""The published figures shipped in ``ssmbench/reference/`` (see its README): the MS4N
paper's, the Log-NCDE benchmark's UEA-6 accuracies and the Physiome-ODE leaderboard."""

from __future__ import annotations

from importlib import resources

import pandas as pd

from .errors import RecordError

_PACKAGE = "ssmbench"
_FOLDER = "reference"


def _read_csv(name: str, columns: tuple[str, ...] = (), **kwargs) -> pd.DataFrame:
    """A reference file as a frame; `RecordError` naming it when it cannot be read as the
    table it is (a cell that is not of its column's type, a column of ``columns`` or of a
    ``dtype`` dict missing, not UTF-8): these files are the package's, so one that does not
    read was changed by hand."""
    ref = resources.files(_PACKAGE).joinpath(_FOLDER, name)
    try:
        with ref.open("r", encoding="utf-8") as fh:
            frame = pd.read_csv(fh, **kwargs)
    except (OSError, ValueError, pd.errors.ParserError) as exc:  # UnicodeDecodeError too
        raise _damaged(ref, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
    dtype = kwargs.get("dtype")
    required = dict.fromkeys([*columns, *(dtype if isinstance(dtype, dict) else ())])
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise _damaged(ref, f"missing column(s) {', '.join(missing)}")
    return frame


def _damaged(ref, why: str) -> RecordError:
    return RecordError(
        f"{ref}: the published figures shipped with ssmbench do not read ({why}); the file "
        f"was changed: restore it (git checkout -- src/ssmbench/{_FOLDER}/{ref.name}, or "
        f"reinstall the package)"
    )


def read_reference_text(name: str, columns: tuple[str, ...]) -> pd.DataFrame:
    """A reference file with every cell as printed (strings; "" where empty), for what
    depends on the printed decimals; ``columns``: those the caller reads."""
    return _read_csv(name, columns, dtype=str, keep_default_na=False)


def load_published_errors() -> pd.DataFrame:
    """Tables 3 and 5: ``benchmark, dataset, model, error_mean, error_std`` (error in 0–1)."""
    df = _read_csv(
        "published_errors.csv",
        dtype={
            "benchmark": str,
            "dataset": str,
            "model": str,
            "error_mean": float,
            "error_std": float,
        },
    )
    return df


def load_published_summary() -> pd.DataFrame:
    """Tables 1–2 and the text: ``source, benchmark, model, metric, value``."""
    return _read_csv(
        "published_summary.csv",
        dtype={"source": str, "benchmark": str, "model": str, "metric": str, "value": float},
    )


def load_published_uea6() -> pd.DataFrame:
    """The Log-NCDE benchmark's UEA-6 test accuracies: ``dataset, model, n_seeds,
    accuracy_mean, accuracy_std`` (accuracy in 0–1, population std over the seeds)."""
    return _read_csv(
        "published_uea6_logncde.csv",
        dtype={"dataset": str, "model": str, "n_seeds": int, "accuracy_mean": float,
               "accuracy_std": float},
    )  # fmt: skip


def load_published_physiome() -> pd.DataFrame:
    """The Physiome-ODE leaderboard (github kloetergensc/Physiome-ODE @4829169, README):
    ``code, dataset, domain, model, mse_mean, mse_std`` for its 50 datasets and 6 models
    (GRU-ODE-Bayes, LinODENet, CRU, Neural Flows, GraFITi, GraFITi-C), in the README's
    row order. ``code`` is the README's short name (DUP01, HOD01, ...), ``dataset`` the
    archive's model name (``resources/Top50_final.csv``); the MSE is the test MSE pooled
    over the observed targets, in the archive's normalised units, mean ± std over the 5
    folds as printed (3 decimals; which std the README does not say)."""
    return _read_csv(
        "published_physiome_leaderboard.csv",
        dtype={"code": str, "dataset": str, "domain": str, "model": str, "mse_mean": float,
               "mse_std": float},
    )  # fmt: skip


#: Table 4 abbreviates satellite imagery as "SI"; the catalog (and MONSTER) say Satellite.
DOMAIN_ALIASES = {"SI": "Satellite"}


def load_published_domains_monster() -> pd.DataFrame:
    """Table 4: ``domain, metric, model, value`` (NaN where the paper has no figure), with
    the catalog's domain names (SI -> Satellite)."""
    df = _read_csv(
        "published_domains_monster.csv",
        dtype={"domain": str, "metric": str, "model": str, "value": float},
    )
    df["domain"] = df["domain"].replace(DOMAIN_ALIASES)
    return df


def load_authors_protocol() -> pd.DataFrame:
    """What the MS4N authors' code does where the paper is silent: ``benchmark (* = all),
    setting, authors (the value; None where the code has none: see has_value), source,
    note, has_value``."""
    import json

    df = _read_csv(
        "ms4n_authors_protocol.csv",
        ("benchmark", "setting", "authors", "source", "note"),
        dtype=str,
        keep_default_na=False,
    )
    df["has_value"] = df["authors"] != ""
    df["authors"] = [json.loads(v) if v else None for v in df["authors"]]
    return df
