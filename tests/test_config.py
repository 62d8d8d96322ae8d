"""params.yaml: schema, cross-checks, the suite grid and the batch-size rule."""

from __future__ import annotations

import copy

import pytest
from conftest import REPO

from ssmbench.config import (
    ConfigError,
    Job,
    benchmark_settings,
    check_params,
    check_suite_sources,
    job_spec,
    load_params,
    suite_grid,
)
from ssmbench.params_file import read_params, validate_schema
from ssmbench.train.batch_order import batch_size_for


@pytest.fixture()
def params():
    return read_params(REPO / "params.yaml")


def test_shipped_params_are_valid_and_default_grid_is_the_issue_grid(params):
    loaded = load_params(REPO / "params.yaml")
    grid = suite_grid(loaded)
    # default: 2 UEA datasets x MS4N, MS4, S4D x 2 seeded runs
    assert len(grid) == 12
    assert {j.model for j in grid} == {"MS4N", "MS4", "S4D"}
    assert {j.dataset for j in grid} == {"BasicMotions", "JapaneseVowels"}
    assert Job("uea", "BasicMotions", "MS4N", 0).record_path("results/runs").as_posix() == (
        "results/runs/uea/BasicMotions/MS4N/fold0.json"
    )


def test_unknown_model_in_suite_is_named(params):
    params["suites"]["default"]["models"].append("NoSuchModel")
    with pytest.raises(ConfigError, match="suites.default.models: unknown model 'NoSuchModel'"):
        check_params(params)


def test_unknown_dataset_in_suite_is_named(params):
    params["suites"]["default"]["benchmarks"]["uea"].append("BasicMotion")
    with pytest.raises(ConfigError, match="unknown dataset 'BasicMotion'"):
        check_params(params)


def test_unknown_suite_and_benchmark_are_named(params):
    params["suite"] = "nope"
    params["suites"]["tiny"]["benchmarks"]["monstr"] = ["X"]
    with pytest.raises(ConfigError) as info:
        check_params(params)
    assert "'nope' is not a suite" in str(info.value)
    assert "unknown benchmark 'monstr'" in str(info.value)


def test_bad_model_hyperparameter_is_named(params):
    params["models"]["MS4N"]["d_modle"] = 64
    with pytest.raises(ConfigError, match="models.MS4N.*d_modle"):
        check_params(params)


def test_schema_rejects_wrong_types(params):
    bad = copy.deepcopy(params)
    bad["protocol"]["lr"] = "fast"
    bad["suites"]["default"]["folds"] = [-1]
    with pytest.raises(ConfigError) as info:
        validate_schema(bad)
    assert "protocol.lr" in str(info.value) and "suites.default.folds.0" in str(info.value)


def test_suite_overrides_apply_last(params):
    settings = benchmark_settings(params, "uea", "tiny")
    assert settings["max_epochs"] == 2 and settings["lr"] == 1e-3
    assert benchmark_settings(params, "uea", "default")["max_epochs"] == 300
    spec = job_spec(params, Job("uea", "BasicMotions", "MS4N", 1), "tiny")
    assert spec["settings"]["max_epochs"] == 2
    assert spec["prepared_dir"].endswith("uea/BasicMotions")


@pytest.mark.parametrize(
    "n_train, expected", [(10, 4), (36, 4), (90, 8), (243, 16), (1000, 64), (30000, 64)]
)
def test_batch_size_is_4_to_64_by_size(params, n_train, expected):
    assert batch_size_for(benchmark_settings(params, "uea"), n_train) == expected


def test_missing_archive_folder_fails_before_jobs(params, tmp_path):
    params["paths"]["raw"] = str(tmp_path / "raw")
    params["suites"]["default"]["overrides"] = {"archive_dir": str(tmp_path / "no-such-archive")}
    with pytest.raises(ConfigError, match="no-such-archive"):
        check_suite_sources(params)


def test_offline_dataset_not_shipped_fails_before_jobs(params, tmp_path):
    params["paths"]["raw"] = str(tmp_path / "raw")
    params["suites"]["default"]["benchmarks"]["uea"] = ["Libras"]
    params["suites"]["default"]["overrides"] = {"download": False}
    with pytest.raises(ConfigError, match="Libras is not available offline"):
        check_suite_sources(params)
    params["suites"]["default"]["overrides"] = {"download": True}
    check_suite_sources(params)  # downloadable: fine at parse time


