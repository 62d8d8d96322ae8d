"""params.yaml as files: `read_params` reads params.yaml and the study files it names
(``studies``) into one mapping (a YAML syntax error, a key given twice in one mapping, an
empty file or one that is not a mapping, a folder where a file is named, params.yaml or a
study file listed twice in ``studies``, an entry named in two files: each named with its
file and line) and `validate_schema` checks its shape, the type and range of every value
against the JSON Schema (`params_schema`: params.schema.yaml, which
workflow/schemas/params.schema.yaml links to, with each data source's settings from its
folder merged in). ``ssmbench.config`` checks the rest and builds the suite grid on them;
both raise `ConfigError`.

A study file adds entries to three sections, as if they were written in params.yaml:
``models``, ``suites`` and ``tuning.searches``; the one mapping holds no ``studies`` key,
so it can be written back as a params.yaml of its own. A suite's ``benchmarks.<name>:
all`` is that benchmark's ``datasets`` list.

A setting whose value is ``${paths.KEY}`` (a suite's ``archive_dir: ${paths.uea_archive}``)
stands for params.yaml's ``paths.KEY``, put in its place when params.yaml is read: the
place of a user's copy of source data is set once, in ``paths``, and never written into a
suite. An input path (`INPUT_PATHS`) may also be set by an environment variable, which wins
over params.yaml, so that a clone names its own copy without editing a versioned file.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import yaml


class ConfigError(ValueError):
    """params.yaml is malformed or inconsistent; the message names the field."""


#: params.yaml ``paths`` that name a folder the project reads and never writes (a local copy
#: of source data), each with the environment variable that, when set, wins over params.yaml
#: (``SSMBENCH_`` and the key in capitals)
INPUT_PATHS = {"uea_archive": "SSMBENCH_UEA_ARCHIVE"}
#: a setting's value that stands for one of params.yaml's paths: ``${paths.uea_archive}``
PATH_REFERENCE = re.compile(r"\$\{paths\.([A-Za-z_][A-Za-z0-9_]*)\}")

# The schema ships inside the package; workflow/schemas/params.schema.yaml links to it.
SCHEMA_PATH = Path(__file__).with_name("params.schema.yaml")
#: libyaml's safe loader (6x PyYAML's on params.yaml, read by every job), where PyYAML has it
FAST_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_params(path: str | Path = "params.yaml") -> dict:
    """params.yaml's mapping with its study files' entries in it, before any validation.
    The Snakefile and the CLI both read it here, so both report a YAML syntax error (file,
    line, column and the line itself), a key given twice in one mapping (both lines), a
    file that is empty or not a mapping, and an entry given in two files in the same
    words. Raises ConfigError."""
    return read_params_and_files(path)[0]


#: where a study file's top-level keys go in the one mapping
STUDY_SECTIONS = {"models": ("models",), "suites": ("suites",), "tuning": ("tuning", "searches")}


def read_params_and_files(path: str | Path = "params.yaml") -> tuple[dict, dict[str, str]]:
    """`read_params`'s mapping, and for each entry a study file added (``models.TIDES``,
    ``suites.default``, ``tuning.searches.TIDES``) the file it came from, as named in
    ``studies``."""
    path = Path(path)
    params = _read_mapping(
        path,
        "no such params file; run from the project root or pass --params",
        _expected_mapping(),
    )
    studies = params.pop("studies", None) or []
    if not isinstance(studies, list) or not all(isinstance(f, str) for f in studies):
        raise ConfigError(f"{path}: studies: expected a list of file names, got {studies!r}")
    _refuse_repeated_studies(path, studies)
    files: dict[str, str] = {}
    for name in studies:
        study = _read_mapping(
            path.parent / name,
            f"no such file (named in {path} studies)",
            "expected a mapping with keys among " + ", ".join(STUDY_SECTIONS),
        )
        for key, value in study.items():
            if key not in STUDY_SECTIONS:
                raise ConfigError(
                    f"{name}: {key}: a study file holds only {', '.join(STUDY_SECTIONS)}; "
                    f"put {key} in {path}"
                )
            *parents, section = STUDY_SECTIONS[key]
            if key == "tuning":
                extra = set(value or {}) - {"searches"}
                if extra:
                    raise ConfigError(
                        f"{name}: tuning.{sorted(extra)[0]}: a study file's tuning holds only "
                        f"searches; put it in {path}"
                    )
                value = (value or {}).get("searches")
            if not isinstance(value, dict):
                raise ConfigError(f"{name}: {'.'.join(STUDY_SECTIONS[key])}: expected a mapping")
            target = params
            for part in parents:
                target = target.setdefault(part, {})
            entries = target.setdefault(section, {})
            dotted = ".".join(STUDY_SECTIONS[key])
            for entry, body in value.items():
                if entry in entries:
                    first = files.get(f"{dotted}.{entry}", str(path))
                    raise ConfigError(
                        f"{name}: {dotted}.{entry} is also given in {first}; keep one"
                    )
                entries[entry] = body
                files[f"{dotted}.{entry}"] = name
    _expand_all_datasets(params, path)
    _expand_variants(params, files, path)
    _resolve_path_references(params)
    return params, files


def _refuse_repeated_studies(path: Path, studies: list[str]) -> None:
    """params.yaml among its own study files, or one study file named twice (under one
    name or two that resolve to one file): each would give every entry twice."""
    own = path.resolve()
    seen: dict[Path, str] = {}
    for name in studies:
        resolved = (path.parent / name).resolve()
        if resolved == own:
            raise ConfigError(
                f"{path}: studies: {name!r} is {path} itself; a study file holds entries "
                "params.yaml does not, so remove it from the list"
            )
        if resolved in seen:
            same = "" if seen[resolved] == name else f" (as {seen[resolved]!r})"
            raise ConfigError(
                f"{path}: studies: {name!r} is listed twice{same}; list each study file once"
            )
        seen[resolved] = name


#: the per-dataset places of a model entry, merged per dataset when a variant derives
VARIANT_MERGED = ("dataset_params", "dataset_settings")


def _expand_variants(params: dict, files: dict[str, str], path: Path) -> None:
    """A model entry with ``base: <model>`` is that model's entry with its own keys over
    it (``dataset_params`` and ``dataset_settings`` merged per dataset); it keeps
    ``base`` to say so. A suite's ``variants: {<name>: {base: <model>, ...}}`` adds such
    entries to ``models`` and their names to the suite's ``models``. A base that is not a
    model, a chain of bases that returns to its start, or a variant named like a model:
    ConfigError naming the entry."""
    models = params.get("models")
    if not isinstance(models, dict):
        return
    for sname, suite in (params.get("suites") or {}).items():
        variants = suite.get("variants") if isinstance(suite, dict) else None
        if not variants:
            continue
        if not isinstance(variants, dict):
            raise ConfigError(f"{path}: suites.{sname}.variants: expected a mapping of "
                              "{name: {base: <model>, hyperparameter: value}}")  # fmt: skip
        where = files.get(f"suites.{sname}", str(path))
        for name, body in variants.items():
            if name in models:
                raise ConfigError(
                    f"{where}: suites.{sname}.variants.{name}: a model of that name exists "
                    f"(in {files.get(f'models.{name}', str(path))}); give the variant its own name"
                )
            if not isinstance(body, dict) or "base" not in body:
                raise ConfigError(
                    f"{where}: suites.{sname}.variants.{name}: expected a mapping with "
                    "base: <model> and the values it changes"
                )
            models[name] = body
            files[f"models.{name}"] = where
            listed = suite.setdefault("models", [])
            if isinstance(listed, list) and name not in listed:
                listed.append(name)
    done: dict[str, dict] = {}

    def expand(name: str, chain: tuple[str, ...]) -> dict:
        if name in done:
            return done[name]
        entry = models[name]
        if not isinstance(entry, dict) or "base" not in entry:
            done[name] = entry
            return entry
        base = entry["base"]
        where = files.get(f"models.{name}", str(path))
        if not isinstance(base, str) or base not in models:
            raise ConfigError(
                f"{where}: models.{name}.base: {base!r} is not a model (known: "
                f"{', '.join(sorted(n for n in models if n != name))})"
            )
        if base in chain:
            loop = " -> ".join((*chain[chain.index(base) :], base))
            raise ConfigError(f"{where}: models.{name}.base: the bases form a cycle "
                              f"({loop}); one of them must name a family")  # fmt: skip
        parent = expand(base, (*chain, base))
        merged = {k: v for k, v in parent.items() if k != "base"}
        for key, value in entry.items():
            if key in VARIANT_MERGED and isinstance(value, dict):
                own = dict(merged.get(key) or {})
                for dataset, values in value.items():
                    own[dataset] = {**(own.get(dataset) or {}), **(values or {})}
                merged[key] = own
            else:
                merged[key] = value
        done[name] = merged
        return merged

    for name in list(models):
        models[name] = expand(name, (name,))


def named_suite(path: str | Path = "params.yaml") -> str | None:
    """The suite params.yaml itself names (its ``suite`` key, before a ``--suite`` or a
    ``--config suite=`` overrides it): the one ``dvc repro`` runs, whose report DVC
    versions (``ssmbench.report.outputs.report_dirs``). None when the file names none.
    Reads params.yaml alone, not its study files. Raises ConfigError."""
    path = Path(path)
    params = _read_mapping(
        path,
        "no such params file; run from the project root or pass --params",
        _expected_mapping(),
    )
    suite = params.get("suite")
    return suite if isinstance(suite, str) else None


#: params.yaml's top-level ``suite:`` line: its value, then any comment
_SUITE_LINE = re.compile(r"^suite:[ \t]*(?P<value>[^\s#]*)(?P<rest>[ \t]*(?:#.*)?)$", re.MULTILINE)


def set_named_suite(path: str | Path, suite: str) -> str | None:
    """Name ``suite`` in params.yaml's top-level ``suite:`` line, in place (the rest of
    the file, its comments included, as it was; written atomically); returns the suite it
    named before. What ``dvc exp run -S suite=X`` edits, without DVC's experiment
    machinery, so that ``dvc repro`` then runs X. Raises ConfigError when the file has no
    such line, or more than one."""
    from ssmbench.io import atomic_write_text

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    lines = list(_SUITE_LINE.finditer(text))
    if len(lines) != 1:
        raise ConfigError(
            f"{path}: {'no' if not lines else len(lines)} top-level `suite:` line"
            f"{'s' if lines else ''}; it must have one (`suite: {suite}`), which this "
            "command edits"
        )
    line = lines[0]
    before = line["value"].strip("'\"") or None
    edited = text[: line.start()] + f"suite: {suite}{line['rest']}" + text[line.end() :]
    atomic_write_text(path, edited)
    return before


def _expand_all_datasets(params: dict, path: Path) -> None:
    """A suite's ``benchmarks.<name>: all`` becomes the benchmark's ``datasets`` list."""
    for suite_name, suite in (params.get("suites") or {}).items():
        if not isinstance(suite, dict) or not isinstance(suite.get("benchmarks"), dict):
            continue
        for bench, datasets in suite["benchmarks"].items():
            if datasets != "all":
                continue
            known = ((params.get("benchmarks") or {}).get(bench) or {}).get("datasets")
            if not isinstance(known, list) or not known:
                raise ConfigError(
                    f"{path}: suites.{suite_name}.benchmarks.{bench}: all, but benchmarks."
                    f"{bench} lists no datasets; list them there or name them in the suite"
                )
            suite["benchmarks"][bench] = list(known)


def _resolve_path_references(params: dict) -> None:
    """Each input path set in the environment (`INPUT_PATHS`) goes over params.yaml's, then
    every value ``${paths.KEY}`` outside ``paths`` (a string, or an item of a list) becomes
    paths.KEY where that is set. One whose path is not set stays as written: only a suite
    that reads it needs it, and the source that reads it names the setting to set
    (``ssmbench.data.uea.archive_dirs``)."""
    paths = params.get("paths")
    if not isinstance(paths, dict):
        return
    for key, variable in INPUT_PATHS.items():
        if os.environ.get(variable):
            paths[key] = os.environ[variable]

    def resolved(value):
        if isinstance(value, str):
            match = PATH_REFERENCE.fullmatch(value)
            target = paths.get(match[1]) if match else None
            return target if isinstance(target, str) and target else value
        if isinstance(value, list):
            return [resolved(item) for item in value]
        if isinstance(value, dict):
            return {key: resolved(item) for key, item in value.items()}
        return value

    for section in [s for s in params if s != "paths"]:
        params[section] = resolved(params[section])


def _read_mapping(path: Path, missing: str, expected: str) -> dict:
    """One YAML file's top-level mapping (syntax, duplicate keys, emptiness checked);
    `missing` and `expected` word the errors of a missing file and of one that holds no
    mapping."""
    if path.is_dir():
        raise ConfigError(f"{path}: a folder, not a YAML file; name the file in it instead")
    if not path.is_file():
        raise ConfigError(f"{path}: {missing}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text ({exc.reason})"
        raise ConfigError(f"{path}: cannot be read: {why}") from exc
    try:
        node, params = _load_checked(text, path, FAST_SAFE_LOADER)
    except yaml.YAMLError:
        # libyaml and PyYAML word errors differently: the message is PyYAML's
        try:
            node, params = _load_checked(text, path, yaml.SafeLoader)
        except yaml.MarkedYAMLError as exc:
            raise ConfigError(_yaml_error_message(path, text, exc)) from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if params is None:
        raise ConfigError(f"{path}: empty; {expected}")
    if not isinstance(params, dict):
        raise ConfigError(
            f"{path}:{node.start_mark.line + 1}: the file holds a {type(params).__name__}, "
            f"not a mapping; {expected}"
        )
    return params


def _load_checked(text: str, path: Path, loader_class) -> tuple[yaml.Node | None, object]:
    """The document's node and value, its keys checked for duplicates first (building the
    value merges ``<<`` keys into their mappings' nodes)."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        _refuse_duplicate_keys(node, path)
        return node, loader.construct_document(node)
    finally:
        loader.dispose()


