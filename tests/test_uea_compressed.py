"""UEA files kept compressed in archive_dir (``<Name>_TRAIN.ts.xz`` / ``.ts.gz``): fetched
by streamed decompression into the plain ``.ts`` of the raw folder, checked against the
decompressed content's sha256, and refused (nothing installed, the previous copy kept)
when truncated, not of their format, not matching SHA256SUMS, or a decompression bomb.

On a real slice of MotorImagery (tests/uea_slice.py, from the real compressed archive
files; the tests skip without them).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import shutil
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from uea_slice import NAME, compress, motor_imagery_slice, slice_ts

from ssmbench.data import compressed, fetch_uea, prepare_uea
from ssmbench.data.errors import DataError
from ssmbench.data.provenance import PROVENANCE
from ssmbench.data.store import PreparedDataset
from ssmbench.data.uea.fetch import locate_uea

TRAIN, TEST = f"{NAME}_TRAIN.ts", f"{NAME}_TEST.ts"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _state(folder: Path) -> dict[str, str]:
    """{file name: sha256} of everything in ``folder`` (hidden staged files included)."""
    if not folder.exists():
        return {}
    return {p.name: _sha(p.read_bytes()) for p in sorted(folder.iterdir())}


def _copy(archive: Path, dest: Path) -> Path:
    shutil.copytree(archive, dest)
    return dest


@pytest.fixture(scope="module")
def archives(tmp_path_factory, motor_imagery_archive) -> dict[str, Path]:
    """The same slice as plain ``.ts``, ``.ts.xz`` and ``.ts.gz`` archive folders."""
    return {
        "plain": motor_imagery_slice(tmp_path_factory.mktemp("plain"), compression=None),
        "xz": motor_imagery_archive,
        "gz": motor_imagery_slice(tmp_path_factory.mktemp("gz"), compression="gz"),
    }


# ------------------------------------------------------------------ good input
def test_xz_and_gz_prepare_as_the_plain_files(archives, tmp_path):
    prepared, provs = {}, {}
    for kind, archive in archives.items():
        raw, out = tmp_path / kind / "raw", tmp_path / kind / "prepared"
        assert sorted(p.name for p in (archive / NAME).iterdir()) == sorted(
            f + {"plain": "", "xz": ".xz", "gz": ".gz"}[kind] for f in (TEST, TRAIN)
        )
        provs[kind] = fetch_uea(NAME, raw, archive_dir=archive, download=False)
        # the raw folder holds the plain .ts files, whatever the archive held
        assert sorted(p.name for p in (raw / NAME).iterdir()) == [TEST, TRAIN, PROVENANCE]
        prepared[kind] = PreparedDataset(prepare_uea(NAME, raw, out))

    plain = prepared["plain"]
    assert (plain.meta["N"], plain.meta["C"], plain.meta["L"]) == (30, 64, 500)
    assert plain.meta["n_train"] == 20 and plain.meta["classes"] == ["finger", "tongue"]
    for kind in ("xz", "gz"):
        assert np.array_equal(prepared[kind].X, plain.X)
        assert np.array_equal(prepared[kind].y, plain.y)
        assert prepared[kind].meta["raw_files"] == plain.meta["raw_files"]
        assert provs[kind]["raw_files"] == provs["plain"]["raw_files"]
        assert provs[kind]["verified_against"] == str(archives[kind] / "SHA256SUMS")

    # provenance says which file was read and how it was compressed
    assert "decompressed_from" not in provs["plain"]
    for kind, compression in (("xz", "xz"), ("gz", "gzip")):
        record = provs[kind]["decompressed_from"][f"{NAME}/{TRAIN}"]
        src = archives[kind] / NAME / f"{TRAIN}.{kind}"
        assert record["file"] == f"{NAME}/{TRAIN}.{kind}"
        assert record["compression"] == compression
        assert record["sha256"] == _sha(src.read_bytes())
        assert record["bytes"] == src.stat().st_size
        assert record["decompressed_bytes"] == len(slice_ts("TRAIN", 20, 500))
        on_disk = json.loads((tmp_path / kind / "raw" / NAME / PROVENANCE).read_text())
        assert on_disk["decompressed_from"] == provs[kind]["decompressed_from"]


def test_plain_file_wins_over_a_compressed_one(archives, tmp_path):
    """Order: .ts, then .ts.xz, then .ts.gz, per split (the module docstring)."""
    archive = _copy(archives["plain"], tmp_path / "archive")
    # beside the plain TRAIN file, compressed ones of other content: not read
    (archive / NAME / f"{TRAIN}.xz").write_bytes(lzma.compress(b"not this one"))
    (archive / NAME / f"{TRAIN}.gz").write_bytes(gzip.compress(b"nor this one"))
    # TEST only compressed, both ways: .xz wins over .gz
    (archive / NAME / TEST).unlink()
    shutil.copyfile(archives["xz"] / NAME / f"{TEST}.xz", archive / NAME / f"{TEST}.xz")
    (archive / NAME / f"{TEST}.gz").write_bytes(gzip.compress(b"not this one either"))
    prov = fetch_uea(NAME, tmp_path / "raw", archive_dir=archive, download=False)
    assert list(prov["decompressed_from"]) == [f"{NAME}/{TEST}"]
    assert prov["decompressed_from"][f"{NAME}/{TEST}"]["file"] == f"{NAME}/{TEST}.xz"
    assert (tmp_path / "raw" / NAME / TRAIN).read_bytes() == slice_ts("TRAIN", 20, 500)
    assert (tmp_path / "raw" / NAME / TEST).read_bytes() == slice_ts("TEST", 10, 500)


def test_locate_accepts_compressed_names_and_says_so(archives, tmp_path):
    folder = archives["xz"] / NAME
    assert locate_uea(NAME, archives["xz"], download=False) == ("archive_dir", folder)
    assert locate_uea(NAME, archives["gz"], download=False)[0] == "archive_dir"
    (tmp_path / "empty" / NAME).mkdir(parents=True)
    with pytest.raises(DataError) as err:
        locate_uea(NAME, tmp_path / "empty", download=False)
    message = str(err.value)
    assert f"{NAME}_TRAIN.ts (or" in message and f"{NAME}_TEST.ts (or" in message
    assert ".ts.xz" in message and ".ts.gz" in message


def test_the_compressed_files_own_checksum_list(archives, tmp_path):
    """``SHA256SUMS.xz`` (as a compressed copy of the archive has it) lists the .xz files:
    checked."""
    archive = _copy(archives["xz"], tmp_path / "archive")
    xz_sums = "".join(
        f"{_sha((archive / NAME / (f + '.xz')).read_bytes())}  {NAME}/{f}.xz\n"
        for f in (TRAIN, TEST)
    )
    (archive / "SHA256SUMS.xz").write_text(xz_sums)
    prov = fetch_uea(NAME, tmp_path / "raw", archive_dir=archive, download=False)
    record = prov["decompressed_from"][f"{NAME}/{TRAIN}"]
    assert record["verified_against"] == str(archive / "SHA256SUMS.xz")

    (archive / "SHA256SUMS.xz").write_text(xz_sums.replace(xz_sums[:64], "0" * 64))
    before = _state(tmp_path / "raw" / NAME)
    with pytest.raises(DataError, match=rf"{TRAIN}\.xz: sha256 .* of the compressed file"):
        fetch_uea(NAME, tmp_path / "raw", archive_dir=archive, download=False, force=True)
    assert _state(tmp_path / "raw" / NAME) == before


# ------------------------------------------------------------------ bad input
def _refused(archive: Path, raw: Path, match: str, **kwargs) -> str:
    """Fetch from ``archive`` into ``raw`` twice, expecting DataError ``match`` each time:
    into an empty raw folder (nothing may be left in it) and over a good copy (kept)."""
    with pytest.raises(DataError, match=match) as err:
        fetch_uea(NAME, raw / "fresh", archive_dir=archive, download=False, **kwargs)
    assert _state(raw / "fresh" / NAME) == {}  # no .ts, no staged temp files

    good = raw / "good"
    shutil.copytree(raw.parent / "good_raw", good)
    before = _state(good / NAME)
    with pytest.raises(DataError, match=match):
        fetch_uea(NAME, good, archive_dir=archive, download=False, force=True, **kwargs)
    assert _state(good / NAME) == before  # the previous copy, provenance and all
    return str(err.value)


@pytest.fixture
def bad_archive(archives, tmp_path) -> Path:
    """A copy of the xz archive to spoil, and a good raw copy at ``tmp_path/good_raw``."""
    fetch_uea(NAME, tmp_path / "good_raw", archive_dir=archives["xz"], download=False)
    return _copy(archives["xz"], tmp_path / "archive")


def test_truncated_xz_is_refused(bad_archive, tmp_path):
    f = bad_archive / NAME / f"{TRAIN}.xz"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    message = _refused(bad_archive, tmp_path / "raw", rf"{TRAIN}\.xz: truncated")
    assert "Replace it with a good copy" in message and "previous copy" in message


def test_truncated_gz_is_refused(archives, tmp_path):
    fetch_uea(NAME, tmp_path / "good_raw", archive_dir=archives["gz"], download=False)
    archive = _copy(archives["gz"], tmp_path / "archive")
    f = archive / NAME / f"{TEST}.gz"
    f.write_bytes(f.read_bytes()[:-100])
    _refused(archive, tmp_path / "raw", rf"{TEST}\.gz: truncated")


@pytest.mark.parametrize("suffix", [".xz", ".gz"])
def test_a_file_not_of_its_format_is_refused(bad_archive, tmp_path, suffix):
    (bad_archive / NAME / f"{TRAIN}.xz").unlink()
    plain = slice_ts("TRAIN", 20, 500)
    # a plain .ts named .ts.xz; an xz file named .ts.gz
    (bad_archive / NAME / f"{TRAIN}{suffix}").write_bytes(
        plain if suffix == ".xz" else lzma.compress(plain)
    )
    label = {".xz": "an xz", ".gz": "a gzip"}[suffix]
    _refused(bad_archive, tmp_path / "raw", rf"{TRAIN}\{suffix}: not {label} file")


def test_corrupt_xz_is_refused(bad_archive, tmp_path):
    f = bad_archive / NAME / f"{TEST}.xz"
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))
    _refused(bad_archive, tmp_path / "raw", rf"{TEST}\.xz: is corrupt")


def test_decompressed_content_not_in_sha256sums_is_refused(bad_archive, tmp_path):
    sums = bad_archive / "SHA256SUMS"
    good = _sha(slice_ts("TRAIN", 20, 500))
    sums.write_text(sums.read_text().replace(good, "f" * 64))
    message = _refused(
        bad_archive,
        tmp_path / "raw",
        rf"{TRAIN}\.xz: sha256 {good} of the decompressed content does not match f{{64}} "
        rf"listed for {NAME}/{TRAIN}",
    )
    assert "replace it with a good copy" in message


BOMB = lzma.compress(b"@problemName x\n" + b"0" * (4 << 20))


def test_a_decompression_bomb_is_refused_while_streaming(bad_archive, tmp_path, monkeypatch):
    (bad_archive / NAME / f"{TRAIN}.xz").write_bytes(BOMB)
    cap = 1 << 20
    _refused(
        bad_archive,
        tmp_path / "raw",
        rf"{TRAIN}\.xz: decompresses to more than {cap} bytes",
        max_decompressed_bytes=cap,
    )
    # ... never written past the cap: the partial output (the caller's to delete) is
    # at most the cap
    out = tmp_path / "out.ts"
    with pytest.raises(DataError, match="decompression bomb"):
        compressed.decompress_to(bad_archive / NAME / f"{TRAIN}.xz", out, "xz", max_bytes=cap)
    assert 0 < out.stat().st_size <= cap
    # the module's cap holds when no keyword is given
    monkeypatch.setattr(compressed, "MAX_DECOMPRESSED_BYTES", cap)
    with pytest.raises(DataError, match=rf"more than {cap} bytes"):
        fetch_uea(NAME, tmp_path / "raw2", archive_dir=bad_archive, download=False)


def test_a_ratio_bomb_is_refused_below_the_size_cap(bad_archive, tmp_path, monkeypatch):
    (bad_archive / NAME / f"{TRAIN}.xz").write_bytes(BOMB)  # 4 MiB from ~1 KB
    monkeypatch.setattr(compressed, "RATIO_FREE_BYTES", 1 << 20)
    out = tmp_path / "out.ts"
    with pytest.raises(DataError, match=r"over the cap of 1000:1"):
        compressed.decompress_to(bad_archive / NAME / f"{TRAIN}.xz", out, "xz")
    assert out.stat().st_size <= 1 << 20
    _refused(bad_archive, tmp_path / "raw", rf"{TRAIN}\.xz: .* over the cap of 1000:1")


# ------------------------------------------------------------------ memory
@pytest.fixture(scope="module")
def big_archive(tmp_path_factory) -> tuple[Path, int]:
    """A ~48 MB MotorImagery_TRAIN.ts (the slice's rows repeated), as .xz and .gz."""
    train = slice_ts("TRAIN", 20, 500)
    head, sep, rows = train.partition(b"@data\n")
    data = head + sep + rows * max(1, (48 << 20) // len(rows))
    archive = tmp_path_factory.mktemp("big")
    (archive / NAME).mkdir()
    test = slice_ts("TEST", 10, 500)
    files = {  # the fastest presets for the big file: 48 MB on a shared core
        f"{TRAIN}.xz": lzma.compress(data, preset=0),
        f"{TRAIN}.gz": gzip.compress(data, compresslevel=1, mtime=0),
        f"{TEST}.xz": compress(test, "xz"),
        f"{TEST}.gz": compress(test, "gz"),
    }
    for fname, packed in files.items():
        (archive / NAME / fname).write_bytes(packed)
    sums = f"{_sha(data)}  {NAME}/{TRAIN}\n{_sha(test)}  {NAME}/{TEST}\n"
    (archive / "SHA256SUMS").write_text(sums)
    return archive, len(data)


@pytest.mark.parametrize("suffix", [".xz", ".gz"])
def test_decompression_never_holds_the_file_in_memory(big_archive, tmp_path, suffix):
    import aeon  # noqa: F401  (fetch_uea records aeon's version: import it outside the trace)

    archive, size = big_archive
    if suffix == ".gz":  # the .gz files only: .xz comes first
        archive = _copy(archive, tmp_path / "gz")
        for p in (archive / NAME).glob("*.xz"):
            p.unlink()
    tracemalloc.start()
    try:
        prov = fetch_uea(
            NAME,
            tmp_path / "raw",
            archive_dir=archive,
            download=False,
            max_decompression_ratio=1e9,  # rows repeated: the ratio is not the point here
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (tmp_path / "raw" / NAME / TRAIN).stat().st_size == size
    assert prov["decompressed_from"][f"{NAME}/{TRAIN}"]["file"].endswith(suffix)
    assert size > 40 << 20
    assert peak < size / 4, f"peak {peak / 2**20:.1f} MiB for a {size / 2**20:.0f} MiB file"


# ------------------------------------------------------------------ the workflow's path
def test_sources_fetch_and_prepare_from_xz_only(archives, tmp_path):
    from ssmbench.data import sources

    archive = archives["xz"]
    assert not list((archive / NAME).glob("*.ts"))  # only the .ts.xz files
    settings = {"source": "uea", "archive_dir": str(archive), "download": False}
    raw, out = tmp_path / "raw" / "uea", tmp_path / "prepared" / "uea"
    sources.check_available(NAME, raw, settings)
    prov = sources.fetch(NAME, raw, settings)
    assert set(prov["decompressed_from"]) == {f"{NAME}/{TRAIN}", f"{NAME}/{TEST}"}
    d = PreparedDataset(sources.prepare(NAME, raw, out, settings))
    assert (d.meta["N"], d.meta["C"], d.meta["L"], d.meta["n_train"]) == (30, 64, 500, 20)
    assert d.meta["source"] == "archive_dir" and np.isfinite(d.X).all()
    # fetched again: the raw copy matches its provenance and SHA256SUMS, nothing is redone
    mtime = (raw / NAME / TRAIN).stat().st_mtime_ns
    assert sources.fetch(NAME, raw, settings) == prov
    assert (raw / NAME / TRAIN).stat().st_mtime_ns == mtime


#: a fetch and a preparation SIGKILLed just before their staged files go into place
KILLED = """
import os, signal, sys
from ssmbench import io
from ssmbench.data import sources
from ssmbench.data.uea import fetch as uea
step, name, archive, raw, out = sys.argv[1:]
settings = {"source": "uea", "archive_dir": archive, "download": False}
die = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
if step == "fetch":
    uea.install_staged = die
    sources.fetch(name, raw, settings)
else:
    io.swap_into_place = die
    sources.prepare(name, raw, out, settings)
"""


def test_what_a_killed_fetch_or_preparation_leaves_is_removed_by_the_next(archives, tmp_path):
    import subprocess
    import sys

    from conftest import tool_env

    from ssmbench.data import sources

    raw, out = tmp_path / "raw" / "uea", tmp_path / "prepared" / "uea"
    args = [NAME, str(archives["xz"]), str(raw), str(out)]
    killed = subprocess.run([sys.executable, "-c", KILLED, "fetch", *args], env=tool_env())
    assert killed.returncode == -9
    left = sorted(p.name for p in (raw / NAME).iterdir())
    assert left and all(name.startswith(".") and ".tmp-" in name for name in left), left
    settings = {"source": "uea", "archive_dir": str(archives["xz"]), "download": False}
    sources.fetch(NAME, raw, settings)
    assert sorted(p.name for p in (raw / NAME).iterdir()) == [TEST, TRAIN, PROVENANCE]

    killed = subprocess.run([sys.executable, "-c", KILLED, "prepare", *args], env=tool_env())
    assert killed.returncode == -9
    assert [p.name for p in out.iterdir() if ".tmp-" in p.name]
    sources.prepare(NAME, raw, out, settings)
    assert not [p.name for p in out.iterdir() if ".tmp-" in p.name]
    assert PreparedDataset(out / NAME).meta["N"] == 30


def test_a_checksum_list_linked_from_outside_is_refused_unread(bad_archive, tmp_path):
    """A SHA256SUMS that links outside archive_dir (to /etc/passwd, say) is refused, named,
    and nothing of the file it points to reaches the message."""
    outside = tmp_path / "outside" / "secret.txt"
    outside.parent.mkdir()
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    for i, sums in enumerate((bad_archive / "SHA256SUMS", bad_archive / NAME / "SHA256SUMS")):
        kept = sums.read_bytes() if sums.is_file() else None
        sums.unlink(missing_ok=True)
        sums.symlink_to(outside)
        message = _refused(bad_archive, tmp_path / f"raw{i}", r"SHA256SUMS: a symbolic link "
                           r"to a file outside")  # fmt: skip
        assert "root:x" not in message and str(outside) not in message
        sums.unlink()
        if kept is not None:
            sums.write_bytes(kept)


def test_a_symbolic_link_out_of_the_archive_folder_is_refused(bad_archive, tmp_path):
    """An archive file that links outside archive_dir (to /etc/passwd, say) is refused,
    named, and nothing is copied into the raw folder; a good copy there is kept."""
    outside = tmp_path / "outside" / f"{TRAIN}.xz"
    outside.parent.mkdir()
    (bad_archive / NAME / f"{TRAIN}.xz").rename(outside)
    (bad_archive / NAME / f"{TRAIN}.xz").symlink_to(outside)
    message = _refused(bad_archive, tmp_path / "raw", rf"{TRAIN}\.xz: a symbolic link to a "
                       r"file outside archive_dir")  # fmt: skip
    assert str(outside) not in message  # names the link, not where it leads
    # a link inside the archive folder is a file of the archive: accepted
    (bad_archive / NAME / f"{TRAIN}.xz").unlink()
    inside = bad_archive / f"{TRAIN}.xz"
    outside.rename(inside)
    (bad_archive / NAME / f"{TRAIN}.xz").symlink_to(inside)
    fetch_uea(NAME, tmp_path / "raw" / "linked", archive_dir=bad_archive, download=False)