def test_cli_bad_suite_exits_2_naming_it(capsys, monkeypatch):
    from ssmbench.cli import main

    monkeypatch.chdir(REPO)
    assert main(["--suite", "nope", "check"]) == 2
    assert "'nope' is not a suite" in capsys.readouterr().err
    assert main(["check"]) == 0
    assert "12 runs over 2 datasets" in capsys.readouterr().out


def test_dataset_overrides_sit_between_benchmark_and_suite(params):
    audio = job_spec(params, Job("monster", "AudioMNIST", "MS4N", 0), "default")
    other = job_spec(params, Job("monster", "Pedestrian", "MS4N", 0), "default")
    assert (audio["settings"]["batch_size"], other["settings"]["batch_size"]) == (64, 256)
    assert other["settings"]["max_epochs"] == 200
    params["benchmarks"]["monster"]["dataset_overrides"]["NoSuchSet"] = {"batch_size": 8}
    with pytest.raises(ConfigError, match="dataset_overrides: 'NoSuchSet'"):
        check_params(params)


def test_monster_suite_sources_checked_before_jobs(params, tmp_path):
    params["paths"]["raw"] = str(tmp_path / "raw")
    params["suites"]["default"]["benchmarks"] = {"monster": ["Pedestrian"]}
    check_suite_sources(params)  # online: the Hub can supply it
    params["suites"]["default"]["overrides"] = {"offline": True}
    with pytest.raises(ConfigError, match="Pedestrian is not fetched yet and offline"):
        check_suite_sources(params)
    params["suites"]["default"]["overrides"] = {"local_dir": str(tmp_path / "copy")}
    with pytest.raises(ConfigError, match="neither"):
        check_suite_sources(params)


def _resolve(node: dict, schema: dict) -> dict:
    """A schema node with its local $ref merged in (properties of both)."""
    while isinstance(node.get("$ref"), str):
        target = schema
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        rest = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **rest, "properties": {**target.get("properties", {}),
                                                   **node.get("properties", {})}}  # fmt: skip
    return node


def _schema_keys(schema: dict) -> tuple[set[str], set[str]]:
    """(leaves, open nodes) of the schema as dotted paths, ``*`` for a map's entries. A
    leaf is a value the schema does not look inside; an open node is an object whose keys
    the schema leaves to a reader (a generator's settings, a model's hyperparameters)."""
    leaves: set[str] = set()
    open_nodes: set[str] = set()

    def walk(node, path):
        node = _resolve(node, schema)
        props = node.get("properties") or {}
        extra = node.get("additionalProperties", node.get("unevaluatedProperties", True))
        types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
        for key, sub in props.items():
            walk(sub, f"{path}.{key}" if path else key)
        if isinstance(extra, dict):
            walk(extra, f"{path}.*")
        elif extra is not False and "object" in types:
            open_nodes.add(path)
            leaves.add(f"{path}.*" if props else path)
        elif not props:
            leaves.add(path)

    walk(schema, "")
    return leaves, open_nodes


def _prefixes(paths: set[str]) -> set[str]:
    return {".".join(p.split(".")[:n]) for p in paths for n in range(1, p.count(".") + 2)}


def _source_literals(reader: str) -> set[str]:
    """The string constants (docstrings left out) and parameter names of a reader's code;
    for a workflow file, its quoted words and keyword arguments."""
    import ast
    import importlib
    import inspect
    import re
    import textwrap

    if "/" in reader:
        text = (REPO / reader).read_text()
        return set(re.findall(r"[\"']([A-Za-z0-9_]+)[\"']", text)) | set(
            re.findall(r"\b([a-z_]+)=", text)
        )
    module_name, _, qualname = reader.partition(":")
    target = importlib.import_module(module_name)
    for part in qualname.split(".") if qualname else []:
        target = getattr(target, part)
    tree = ast.parse(textwrap.dedent(inspect.getsource(target)))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Module | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    }  # fmt: skip
    return found | {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}


