"""MONSTER (Monash Scalable Time Series Evaluation Repository) from the Hugging Face Hub.

``fetch_monster`` puts the raw files of one dataset in ``<raw_dir>/<Name>/`` with a
``provenance.json`` beside them; ``ssmbench.data.monster.prepare.prepare_monster`` turns
them into the prepared format of ``docs/contracts.md`` without ever loading ``X`` into
memory.

The Hub dataset repo ``monster-monash/<Name>`` holds ``<Name>_X.npy`` (N, C, L), the labels
``<Name>_y.npy`` (N,) and ``test_indices_fold_{k}.txt`` for k = 0..4 (one row index a line).
Some repositories spell the label file ``<Name>_Y.npy``: as aeon's ``load_monster_dataset``
and the MONSTER benchmark's own loader do, ``_Y`` is taken when the repository (the Hub's
file list of the commit, or the folder's listing) holds it, else ``_y``
(:func:`monster_files`).

Where the files come from:

1. ``local_dir`` (a folder already holding the files; no network): ``<local_dir>/<Name>/``
   if it holds ``<Name>_X.npy``, else ``<local_dir>/`` itself (e.g. the target of
   ``hf download monster-monash/<Name> --repo-type dataset --local-dir ...``). A
   ``SHA256SUMS`` file (``sha256sum`` output) in ``<local_dir>/`` (paths ``<Name>/<file>``)
   or in the dataset folder (bare file names) is checked when present. Files are copied
   into ``<raw_dir>/<Name>/`` (``download.copy_file``: copy-on-write where the filesystem
   offers it, never a hard link), so the raw copy is a snapshot: editing the source
   changes neither it nor the prepared data. ``provenance.json`` records the folder
   (``source_url``) and each file's stamp (``origin``: path, size, times, inode); a fetch
   re-copies when ``local_dir`` points elsewhere or a source file's content changed (its
   stamp differs and so does its sha256), and says why (``fetched_because``). A file
   that is a symbolic link to one outside its folder is refused, the link named (a link
   could bring any file of the machine into the raw copy); so is one put by hand in the
   raw folder (2.).
2. Offline (``offline=True``, or ``HF_HUB_OFFLINE=1``) without ``local_dir``: the files
   already in ``<raw_dir>/<Name>/``; nothing else.
3. The Hub, through ``huggingface_hub.hf_hub_download`` (endpoint ``HF_ENDPOINT``, default
   https://huggingface.co). The first file's HEAD resolves ``revision`` to a commit and every
   file is then downloaded at that commit, so the set is consistent even if the branch
   moves meanwhile. Each file goes to a staging folder ``<raw_dir>/<Name>/.hub-download/``,
   is checked against the checksum the Hub reports for it (``X-Linked-ETag``: the LFS
   sha256; for a file kept in git, the ``ETag`` is its git blob sha1, checked as such), and
   only when every file has passed are they renamed over the previous copies. A failed or
   corrupt download therefore leaves the previous good copy (and its provenance) as it was.

A fetch whose files are already in place with the checksums of ``provenance.json`` does
nothing (no network), unless ``force``, ``revision`` pins a commit other than the recorded
one or names another branch or tag than the one fetched, or the copy came from elsewhere
than the request's source (:func:`origin_problem`).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from ssmbench.data.checksums import GIT_BLOB_SHA1, file_digests, listed_sha256, sha256_file
from ssmbench.data.download import copy_file, install_staged, staged_path, staging
from ssmbench.data.errors import DataError
from ssmbench.data.provenance import (
    ORIGIN,
    PROVENANCE,
    REJECTED,
    file_stamp,
    source_change,
    utc_now,
    verified_provenance,
)
from ssmbench.io import atomic_write_json

HUB_ORG = "monster-monash"
N_FOLDS = 5
STAGING = ".hub-download"
DEFAULT_ENDPOINT = "https://huggingface.co"

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_SHA1_RE = re.compile(r"[0-9a-f]{40}")


# --------------------------------------------------------------------------- helpers
def label_names(name: str) -> tuple[str, str]:
    """The spellings of the label file, in the order they are looked for."""
    return f"{name}_Y.npy", f"{name}_y.npy"


def monster_files(name: str, listing=()) -> list[str]:
    """The raw file names of dataset ``name``, as in its Hub repo: the label file spelt as
    in ``listing`` (the names the repository or folder holds; ``_y`` when it holds none)."""
    upper, lower = label_names(name)
    label = upper if upper in set(listing) else lower
    return [f"{name}_X.npy", label] + [f"test_indices_fold_{k}.txt" for k in range(N_FOLDS)]


def folder_files(name: str, folder: Path) -> list[str]:
    """:func:`monster_files` as spelt in ``folder`` (``_y`` when it does not exist)."""
    try:
        listing = os.listdir(folder)
    except OSError:
        listing = []
    return monster_files(name, listing)


def _drop_other_spelling(dest: Path, files: list[str], name: str) -> None:
    """After an install, remove a label file of the other spelling left by an older copy."""
    for other in label_names(name):
        if other not in files and other in os.listdir(dest):
            (dest / other).unlink(missing_ok=True)


def repo_id_of(name: str) -> str:
    return f"{HUB_ORG}/{name}"


def check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise DataError(
            f"MONSTER dataset name {name!r} is not a plain name (letters, digits, '.', '_', "
            f"'-'). Fix the dataset name in params.yaml (e.g. 'LakeIce')."
        )


def _hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` as huggingface_hub saw it at import, or as set now."""
    value = os.environ.get("HF_HUB_OFFLINE", "").strip().upper()
    if value in {"1", "ON", "YES", "TRUE"}:
        return True
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    return bool(constants.is_offline_mode())


