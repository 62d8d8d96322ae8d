"""scripts/install_packages.py: pip's settings reach uv as its options, a setting uv cannot
take sends the install to pip (and says so), SSMBENCH_INSTALLER chooses."""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "install_packages.py"
spec = importlib.util.spec_from_file_location("install_packages", SCRIPT)
install_packages = importlib.util.module_from_spec(spec)
spec.loader.exec_module(install_packages)


def _pip_config(monkeypatch, tmp_path, text: str, env: dict[str, str] | None = None):
    """pip reads this config file (and only it) and these PIP_* variables."""
    conf = tmp_path / "pip.conf"
    conf.write_text(text)
    for name in list(os.environ):
        if name.startswith("PIP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)


def test_pip_settings_reach_uv_as_options(monkeypatch, tmp_path):
    _pip_config(monkeypatch, tmp_path, (
        "[global]\nfind-links = /wheels/a\nextra-index-url = file:///m/one file:///m/two\n"
        "constraint = /etc/c.txt\ncert = /etc/ca.crt\ntimeout = 60\n"
        "[install]\nindex-url = https://mirror.example/simple\n"
        "[freeze]\nfind-links = /not/for/install\n"
    ), {"PIP_FIND_LINKS": "/wheels/env"})  # fmt: skip
    settings = install_packages.pip_settings(sys.executable)
    assert settings["find-links"] == "/wheels/env"  # PIP_* over the file, as pip ranks them
    assert settings["index-url"] == "https://mirror.example/simple"
    args, env = install_packages.uv_arguments(settings)
    pairs = list(zip(args[::2], args[1::2], strict=False))
    assert ("--index-strategy", "unsafe-best-match") in pairs
    assert ("--find-links", "/wheels/env") in pairs and "/not/for/install" not in args
    assert ("--extra-index-url", "file:///m/one") in pairs
    assert ("--extra-index-url", "file:///m/two") in pairs
    assert ("--constraint", "/etc/c.txt") in pairs
    assert ("--index-url", "https://mirror.example/simple") in pairs
    assert env == {"SSL_CERT_FILE": "/etc/ca.crt"}


def test_a_setting_uv_cannot_take_sends_the_install_to_pip(monkeypatch, tmp_path):
    _pip_config(monkeypatch, tmp_path, "[global]\nonly-binary = :all:\n")
    with pytest.raises(install_packages.Unsupported, match="'only-binary'"):
        install_packages.uv_arguments(install_packages.pip_settings(sys.executable))


def test_installer_choice_is_checked(tmp_path):
    with pytest.raises(SystemExit, match="must be one of"):
        install_packages.install(sys.executable, ".", installer="conda")


def test_forced_uv_fails_loudly_instead_of_falling_back(monkeypatch, tmp_path):
    _pip_config(monkeypatch, tmp_path, "[global]\nonly-binary = :all:\n")
    with pytest.raises(SystemExit, match="SSMBENCH_INSTALLER=uv, but pip setting 'only-binary'"):
        install_packages.install(sys.executable, ".", installer="uv")


def test_the_makefile_installs_through_the_script():
    makefile = (SCRIPT.parents[1] / "Makefile").read_text()
    assert "scripts/install_packages.py $(BIN)/python '.[test]'" in makefile
    assert "pip install --quiet -e" not in makefile
    # it runs on the interpreter that made the venv, before anything is installed
    tree = ast.parse(SCRIPT.read_text())
    modules = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert {m.split(".")[0] for m in modules} <= set(sys.stdlib_module_names) | {"__future__"}