#: where a run's setting sits in params.yaml (its key last): the protocol, a benchmark,
#: a dataset's overrides
SETTING_PLACES = ("protocol.{}", "benchmarks.*.{}", "benchmarks.*.dataset_overrides.*.{}")


def _settings_read(reads: list[tuple[str, str]]) -> set[str]:
    """The schema leaves of run settings that the code reads as ``settings["<key>"]``
    (`_code_reads`), at each place a setting may sit."""
    keys = {key.split(".")[1] for _, key in reads if key.startswith("<settings>.")}
    return {place.format(key) for key in keys for place in SETTING_PLACES}


def test_every_key_the_schema_allows_has_a_reader_that_reads_it():
    """Schema -> code. The schema's keys (leaves, `_schema_keys`) must each be read: a
    run's setting where the code reads ``settings["<key>"]`` (`_code_reads`: no list of
    settings to keep beside the schema), every other key by the patterns of
    ``config_readers.CONFIG_READERS`` (who reads which key), which must agree with the
    schema both ways: a key the schema allows with no reader fails, and so does a pattern
    naming no key of the schema. Then each reader is resolved (an import and an
    attribute, or a workflow file) and must name its key in its code: as a string
    constant outside docstrings or a parameter name (Python), as a quoted word or keyword
    argument (workflow files). A reader that stops reading its key fails here; so does a
    key added to the schema and params.yaml that nothing reads."""
    from fnmatch import fnmatchcase

    from ssmbench.config_readers import CONFIG_READERS
    from ssmbench.params_file import params_schema

    leaves, _ = _schema_keys(params_schema())
    patterns = dict(CONFIG_READERS)
    settings_read = _settings_read(_code_reads())
    assert "protocol.lr_schedule" in settings_read  # the scan finds the readers
    assert "benchmarks.*.dataset_overrides.*.batch_size" in settings_read
    unread = sorted(
        leaf for leaf in leaves
        if not any(fnmatchcase(leaf, p) for p in [*patterns, *settings_read])
    )  # fmt: skip
    assert not unread, f"keys the schema allows that nothing reads: {unread}"
    nodes = _prefixes(leaves)
    stray = sorted(p for p in patterns if not any(fnmatchcase(node, p) for node in nodes))
    assert not stray, f"CONFIG_READERS names keys the schema does not allow: {stray}"
    not_read = []
    for pattern, readers in CONFIG_READERS.items():
        assert readers, pattern
        parts = pattern.split(".")
        literal = next((p for p in reversed(parts[-2:]) if "*" not in p), None)
        for reader in readers:
            names = _source_literals(reader)  # resolves the reader: fails if it is gone
            if literal is not None and literal not in names:
                not_read.append(f"{pattern}: {reader} does not read {literal!r}")
    assert not not_read, "\n".join(not_read)


def _code_reads() -> list[tuple[str, str]]:
    """(where, dotted key) for each literal read of params.yaml in the package and the
    workflow: subscripts and ``.get`` chains rooted at ``params`` / ``config`` (the whole
    file), ``PATHS`` (``paths``), ``report_params`` (``report``) and ``settings`` or
    ``spec["settings"]`` (one run's protocol and benchmark settings). A key computed at
    run time is ``*``. models/ is left out: there ``params`` is a model entry, whose keys
    validate_model_params checks against the family."""
    import ast
    import re

    roots = {"params": "", "config": "", "PATHS": "paths", "report_params": "report",
             "settings": "<settings>"}  # fmt: skip
    reads = []

    def chain(node):
        keys = []
        while True:
            if isinstance(node, ast.Subscript):
                key = node.slice
                keys.append(key.value if isinstance(key, ast.Constant) else "*")
                node = node.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and node.args
            ):
                key = node.args[0]
                keys.append(key.value if isinstance(key, ast.Constant) else "*")
                node = node.func.value
            else:
                break
        if isinstance(node, ast.Name) and keys:
            keys.reverse()
            if node.id == "spec" and keys[0] == "settings":
                return "<settings>", keys[1:]
            if node.id in roots:
                return roots[node.id], keys
        return None

    package = REPO / "src" / "ssmbench"
    for path in sorted(package.rglob("*.py")):
        if "models" in path.relative_to(package).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            found = chain(node)
            if found and found[1] and all(isinstance(k, str) for k in found[1]):
                root, keys = found
                where = f"{path.relative_to(REPO)}:{node.lineno}"
                reads.append((where, ".".join(([root] if root else []) + keys)))
    pattern = re.compile(r"\b(config|PATHS|settings)((?:\[[\"'][A-Za-z0-9_]+[\"']\])+)")
    for path in [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]:
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            for root, subscripts in pattern.findall(line):
                keys = re.findall(r"[\"']([A-Za-z0-9_]+)[\"']", subscripts)
                prefix = [roots[root]] if roots[root] else []
                reads.append((f"{path.relative_to(REPO)}:{lineno}", ".".join(prefix + keys)))
    return reads