def _expected_mapping() -> str:
    return "expected a mapping with keys " + ", ".join(_schema_file()["required"])


@functools.cache
def _schema_file() -> dict:
    """params.schema.yaml as written (not to be modified): reading params.yaml needs its
    top-level keys alone, not the sources."""
    return yaml.load(SCHEMA_PATH.read_text(), Loader=FAST_SAFE_LOADER)


@functools.cache
def params_schema() -> dict:
    """The JSON Schema, read once per process (not to be modified): params.schema.yaml with
    the source table's settings merged in (`with_sources`)."""
    from ssmbench.data.source_registry import SOURCES

    return with_sources(yaml.load(SCHEMA_PATH.read_text(), Loader=FAST_SAFE_LOADER), SOURCES)


def with_sources(schema: dict, sources: dict) -> dict:
    """``schema`` (params.schema.yaml's, changed in place) with the sources' settings
    (``ssmbench.data.source_settings``): each source's keys in ``benchmark_values``
    without their defaults (each source's own: ``ssmbench.setting_defaults``), its
    ``dataset_keys`` in what a dataset may set for itself (``dataset_overrides``), and the
    table's names, in its order, as ``source``'s enum. A key declared twice (by two
    sources, or by a source and the schema itself) must be declared alike: ConfigError
    naming both places."""
    defs = schema["$defs"]
    values = defs["benchmark_values"]["properties"]
    benchmark = schema["properties"]["benchmarks"]["additionalProperties"]["properties"]
    per_dataset = benchmark["dataset_overrides"]["additionalProperties"]["properties"]
    declared = {
        key: SCHEMA_PATH.name
        for part in ("protocol_values", "batch_and_epoch_values", "benchmark_values")
        for key in defs[part]["properties"]
    }
    for name, source in sources.items():
        settings = source.settings
        for key, with_default in settings.keys.items():
            definition = {k: v for k, v in with_default.items() if k != "default"}
            if key in declared and values.get(key) != definition:
                raise ConfigError(
                    f"{source.settings_schema}: source {name!r} declares {key} otherwise "
                    f"than {declared[key]} does; a key two places declare is declared alike"
                )
            values[key] = definition
            declared.setdefault(key, f"source {name!r}")
        for key in settings.dataset_keys:
            per_dataset[key] = {"$ref": f"#/$defs/benchmark_values/properties/{key}"}
    values["source"] = {"enum": list(sources)}
    return schema


