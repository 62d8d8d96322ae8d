"""The code digest: a hash of the code a run's result depends on beyond its settings.

`training_code_digest` hashes `digested_modules`: the train package (but the modules of
NOT_RESULT_CODE), the prepared-data store, the complexity counts, the model registry's
functions and the run's own model family (its module and the models/ modules it imports;
for a family named by import path, its own package's modules), each as its syntax tree
without docstrings, so that editing comments, docstrings or formatting changes nothing.
A record holds the digest it was made with (``code_digest``); ``ssmbench.staleness``
compares it with the digest of the code as it is.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

PACKAGE = Path(__file__).parent

#: modules of the train package a result does not depend on, and why
NOT_RESULT_CODE = {
    "train/provenance.py": "provenance only: where and with what a run was made",
    "train/stop.py": "when a run stops on a signal, not what it computes",
    "train/progress.py": "how a run shows its progress, not what it computes",
}
#: single modules a result depends on beyond the train package (relative to the package)
RESULT_MODULES = (
    "data/store.py",
    "data/row_file.py",
    "complexity.py",
    "reading_plan.py",
    "data/validation_split.py",
)
#: of models/, the modules no one family's result depends on: the package's re-exports,
#: the family table (registering a new family must not rerun the other families) and the
#: import of families named by import path
MODELS_NOT_WALKED = ("models/__init__.py", "models/families.py", "models/imported.py")


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def _module_file(name: str, root: Path | None = None) -> Path | None:
    """The file of a module (a module or a package's __init__.py): an ``ssmbench.*``
    module in this package, or, with ``root`` (the folder a researcher's package or
    module lies in), a module under ``root``; None for any other."""
    parts = name.split(".")
    if parts[0] == "ssmbench":
        base = PACKAGE.joinpath(*parts[1:])
    elif root is not None and name:
        base = root.joinpath(*parts)
    else:
        return None
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` under ``root`` (PACKAGE's parent for
    ssmbench's own)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path, root: Path | None = None) -> set[Path]:
    """The ssmbench modules a module imports (`import`, `from x import y`, relative or
    absolute; `from package import module` counts the module), and with ``root`` the
    modules under ``root`` it imports (a researcher's own package)."""
    own = root if root is not None and path.is_relative_to(root) else PACKAGE.parent
    module = _module_name(path, own)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{node.module}" if node.module else anchor
            else:
                base = node.module or ""
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for name in names:
            found_file = _module_file(name, root)
            if found_file is not None:
                found.add(found_file)
    return found


def walk_modules(
    start: Path, within: Path, skip: tuple[str, ...] = (), root: Path | None = None
) -> list[Path]:
    """`start` and the modules under `within` it imports, transitively (with ``root``,
    also those under ``root``: `imported_family_modules`). Not followed: `within`'s own
    __init__.py (a package's re-exports would pull in all of it) and the files named in
    `skip` (relative to the package)."""
    skip = (*skip, (within / "__init__.py").relative_to(PACKAGE).as_posix())
    todo, seen = [start], set()
    while todo:
        path = todo.pop()
        if path in seen or (
            path != start
            and path.is_relative_to(PACKAGE)
            and path.relative_to(PACKAGE).as_posix() in skip
        ):
            continue
        seen.add(path)
        todo += [
            p
            for p in _imported_modules(path, root)
            if p.is_relative_to(within) or (root is not None and p.is_relative_to(root))
        ]
    return sorted(seen)


def imported_family_root(family: str) -> Path:
    """For a family named by import path (``package.module:Class``): the folder its
    top-level package lies in (for a module outside any package, the module's folder)."""
    import sys

    from ssmbench.models import FAMILIES

    module = FAMILIES[family].__module__
    top = sys.modules[module.split(".")[0]]
    if getattr(top, "__file__", None) is None:  # a namespace package: no __init__.py
        return Path(next(iter(top.__path__))).resolve().parent
    file = Path(top.__file__).resolve()
    return file.parent.parent if file.name == "__init__.py" else file.parent


def imported_family_modules(family: str) -> list[Path]:
    """For a family named by import path (``package.module:Class``, ``models/imported.py``):
    its module, the modules of its own top-level package it imports, transitively, and
    the ssmbench models/ modules any of them imports (a layer reused from the package). A
    module outside any package is followed alone (its folder may hold other people's
    modules)."""
    import sys

    from ssmbench.models import FAMILIES

    module = FAMILIES[family].__module__
    start = Path(sys.modules[module].__file__).resolve()
    root = None
    if "." in module or start.name == "__init__.py":
        root = imported_family_root(family)
    return walk_modules(start, PACKAGE / "models", MODELS_NOT_WALKED, root=root)


def family_modules(family: str) -> list[Path]:
    """The model family's module and the models/ modules it imports, transitively
    (MS4 -> ms4.py, s4d.py); for a family named by import path,
    `imported_family_modules`."""
    import sys

    from ssmbench.models import FAMILIES
    from ssmbench.models.imported import is_import_path

    if is_import_path(family):
        return imported_family_modules(family)
    start = Path(sys.modules[FAMILIES[family].__module__].__file__)
    return walk_modules(start, PACKAGE / "models", MODELS_NOT_WALKED)


def digested_modules(family: str | None = None) -> list[Path]:
    """The modules a run of ``family`` depends on, in the digest's order: every module of
    the train package but NOT_RESULT_CODE, the data store and what it imports from data/,
    the complexity counts, models/registry.py whole (the registry's functions; its import
    of the family table is not followed), and the family's own modules (for a family
    named by import path, its own package's modules: `imported_family_modules`). Without
    ``family``, every models/ module but MODELS_NOT_WALKED."""
    train = [
        p
        for p in sorted((PACKAGE / "train").rglob("*.py"))
        if p.relative_to(PACKAGE).as_posix() not in NOT_RESULT_CODE
    ]
    store = walk_modules(PACKAGE / RESULT_MODULES[0], PACKAGE / "data")
    others = [PACKAGE / name for name in RESULT_MODULES[1:]]
    models = PACKAGE / "models"
    if family is None:
        model_files = [
            p
            for p in sorted(models.rglob("*.py"))
            if p.relative_to(PACKAGE).as_posix() not in MODELS_NOT_WALKED
        ]
    else:
        model_files = family_modules(family)
    ordered = [*train, *store, *others, models / "registry.py", *model_files]
    return list(dict.fromkeys(ordered))


def digest_name(path: Path, root: Path | None = None) -> str:
    """A digested module's name in the digest: its path in the package (``train/optim.py``),
    or, for a researcher's own module, its path from ``root`` (`imported_family_root`)
    after ``ext:`` (``ext:mymodels/pool.py``), so that the digest does not depend on where
    a clone lies or how the module was found."""
    if path.is_relative_to(PACKAGE):
        return path.relative_to(PACKAGE).as_posix()
    if root is not None and path.is_relative_to(root):
        return "ext:" + path.relative_to(root).as_posix()
    return "ext:" + path.name


@functools.cache
def _syntax(path: Path) -> bytes:
    """A module's syntax tree without docstrings (parsed once per process)."""
    return ast.dump(_strip_docstrings(ast.parse(path.read_text(), filename=str(path)))).encode()


@functools.cache
def training_code_digest(family: str | None = None) -> str:
    """Hash of `digested_modules(family)` as syntax trees with docstrings removed: editing
    comments, docstrings or formatting changes nothing; editing what the code does
    changes it."""
    from ssmbench.models.imported import is_import_path

    root = imported_family_root(family) if is_import_path(family) else None
    return modules_digest(digested_modules(family), root)


def modules_digest(paths: list[Path], root: Path | None = None) -> str:
    """Hash of the modules at ``paths``, in order, each as its name (`digest_name`) and its
    syntax tree without docstrings: the same for the same code wherever a clone lies."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(digest_name(path, root).encode())
        digest.update(_syntax(path))
    return digest.hexdigest()[:16]
