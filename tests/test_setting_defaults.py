"""Every setting's default in one table, the schema's (ssmbench.setting_defaults): each
setting a run reads has one, each validates against its own setting's schema, a run's
resolved settings hold them all, and no reader holds a default of its own: none in the
source (an AST scan of ``settings.get(<key>, ...)``), none reached by a real run (its
settings refuse a ``.get`` of a key they lack)."""

from __future__ import annotations

import ast
import copy
import json

import pytest
from conftest import REPO, make_project

from ssmbench.config import Job, benchmark_settings, job_spec, load_params
from ssmbench.params_file import read_params, validate_schema
from ssmbench.precedence import BATCH_AND_EPOCH_KEYS, PROTOCOL_KEYS
from ssmbench.setting_defaults import (
    DEFAULT_ORIGIN,
    _defs,
    protocol_keys,
    setting_defaults,
    source_defaults,
)
from ssmbench.staleness import EXECUTION_KEYS

PACKAGE = REPO / "src" / "ssmbench"
#: (module, setting) read where the source is Physiome-ODE, which resolves its ``mode``,
#: ``generator`` and ``zenodo`` in a table of its own (physiome.DEFAULTS, each value with
#: its reference line; the schema gives physiome none): a benchmark entry as written, read
#: with ``or {}``
OWN_TABLES = {
    ("data/physiome/settings.py", "generator"),
    ("data/physiome/settings.py", "zenodo"),
    ("data/physiome/source.py", "zenodo"),
    ("data/physiome/source.py", "generator"),
}


def _setting_keys() -> set[str]:
    """Every setting that has a default, for some source."""
    from ssmbench.data.source_registry import SOURCES

    sources = list(SOURCES)
    return {key for source in [None, *sources] for key in setting_defaults(source)}


def test_every_protocol_setting_has_a_default_and_the_key_lists_are_the_schema_s():
    defaults = setting_defaults()
    assert set(defaults) >= protocol_keys()
    assert PROTOCOL_KEYS == set(_defs()["protocol_values"]["properties"])
    assert BATCH_AND_EPOCH_KEYS == {"max_epochs", "batch_size", "batch_min", "batch_max",
                                    "batch_fraction"}  # fmt: skip
    assert set(EXECUTION_KEYS) <= PROTOCOL_KEYS
    # the authors' validation split (docs/protocol.md): random_state 1234, and where no
    # stratified 10% exists the same 10% unstratified
    assert (defaults["val_split_seed"], defaults["val_split_fallback"]) == (1234, "shuffle")
    assert defaults["reading"] == {"in_memory_max_gb": 4.0, "block_mb": 4.0, "buffer_blocks": 32}
    assert source_defaults("monster") == {"revision": "main", "local_dir": None, "offline": False}
    assert source_defaults("uea")["download"] is True and source_defaults("nope") == {}
    a, b = setting_defaults("synthetic"), setting_defaults("synthetic")
    a["generator"]["n_train"] = 1
    assert b["generator"] == {}  # a new dict each call: a caller's edit reaches no other


def test_params_yaml_protocol_states_the_schema_s_defaults():
    """The protocol block of params.yaml states the authors' protocol; each value it states
    is the schema's default, so a key left out of it changes no run."""
    protocol = read_params(REPO / "params.yaml")["protocol"]
    defaults = setting_defaults()
    assert {k: defaults[k] for k in protocol} == protocol


@pytest.mark.parametrize("source", ["uea", "monster", "synthetic", "physiome", "uea_drop", "uea6"])
def test_each_default_holds_to_its_own_setting_s_schema(source):
    """A default is a value the setting may take: a benchmark of ``source`` written with
    every default, and a protocol of every default, pass the schema."""
    params = read_params(REPO / "params.yaml")
    defaults = setting_defaults(source)
    params["protocol"] = {k: v for k, v in defaults.items() if k in PROTOCOL_KEYS}
    entry = {k: v for k, v in defaults.items() if k not in PROTOCOL_KEYS}
    params["benchmarks"]["written_out"] = {
        **entry, "source": source, "max_epochs": 1, "datasets": ["BasicMotions"],
    }  # fmt: skip
    validate_schema(params)
    bad = copy.deepcopy(params)
    bad["protocol"]["val_split_fallback"] = "per_row"
    with pytest.raises(Exception, match="val_split_fallback"):
        validate_schema(bad)


