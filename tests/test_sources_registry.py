"""The source table (``ssmbench.data.source_registry.SOURCES``): one `Source` per data
source, the one place fetch / prepare / the pre-flight check / the content settings /
the base of a derived dataset dispatch through; the schema's ``source`` enum lists its
names; and a source registered there (a toy one here) is fetched, prepared and checked
through the public functions of ``ssmbench.data.sources`` with no other code touched."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from ssmbench.data import sources
from ssmbench.data.errors import DataError
from ssmbench.data.prepared_files import write_prepared_folder
from ssmbench.data.provenance import PROVENANCE
from ssmbench.data.source_registry import SOURCES
from ssmbench.data.source_type import Source
from ssmbench.data.store import PreparedDataset
from ssmbench.io import index_text
from ssmbench.params_file import SCHEMA_PATH, ConfigError, params_schema, validate_schema

DATA = Path(sources.__file__).parent


def _benchmark_keys() -> dict:
    return params_schema()["$defs"]["benchmark_values"]["properties"]


# --------------------------------------------------------------------------- the table
def test_the_schema_enum_is_the_table():
    assert _benchmark_keys()["source"]["enum"] == list(SOURCES)
    # the file names no source: the table's names are merged in where it is read
    written = yaml.safe_load(SCHEMA_PATH.read_text())["$defs"]["benchmark_values"]["properties"]
    assert "enum" not in written["source"]
    assert not set(written) & {k for s in SOURCES.values() for k in s.settings.keys}


def test_sources_dispatches_through_the_table():
    assert sources.SOURCES is SOURCES  # one table, not a copy
    assert sources.DERIVED_SOURCES == ("uea_drop", "uea6")
    # no `if source == "..."` left: sources.py names no source outside its docstrings
    tree = ast.parse(Path(sources.__file__).read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef) and ast.get_docstring(node)
    }
    named = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and id(node) not in docstrings
    }
    assert not named & set(SOURCES), sorted(named & set(SOURCES))


def test_every_source_module_is_registered():
    """A source folder ``<name>/`` whose ``source.py`` holds its ``SOURCE`` is the table's
    entry ``<name>``: a source written but not registered (or registered under another
    name) fails."""
    folders = sorted(p.parent.name for p in DATA.glob("*/source.py"))
    assert folders == sorted(SOURCES)
    for name in folders:
        assert SOURCES[name] is importlib.import_module(f"ssmbench.data.{name}.source").SOURCE


@pytest.mark.parametrize("name", list(SOURCES))
def test_every_source_has_the_operations_it_needs(name):
    source = SOURCES[name]
    assert isinstance(source, Source)
    assert callable(source.prepare)
    # its content settings are its own settings, which the schema allows
    assert source.content_keys and set(source.content_keys) <= set(source.settings.keys)
    assert set(source.settings.keys) <= set(_benchmark_keys())
    # its folder holds its modules, rows and settings alike
    folder = DATA / name
    assert {"__init__.py", "source.py", "catalog.py", "params.schema.yaml"} <= {
        p.name for p in folder.iterdir()
    }
    assert source.settings_schema == folder / "params.schema.yaml"
    if source.fetch is not None:  # raw files: fetched, and locatable before any job runs
        assert callable(source.fetch) and source.recipe is None
        assert callable(source.locate), f"{name} has raw files but no pre-flight locate"
    else:  # made: its fetch records a recipe
        assert callable(source.recipe)
        assert source.check_recipe is not None, f"{name} is made but checks no settings"
    if name in sources.DERIVED_SOURCES:  # made from another benchmark's dataset
        assert callable(source.derived_from) and "derived_from" in source.content_keys
    else:
        assert source.derived_from is None


def test_a_source_is_either_fetched_or_made():
    def prepare(name, raw_dir, out_dir, settings):
        return out_dir / name

    with pytest.raises(TypeError, match="either fetch"):
        Source(prepare=prepare, content_keys=("x",))
    with pytest.raises(TypeError, match="either fetch"):
        Source(prepare, ("x",), fetch=lambda *a: {}, recipe=lambda *a: {})
    with pytest.raises(TypeError, match="derived"):
        Source(prepare, ("x",), fetch=lambda *a: {}, derived_from=lambda *a: ("b", "d"))


def test_an_unknown_source_is_named_with_the_known_ones(tmp_path):
    message = f"benchmark source 'nope' is not one of {tuple(SOURCES)}"
    for step in (
        lambda s: sources.fetch("X", tmp_path, s),
        lambda s: sources.prepare("X", tmp_path, tmp_path, s),
        lambda s: sources.check_available("X", tmp_path, s),
        sources.data_settings,
        lambda s: sources.derived_base("X", s),
    ):
        with pytest.raises(DataError) as info:
            step({"source": "nope"})
        assert str(info.value) == message


def test_derived_base_of_each_derived_source():
    assert sources.derived_base("EigenWormsDrop", {"source": "uea_drop"}) == ("uea", "EigenWorms")
    assert sources.derived_base("Heartbeat", {"source": "uea6", "derived_from": "u"}) == (
        "u",
        "Heartbeat",
    )
    with pytest.raises(DataError, match="named <Base>Drop"):
        sources.derived_base("Drop", {"source": "uea_drop"})
    with pytest.raises(DataError, match="'uea' is not derived"):
        sources.derived_base("BasicMotions", {"source": "uea"})


# --------------------------------------------------------------------------- a new source
# A toy source: one raw file (its rows), prepared into the project's format by its writer.
# Registering it is one line (monkeypatch.setitem); nothing else is touched.
def _toy_fetch(name: str, raw_dir: Path, settings: dict, force: bool) -> dict:
    dest = raw_dir / name
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "rows.txt").write_text(f"{settings.get('generator', {}).get('n', 6)}\n")
    prov = {"dataset": name, "raw_files": {f"{name}/rows.txt": "-"}, "force": force}
    (dest / PROVENANCE).write_text(json.dumps(prov))
    return prov


def _toy_prepare(name: str, raw_dir: Path, out_dir: Path, settings: dict) -> Path:
    n = int((raw_dir / name / "rows.txt").read_text())
    X = np.arange(n * 2 * 3, dtype=np.float32).reshape(n, 2, 3)
    meta = {"name": name, "N": n, "C": 2, "L": 3, "task": "classification",
            "fold_scheme": "official_split", "n_folds": 1, "n_train": n - 2,
            "n_classes": 2}  # fmt: skip
    texts = {"test_indices_fold_0.txt": index_text(range(n - 2, n))}
    return write_prepared_folder(
        out_dir, name, {"X.npy": X, "y.npy": np.arange(n) % 2}, texts, meta
    )


def _toy_locate(name: str, settings: dict) -> None:
    if settings.get("offline"):
        raise DataError(f"toy dataset {name} is not fetched yet and offline is set")


def _toy_check(name: str, settings: dict) -> None:
    if set(settings.get("generator") or {}) - {"n"}:
        raise DataError(f"{name}: the toy generator takes n only")


TOY = Source(
    prepare=_toy_prepare,
    content_keys=("generator",),
    fetch=_toy_fetch,
    locate=_toy_locate,
    check_recipe=_toy_check,
)


def test_a_registered_source_is_fetched_prepared_and_checked(monkeypatch, tmp_path):
    settings = {"source": "toy", "generator": {"n": 5}}
    raw, out = tmp_path / "raw" / "toy", tmp_path / "prepared" / "toy"
    with pytest.raises(DataError, match="'toy' is not one of"):
        sources.check_available("Tiny", raw, settings)

    monkeypatch.setitem(SOURCES, "toy", TOY)  # the one line

    sources.check_available("Tiny", raw, settings)
    with pytest.raises(DataError, match="not fetched yet and offline"):
        sources.check_available("Tiny", raw, {**settings, "offline": True})
    with pytest.raises(DataError, match="takes n only"):
        sources.check_available("Tiny", raw, {**settings, "generator": {"m": 1}})
    assert sources.data_settings({**settings, "offline": True}) == '{"generator": {"n": 5}}'

    prov = sources.fetch("Tiny", raw, settings, force=True)
    assert prov["force"] is True and (raw / "Tiny" / "rows.txt").read_text() == "5\n"
    sources.check_available("Tiny", raw, {**settings, "offline": True})  # fetched: fine
    data = PreparedDataset(sources.prepare("Tiny", raw, out, settings))
    assert data.path == out / "Tiny" and data.X.shape == (5, 2, 3)
    assert (data.meta["N"], data.meta["n_train"]) == (5, 3)
    assert not list(out.glob(".Tiny.tmp-*"))  # written in place of a temporary folder
    with pytest.raises(DataError, match="not a dataset name"):
        sources.prepare("../Tiny", raw, out, settings)


def test_a_registered_made_source_records_its_recipe(monkeypatch, tmp_path):
    """A source without raw files gives a recipe: its fetch records it, once per recipe."""

    def prepare(name, raw_dir, out_dir, settings):
        n = settings["generator"]["n"]
        X = np.zeros((n, 1, 2), dtype=np.float32)
        meta = {"N": n, "C": 1, "L": 2, "task": "classification", "n_classes": 1,
                "fold_scheme": "official_split", "n_folds": 1}  # fmt: skip
        texts = {"test_indices_fold_0.txt": index_text([0])}
        return write_prepared_folder(out_dir, name, {"X.npy": X, "y.npy": np.zeros(n)}, texts, meta)

    made = Source(
        prepare=prepare,
        content_keys=("generator",),
        recipe=lambda name, settings: {"generator": settings["generator"]},
        check_recipe=lambda name, settings: None,
    )
    monkeypatch.setitem(SOURCES, "made", made)
    raw = tmp_path / "raw"
    settings = {"source": "made", "generator": {"n": 4}}
    first = sources.fetch("Made", raw, settings)
    assert {k: first[k] for k in ("name", "source", "raw_files", "recipe")} == {
        "name": "Made",
        "source": "made",
        "raw_files": {},
        "recipe": {"generator": {"n": 4}},
    }
    assert json.loads((raw / "Made" / PROVENANCE).read_text()) == first
    assert sources.fetch("Made", raw, settings) == first  # the same recipe: kept
    assert sources.fetch("Made", raw, {**settings, "generator": {"n": 3}})["recipe"] == {
        "generator": {"n": 3}
    }
    data = PreparedDataset(sources.prepare("Made", raw, tmp_path / "out", settings))
    assert data.X.shape == (4, 1, 2)


# --------------------------------------------------------------------------- its settings
TOY_SETTINGS = """
keys:
  rows: {type: integer, minimum: 1, default: 6}
  offline: {type: boolean}
