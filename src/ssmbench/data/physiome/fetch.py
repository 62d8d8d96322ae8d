"""Fetching the raw files of a Physiome-ODE dataset into ``<raw_dir>/<Name>/`` with their
``provenance.json``: in mode ``"generate"`` a copy of the model file(s) from the installed
myokit package (sha256 checked against the pinned release) or, for a model we wrote
(``package: "ssmbench"``), from ours (sha256 checked against its pin in
``models.PINNED_SHA256``), in mode ``"zenodo"`` the official archive (``zenodo.py``); and
the pre-flight check, without network, that a dataset can be had."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ssmbench.data.checksums import sha256_file
from ssmbench.data.download import check_url, install_staged, staged_path, staging
from ssmbench.data.errors import DataError
from ssmbench.data.physiome.models import MYOKIT_PINNED, PHYSIOME_MODELS, PINNED_SHA256
from ssmbench.data.physiome.myokit_models import entry_files, myokit_versions, raw_names
from ssmbench.data.physiome.settings import resolve_settings
from ssmbench.data.physiome.zenodo import URL_SETTING, fetch_zenodo, zenodo_dataset
from ssmbench.data.provenance import PROVENANCE, utc_now, verified_provenance
from ssmbench.io import atomic_write_json


def fetch_physiome(name: str, raw_dir: str | os.PathLike, settings: dict | None) -> dict:
    """Put the raw files of ``name`` in ``<raw_dir>/<name>/`` with ``provenance.json``;
    return the provenance. Mode ``"generate"``: copy the model file(s) from the installed
    myokit package, or from ssmbench's for a model of ours (no network). Mode
    ``"zenodo"``: download, verify and extract the official archive
    (``physiome/zenodo.py``). A folder already fetched in the same mode and intact (every
    recorded sha256, and in mode generate the pinned ones) is returned as it is, without
    network."""
    cfg = resolve_settings(name, settings)
    dest = Path(raw_dir) / name
    if cfg["mode"] == "generate":
        return _fetch_models(name, dest, cfg)
    return fetch_zenodo(name, dest, cfg)


def _missing_own_file(name: str, src: Path, rel: str) -> DataError:
    return DataError(
        f"Physiome dataset {name}: ssmbench's model file {src} is missing (it ships as the "
        f"package-data {rel}). Reinstall ssmbench from a complete checkout (pip install -e "
        f".), or set benchmarks.physiome.mode: zenodo."
    )


def _fetch_models(name: str, dest: Path, cfg: dict) -> dict:
    entry = PHYSIOME_MODELS[name]
    package = entry.get("package", "myokit")
    names = raw_names(entry)
    pins = {f"{name}/{names[role]}": PINNED_SHA256[rel] for role, rel in entry["files"].items()}
    existing = verified_provenance(dest, name, list(names.values()))
    if (
        existing is not None
        and existing.get("mode") == "generate"
        and existing.get("raw_files") == pins  # a copy of a file since changed is stale
        and not cfg["force"]
    ):
        return existing
    versions = myokit_versions()
    raw_files, sizes, origin = {}, {}, {}
    with staging(dest) as staged:
        for role, (rel, src) in entry_files(entry).items():
            if not src.is_file():
                if package == "ssmbench":
                    raise _missing_own_file(name, src, rel)
                raise DataError(
                    f"Physiome dataset {name}: myokit {versions['myokit']} has no {src}. "
                    f"Install myokit=={MYOKIT_PINNED} (pip install -e .), or set "
                    f"benchmarks.physiome.mode: zenodo."
                )
            digest = sha256_file(src)
            if digest != PINNED_SHA256[rel] and package == "ssmbench":
                raise DataError(
                    f"Physiome dataset {name}: {src} has sha256 {digest}, not the "
                    f"{PINNED_SHA256[rel]} pinned for it in "
                    f"ssmbench.data.physiome.models.PINNED_SHA256: the model file changed. "
                    f"Restore it (git checkout -- src/ssmbench/{rel}); if the change is "
                    f"meant, pin its new sha256 there and prepare {name} again."
                )
            if digest != PINNED_SHA256[rel]:
                raise DataError(
                    f"Physiome dataset {name}: {src} has sha256 {digest}, not the "
                    f"{PINNED_SHA256[rel]} of myokit {MYOKIT_PINNED}'s copy: the model "
                    f"changed. Install myokit=={MYOKIT_PINNED} (pip install -e .)."
                )
            fname = names[role]
            tmp = staged_path(dest, fname)
            shutil.copyfile(src, tmp)
            staged[fname] = tmp
            raw_files[f"{name}/{fname}"] = digest
            sizes[f"{name}/{fname}"] = tmp.stat().st_size
            origin[fname] = f"{package}/{rel}"
        install_staged(staged, dest)
    source_url = entry.get("source_url") or (
        f"https://pypi.org/project/myokit/{versions['myokit']}/"
    )
    prov = {
        "dataset": name,
        "source": package,
        "mode": "generate",
        "source_url": source_url,
        "model_files": origin,
        "format": entry["format"],
        "reference": entry["reference"],
        "raw_files": raw_files,
        "sizes": sizes,
        "versions": versions,
        "fetched": utc_now(),
    }
    atomic_write_json(dest / PROVENANCE, prov, sort_keys=False)
    return prov


def locate_physiome(name: str, settings: dict | None) -> None:
    """Raise DataError (naming the setting to fix) when ``name`` cannot be had: unknown,
    bad settings, generate mode without the model files (myokit's or ours), zenodo mode for a model
    that is not in the archive, a non-https URL, or zenodo mode while offline. Decided
    without network."""
    cfg = resolve_settings(name, settings)
    if cfg["mode"] == "generate":
        entry = PHYSIOME_MODELS[name]
        for rel, src in entry_files(entry).values():
            if not src.is_file():
                if entry.get("package", "myokit") == "ssmbench":
                    raise _missing_own_file(name, src, rel)
                raise DataError(
                    f"Physiome dataset {name}: the installed myokit has no {rel}. Install "
                    f"myokit=={MYOKIT_PINNED} (pip install -e .), or set "
                    f"benchmarks.physiome.mode: zenodo."
                )
        return
    zenodo_dataset(name, cfg)
    check_url(cfg["zenodo_url"], URL_SETTING)
    if cfg["offline"]:
        raise DataError(
            f"Physiome dataset {name}: mode zenodo needs network but "
            f"benchmarks.physiome.offline is true. Set benchmarks.physiome.mode: generate "
            f"(offline, from myokit's models) or offline: false."
        )
