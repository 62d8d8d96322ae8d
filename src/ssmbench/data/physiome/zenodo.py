"""Mode ``"zenodo"`` of Physiome-ODE: the client of Zenodo's REST API that fetches the
official archive and extracts one dataset of it into the raw folder.

**Mode ``"zenodo"``**: ``fetch_physiome`` downloads ``final.zip`` of record 11492058 (the
record's JSON at ``<url>/api/records/<record>`` gives its ``md5:`` checksum and size; the
file comes from ``<url>/api/records/<record>/files/<file>/content``) to a ``.part`` file,
resumes an interrupted transfer with an HTTP Range request, checks size and md5, records
its sha256, and extracts ``final/<dataset>/`` of the dataset into ``<raw_dir>/<Name>/final/``:
the folder of an official dataset's leaderboard code (``official.py``: ``DUP01`` ->
``dupont_1991a``, ...), or of our model's official counterpart
(``hodgkin_huxley_1952_variant01`` for HodgkinHuxley1952, ``difrancesco_noble_1985`` for
DiFrancescoNoble1985; our other three are not among its 50 datasets). Extraction refuses
the whole archive when any member is absolute, has a ``..`` component, is a symlink or would
land outside the target. A failure at any point leaves the previous good copy and its
provenance as they were. URLs must be https (plain http only for 127.0.0.1 / localhost /
::1, for tests); redirects are held to the same rule.

With ``cache_dir`` the verified archive is kept there, so one download serves every dataset
of it (the 50 of ``benchmarks.physiome_ode``): a later fetch checks the kept copy's md5
against the record and extracts from it. Fetches sharing a cache take turns on a lock file
in it (``.<file>.lock``), so two jobs never download into one ``.part`` at once.

The archive's files are ``torch.save`` of ``Subset`` objects of the reference's own dataset
class; ``prepare_physiome`` reads them with a restricted unpickler that runs none of their
code (``official_files.py``) and writes one prepared folder per fold
(``official_prepare.py``), since the five folds are independent re-splits with their own
noise and masks.
"""

from __future__ import annotations

import http.client
import json
import shutil
import urllib.error
import urllib.parse
import urllib.request
import uuid
import zipfile
from numbers import Integral
from pathlib import Path

from ssmbench.data.checksums import file_digests, sha256_file
from ssmbench.data.download import (
    check_url,
    download_verified,
    install_staged,
    opener,
    safe_extract,
)
from ssmbench.data.errors import DataError
from ssmbench.data.physiome.models import PHYSIOME_MODELS
from ssmbench.data.physiome.official import archive_folder
from ssmbench.data.physiome.settings import bad_setting
from ssmbench.data.provenance import (
    PROVENANCE,
    recorded_files,
    utc_now,
    verified_provenance,
)
from ssmbench.io import atomic_write_json

#: where the archive is kept while it is downloaded and extracted (without ``cache_dir``)
DOWNLOAD_DIR = ".zenodo-download"
#: the params.yaml key of the Zenodo URL, named by the errors about it
URL_SETTING = "benchmarks.physiome.zenodo.url"