dataset_keys: [rows]
readers:
  rows: ["tests.toy:prepare"]
  offline: ["tests.toy:locate"]
"""


@pytest.fixture()
def toy_source(monkeypatch, tmp_path):
    """The toy source with a settings file of its own, registered by its one line; the
    params schema is read again with it, and again without it afterwards."""
    (tmp_path / "params.schema.yaml").write_text(TOY_SETTINGS)
    toy = Source(
        prepare=_toy_prepare,
        content_keys=("rows",),
        fetch=_toy_fetch,
        locate=_toy_locate,
        settings_schema=tmp_path / "params.schema.yaml",
    )
    params_schema.cache_clear()
    monkeypatch.setitem(SOURCES, "toy", toy)
    yield toy
    params_schema.cache_clear()


def _params_with_toy() -> dict:
    from conftest import REPO

    from ssmbench.params_file import read_params

    params = read_params(REPO / "params.yaml")
    params["benchmarks"]["toys"] = {"source": "toy", "max_epochs": 1, "datasets": ["Tiny"]}
    return params


def test_a_registered_source_s_settings_are_in_the_params_schema(toy_source):
    """Its keys, typed as its folder says, for a benchmark and (those it lets a dataset
    set) for one dataset; its name in the ``source`` enum; nothing else touched."""
    params = _params_with_toy()
    toys = params["benchmarks"]["toys"]
    toys.update(rows=5, offline=True, dataset_overrides={"Tiny": {"rows": 3}})
    validate_schema(params)
    for where, edit, problem in [
        ("benchmarks.toys.rows", {"rows": 0}, "is less than the minimum of 1"),
        ("benchmarks.toys.dataset_overrides.Tiny.offline", None, "unknown key"),
    ]:
        bad = {**toys, **(edit or {})}
        if edit is None:
            bad["dataset_overrides"] = {"Tiny": {"offline": True}}
        params["benchmarks"]["toys"] = bad
        with pytest.raises(ConfigError) as info:
            validate_schema(params)
        assert where in str(info.value) and problem in str(info.value), str(info.value)
    assert _benchmark_keys()["source"]["enum"] == [*SOURCES]  # the toy last
    assert "default" not in _benchmark_keys()["rows"]  # a default is the source's own
    from ssmbench.setting_defaults import setting_defaults, source_defaults

    assert source_defaults("toy") == {"rows": 6} and setting_defaults("toy")["rows"] == 6
    assert "rows" not in setting_defaults("uea")


def test_a_suite_may_set_its_benchmark_s_source_settings_only():
    """A suite's benchmark_overrides may set what the benchmark's source reads
    (``Source.settings``) where params.yaml sets none, and no other source's settings."""
    from conftest import REPO

    from ssmbench.config import check_params
    from ssmbench.params_file import read_params

    params = read_params(REPO / "params.yaml")
    assert {"archive_dir", "download", "normalise"} <= set(SOURCES["uea"].settings.keys)
    suite = params["suites"][params["suite"]]
    bench = next(b for b in suite["benchmarks"] if params["benchmarks"][b]["source"] == "uea")
    params["benchmarks"][bench].pop("normalise", None)
    suite["benchmark_overrides"] = {bench: {"normalise": "per_channel_train_zscore"}}
    check_params(params)
    suite["benchmark_overrides"] = {bench: {"local_dir": "elsewhere"}}  # monster's
    with pytest.raises(ConfigError, match=f"benchmark_overrides.{bench}.local_dir: unknown key"):
        check_params(params)


