"""Loading the Physiome-ODE model files with myokit: the myokit import (with the error that
says how to install it), where a model file lies in its installed package (myokit's, or
ssmbench's own for a model we wrote: ``models.OWN_MODEL_DIR``), reading the raw copies of a
model and its pacing protocol, the constants that are perturbed, and the myokit and
SUNDIALS versions for the record."""

from __future__ import annotations

import warnings
from pathlib import Path, PurePosixPath

from ssmbench.data.errors import DataError
from ssmbench.data.physiome.models import MYOKIT_PINNED


def import_myokit():
    try:
        import myokit
    except ImportError as e:  # pragma: no cover - myokit is a pinned dependency
        raise DataError(
            f"Physiome-ODE generation needs myokit ({e}). Install the pinned dependencies "
            f"(pip install -e .; myokit=={MYOKIT_PINNED} needs the SUNDIALS headers), or set "
            f"benchmarks.physiome.mode: zenodo."
        ) from e
    return myokit


#: the packages a model file can come from (``PHYSIOME_MODELS[name]["package"]``)
PACKAGES = ("myokit", "ssmbench")


def package_file(rel: str, package: str = "myokit") -> Path:
    """Where ``rel`` lies inside the installed ``package``: myokit's (the files it ships)
    or ssmbench's (our own model files, its package-data)."""
    if package == "myokit":
        return Path(import_myokit().__file__).parent / rel
    if package == "ssmbench":
        import ssmbench

        return Path(ssmbench.__file__).parent / rel
    raise DataError(
        f"model file {rel}: unknown package {package!r} (known: {', '.join(PACKAGES)}); fix "
        f"its entry in ssmbench.data.physiome.models.PHYSIOME_MODELS."
    )


def entry_files(entry: dict) -> dict[str, tuple[str, Path]]:
    """role -> (path inside the package, installed path) of ``entry``'s model files."""
    package = entry.get("package", "myokit")
    return {role: (rel, package_file(rel, package)) for role, rel in entry["files"].items()}


def raw_names(entry: dict) -> dict[str, str]:
    """role -> file name in the raw folder."""
    return {role: PurePosixPath(rel).name for role, rel in entry["files"].items()}


def load_model_files(entry: dict, folder: Path):
    """``(model, protocol)`` from the raw copies of ``entry``'s files in ``folder``. A file
    that myokit cannot read raises DataError naming it."""
    myokit = import_myokit()
    names = raw_names(entry)
    path = folder / names["model"]
    try:
        if not path.is_file():
            raise FileNotFoundError("no such file")
        if entry["format"] == "sbml":
            import myokit.formats

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "Unknown SBML namespace ... level2/version3"
                model = myokit.formats.importer("sbml").model(str(path))
            protocol = None
        else:
            model, protocol, _ = myokit.load(str(path))
        model.validate()
        if "protocol" in names:
            path = folder / names["protocol"]
            protocol = myokit.load_protocol(str(path))
    except DataError:
        raise
    except Exception as e:  # myokit.ParseError, SBMLParsingError, IntegrityError, OSError...
        raise DataError(
            f"{path}: cannot be read as a myokit model file ({type(e).__name__}: {e}). The "
            f"file is corrupt or truncated: delete {folder} and run the fetch step again."
        ) from e
    if model.count_states() == 0:
        raise DataError(f"{path}: the model has no state variables; fetch it again.")
    return model, protocol


def perturbable_constants(model) -> list:
    """Literal constants not bound to an external value, sorted by qualified name."""
    out = [
        v for v in model.variables(const=True, deep=True) if v.is_literal() and v.binding() is None
    ]
    return sorted(out, key=lambda v: v.qname())


def myokit_versions() -> dict:
    myokit = import_myokit()
    info = {"myokit": myokit.__version__}
    try:
        info["sundials"] = str(myokit.Sundials.version())
    except Exception:  # noqa: BLE001 - informational only
        info["sundials"] = None
    return info