def _hub_version() -> str | None:
    try:
        import huggingface_hub

        return huggingface_hub.__version__
    except ImportError:
        return None


def _fits_request(prov: dict, revision: str, local_dir) -> bool:
    """Whether a complete recorded fetch satisfies this request without fetching again."""
    if local_dir is not None:
        return True  # where the copy came from, and whether it changed: origin_problem
    pinned = _SHA1_RE.fullmatch(str(revision).lower()) is not None
    return not (pinned and prov.get("source") == "hub" and prov.get("revision") != revision)


def _write_provenance(dest: Path, prov: dict) -> dict:
    atomic_write_json(dest / PROVENANCE, prov, sort_keys=False)
    return prov


def origin_problem(
    name: str,
    dest: Path,
    prov: dict,
    *,
    revision: str = "main",
    local_dir: str | os.PathLike | None = None,
    offline: bool = False,
) -> tuple[str | None, dict]:
    """Why the raw copy ``dest`` (recorded by ``prov``) no longer stands for where this
    request takes ``name`` from, or None; and the source stamps now (to record when only
    they changed: ``provenance.source_change``). Decided without network:

    * ``local_dir`` set: the copy came from another folder, or from the Hub; or a source
      file's content changed since the fetch (same path, other bytes).
    * ``local_dir`` unset, online: the copy came from a ``local_dir`` (not files adopted in
      the raw folder), or from the Hub at another branch or tag than ``revision`` (a
      pinned commit is :func:`_fits_request`'s).
    """
    stamps = prov.get(ORIGIN) or {}
    source, url = prov.get("source"), prov.get("source_url")
    if local_dir is None:
        if offline or _hub_offline():
            return None, stamps
        if source == "local_dir" and url != str(dest.resolve()):
            return (
                f"benchmarks.monster.local_dir is unset (download from the Hub), but the raw "
                f"copy came from local_dir {url}",
                {},
            )
        pinned = _SHA1_RE.fullmatch(str(revision).lower()) is not None
        requested = prov.get("revision_requested")
        if source == "hub" and not pinned and requested not in (None, revision):
            return f"revision is {revision!r}, but the raw copy is of revision {requested!r}", {}
        return None, stamps
    root = Path(local_dir)
    folder = _local_folder(name, root)
    if folder is None:  # the source is gone: the copy stands if it came from there
        if source == "local_dir" and url in (str((root / name).resolve()), str(root.resolve())):
            return None, stamps
        return f"benchmarks.monster.local_dir is {root}, but the raw copy came from {url}", {}
    if source != "local_dir" or url != str(folder.resolve()):
        return (
            f"benchmarks.monster.local_dir is {root} ({folder.resolve()}), but the raw copy "
            f"came from {'local_dir ' if source == 'local_dir' else 'the Hub, '}{url}",
            {},
        )
    files = {f"{name}/{f}": folder / f for f in folder_files(name, folder)}
    for path in files.values():
        if folder.resolve() != dest.resolve() and _same_file(path, dest / path.name):
            return f"{dest / path.name} is a hard link to {path}, not a copy of its own", {}
    return source_change(files, prov.get("raw_files") or {}, stamps)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