def test_its_readers_are_rows_of_the_readers_table():
    """The readers a source's folder names (a nested key, or one it takes without naming
    it) are ``config_readers`` rows; a key it reads as ``settings["<key>"]`` needs none."""
    from ssmbench.config_readers import CONFIG_READERS

    assert CONFIG_READERS["benchmarks.*.normalise"] == ("ssmbench.data.uea.source",)
    assert CONFIG_READERS["benchmarks.*.drop.seed"] == (
        "ssmbench.data.uea_drop.prepare:prepare_drop_rate_variant",
    )
    assert "benchmarks.*.archive_dir" not in CONFIG_READERS  # settings["archive_dir"]


def test_where_a_source_reads_its_files_holds_no_record():
    """The settings that say where a dataset's files are read from, not what they are, are
    each source's (its ``location_keys``): a record is not held to them."""
    from ssmbench.staleness import location_keys, tracked_settings

    assert SOURCES["uea"].settings.location_keys == ("archive_dir",)
    assert SOURCES["monster"].settings.location_keys == ("local_dir",)
    assert location_keys() == ("archive_dir", "local_dir")  # in the table's order
    spec = {"settings": {"archive_dir": "/a", "local_dir": "/b", "revision": "main"}}
    assert tracked_settings(spec)["settings"] == {"revision": "main"}