def _get_json(url: str, timeout: float) -> dict:
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with opener(url).open(req, timeout=timeout) as resp:
            return json.loads(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        raise DataError(
            f"{url}: HTTP {e.code} {e.reason}. Check benchmarks.physiome.zenodo.record / url."
        ) from e
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:
        raise DataError(
            f"{url}: could not read the Zenodo record ({type(e).__name__}: {e}). Check the "
            f"network, or set benchmarks.physiome.mode: generate."
        ) from e


def _record_file(record: dict, fname: str, url: str) -> tuple[str, int | None]:
    """(md5 hex, size) of ``fname`` in a Zenodo record's JSON."""
    files = record.get("files")
    if isinstance(files, dict):  # some serialisations nest the list under "entries"
        files = files.get("entries")
        files = list(files.values()) if isinstance(files, dict) else files
    for f in files or []:
        if isinstance(f, dict) and (f.get("key") or f.get("filename")) == fname:
            checksum = str(f.get("checksum") or "")
            algo, _, digest = checksum.partition(":")
            if algo.lower() != "md5" or len(digest) != 32:
                raise DataError(
                    f"{url}: file {fname} has checksum {checksum!r}, not 'md5:<32 hex>'; "
                    f"cannot verify the download."
                )
            size = f.get("size", f.get("filesize"))
            return digest.lower(), (int(size) if isinstance(size, Integral) else None)
    listed = [f.get("key") for f in files or [] if isinstance(f, dict)]
    raise DataError(
        f"{url}: the record has no file {fname!r} (files: {listed}). Fix "
        f"benchmarks.physiome.zenodo.file."
    )


def _intact(dest: Path, name: str, mode: str, extra: dict | None = None) -> dict | None:
    files = recorded_files(dest, name)
    if files is None:
        return None
    prov = verified_provenance(dest, name, files)
    if prov is None or prov.get("mode") != mode:
        return None
    for key, value in (extra or {}).items():
        if prov.get(key) != value:
            return None
    return prov


def zenodo_dataset(name: str, cfg: dict) -> str:
    """The archive's folder of dataset ``name``: the setting, else the official code's own
    folder or our model's official counterpart; DataError when there is none."""
    official = cfg["zenodo_dataset"] or archive_folder(name)
    if not official:
        have = [n for n, e in PHYSIOME_MODELS.items() if e["official"]]
        raise DataError(
            f"Physiome dataset {name} is not one of the official archive's 50 datasets (only "
            f"{', '.join(have)} of ours are, and the 50 by leaderboard code, e.g. DUP01). Set "
            f"benchmarks.physiome.mode: generate, or name the archive's folder in "
            f"benchmarks.physiome.zenodo.dataset."
        )
    if "/" in official or official in (".", ".."):
        raise bad_setting("zenodo_dataset", official, "a plain folder name")
    return official


def fetch_zenodo(name: str, dest: Path, cfg: dict) -> dict:
    """Fetch dataset ``name`` of the official archive into ``dest`` (the module docstring
    says how); return its provenance. An intact earlier fetch is returned without network."""
    official = zenodo_dataset(name, cfg)
    base = check_url(cfg["zenodo_url"], URL_SETTING)
    existing = _intact(dest, name, "zenodo", {"zenodo_dataset": official})
    if existing is not None and not cfg["force"]:
        return existing
    if cfg["offline"]:
        raise DataError(
            f"Physiome dataset {name} (mode zenodo) is not fetched (or {dest} is damaged) and "
            f"benchmarks.physiome.offline is true. Go online, or set "
            f"benchmarks.physiome.mode: generate."
        )
    record_url = f"{base}/api/records/{cfg['zenodo_record']}"
    fname = cfg["zenodo_file"]
    md5, size = _record_file(_get_json(record_url, cfg["timeout"]), fname, record_url)
    cache = Path(cfg["cache_dir"]) if cfg["cache_dir"] else dest / DOWNLOAD_DIR
    if cfg["cache_dir"]:  # shared by the fetches of every dataset of the archive
        from filelock import FileLock

        cache.mkdir(parents=True, exist_ok=True)
        with FileLock(str(cache / f".{fname}.lock")):
            return _fetch_from_archive(name, dest, cfg, official, base, cache, md5, size)
    return _fetch_from_archive(name, dest, cfg, official, base, cache, md5, size)


def _fetch_from_archive(name, dest, cfg, official, base, cache, md5, size) -> dict:
    """``fetch_zenodo`` from the record's checksum on: get the verified archive into
    ``cache`` (a kept one, or a download), extract ``final/<official>/`` and record it."""
    record_url = f"{base}/api/records/{cfg['zenodo_record']}"
    fname = cfg["zenodo_file"]
    file_url = f"{record_url}/files/{urllib.parse.quote(fname)}/content"
    archive = cache / fname
    sha = None
    if archive.is_file():  # a verified archive from an earlier fetch (cache_dir)
        got = file_digests(archive, ("md5", "sha256"))
        if got["md5"] == md5 and (size is None or archive.stat().st_size == size):
            sha = got["sha256"]
        else:
            archive.unlink()
    if sha is None:
        sha = download_verified(
            file_url,
            archive,
            f"md5:{md5}",
            size,
            retries=cfg["retries"],
            timeout=cfg["timeout"],
            checksum_from="the Zenodo record",
            retries_setting="benchmarks.physiome.zenodo.retries",
        )
    prefix = f"final/{official}/"
    extracted = dest / f".extract-{uuid.uuid4().hex}"  # .dvcignore: .extract-*
    try:
        files = safe_extract(archive, extracted, prefix)
        files = [f for f in files if not f.endswith("/")]
        if not files:
            with zipfile.ZipFile(archive) as zf:
                names = sorted(
                    {
                        p.split("/")[1]
                        for p in zf.namelist()
                        if p.startswith("final/") and p.count("/") >= 2
                    }
                )
            raise DataError(
                f"{archive}: no {prefix} in the archive (it has {len(names)} datasets, e.g. "
                f"{names[:5]}). Fix benchmarks.physiome.zenodo.dataset."
            )
        raw_files, sizes = {}, {}
        for rel in files:
            path = extracted / rel
            raw_files[f"{name}/{rel}"] = sha256_file(path)
            sizes[f"{name}/{rel}"] = path.stat().st_size
        install_staged({"final": extracted / "final"}, dest)
    finally:
        shutil.rmtree(extracted, ignore_errors=True)
    if not cfg["cache_dir"]:
        archive.unlink(missing_ok=True)
        shutil.rmtree(cache, ignore_errors=True)
    prov = {
        "dataset": name,
        "source": "zenodo",
        "mode": "zenodo",
        "source_url": f"{base}/records/{cfg['zenodo_record']}",
        "zenodo_record": cfg["zenodo_record"],
        "zenodo_dataset": official,
        "archive": {"file": fname, "url": file_url, "md5": md5, "sha256": sha, "size": size},
        "raw_files": raw_files,
        "sizes": sizes,
        "fetched": utc_now(),
    }
    atomic_write_json(dest / PROVENANCE, prov, sort_keys=False)
    return prov