def _yaml_error_message(path: Path, text: str, exc: yaml.MarkedYAMLError) -> str:
    """A YAML error as "file:line:column: problem", with the offending line quoted (it
    holds the key) and where the enclosing construct began."""
    mark = exc.problem_mark or exc.context_mark
    lines = text.splitlines()
    problem = exc.problem or exc.context or "not valid YAML"
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
    message = f"{where}: not valid YAML: {problem}"
    if exc.context and exc.context_mark and exc.problem:
        message += f" ({exc.context} at line {exc.context_mark.line + 1})"
    if mark and mark.line < len(lines):
        message += f"\n    {mark.line + 1} | {lines[mark.line]}"
    return message


def _refuse_duplicate_keys(root: yaml.Node, path: Path) -> None:
    """A key given twice in one mapping is an error naming its dotted path and both
    lines (PyYAML keeps the last silently). Merge keys (``<<``) may be overridden."""
    checked: set[int] = set()  # an alias repeats its anchor's node: check it once

    def walk(node: yaml.Node, where: str) -> None:
        if id(node) in checked:
            return
        checked.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[object, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else id(key_node)
                name = f"{where}.{key}" if where else str(key)
                line = key_node.start_mark.line + 1
                if key in first:
                    raise ConfigError(
                        f"{path}:{line}: duplicate key {name!r}: it is also given at line "
                        f"{first[key]}; keep one"
                    )
                first[key] = line
                walk(value_node, name)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, f"{where}[{index}]")

    walk(root, "")


