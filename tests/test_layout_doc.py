"""The layout of docs/development.md is the tree's: every module of the package, every
package and every rule file of the workflow is named in it, where it sits, and every file
or folder it names exists. Computed from the tree as it is, so a module added, split,
moved or removed fails here until the layout says so.

The block's form: an entry is a path at the start of a line (a folder ends with ``/``),
a folder of ``src/ssmbench/`` indented two spaces under it, a folder of that folder four;
its description follows on the line and on the lines indented past it. In a folder's
description, ``name.py`` and ``name.smk`` name that folder's files.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO

DOC = REPO / "docs" / "development.md"
PACKAGE = REPO / "src" / "ssmbench"
RULES = REPO / "workflow" / "rules"
#: a file a description names: a module or a rule file
FILE = re.compile(r"(?<![\w/.<>-])([A-Za-z0-9_]+\.(?:py|smk))\b")
#: the widest indent of an entry; a line indented further continues a description
ENTRY_INDENT = 4


def _block() -> list[str]:
    """The lines of the first code block under ``## Layout``."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1].splitlines()[1:]


def _entries() -> list[tuple[Path, bool, str]]:
    """(path from the repository root, whether it is a folder, description) of each entry
    of the block."""
    entries: list[tuple[Path, bool, str]] = []
    parents: dict[int, Path] = {}
    for line in _block():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent > ENTRY_INDENT:  # a description goes on
            path, folder, text = entries[-1]
            entries[-1] = (path, folder, f"{text} {line.strip()}")
            continue
        name, _, text = line.strip().partition(" ")
        path = (REPO if indent == 0 else parents[indent - 2]) / name.rstrip("/")
        if name.endswith("/"):
            parents[indent] = path
        entries.append((path, name.endswith("/"), text.strip()))
    return entries


def _named() -> set[Path]:
    """Every file and folder the block names: its entries, and the files its folders'
    descriptions name."""
    named = set()
    for path, folder, text in _entries():
        named.add(path)
        if folder:
            named.update(path / name for name in FILE.findall(text))
    return named


def _tree() -> set[Path]:
    """What the layout must name: every module of the package (a subpackage's
    ``__init__.py`` is its folder's entry), every package, every folder directly in the
    package (its data: calibration/, reference/), every rule file of the workflow."""
    modules = {p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    modules -= {p for p in modules if p.name == "__init__.py" and p.parent != PACKAGE}
    packages = {p.parent for p in PACKAGE.rglob("__init__.py")}
    folders = {p for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    return modules | packages | folders | set(RULES.glob("*.smk"))


def _shown(paths) -> list[str]:
    return sorted(p.relative_to(REPO).as_posix() for p in paths)


def test_the_layout_names_every_module_package_and_rule_file():
    missing = _tree() - _named()
    assert not missing, (
        "docs/development.md's layout does not name (add each where it sits): "
        + ", ".join(_shown(missing))
    )


def test_everything_the_layout_names_exists():
    gone = {p for p in _named() if not p.exists()}
    assert not gone, "docs/development.md's layout names what the tree does not hold: " + (
        ", ".join(_shown(gone))
    )


def test_the_layout_is_read_as_written():
    """The parse itself: entries nest by their indent, and a folder's files are read
    from its description."""
    entries = {path: (folder, text) for path, folder, text in _entries()}
    assert entries[PACKAGE / "data" / "physiome"][0]  # a folder, nested under data/
    assert "zenodo.py" in entries[PACKAGE / "data" / "physiome"][1]
    assert not entries[PACKAGE / "config.py"][0]
    named = _named()
    assert PACKAGE / "train" / "rewind.py" in named and RULES / "tune.smk" in named
    assert PACKAGE / "params.schema.yaml" in named


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("catalog.py, names.py (a dataset's size)", ["catalog.py", "names.py"]),
        ("one source_<name>.py per source", []),
        ("a link to src/ssmbench/params.schema.yaml", []),
        ("common.smk (the grid), data.smk", ["common.smk", "data.smk"]),
    ],
)
def test_a_description_names_files_by_their_file_names(text, found):
    assert FILE.findall(text) == found
