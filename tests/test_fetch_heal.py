"""A raw copy that fails to prepare is fetched again by the next fetch (UEA from an
archive_dir, MONSTER from the fake Hub), and ``ssmbench fetch --force`` fetches again a
copy that matches its provenance."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO

from ssmbench.cli import main
from ssmbench.data.errors import DataError
from ssmbench.data.provenance import PROVENANCE, REJECTED
from ssmbench.data.sources import fetch, prepare

sys.path.insert(0, str(Path(__file__).parent))
from hub_server import FakeHub  # noqa: E402
from test_monster import COMMIT1, COMMIT2, NAME, make_dataset, npy_bytes  # noqa: E402
from test_monster import REPO as HUB_REPO  # noqa: E402
from test_monster import hub_env as _hub_env  # noqa: E402

from ssmbench.params_file import read_params

hub_env = _hub_env  # the fake Hub's environment fixture, shared with test_monster

UEA = "BasicMotions"


def _bundled(split: str) -> Path:
    import aeon.datasets

    return Path(aeon.datasets.__file__).resolve().parent / "data" / UEA / f"{UEA}_{split}.ts"


def _archive(root: Path, truncated: bool) -> Path:
    """An archive_dir with BasicMotions; its TRAIN file cut in half when ``truncated``."""
    folder = root / UEA
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("TRAIN", "TEST"):
        data = _bundled(split).read_bytes()
        if truncated and split == "TRAIN":
            data = data[: len(data) // 2]
        (folder / f"{UEA}_{split}.ts").write_bytes(data)
    return root


def test_a_uea_copy_that_fails_to_prepare_is_fetched_again(tmp_path):
    archive = _archive(tmp_path / "archive", truncated=True)
    raw, out = tmp_path / "raw" / "uea", tmp_path / "prepared" / "uea"
    settings = {"source": "uea", "archive_dir": str(archive), "download": False}
    fetch(UEA, raw, settings)
    with pytest.raises(DataError) as failed:
        prepare(UEA, raw, out, settings)
    message = str(failed.value)
    assert f"{UEA}_TRAIN.ts" in message and "truncated" in message
    assert f"`ssmbench fetch --benchmark uea --dataset {UEA} --force`" in message
    assert "force=True" not in message
    assert not (raw / UEA / PROVENANCE).exists()
    assert "truncated" in json.loads((raw / UEA / REJECTED).read_text())["rejected"]["error"]

    _archive(archive, truncated=False)  # the source is repaired
    prov = fetch(UEA, raw, settings)  # a plain fetch: it copies again
    assert (raw / UEA / f"{UEA}_TRAIN.ts").read_bytes() == _bundled("TRAIN").read_bytes()
    assert not (raw / UEA / REJECTED).exists()
    assert prov["raw_files"][f"{UEA}/{UEA}_TRAIN.ts"]
    assert (prepare(UEA, raw, out, settings) / "meta.json").is_file()


def test_a_monster_copy_that_fails_to_prepare_is_fetched_again(hub_env, tmp_path):
    _, y, _, good = make_dataset(np.float64)
    bad = dict(good)
    bad[f"{NAME}_y.npy"] = npy_bytes(y[:-3])  # labels of another length: served as it is
    raw, out = tmp_path / "raw" / "monster", tmp_path / "prepared" / "monster"
    settings = {"source": "monster", "revision": "main"}
    with FakeHub() as hub:
        hub_env.setenv("HF_ENDPOINT", hub.endpoint)
        hub.add_repo(HUB_REPO, bad, COMMIT1)
        fetch(NAME, raw, settings)
        with pytest.raises(DataError, match=r"_y\.npy: shape .*--dataset TinyMonster --force"):
            prepare(NAME, raw, out, settings)

        hub.add_repo(HUB_REPO, good, COMMIT2)  # the repository is fixed on main
        prov = fetch(NAME, raw, settings)
        assert prov["revision"] == COMMIT2
        assert (raw / NAME / f"{NAME}_y.npy").read_bytes() == good[f"{NAME}_y.npy"]
        assert (prepare(NAME, raw, out, settings) / "meta.json").is_file()


def test_a_rejected_monster_copy_is_not_adopted_offline(hub_env, tmp_path):
    _, y, _, files = make_dataset(np.float64)
    files[f"{NAME}_y.npy"] = npy_bytes(y[:-3])
    raw = tmp_path / "raw" / "monster"
    (raw / NAME).mkdir(parents=True)
    for fname, data in files.items():
        (raw / NAME / fname).write_bytes(data)
    settings = {"source": "monster", "offline": True}
    fetch(NAME, raw, settings)  # files put there by hand: adopted
    with pytest.raises(DataError):
        prepare(NAME, raw, tmp_path / "prepared" / "monster", settings)
    with pytest.raises(DataError, match=r"failed to prepare .*\.provenance\.rejected\.json"):
        fetch(NAME, raw, settings)


def _project(tmp_path: Path, archive: Path, monkeypatch) -> Path:
    params = read_params(REPO / "params.yaml")
    params["benchmarks"]["uea"]["archive_dir"] = str(archive)
    params["benchmarks"]["uea"]["download"] = False
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_fetch_force_fetches_a_copy_that_matches_its_provenance(tmp_path, monkeypatch, capsys):
    archive = _archive(tmp_path / "archive", truncated=False)
    project = _project(tmp_path, archive, monkeypatch)
    argv = ["--params", "params.yaml", "fetch", "--benchmark", "uea", "--dataset", UEA]
    assert main(argv) == 0
    prov_path = project / "data" / "raw" / "uea" / UEA / PROVENANCE
    # the archive's copy changes in place: the fetch sees it and fetches it again
    shutil.copyfile(_bundled("TEST"), archive / UEA / f"{UEA}_TRAIN.ts")
    assert main(argv) == 0
    raw_train = project / "data" / "raw" / "uea" / UEA / f"{UEA}_TRAIN.ts"
    assert raw_train.read_bytes() == _bundled("TEST").read_bytes()
    assert "changed since it was fetched" in json.loads(prov_path.read_text())["fetched_because"]
    # an unchanged copy is kept; --force fetches it again all the same (a file of its own)
    inode = raw_train.stat().st_ino
    assert main(argv) == 0 and raw_train.stat().st_ino == inode
    assert main([*argv, "--force"]) == 0 and raw_train.stat().st_ino != inode
    assert raw_train.read_bytes() == _bundled("TEST").read_bytes()
    assert "fetched uea/BasicMotions" in capsys.readouterr().err
