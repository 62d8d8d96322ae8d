"""safe_extract's limits: member count and uncompressed size (declared, and as read),
repeated member names and file/folder clashes, each refused with a DataError naming the
member."""

from __future__ import annotations

import struct
import zipfile

import pytest

from ssmbench.data.download import MAX_EXTRACT_BYTES, safe_extract
from ssmbench.data.errors import DataError


def _zip(path, members, compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return path


def _declare_size(data: bytes, size: int) -> bytes:
    """The archive with its (only) member's uncompressed size set to ``size`` in both the
    local header and the central directory: a header that lies."""
    out = bytearray(data)
    struct.pack_into("<I", out, out.find(b"PK\x03\x04") + 22, size & 0xFFFFFFFF)
    struct.pack_into("<I", out, out.find(b"PK\x01\x02") + 24, size & 0xFFFFFFFF)
    return bytes(out)


def test_a_zip_bomb_over_the_size_cap_is_refused(tmp_path):
    archive = _zip(tmp_path / "bomb.zip", [("final/a/zeros.bin", b"\0" * (8 << 20))])
    assert archive.stat().st_size < 64 << 10  # 8 MB of zeros compress to a few KB
    with pytest.raises(DataError, match=r"'final/a/zeros\.bin'.*cap of 1000000 bytes"):
        safe_extract(archive, tmp_path / "out", max_bytes=1_000_000)
    assert not any((tmp_path / "out").rglob("*.bin"))


def test_a_zip_bomb_is_refused_by_the_default_ratio_cap(tmp_path):
    # 20 MB of zeros in about 20 KB: far under the 20 GiB cap, but a 1000:1 expansion
    archive = _zip(tmp_path / "bomb.zip", [("final/a/zeros.bin", b"\0" * (20 << 20))])
    with pytest.raises(DataError, match=r"'final/a/zeros\.bin'.*cap of 200:1 \(a zip bomb\)"):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "final").exists()


def test_a_well_compressed_small_archive_is_not_a_bomb(tmp_path):
    archive = _zip(tmp_path / "small.zip", [("zeros.bin", b"\0" * (1 << 20))])
    assert safe_extract(archive, tmp_path / "out") == ["zeros.bin"]  # under RATIO_FREE_BYTES


def test_the_size_cap_counts_the_members_extracted_only(tmp_path):
    archive = _zip(
        tmp_path / "a.zip", [("final/a/x.bin", b"1" * 100), ("final/b/y.bin", b"\0" * 10_000)]
    )
    assert safe_extract(archive, tmp_path / "out", "final/a/", max_bytes=1000) == ["final/a/x.bin"]


def test_the_default_size_cap_reads_the_declared_sizes(tmp_path):
    # six 10-byte members whose central directory declares almost 4 GiB each: over the
    # default cap of 20 GiB at the sixth, refused before anything is read
    data = bytearray(
        _zip(
            tmp_path / "src.zip", [(f"f{i}.bin", b"x" * 10) for i in range(6)], zipfile.ZIP_STORED
        ).read_bytes()
    )
    at = data.find(b"PK\x01\x02")
    while at != -1:
        struct.pack_into("<I", data, at + 24, 0xFFFFFFF0)
        at = data.find(b"PK\x01\x02", at + 4)
    archive = tmp_path / "lying.zip"
    archive.write_bytes(bytes(data))
    assert MAX_EXTRACT_BYTES == 20 * 2**30  # the Physiome-ODE archive (0.7 GB) fits
    with pytest.raises(DataError, match=r"'f5\.bin'.*declared uncompressed size"):
        safe_extract(archive, tmp_path / "out", max_ratio=float("inf"))
    assert not any((tmp_path / "out").iterdir())
    with pytest.raises(DataError, match=r"'f0\.bin'.*a zip bomb"):  # and the default ratio
        safe_extract(archive, tmp_path / "out")


def test_a_header_that_understates_the_size_is_refused(tmp_path):
    data = _zip(tmp_path / "src.zip", [("zeros.bin", b"\0" * (4 << 20))]).read_bytes()
    archive = tmp_path / "lying.zip"
    archive.write_bytes(_declare_size(data, 1000))
    with pytest.raises(DataError, match=r"'zeros\.bin'"):
        safe_extract(archive, tmp_path / "out", max_bytes=100_000)
    out = tmp_path / "out" / "zeros.bin"
    assert not out.exists() or out.stat().st_size <= 100_000


