"""`ssmbench offline pack` and `unpack`: a suite's wheels and data from a project with
network to a project on a node without it, in one checked bundle.

Two project copies stand for the login node and the compute node. The round trip packs
the real UEA BasicMotions of a copy of the archive (the `shared_uea` fixture), copied into an
archive folder beside the login project (the suite's ``archive_dir: ../archive``), with two
small wheels from a package index on 127.0.0.1 (tests/wheel_index.py); the node has no
``../archive`` until the bundle makes it. Crafted archives check what extraction refuses.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import REPO, make_project
from wheel_index import WheelIndex, make_wheel

from ssmbench.cli import main
from ssmbench.config import benchmark_settings, load_params, suite_datasets
from ssmbench.data import sources
from ssmbench.data.errors import DataError
from ssmbench.offline.archive import extracted, write_archive
from ssmbench.offline.pack import WheelRequest, pack, plan_datasets

SUITE = {"benchmarks": {"uea": ["BasicMotions"]}, "models": ["MS4N"], "folds": [0]}
TRAIN = "data/uea/BasicMotions/BasicMotions_TRAIN.ts.xz"


def _offline_suite(archive_dir):
    def edit(params: dict) -> None:
        params["suites"]["offline"] = {**copy.deepcopy(SUITE), "overrides": {
            "archive_dir": archive_dir, "download": False}}  # fmt: skip
        params["suite"] = "offline"

    return edit


def _node(root: Path) -> Path:
    return make_project(root / "node" / "proj", _offline_suite("../archive"))


@pytest.fixture(scope="module")
def login(tmp_path_factory, shared_uea) -> dict:
    """The login project, its archive folder (BasicMotions, plain, with its sums), and the
    bundle packed there with two wheels; the login copy prepared, to compare with."""
    root = tmp_path_factory.mktemp("offline")
    proj = make_project(root / "login" / "proj", _offline_suite("../archive"))
    archive = root / "login" / "archive"
    shutil.copytree(shared_uea / "BasicMotions", archive / "BasicMotions")
    sums = (shared_uea / "SHA256SUMS").read_text().splitlines()
    (archive / "SHA256SUMS").write_text("".join(f"{s}\n" for s in sums if "BasicMotions/" in s))
    made = root / "made"
    make_wheel(made, "ssmbt-a", "2.0", ["ssmbt-c"])
    make_wheel(made, "ssmbt-c", "3.0")
    bundle = root / "bundle.tar"
    with pytest.MonkeyPatch.context() as mp, WheelIndex(made) as index:
        for name in [n for n in os.environ if n.startswith("PIP_")]:
            mp.delenv(name)
        mp.setenv("PIP_CONFIG_FILE", os.devnull)
        mp.setenv("PIP_NO_CACHE_DIR", "1")
        mp.setenv("PIP_INDEX_URL", index.url)
        mp.chdir(proj)
        params = load_params("params.yaml", "offline")
        wheels = WheelRequest([("ssmbt-a", "2.0"), ("ssmbt-c", "3.0")])
        manifest = pack(params, bundle, wheels=wheels)
        assert main(["prepare", "--benchmark", "uea", "--dataset", "BasicMotions"]) == 0
    return {"root": root, "proj": proj, "bundle": bundle, "manifest": manifest}


def _unpack(node: Path, *args: str) -> int:
    with contextlib.chdir(node):
        return main(["offline", "unpack", *args])


def test_round_trip_installs_the_wheels_and_prepares_the_same_data(login, tmp_path):
    (entry,) = login["manifest"]["datasets"]
    assert (entry["kind"], entry["folder"]) == ("archive", "../archive/BasicMotions")
    node = _node(tmp_path)
    site = tmp_path / "site"
    assert _unpack(node, str(login["bundle"]), "--site", str(site)) == 0
    # the wheels, installed with no index
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", "import ssmbt_a, ssmbt_c; print(ssmbt_a.VERSION)"],
                          capture_output=True, text=True, env=env)  # fmt: skip
    assert done.stdout.strip() == "2.0", done.stderr
    # the archive folder the suite names, compressed, with the sums its fetch checked
    folder = tmp_path / "node" / "archive" / "BasicMotions"
    assert sorted(p.name for p in folder.iterdir()) == [
        "BasicMotions_TEST.ts.xz", "BasicMotions_TRAIN.ts.xz", "SHA256SUMS"]  # fmt: skip
    raw = json.loads((node / "data/raw/uea/BasicMotions/provenance.json").read_text())
    here = json.loads((login["proj"] / "data/raw/uea/BasicMotions/provenance.json").read_text())
    assert raw["raw_files"] == here["raw_files"]
    assert raw["verified_against"] == "../archive/BasicMotions/SHA256SUMS"
    assert set(raw["decompressed_from"]) == set(raw["raw_files"])
    for name in ("X.npy", "y.npy", "test_indices_fold_0.txt"):
        ours = node / "data/prepared/uea/BasicMotions" / name
        assert (
            ours.read_bytes()
            == (login["proj"] / "data/prepared/uea/BasicMotions" / name).read_bytes()
        )
    # again: everything is there alike, nothing is rewritten
    before = {p: p.stat().st_mtime_ns for p in folder.iterdir()}
    assert _unpack(node, str(login["bundle"]), "--no-prepare") == 0
    assert {p: p.stat().st_mtime_ns for p in folder.iterdir()} == before
    assert not list(node.glob(".ssmbench-unpack-*"))


def _with_byte_flipped(bundle: Path, member: str, dest: Path) -> Path:
    with tarfile.open(bundle) as tar:
        offset = tar.getmember(member).offset_data
    data = bytearray(bundle.read_bytes())
    data[offset + 100] ^= 0xFF
    dest.write_bytes(bytes(data))
    return dest


def test_a_tampered_member_is_refused_and_nothing_is_written(login, tmp_path, capsys):
    node = _node(tmp_path)
    bad = _with_byte_flipped(login["bundle"], TRAIN, tmp_path / "bad.tar")
    assert _unpack(node, str(bad), "--site", str(tmp_path / "site")) == 2
    err = capsys.readouterr().err
    assert f"member {TRAIN!r} has sha256" in err and "SHA256SUMS lists" in err
    assert not (tmp_path / "node" / "archive").exists()
    assert not (tmp_path / "site").exists() and not (node / "data/raw").exists()
    assert not list(node.glob(".ssmbench-unpack-*"))


def test_a_file_there_with_other_content_refuses_the_unpack(login, tmp_path, capsys):
    node = _node(tmp_path)
    folder = tmp_path / "node" / "archive" / "BasicMotions"
    folder.mkdir(parents=True)
    (folder / "BasicMotions_TRAIN.ts.xz").write_bytes(b"another copy")
    assert _unpack(node, str(login["bundle"]), "--site", str(tmp_path / "site")) == 2
    assert "is there with other content" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["BasicMotions_TRAIN.ts.xz"]
    assert (folder / "BasicMotions_TRAIN.ts.xz").read_bytes() == b"another copy"
    assert not (tmp_path / "site").exists()


def test_a_bundle_of_another_suite_is_refused(login, tmp_path, capsys):
    assert _unpack(_node(tmp_path), str(login["bundle"]), "--suite", "tiny") == 2
    assert "a bundle of suite 'offline', not 'tiny'" in capsys.readouterr().err


def test_a_downloaded_or_bundled_set_travels_as_its_raw_copy(tmp_path):
    """archive_dir null: BasicMotions comes from aeon's copy; the node gets the raw folder,
    which its fetch keeps as it is (no network, no aeon copy needed). The unpack runs with
    the standard library alone."""
    login = make_project(tmp_path / "login", _offline_suite(None))
    bundle = tmp_path / "bundle.tar"
    with contextlib.chdir(login):
        assert main(["offline", "pack", "--out", str(bundle), "--no-wheels"]) == 0
    node = make_project(tmp_path / "node", _offline_suite(None))
    # with the standard library alone (-S: no site-packages), as on a node before any install
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-S", "-m", "ssmbench", "offline", "unpack",
                           str(bundle), "--no-prepare"], cwd=node, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    raw = node / "data/raw/uea/BasicMotions"
    prov = (raw / "provenance.json").read_bytes()
    assert prov == (login / "data/raw/uea/BasicMotions/provenance.json").read_bytes()
    with contextlib.chdir(node):
        params = load_params("params.yaml")
        settings = benchmark_settings(params, "uea", "offline", "BasicMotions")
        kept = sources.fetch("BasicMotions", Path("data/raw/uea"), settings)
    assert kept == json.loads(prov)  # intact: kept as it is, not fetched again


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]], listed: dict[str, bytes]):
    sums = "".join(f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, d in listed.items()).encode()
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("SHA256SUMS")
        info.size = len(sums)
        tar.addfile(info, io.BytesIO(sums))
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def _member(name: str, data: bytes = b"x", kind=tarfile.REGTYPE, link: str = ""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data


@pytest.mark.parametrize(
    "member, why",
    [
        (_member("../evil"), "'..' component"),
        (_member("data/../../evil"), "'..' component"),
        (_member("/tmp/evil-absolute"), "absolute"),
        (_member("data/link", kind=tarfile.SYMTYPE, link="/etc/passwd"), "symbolic link"),
        (_member("data/hard", kind=tarfile.LNKTYPE, link="SHA256SUMS"), "hard link"),
        (_member("data/folder", kind=tarfile.DIRTYPE), "not a regular file"),
        (_member("data/./x"), "not a plain relative path"),
    ],
)
def test_a_member_leading_out_or_not_a_file_is_refused(tmp_path, member, why):
    info, data = member
    archive = _tar(tmp_path / "evil.tar", [member], {info.name: data})
    target = tmp_path / "target"
    with pytest.raises(DataError, match=why), extracted(archive, target):
        pass
    assert list(target.iterdir()) == []  # the staging folder is gone too
    assert not (tmp_path / "evil").exists()


def test_unlisted_missing_or_unchecked_members_are_refused(tmp_path):
    a, b = _member("a"), _member("b", b"y")
    cases = {
        "is not listed": _tar(tmp_path / "1.tar", [a, b], {"a": b"x"}),
        "listed in its SHA256SUMS but not in the archive": _tar(
            tmp_path / "2.tar", [a], {"a": b"x", "b": b"y"}
        ),  # fmt: skip
        "appears twice": _tar(tmp_path / "3.tar", [a, a], {"a": b"x"}),
    }
    for why, archive in cases.items():
        with pytest.raises(DataError, match=why), extracted(archive, tmp_path / "t"):
            pass
    with tarfile.open(tmp_path / "4.tar", "w") as tar:
        tar.addfile(a[0], io.BytesIO(a[1]))
    with (
        pytest.raises(DataError, match="holds no SHA256SUMS"),
        extracted(tmp_path / "4.tar", tmp_path / "t"),
    ):
        pass
    (tmp_path / "5.tar.gz").write_bytes(b"\x1f\x8b not a tar")
    with (
        pytest.raises(DataError, match="not an uncompressed tar"),
        extracted(tmp_path / "5.tar.gz", tmp_path / "t"),
    ):
        pass


def test_an_archive_written_is_read_back_alike(tmp_path):
    (tmp_path / "one").write_bytes(b"1" * 3000)
    (tmp_path / "two").write_bytes(b"")
    out = write_archive(tmp_path / "a.tar", {"x/one": tmp_path / "one", "two": tmp_path / "two"})
    assert set(out) == {"x/one", "two"}
    with extracted(tmp_path / "a.tar", tmp_path / "t") as files:
        assert {n: p.read_bytes() for n, p in files.items()} == {"x/one": b"1" * 3000, "two": b""}
    assert list((tmp_path / "t").iterdir()) == []
    with pytest.raises(ValueError, match="cannot be an archive member"):
        write_archive(tmp_path / "b.tar", {"../one": tmp_path / "one"})
    assert not (tmp_path / "b.tar").exists()


def test_the_plan_puts_bases_first_and_carries_nothing_made():
    params = load_params(REPO / "params.yaml", "tides-data")
    plans = plan_datasets(params, "tides-data")
    found = {(p.benchmark, p.dataset): p.kind for p in plans}
    assert found == {
        ("physiome", "HodgkinHuxley1952"): "raw",  # copied from myokit by its fetch
        ("synthetic", "FadingFlash"): "made",
        ("uea", "BasicMotions"): "raw",  # the base of two derived sets
        ("uea6", "BasicMotions"): "made",
        ("uea_drop", "BasicMotionsDrop"): "made",
    }
    order = [(p.benchmark, p.dataset) for p in plans]
    base = order.index(("uea", "BasicMotions"))
    assert base < order.index(("uea6", "BasicMotions"))
    assert base < order.index(("uea_drop", "BasicMotionsDrop"))
    assert next(p for p in plans if p.benchmark == "uea").folder == "data/raw/uea/BasicMotions"


def test_a_local_folder_other_than_a_uea_archive_is_refused(tmp_path):
    params = load_params(REPO / "params.yaml", "monster-paper")
    (bench, name), *_ = suite_datasets(params, "monster-paper")
    (tmp_path / name).mkdir()
    (tmp_path / name / f"{name}_X.npy").write_bytes(b"")
    params["benchmarks"][bench]["local_dir"] = str(tmp_path)
    with pytest.raises(DataError, match=rf"{bench}/{name}: its fetch copies a local folder"):
        plan_datasets(params, "monster-paper")


@pytest.mark.parametrize(
    "change, why",
    [
        ({"folder": "/tmp/elsewhere"}, "is not one of its own"),
        ({"folder": "../archive/Libras"}, "is not one of its own"),
        ({"kind": "unknown"}, "is not one of"),
        ({"dataset": "../BasicMotions"}, "not a dataset name"),
        ({"files": "SHA256SUMS"}, "has no list of files"),
    ],
)
def test_a_manifest_that_writes_elsewhere_is_refused(login, tmp_path, change, why, capsys):
    with extracted(login["bundle"], tmp_path / "x") as files:
        manifest = json.loads(files["ssmbench-bundle.json"].read_text())
        manifest["datasets"][0].update(change)
        files["ssmbench-bundle.json"].write_text(json.dumps(manifest))
        write_archive(tmp_path / "changed.tar", files)
    node = _node(tmp_path)
    assert _unpack(node, str(tmp_path / "changed.tar"), "--no-prepare") == 2
    assert why in capsys.readouterr().err
    assert not (tmp_path / "node" / "archive").exists()


def test_unpack_outside_the_project_folder_is_refused(login, tmp_path, capsys):
    assert _unpack(tmp_path, str(login["bundle"]), "--no-prepare") == 2
    assert "run ssmbench offline unpack in the project folder" in capsys.readouterr().err
