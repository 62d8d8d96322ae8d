"""The Python packages a compute node without a package index needs, as wheels: which
ones (the installed project's dependencies, at the versions installed here), their
download with pip where there is an index, and their install with pip where there is none.

* :func:`dependency_pins`: the dependencies of an installed distribution (``ssmbench``),
  followed through every installed distribution's ``Requires-Dist``, each pinned to the
  version installed. The environment decides what a marker means: a requirement whose
  distribution is not installed is one its marker (an older Python, another platform) or
  an extra not asked for left out here, and is left out; a requirement that names an extra
  (``extra == "x"``) counts only where that extra is asked for. A distribution named in
  ``without`` is left out with what only it needs (the CUDA build of torch that a node
  has already, DVC that only the login node runs).
* :func:`download_wheels`: ``pip download --no-deps`` of the pins, for this Python and
  platform or the node's (``--python-version``, ``--platform``), and ``pip wheel`` of those
  the index has only as source; pip reads its own settings (``PIP_INDEX_URL``,
  ``PIP_EXTRA_INDEX_URL``, ``PIP_FIND_LINKS``, ``pip.conf``): a pin with a local version
  (``torch==2.13.0+cpu``) needs the index that has it.
* :func:`install_wheels`: ``pip install --no-index --no-deps`` of those files into a folder
  (``--target``, for ``PYTHONPATH``) or into an interpreter's environment (a venv's): the
  same versions as here, whatever the node has, and never a look at an index.

The standard library and pip alone: the install runs before anything else is installed.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ssmbench.data.errors import DataError

_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_EXTRA_MARKER = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")


def normalise(name: str) -> str:
    """A distribution name as indexes compare them (PEP 503): ``Scikit_Learn`` ->
    ``scikit-learn``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse(requirement: str) -> tuple[str, set[str], set[str] | None] | None:
    """(name, extras it asks of its distribution, extras its marker names or None)."""
    head, _, marker = requirement.partition(";")
    match = _REQUIREMENT.match(head)
    if match is None:
        return None
    extras = {normalise(e) for e in (match.group(2) or "").split(",") if e.strip()}
    named = {normalise(e) for e in _EXTRA_MARKER.findall(marker)} or None
    return normalise(match.group(1)), extras, named


def installed(path: Iterable[str] | None = None) -> dict[str, importlib.metadata.Distribution]:
    """{normalised name: distribution} of the environment (``path``: folders searched
    instead of ``sys.path``); the first found of a name wins, as an import would."""
    found: dict[str, importlib.metadata.Distribution] = {}
    kwargs = {} if path is None else {"path": list(path)}
    for dist in importlib.metadata.distributions(**kwargs):
        name = dist.metadata["Name"]
        if name:
            found.setdefault(normalise(name), dist)
    return found


def dependency_pins(
    root: str, *, without: Iterable[str] = (), path: Iterable[str] | None = None
) -> list[tuple[str, str]]:
    """[(name, installed version)] of what the installed distribution ``root`` needs, root
    itself left out, sorted by name (the module docstring says how markers and ``without``
    count). DataError when ``root`` is not installed."""
    dists = installed(path)
    skip = {normalise(n) for n in without}
    root_name, root_extras, _ = _parse(root) or (normalise(root), set(), None)
    if root_name not in dists:
        raise DataError(
            f"{root}: not installed in this Python ({sys.executable}), so the packages it "
            f"needs cannot be read from its metadata; install the project (pip install -e .)"
        )
    asked: dict[str, set[str]] = {}
    queue = [(root_name, root_extras)]
    while queue:
        name, extras = queue.pop()
        if name in skip or name not in dists:
            continue
        if name in asked and extras <= asked[name]:
            continue
        asked[name] = asked.get(name, set()) | extras
        for requirement in dists[name].requires or []:
            parsed = _parse(requirement)
            if parsed is None:
                continue
            dep, dep_extras, marker_extras = parsed
            if marker_extras is not None and not marker_extras & asked[name]:
                continue
            queue.append((dep, dep_extras))
    asked.pop(root_name, None)
    return sorted((name, dists[name].version) for name in asked)