def _allowed(key: str, nodes: set[str], open_nodes: set[str]) -> bool:
    """Whether a dotted key read by the code is one the schema allows; ``*`` on either side
    is any name; below an open node anything is allowed."""
    parts = key.split(".")
    candidates = [parts]
    if parts[0] == "<settings>":  # a run's settings: the protocol's and a benchmark's keys
        candidates = [["protocol", *parts[1:]], ["benchmarks", "*", *parts[1:]]]

    def same(a, b):
        return len(a) == len(b) and all(x == y or "*" in (x, y) for x, y in zip(a, b, strict=True))

    for parts in candidates:
        for n in range(len(parts), 0, -1):
            head = parts[:n]
            if any(same(head, node.split(".")) for node in nodes):
                if n == len(parts) or any(same(head, o.split(".")) for o in open_nodes):
                    return True
                break
    return False


def test_every_key_the_code_reads_is_allowed_by_the_schema():
    """Code -> schema: each literal read of params.yaml (`_code_reads`) names a key the
    schema allows; `report.figure8_datasets` was one such key the schema rejected. The
    scan is honest in both directions: a read of a key the schema lacks (below) fails."""
    from ssmbench.params_file import params_schema

    leaves, open_nodes = _schema_keys(params_schema())
    nodes = _prefixes(leaves)
    reads = _code_reads()
    assert len(reads) > 50  # the scan finds the reads (cli, config, data, train, rules...)
    assert any(key == "<settings>.batch_fraction" for _, key in reads)
    assert any(key == "report.figure8_datasets" for _, key in reads)
    unknown = [f"{where}: {key}" for where, key in reads if not _allowed(key, nodes, open_nodes)]
    assert not unknown, "the code reads keys the schema does not allow:\n" + "\n".join(unknown)
    # the check can fail: keys the schema does not allow are refused
    for key in ("report.reference_models", "<settings>.learning_rate", "paths.nowhere"):
        assert not _allowed(key, nodes, open_nodes), key
    assert _allowed("<settings>.generator.n_train", nodes, open_nodes)  # below an open node


@pytest.mark.parametrize(
    "where, edit",
    [
        ("learning_rate", lambda p: p.update(learning_rate=1e-3)),
        ("protocol.learning_rate", lambda p: p["protocol"].update(learning_rate=1e-3)),
        ("benchmarks.uea.batchsize", lambda p: p["benchmarks"]["uea"].update(batchsize=8)),
        (
            "benchmarks.monster.dataset_overrides.AudioMNIST.lr",
            lambda p: p["benchmarks"]["monster"]["dataset_overrides"]["AudioMNIST"].update(lr=1),
        ),
        ("suites.tiny.override", lambda p: p["suites"]["tiny"].update(override={})),
        ("paths.rawdata", lambda p: p["paths"].update(rawdata="x")),
        (
            "resources.train.default.memory",
            lambda p: p["resources"]["train"]["default"].update(memory=1),
        ),
        (
            "resources.train.sizes.small.memory",
            lambda p: p["resources"]["train"]["sizes"]["small"].update(memory=1),
        ),
        ("report.figure_8", lambda p: p["report"].update(figure_8=[])),
        (
            "report.convergence_thresholds.val_acc",
            lambda p: p["report"]["convergence_thresholds"].update(val_acc=0.5),
        ),
    ],
)
def test_an_unknown_key_is_an_error_naming_its_path(params, where, edit):
    edit(params)
    with pytest.raises(ConfigError) as info:
        validate_schema(params)
    message = str(info.value)
    assert f"  {where}: unknown key (allowed: " in message, message
    assert len(message.splitlines()) == 2  # the header and this one problem