def test_a_run_s_settings_hold_every_default():
    params = load_params(REPO / "params.yaml")
    for bench, entry in params["benchmarks"].items():
        settings = benchmark_settings(params, bench)
        missing = set(setting_defaults(entry["source"])) - set(settings)
        assert not missing, (bench, missing)
    spec = job_spec(params, Job("uea", "BasicMotions", "MS4N", 0))
    assert spec["settings"]["param_groups"] == "hints"
    assert spec["origins"]["settings"]["param_groups"] == DEFAULT_ORIGIN


def _reader_defaults(text: str, where: str, keys: set[str]) -> list[str]:
    """Each ``settings.get("<key>", ...)`` / ``spec["settings"].get("<key>", ...)`` in
    ``text`` of a setting that has a default in the table: a reader's own default (``None``
    when it gives none) beside the table's."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get" and node.args):  # fmt: skip
            continue
        key, owner = node.args[0], node.func.value
        named = isinstance(owner, ast.Name) and owner.id == "settings"
        named |= (isinstance(owner, ast.Subscript) and isinstance(owner.slice, ast.Constant)
                  and owner.slice.value == "settings")  # fmt: skip
        own = (where, getattr(key, "value", None)) in OWN_TABLES
        if named and isinstance(key, ast.Constant) and key.value in keys and not own:
            found.append(f"{where}:{node.lineno}: .get({key.value!r})")
    return found


def test_no_reader_holds_a_default_of_its_own():
    keys = _setting_keys()
    found = [
        line
        for path in sorted(PACKAGE.rglob("*.py"))
        if "models" not in path.relative_to(PACKAGE).parts  # a model entry's params
        for line in _reader_defaults(path.read_text(), path.relative_to(PACKAGE).as_posix(), keys)
    ]
    assert not found, "readers with a default of their own:\n" + "\n".join(found)
    # the scan sees one: a reader written with a default of its own fails here
    reader = 'def f(spec, settings):\n    return settings.get("lr_schedule", "constant")\n'
    assert _reader_defaults(reader, "f", keys) == ["f:2: .get('lr_schedule')"]
    reader = 'def f(spec):\n    return spec["settings"].get("val_split_seed")\n'
    assert _reader_defaults(reader, "f", keys) == ["f:2: .get('val_split_seed')"]


class StrictSettings(dict):
    """A run's settings that refuse a reader's default: ``.get`` of a key they lack raises
    (a reader must take each value from the resolved settings)."""

    def get(self, key, *default):
        if key not in self:
            raise KeyError(f"a reader asked for {key!r} with a default of its own")
        return self[key]


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> dict:
    from ssmbench.data import fetch_uea, prepare_uea

    root = make_project(tmp_path_factory.mktemp("strict") / "proj")
    fetch_uea("BasicMotions", root / "data/raw/uea", archive_dir=None, download=False)
    prepare_uea("BasicMotions", root / "data/raw/uea", root / "data/prepared/uea")
    spec = job_spec(read_params(root / "params.yaml"), Job("uea", "BasicMotions", "MS4", 0))
    spec["settings"]["max_epochs"] = 1
    spec["prepared_dir"] = str(root / spec["prepared_dir"])
    return spec


def test_a_run_reads_every_setting_from_its_resolved_settings(spec, tmp_path):
    """A real run (set-up, optimiser, an epoch, checkpoint, record) on settings that refuse
    a ``.get`` of a key they lack: it finishes, so no reader on its way took a default of
    its own; without one setting it stops with that setting's KeyError."""
    from ssmbench.train.protocol import run_job

    strict = {**spec, "settings": StrictSettings(spec["settings"])}
    path = tmp_path / "fold0.json"
    run_job(strict, path, log=lambda _: None, checkpoint_path=tmp_path / "ckpt.pt")
    assert json.loads(path.read_text())["protocol"]["lr_schedule"] == "constant"
    for key in ("lr_schedule", "val_split_fallback", "optimizer"):
        settings = StrictSettings({k: v for k, v in spec["settings"].items() if k != key})
        with pytest.raises(KeyError, match=key):
            run_job({**spec, "settings": settings}, tmp_path / f"{key}.json", log=lambda _: None)