def wheel_name(path: Path) -> tuple[str, str]:
    """(normalised name, version) a wheel's file name gives."""
    parts = Path(path).name.split("-")
    if len(parts) < 5 or not path.name.endswith(".whl"):
        raise DataError(f"{path}: not a wheel's file name (name-version-...-platform.whl)")
    return normalise(parts[0]), parts[1]


def _pip(python: str, args: list[str], what: str) -> None:
    """``python -m pip <args>``; DataError with the end of pip's messages if it fails."""
    done = subprocess.run(
        [python, "-m", "pip", *args, "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = "\n  ".join((done.stderr or done.stdout).strip().splitlines()[-8:])
        raise DataError(f"{what}: pip failed (exit {done.returncode}):\n  {tail}")


def download_wheels(
    pins: list[tuple[str, str]],
    dest: Path,
    *,
    python_version: str | None = None,
    platforms: Iterable[str] = (),
    python: str = sys.executable,
) -> list[Path]:
    """A wheel of each pin in ``dest``; return the files, by name. ``pip download
    --no-deps`` takes each from the index (for the node's Python and platform where
    ``python_version`` and ``platforms`` name them, e.g. ``3.12`` and
    ``manylinux_2_28_x86_64``); a package the index has only as source is built here with
    ``pip wheel`` (some have no wheel: snakemake's connection-pool), which serves another
    node's Python only as a pure-Python wheel. DataError when pip cannot find or build one
    (pip's words say which), or a wheel built here does not fit the node."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    target = []
    if python_version:
        target += ["--python-version", python_version, "--implementation", "cp"]
    for platform in platforms:
        target += ["--platform", platform]
    with tempfile.TemporaryDirectory(prefix=".download-", dir=dest.parent) as tmp:
        _pip(
            python,
            ["download", "--no-deps", "-d", tmp, *target,
             *(f"{name}=={version}" for name, version in pins)],
            f"downloading {len(pins)} packages (leave one out with --without NAME, or give "
            "pip the index that has it: PIP_INDEX_URL, PIP_EXTRA_INDEX_URL)",
        )  # fmt: skip
        sources = []
        for path in sorted(Path(tmp).iterdir()):
            if path.name.endswith(".whl"):
                shutil.move(path, dest / path.name)
            else:
                sources.append(path)
        built = set(dest.glob("*.whl"))
        if sources:
            names = ", ".join(p.name for p in sources)
            _pip(python, ["wheel", "--no-deps", "-w", str(dest), *map(str, sources)],
                 f"building wheels of {names} (the index has no wheel of them)")  # fmt: skip
        built = set(dest.glob("*.whl")) - built
    if target and (
        compiled := sorted(p.name for p in built if not p.name.endswith("-none-any.whl"))
    ):
        raise DataError(
            f"{', '.join(compiled)}: built here from source for this Python and platform, "
            f"not the node's (--python-version, --platform): pack on a machine like the node, "
            f"or leave them out (--without) and install them there"
        )
    wheels = {wheel_name(p): p for p in sorted(dest.glob("*.whl"))}
    wanted = {(normalise(n), v) for n, v in pins}
    if missing := sorted(wanted - set(wheels)):
        raise DataError(
            f"pip brought no wheel of {', '.join(f'{n}=={v}' for n, v in missing)} into {dest}"
        )
    return [wheels[key] for key in sorted(wanted)]


def install_wheels(
    wheels: list[Path], *, site: Path | None = None, python: str = sys.executable
) -> None:
    """Install ``wheels`` with no index and no dependency resolution: into the folder
    ``site`` (``pip install --target``, replacing what an earlier install put there), or
    into ``python``'s environment. DataError naming pip's complaint (no pip in that Python,
    a wheel for another Python or platform)."""
    if not wheels:
        return
    args = ["install", "--no-index", "--no-deps", "--no-warn-script-location"]
    if site is not None:
        args += ["--target", str(site), "--upgrade"]
    where = f"into {site}" if site is not None else f"into the environment of {python}"
    _pip(
        python,
        [*args, *(str(w) for w in wheels)],
        f"installing {len(wheels)} wheels {where} (a wheel made for another Python or "
        f"platform: pack again with --python-version / --platform of this node; no pip: "
        f"{python} -m ensurepip --user)",
    )