def test_a_key_two_sources_declare_otherwise_is_refused(tmp_path):
    from ssmbench.params_file import with_sources

    (tmp_path / "params.schema.yaml").write_text(
        TOY_SETTINGS.replace("offline: {type: boolean}", "offline: {type: string}")
    )
    toy = Source(_toy_prepare, ("rows",), fetch=_toy_fetch, locate=_toy_locate,
                 settings_schema=tmp_path / "params.schema.yaml")  # fmt: skip
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    with pytest.raises(ConfigError, match="declares offline otherwise than source 'monster'"):
        with_sources(schema, {**SOURCES, "toy": toy})


@pytest.mark.parametrize(
    "text, problem",
    [
        ("keys: {rows: {type: integer}}\nreaders: {rows: [m]}\nextra: 1\n", "expected a mapping"),
        ("keys: {rows: integer}\n", "its JSON Schema"),
        ("keys: {rows: {}}\ndataset_keys: [cols]\nreaders: {rows: [m]}\n", "['cols'] not among"),
        ("keys: {rows: {}}\nlocation_keys: [x]\nreaders: {rows: [m]}\n", "location_keys: ['x']"),
        ("keys: {rows: {}}\nreaders: {cols: [m]}\n", "'cols' is below none of its keys"),
        ("keys: {rows: {}}\nreaders: {rows: []}\n", "expected a list of readers"),
    ],
)
def test_a_malformed_settings_file_is_named(tmp_path, text, problem):
    from ssmbench.data.source_settings import read_source_settings

    path = tmp_path / "params.schema.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        read_source_settings(path)
    assert str(info.value).startswith(f"{path}: ") and problem in str(info.value)
