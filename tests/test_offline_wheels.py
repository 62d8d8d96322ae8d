"""ssmbench.offline.wheels: which packages a bundle carries (an installed distribution's
dependencies at the versions installed), their download with pip from an index, and their
install with pip and no index. The index is tests/wheel_index.py's, on 127.0.0.1, serving
wheels made here; pip reads no configuration but the test's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from wheel_index import WheelIndex, installed_metadata, make_sdist, make_wheel

from ssmbench.data.errors import DataError
from ssmbench.offline.unpack import _python
from ssmbench.offline.wheels import dependency_pins, download_wheels, install_wheels


@pytest.fixture
def pip_here(monkeypatch):
    """pip with no configuration file, no PIP_* of the machine, no cache."""
    for name in list(os.environ):
        if name.startswith("PIP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")


@pytest.fixture
def environment(tmp_path) -> Path:
    """An environment's metadata: ssmbt-root needs a (which needs c), b only for its extra
    x, d with d's extra feat (e; f is d's extra other), and a package not installed."""
    env = tmp_path / "env"
    installed_metadata(env, "ssmbt-root", "0.1", [
        "ssmbt-a>=1", 'ssmbt-b; extra == "x"', 'ssmbt-gone; python_version < "3"',
        "ssmbt_D[feat] (>=1)",
    ])  # fmt: skip
    installed_metadata(env, "ssmbt-a", "2.0", ["ssmbt-c"])
    installed_metadata(env, "ssmbt-b", "1.0")
    installed_metadata(env, "ssmbt-c", "3.0")
    installed_metadata(
        env, "ssmbt-d", "1.5", ['ssmbt-e; extra == "feat"', "ssmbt-f; extra == 'other'"]
    )
    installed_metadata(env, "ssmbt-e", "0.1")
    installed_metadata(env, "ssmbt-f", "0.2")
    return env


def test_pins_are_the_installed_dependencies_at_their_versions(environment):
    pins = dependency_pins("ssmbt-root", path=[str(environment)])
    assert pins == [("ssmbt-a", "2.0"), ("ssmbt-c", "3.0"), ("ssmbt-d", "1.5"), ("ssmbt-e", "0.1")]
    # an extra asked of the root brings what it names
    pins = dependency_pins("ssmbt-root[x]", path=[str(environment)])
    assert ("ssmbt-b", "1.0") in pins


def test_without_leaves_out_a_package_and_what_only_it_needs(environment):
    pins = dependency_pins("ssmbt-root", without=["SSMBT_A"], path=[str(environment)])
    assert pins == [("ssmbt-d", "1.5"), ("ssmbt-e", "0.1")]


def test_a_root_that_is_not_installed_is_named(environment):
    with pytest.raises(DataError, match="ssmbt-nothing: not installed"):
        dependency_pins("ssmbt-nothing", path=[str(environment)])


def _importable(site: Path, code: str, python: str = sys.executable) -> str:
    env = {**os.environ, "PYTHONPATH": str(site)} if site else dict(os.environ)
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_wheels_come_from_the_index_and_install_without_one(tmp_path, pip_here, monkeypatch):
    made = tmp_path / "made"
    for version in ("1.0", "2.0"):
        make_wheel(made, "ssmbt-a", version, ["ssmbt-c"])
    make_wheel(made, "ssmbt-c", "3.0")
    with WheelIndex(made) as index:
        monkeypatch.setenv("PIP_INDEX_URL", index.url)
        wheels = download_wheels([("ssmbt-a", "2.0"), ("ssmbt-c", "3.0")], tmp_path / "wheels")
    assert [w.name for w in wheels] == [
        "ssmbt_a-2.0-py3-none-any.whl",
        "ssmbt_c-3.0-py3-none-any.whl",
    ]
    # the index is gone: the install must not look for one
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple/")
    site = tmp_path / "site"
    install_wheels(wheels, site=site)
    assert _importable(site, "import ssmbt_a, ssmbt_c; print(ssmbt_a.VERSION)") == "2.0"
    install_wheels(wheels, site=site)  # again, over the first install
    assert _importable(site, "import ssmbt_c; print(ssmbt_c.VERSION)") == "3.0"


def test_a_package_the_index_has_only_as_source_is_built_into_a_wheel(
    tmp_path, pip_here, monkeypatch
):
    make_sdist(tmp_path / "made", "ssmbt-s", "1.0")
    make_wheel(tmp_path / "made", "ssmbt-c", "3.0")
    with WheelIndex(tmp_path / "made") as index:
        monkeypatch.setenv("PIP_INDEX_URL", index.url)
        # for another node's Python too: the wheel built is pure Python
        wheels = download_wheels(
            [("ssmbt-c", "3.0"), ("ssmbt-s", "1.0")], tmp_path / "wheels", python_version="3.12"
        )
    assert [w.name for w in wheels] == [
        "ssmbt_c-3.0-py3-none-any.whl",
        "ssmbt_s-1.0-py3-none-any.whl",
    ]
    assert sorted(p.name for p in (tmp_path / "wheels").iterdir()) == [w.name for w in wheels]
    install_wheels(wheels, site=tmp_path / "site")
    assert _importable(tmp_path / "site", "import ssmbt_s; print(ssmbt_s.VERSION)") == "1.0"


def test_a_pin_the_index_lacks_is_named_in_the_error(tmp_path, pip_here, monkeypatch):
    make_wheel(tmp_path / "made", "ssmbt-c", "3.0")
    with WheelIndex(tmp_path / "made") as index:
        monkeypatch.setenv("PIP_INDEX_URL", index.url)
        with pytest.raises(DataError, match=r"(?s)pip failed.*ssmbt-c==9\.9"):
            download_wheels([("ssmbt-c", "9.9")], tmp_path / "wheels")


def test_a_wheel_for_another_python_is_refused_at_install(tmp_path, pip_here):
    wheel = make_wheel(tmp_path / "made", "ssmbt-c", "3.0")
    other = wheel.with_name("ssmbt_c-3.0-cp27-cp27m-win32.whl")
    wheel.rename(other)
    with pytest.raises(DataError, match="installing 1 wheels"):
        install_wheels([other], site=tmp_path / "site")
    assert not (tmp_path / "site" / "ssmbt_c").exists()


@pytest.mark.slow
def test_wheels_install_into_a_virtual_environment_made_for_them(tmp_path, pip_here):
    venv = tmp_path / "venv"
    python = _python(venv, say=lambda message: None)
    install_wheels([make_wheel(tmp_path / "made", "ssmbt-c", "3.0")], python=python)
    assert _importable(None, "import ssmbt_c; print(ssmbt_c.VERSION)", python=python) == "3.0"
    assert _python(venv, say=lambda message: None) == python  # an existing one is kept
