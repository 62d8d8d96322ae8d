"""params.yaml as a file: `read_params` reads it (a YAML syntax error, a key given twice
in one mapping, an empty file or one that is not a mapping: each named with its line) and
`validate_schema` checks its shape, the type and range of every value against the JSON
Schema (workflow/schemas/params.schema.yaml). ``ssmbench.config`` checks the rest and
builds the suite grid on them; both raise `ConfigError`.
"""

from __future__ import annotations

import functools
from pathlib import Path

import yaml


class ConfigError(ValueError):
    """params.yaml is malformed or inconsistent; the message names the field."""


# The schema ships inside the package; workflow/schemas/params.schema.yaml links to it.
SCHEMA_PATH = Path(__file__).with_name("params.schema.yaml")
#: libyaml's safe loader (6x PyYAML's on params.yaml, read by every job), where PyYAML has it
FAST_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_params(path: str | Path = "params.yaml") -> dict:
    """params.yaml's mapping, before any validation. The Snakefile and the CLI both read it
    here, so both report a YAML syntax error (file, line, column and the line itself), a
    key given twice in one mapping (both lines), and a file that is empty or not a mapping,
    in the same words. Raises ConfigError."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(
            f"{path}: no such params file; run from the project root or pass --params"
        )
    text = path.read_text()
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
        raise ConfigError(f"{path}: empty; {_expected_mapping()}")
    if not isinstance(params, dict):
        raise ConfigError(
            f"{path}:{node.start_mark.line + 1}: the file holds a {type(params).__name__}, "
            f"not a mapping; {_expected_mapping()}"
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
    return "expected a mapping with keys " + ", ".join(_schema()["required"])


@functools.cache
def _schema() -> dict:
    """The JSON Schema, read once per process (not to be modified)."""
    return yaml.load(SCHEMA_PATH.read_text(), Loader=FAST_SAFE_LOADER)


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


def validate_schema(params: dict, source: str = "params.yaml") -> None:
    """Check params.yaml's shape against the JSON Schema. Raises ConfigError with one line
    per problem, each naming its dotted path; an unknown key is named by its own path
    (``protocol.learning_rate: unknown key (allowed: ...)``)."""
    import jsonschema

    schema = _schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(params), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        lines = [f"  {line}" for e in errors for line in _schema_problems(e, schema)]
        raise ConfigError(
            f"{source} does not match the schema {SCHEMA_PATH.name}:\n" + "\n".join(lines)
        )


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