# --------------------------------------------------------------------------- local_dir
def locate_local(name: str, local_dir: str | os.PathLike) -> Path:
    """The folder of ``local_dir`` that holds ``name``'s files: ``<local_dir>/<name>/`` or
    ``<local_dir>/``. Raises DataError naming what is missing."""
    root = Path(local_dir)
    for folder in (root / name, root):
        if (folder / f"{name}_X.npy").is_file():
            files = folder_files(name, folder)
            missing = [f for f in files if not (folder / f).is_file()]
            if missing:
                raise DataError(
                    f"MONSTER dataset {name}: {folder} lacks {', '.join(missing)}. Put all of "
                    f"{', '.join(files)} there (as in the Hub repo "
                    f"{repo_id_of(name)})."
                )
            return folder
    raise DataError(
        f"MONSTER dataset {name}: local_dir is {root} but neither {root / name} nor {root} "
        f"holds {name}_X.npy. Put the Hub repo's files in {root / name}/, or unset local_dir "
        f"to download from the Hub."
    )


def local_files(name: str, local_dir: str | os.PathLike | None) -> list[Path]:
    """The files of ``local_dir`` that a fetch copies, as far as they exist; none without
    ``local_dir``."""
    folder = None if local_dir is None else _local_folder(name, Path(local_dir))
    if folder is None:
        return []
    return [folder / f for f in folder_files(name, folder) if (folder / f).is_file()]


def _local_folder(name: str, root: Path) -> Path | None:
    """The folder of ``root`` holding ``<name>_X.npy`` (:func:`locate_local`'s order), or
    None; nothing is checked beyond that file."""
    for folder in (root / name, root):
        if (folder / f"{name}_X.npy").is_file():
            return folder
    return None


def _fetch_local(name: str, dest: Path, root: Path, folder: Path) -> dict:
    files = folder_files(name, folder)
    expected, sums_used = listed_sha256(root, folder, name, files)
    raw_files, sizes, verified, stamps = {}, {}, {}, {}
    inside = folder.resolve()
    for fname in files:
        if not (folder / fname).resolve().is_relative_to(inside):
            # named, never followed into the message: a link could bring any file of
            # the machine into the raw copy
            raise DataError(
                f"{folder / fname}: a symbolic link to a file outside its folder {folder}; "
                f"put the file itself in the folder"
            )
    with staging(dest) as staged:
        for fname in files:
            src = folder / fname
            # taken before the copy: a change while copying shows as a stamp that differs
            stamps[f"{name}/{fname}"] = file_stamp(src)
            if src.resolve() == (dest / fname).resolve():
                tmp = src  # the files are already in place (offline adoption)
            else:
                tmp = staged_path(dest, fname)
                try:
                    copy_file(src, tmp)
                except OSError as e:
                    raise DataError(f"{src}: could not copy it to {dest} ({e}).") from e
                staged[fname] = tmp
            digest = sha256_file(tmp)
            if fname in expected and digest != expected[fname]:
                raise DataError(
                    f"{src}: sha256 {digest} does not match {expected[fname]} listed in "
                    f"{sums_used}. The file is corrupt or a different version; replace it "
                    f"(the previous copy in {dest}, if any, was kept)."
                )
            raw_files[f"{name}/{fname}"] = digest
            sizes[f"{name}/{fname}"] = tmp.stat().st_size
            verified[fname] = "SHA256SUMS" if fname in expected else None
        install_staged(staged, dest)
    _drop_other_spelling(dest, files, name)
    return {
        "dataset": name,
        "source": "local_dir",
        "repo_id": repo_id_of(name),
        "revision": None,
        "revision_requested": None,
        "source_url": str(folder.resolve()),
        "raw_files": raw_files,
        "sizes": sizes,
        ORIGIN: stamps,
        "verified": verified,
        "verified_against": sums_used,
        "huggingface_hub_version": _hub_version(),
        "fetched": utc_now(),
    }