def test_too_many_members_are_refused(tmp_path):
    archive = _zip(tmp_path / "many.zip", [(f"m{i}.txt", b"x") for i in range(11)])
    with pytest.raises(DataError, match=r"'m10\.txt'.*cap of 10 members"):
        safe_extract(archive, tmp_path / "out", max_members=10)
    assert not (tmp_path / "out" / "m0.txt").exists()


def test_a_repeated_member_name_is_refused(tmp_path):
    archive = tmp_path / "dup.zip"
    with pytest.warns(UserWarning, match="Duplicate name"):
        _zip(archive, [("final/a/train.pt", b"first"), ("final/a/train.pt", b"second")])
    with pytest.raises(DataError, match=r"'final/a/train\.pt' appears twice"):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "final").exists()


@pytest.mark.parametrize("second", ["x/./y", "x//y", "./x/y"])
def test_two_members_that_extract_to_one_path_are_refused(tmp_path, second):
    archive = _zip(tmp_path / "dup.zip", [("x/y", b"first"), (second, b"second")])
    with pytest.raises(DataError) as err:
        safe_extract(archive, tmp_path / "out")
    assert str(err.value) == (
        f"{archive}: member {second!r} appears twice in the archive (as 'x/y', the path it "
        "extracts to); the archive is refused and nothing was extracted from it."
    )
    assert not (tmp_path / "out" / "x").exists()


def test_a_full_disk_while_extracting_is_not_called_a_corrupt_archive(tmp_path, monkeypatch):
    import builtins
    import errno

    archive = _zip(tmp_path / "ok.zip", [("a/train.pt", b"x" * 100)])
    real_open = builtins.open

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    def fake_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        return Full(handle) if str(file).endswith("train.pt") and "w" in mode else handle

    monkeypatch.setattr(builtins, "open", fake_open)
    with pytest.raises(OSError) as err:
        safe_extract(archive, tmp_path / "out")
    assert not isinstance(err.value, DataError) and err.value.errno == errno.ENOSPC
    assert err.value.filename == str(tmp_path / "out" / "a" / "train.pt")
    assert not (tmp_path / "out" / "a" / "train.pt").exists()


@pytest.mark.parametrize(
    "members, named",
    [
        ([("a", b"file"), ("a/b", b"under it")], "'a/b' lies under 'a'"),
        ([("a/b", b"under it"), ("a", b"file")], "'a' is a file and a folder"),
        ([("a/", b""), ("a", b"file")], "'a' is a file and a folder"),
    ],
)
def test_a_file_and_folder_name_clash_is_refused(tmp_path, members, named):
    archive = _zip(tmp_path / "clash.zip", members)
    with pytest.raises(DataError, match=named):
        safe_extract(archive, tmp_path / "out")
    assert not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize(
    "offset, error",
    [(0, "invalid block type"), (2000, "Bad CRC-32")],  # zlib.error; zipfile.BadZipFile
)
def test_a_member_with_a_broken_deflate_stream_is_named_and_nothing_is_left(
    tmp_path, offset, error
):
    """A damaged member (bytes of its deflate stream overwritten: at its first block
    header zlib fails, later the CRC does) is a DataError naming it, and the extraction
    leaves none of its files: not the members before it, not the part written of it."""
    text = b"".join(b"line %d of a long text\n" % i for i in range(200_000))
    members = [("a.txt", b"fine\n"), ("b.txt", text)]
    data = bytearray(_zip(tmp_path / "src.zip", members).read_bytes())
    header = data.find(b"PK\x03\x04", 1)  # the second member's local header
    name_len, extra_len = struct.unpack_from("<HH", data, header + 26)
    start = header + 30 + name_len + extra_len
    data[start + offset : start + offset + 64] = b"\xff" * 64
    archive = tmp_path / "damaged.zip"
    archive.write_bytes(bytes(data))
    target = tmp_path / "out"
    with pytest.raises(DataError, match=rf"damaged\.zip: member 'b\.txt' is corrupt .*{error}"):
        safe_extract(archive, target)
    assert [p for p in target.rglob("*") if p.is_file()] == []
