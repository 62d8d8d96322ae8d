"""Installs the project into a venv: with uv when it can be had, else with pip.

    python scripts/install_packages.py .venv/bin/python '.[test]'   (what `make setup` runs)

uv resolves and installs the same pins (pyproject.toml) about 5x faster than pip on a
2-core x86 CPU (docs/benchmarks.md). It is used when it is on PATH or in the venv, or when
pip can install it into the venv (a 20 MB wheel); otherwise, or when
``SSMBENCH_INSTALLER=pip``, pip does the work. ``SSMBENCH_INSTALLER=uv`` makes a uv failure an error instead of a fallback.

uv does not read pip's configuration (pip.conf, PIP_* variables), where clusters and
offline machines keep their package mirrors, local wheel folders and constraints. So
the settings of ``pip config list`` that choose packages are passed to uv as its options;
with any other such setting (e.g. ``only-binary``) uv might pick other files, so pip is used
and the setting named. Indexes are searched as pip does (``--index-strategy
unsafe-best-match``: the best version across all of them), not uv's first-index default.
The pins are the same either way; unpinned transitive dependencies may resolve to other
versions (uv's resolver is not pip's), as between two pip runs on different days.

The installer used is printed and written to ``<venv>/.installer``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

#: pip settings (``pip config list`` keys, last component) -> uv's option for each value
UV_OPTIONS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
    "trusted-host": "--allow-insecure-host",
}
#: pip settings that do not change which files are installed
IRRELEVANT = {
    "cert", "default-timeout", "timeout", "disable-pip-version-check", "no-input",
    "progress-bar", "quiet", "verbose", "no-color", "retries", "cache-dir", "no-cache-dir",
    "root-user-action", "break-system-packages", "user-agent",
    "config-file",  # pip has read it: its settings are in the list
}  # fmt: skip
INSTALLERS = ("auto", "uv", "pip")


class Unsupported(Exception):
    """A pip setting uv cannot be given: the install goes to pip."""


def pip_settings(python: str) -> dict[str, str]:
    """What ``pip install`` would use from ``pip config list`` as {key: value}: the
    ``global`` section, then ``install`` over it, then PIP_* variables (``:env:``) over
    both, as pip ranks them; other commands' sections are not pip install's."""
    out = subprocess.run(
        [python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    rank = {"global": 0, "install": 1, ":env:": 2}
    found: list[tuple[int, str, str]] = []
    for line in out.splitlines():
        key, sep, value = line.partition("=")
        section, dot, name = key.rpartition(".")  # "global.find-links", ":env:.find-links"
        if sep and dot and section in rank:
            found.append((rank[section], name, value.strip().strip("'\"")))
    return {name: value for _, name, value in sorted(found, key=lambda f: f[0])}


def uv_arguments(settings: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """uv's command-line options and environment for pip's ``settings``; raises
    `Unsupported` naming a setting that would change what is installed."""
    args, env = ["--index-strategy", "unsafe-best-match"], {}
    for name, value in settings.items():
        if name in UV_OPTIONS:
            for item in value.split():  # pip separates several values by whitespace
                args += [UV_OPTIONS[name], item]
        elif name == "cert":
            env["SSL_CERT_FILE"] = value
        elif name == "no-index" and value.lower() in ("1", "true", "yes", "on"):
            args.append("--no-index")
        elif name not in IRRELEVANT:
            raise Unsupported(f"pip setting {name!r} = {value!r} has no uv equivalent here")
    return args, env


def find_uv(python: str) -> str | None:
    """uv on PATH, in the venv, or installed into the venv by pip; None if none."""
    venv_uv = Path(python).parent / "uv"
    for candidate in (shutil.which("uv"), venv_uv):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    done = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "uv"], capture_output=True, text=True
    )
    return str(venv_uv) if done.returncode == 0 and venv_uv.is_file() else None


def install(python: str, target: str, installer: str = "auto") -> str:
    """Installs ``target`` (e.g. ``-e .[test]``'s ``.[test]``) editable into ``python``'s
    venv; returns the installer used ("uv <version>" or "pip")."""
    if installer not in INSTALLERS:
        raise SystemExit(f"SSMBENCH_INSTALLER={installer!r}: must be one of {INSTALLERS}")
    reason = "SSMBENCH_INSTALLER=pip"
    if installer != "pip":
        try:
            args, env = uv_arguments(pip_settings(python))
            uv = find_uv(python)
            if uv is None:
                raise Unsupported("uv is not on PATH and pip could not install it")
            version = subprocess.run([uv, "--version"], capture_output=True, text=True).stdout
            # --compile-bytecode: pip writes the .pyc files at install and uv does not; where
            # Python may not write them itself (PYTHONDONTWRITEBYTECODE, read-only venvs)
            # every process would compile torch's sources again (~10 s per training job)
            cmd = [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python,
                   *args, "-e", target]  # fmt: skip
            if subprocess.run(cmd, env={**os.environ, **env}).returncode == 0:
                return version.strip() or "uv"
            raise Unsupported(f"`{' '.join(cmd)}` failed (its output is above)")
        except Unsupported as e:
            if installer == "uv":
                raise SystemExit(f"setup: SSMBENCH_INSTALLER=uv, but {e}") from e
            reason = str(e)
    print(f"setup: installing with pip ({reason})", file=sys.stderr)
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
    subprocess.run([python, "-m", "pip", "install", "--quiet", "-e", target], check=True)
    return "pip"


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        raise SystemExit(
            "usage: install_packages.py VENV_PYTHON TARGET   e.g. .venv/bin/python '.[test]'"
        )
    python, target = argv
    start = time.monotonic()
    used = install(python, target, os.environ.get("SSMBENCH_INSTALLER", "auto"))
    print(f"setup: packages installed with {used} in {time.monotonic() - start:.0f} s")
    (Path(python).parent.parent / ".installer").write_text(used + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