# --------------------------------------------------------------------------- the Hub
def _hub_error(name: str, fname: str, revision: str, endpoint: str, e: Exception) -> DataError:
    from huggingface_hub.errors import (
        GatedRepoError,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    repo = repo_id_of(name)
    if isinstance(e, RepositoryNotFoundError | GatedRepoError):
        hint = (
            f"the dataset repo {repo} does not exist on {endpoint} (or needs a token). "
            f"Check the dataset name in params.yaml"
        )
    elif isinstance(e, RevisionNotFoundError):
        hint = f"revision {revision!r} does not exist in {repo}. Fix the revision in params.yaml"
    elif isinstance(e, RemoteEntryNotFoundError):
        hint = f"{repo} has no file {fname} at revision {revision!r}. Check the dataset name"
    else:
        hint = (
            f"the download from {endpoint} failed. Check the network (and HF_ENDPOINT), then "
            f"run the fetch again; without network, put the files in a folder and set "
            f"local_dir (<local_dir>/{name}/{fname}, ...)"
        )
    return DataError(
        f"MONSTER dataset {name}: {fname}: {hint}. ({type(e).__name__}: {e}) The previous "
        f"copy in the raw folder, if any, was kept."
    )


def _hub_files(name: str, revision: str, endpoint: str) -> tuple[str, list[str]]:
    """(the commit ``revision`` resolves to, the raw file names as the repository's file list
    at that commit spells them). The HEAD of ``<name>_X.npy`` resolves the commit, so every
    file is then read at that one commit."""
    from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_url

    repo = repo_id_of(name)
    first = monster_files(name)[0]
    try:
        url = hf_hub_url(repo, first, repo_type="dataset", revision=revision, endpoint=endpoint)
        md = get_hf_file_metadata(url, endpoint=endpoint)
        if md.commit_hash is None:
            raise DataError(
                f"MONSTER dataset {name}: {url} answered without an X-Repo-Commit header: "
                f"{endpoint} is not a Hugging Face Hub endpoint. Fix HF_ENDPOINT."
            )
        listing = HfApi(endpoint=endpoint).list_repo_files(
            repo, repo_type="dataset", revision=md.commit_hash
        )
    except DataError:
        raise
    except Exception as e:  # HfHubHTTPError, httpx errors, ...
        raise _hub_error(name, first, revision, endpoint, e) from e
    files = monster_files(name, listing)
    missing = [f for f in files if f not in listing]
    if missing:
        raise DataError(
            f"MONSTER dataset {name}: {repo} at commit {md.commit_hash} (revision "
            f"{revision!r}) has no {', '.join(missing)}; it holds {', '.join(sorted(listing))}. "
            f"Check the dataset name and revision in params.yaml."
        )
    return md.commit_hash, files


def _fetch_hub(name: str, dest: Path, revision: str, endpoint: str | None) -> dict:
    try:
        from huggingface_hub import constants as hub_constants
        from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    except ImportError as e:
        raise DataError(
            f"MONSTER dataset {name}: downloading needs huggingface_hub ({e}). Install the "
            f"pinned dependencies (pip install -e .) or set local_dir."
        ) from e
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or hub_constants.ENDPOINT).rstrip("/")
    repo = repo_id_of(name)
    hub_staging = dest / STAGING
    hub_staging.mkdir(parents=True, exist_ok=True)
    staged: dict[str, Path] = {}
    raw_files, sizes, verified = {}, {}, {}
    commit, files = _hub_files(name, revision, endpoint)
    for fname in files:
        rev = commit
        try:
            url = hf_hub_url(repo, fname, repo_type="dataset", revision=commit, endpoint=endpoint)
            md = get_hf_file_metadata(url, endpoint=endpoint)
            path = Path(
                hf_hub_download(
                    repo_id=repo,
                    repo_type="dataset",
                    filename=fname,
                    revision=commit,
                    local_dir=hub_staging,
                    endpoint=endpoint,
                )
            )
        except DataError:
            raise
        except Exception as e:  # HfHubHTTPError, httpx errors, OSError (size check), ...
            raise _hub_error(name, fname, rev, endpoint, e) from e
        digests = file_digests(path, ("sha256", GIT_BLOB_SHA1))
        sha256, sha1 = digests["sha256"], digests[GIT_BLOB_SHA1]
        etag = (md.etag or "").lower()
        if _SHA256_RE.fullmatch(etag):
            kind, ok = "sha256 (X-Linked-ETag)", sha256 == etag
        elif _SHA1_RE.fullmatch(etag):
            kind, ok = "git blob sha1 (ETag)", sha1 == etag
        else:
            kind, ok = None, True
        if not ok:
            path.unlink(missing_ok=True)
            raise DataError(
                f"MONSTER dataset {name}: {fname} downloaded from {url} has sha256 {sha256} "
                f"(git sha1 {sha1}) but the Hub reports {kind} {etag}. The transfer was "
                f"corrupted; run the fetch again. The previous copy in {dest}, if any, was kept."
            )
        staged[fname] = path
        raw_files[f"{name}/{fname}"] = sha256
        sizes[f"{name}/{fname}"] = path.stat().st_size
        verified[fname] = kind
    install_staged(staged, dest)
    shutil.rmtree(hub_staging, ignore_errors=True)
    _drop_other_spelling(dest, files, name)
    return {
        "dataset": name,
        "source": "hub",
        "repo_id": repo,
        "revision": commit,
        "revision_requested": revision,
        "source_url": f"{endpoint}/datasets/{repo}/tree/{commit}",
        "raw_files": raw_files,
        "sizes": sizes,
        "verified": verified,
        "verified_against": "the Hub's ETag / X-Linked-ETag of each file",
        "huggingface_hub_version": _hub_version(),
        "fetched": utc_now(),
    }