def test_unknown_keys_of_model_entries_and_suite_overrides_name_their_path(params):
    """Keys the schema leaves to check_params: a model's hyperparameters (its family's,
    through validate_model_params) and a suite's overrides."""
    params["models"]["MS4N"]["d_modle"] = 64
    params["suites"]["tiny"]["overrides"]["learning_rate"] = 1.0
    params["suites"]["tides-data"]["benchmark_overrides"]["synthetic"]["epochs"] = 3
    validate_schema(params)  # these are not the schema's to know
    with pytest.raises(ConfigError) as info:
        check_params(params)
    message = str(info.value)
    assert "models.MS4N: " in message and "unknown hyperparameter 'd_modle'" in message
    assert "suites.tiny.overrides.learning_rate: unknown key" in message
    assert "suites.tides-data.benchmark_overrides.synthetic.epochs: unknown key" in message


def test_figure8_datasets_is_allowed_and_removed_report_keys_are_not(params):
    params["report"]["figure8_datasets"] = ["BasicMotions"]
    validate_schema(params)
    for key in ("reference_models", "complexity_input_length"):
        bad = copy.deepcopy(params)
        bad["report"][key] = None
        with pytest.raises(ConfigError, match=f"report.{key}: unknown key"):
            validate_schema(bad)


def test_dataset_settings_a_source_rejects_are_named_when_params_load(params):
    """Each benchmark's datasets pass their source's own check (its ``check_recipe``)
    with the benchmark's settings, before any job: a UEA-6 split that leaves no test
    rows, a drop-rate dataset not named <Base>Drop."""
    from ssmbench.config import check_params

    params["benchmarks"]["uea6"]["split"] = {"fractions": [0.9, 0.2]}
    params["benchmarks"]["uea_drop"]["datasets"].append("EigenWorms")
    with pytest.raises(ConfigError) as info:
        check_params(params)
    message = str(info.value)
    assert "benchmarks.uea6.datasets: EigenWorms: EigenWorms: bad split settings" in message
    assert "leave a test split (train + validation < 1)" in message
    assert "uea_drop.datasets: EigenWorms: EigenWorms: a drop-rate dataset is " in message


@pytest.mark.parametrize(
    "key, value, resolved, what",
    [
        ("runs", "/", "/", "the filesystem root"),
        ("checkpoints", "/proc", "/proc", "a system folder"),
        ("logs", "/sys/kernel/../fs", "/sys/fs", "a system folder"),
        ("results", "/dev", "/dev", "a system folder"),
        ("tuned", "/usr", "/usr", "a system folder"),
    ],
)
def test_a_root_that_is_the_filesystem_root_or_a_system_folder_is_refused(
    params, key, value, resolved, what
):
    params["paths"][key] = value
    with pytest.raises(ConfigError) as err:
        check_params(params)
    assert (
        f"  paths.{key}: {value!r} resolves to {resolved}, {what}; commands write and replace "
        "files under it. Name a folder of the project, or one of your own"
    ) in str(err.value).splitlines()


def test_a_scratch_tmpfs_or_a_folder_under_a_system_one_is_a_root(params):
    params["paths"]["checkpoints"] = "/dev/shm/ssmbench-checkpoints"
    params["paths"]["raw"] = "/usr/local/share/ssmbench-raw"
    check_params(params)


def test_check_names_a_root_that_cannot_be_made(tmp_path, monkeypatch, capsys):
    from conftest import make_project

    from ssmbench.cli import main

    def edit(p):
        p["paths"]["runs"] = "blocked/runs"

    root = make_project(tmp_path / "proj", edit)
    (root / "blocked").write_text("a file where the runs' folder goes\n")
    monkeypatch.chdir(root)
    assert main(["check"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"ssmbench check: error: params.yaml: paths.runs: 'blocked/runs': {root / 'blocked'} is "
        "a file, where a folder of it should be; move the file aside or name another folder"
    )