def validate_schema(
    params: dict, source: str = "params.yaml", files: dict[str, str] | None = None
) -> None:
    """Check params.yaml's shape against the JSON Schema. Raises ConfigError with one line
    per problem, each naming its dotted path; an unknown key is named by its own path
    (``protocol.learning_rate: unknown key (allowed: ...)``). ``files`` (from
    `read_params_and_files`) names the study file of an entry, which a problem inside it
    names too (``suites.default.folds.0: ... (in params/ms4.yaml)``)."""
    import jsonschema

    schema = params_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(params), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        lines = [
            f"  {line}{_in_file(e, files or {})}"
            for e in errors
            for line in _schema_problems(e, schema)
        ]
        raise ConfigError(
            f"{source} does not match the schema {SCHEMA_PATH.name}:\n" + "\n".join(lines)
        )


def _in_file(error, files: dict[str, str]) -> str:
    """`` (in <study file>)`` for a schema error inside an entry a study file added."""
    path = [str(p) for p in error.absolute_path]
    for depth in range(len(path), 0, -1):
        where = files.get(".".join(path[:depth]))
        if where is not None:
            return f" (in {where})"
    return ""


def _schema_problems(error, schema: dict) -> list[str]:
    """A jsonschema error as lines "dotted.path: problem"; a key that no ``properties`` of
    its object allows (additionalProperties / unevaluatedProperties false) is one line
    per key, with the keys that are allowed there."""
    path = ".".join(str(p) for p in error.absolute_path)
    closed = error.validator in ("additionalProperties", "unevaluatedProperties")
    if closed and error.validator_value is False and isinstance(error.instance, dict):
        allowed = _declared_keys(error.schema, schema)
        where = f"{path}." if path else ""
        return [
            f"{where}{key}: unknown key (allowed: {', '.join(sorted(allowed))})"
            for key in error.instance
            if key not in allowed
        ]
    return [f"{path or '<top>'}: {error.message}"]


def _declared_keys(node: dict, schema: dict) -> set[str]:
    """The property names a schema object declares, its local ``$ref``s' included."""
    keys = set(node.get("properties") or {})
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target = schema
        for part in ref[2:].split("/"):
            target = target[part]
        keys |= _declared_keys(target, schema)
    return keys