# --------------------------------------------------------------------------- fetch
def fetch_monster(
    name: str,
    raw_dir: str | os.PathLike,
    revision: str = "main",
    local_dir: str | os.PathLike | None = None,
    offline: bool = False,
    *,
    force: bool = False,
    endpoint: str | None = None,
) -> dict:
    """Put ``<raw_dir>/<name>/`` (the Hub repo's 7 files + ``provenance.json``) in place.

    Returns the provenance ``{dataset, source ("hub" | "local_dir"), repo_id, revision (the
    resolved commit, when known), source_url, raw_files {"<name>/<file>": sha256}, sizes,
    origin (local_dir: each source file's stamp), verified, fetched, fetched_because (why a
    recorded copy was replaced), ...}``, also written to
    ``<raw_dir>/<name>/provenance.json``. See the module docstring for the sources and their
    order. ``endpoint`` overrides ``HF_ENDPOINT``.
    """
    check_name(name)
    raw_dir = Path(raw_dir)
    dest = raw_dir / name

    existing = verified_provenance(dest, name, folder_files(name, dest))
    because = None
    if existing is not None and not force:
        because, stamps = origin_problem(
            name, dest, existing, revision=revision, local_dir=local_dir, offline=offline
        )
        if because is None and _fits_request(existing, revision, local_dir):
            if stamps == (existing.get(ORIGIN) or {}):
                return existing
            # touched, not changed: record the stamps, so the next check reads nothing
            return _write_provenance(dest, {**existing, ORIGIN: stamps})
    why = {"fetched_because": because} if because else {}

    if local_dir is not None:
        root = Path(local_dir)
        prov = _fetch_local(name, dest, root, locate_local(name, root))
        return _write_provenance(dest, prov | why)

    if offline or _hub_offline():
        if existing is not None and _fits_request(existing, revision, None):
            return existing  # offline, nothing to fetch again from: the verified copy stands
        if existing is not None:
            raise DataError(
                f"MONSTER dataset {name}: {dest} holds revision {existing.get('revision')} but "
                f"revision {revision} is requested, and the Hub cannot be reached offline. Go "
                f"online (unset HF_HUB_OFFLINE / offline) or request the recorded revision."
            )
        files = folder_files(name, dest)
        present = [f for f in files if (dest / f).is_file()]
        recorded = (dest / PROVENANCE).exists() or (dest / REJECTED).exists()
        if len(present) == len(files) and not recorded:
            # Files put in the raw folder by hand: adopt them as they are.
            prov = _fetch_local(name, dest, raw_dir, dest)
            return _write_provenance(dest, prov)
        if (dest / REJECTED).exists():
            state = f"the copy in {dest} failed to prepare ({dest / REJECTED} says why)"
        elif (dest / PROVENANCE).exists():
            state = f"{dest} does not match its {PROVENANCE} (changed or damaged files)"
        else:
            state = f"{dest} has only {len(present)} of its {len(files)} files"
        raise DataError(
            f"MONSTER dataset {name} is not available offline: {state}. Set local_dir "
            f"(benchmarks.monster.local_dir in params.yaml) to a folder holding "
            f"{name}/{name}_X.npy, {name}_y.npy and test_indices_fold_0..4.txt, or go "
            f"online (unset HF_HUB_OFFLINE / offline) to download {repo_id_of(name)}."
        )

    prov = _fetch_hub(name, dest, revision, endpoint)
    return _write_provenance(dest, prov | why)
