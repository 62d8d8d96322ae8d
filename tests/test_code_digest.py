"""ssmbench.code_digest: the modules a run's result depends on, per family, their hash
(comments and docstrings change nothing), and the DVC train stage's deps agreeing with
them."""

from __future__ import annotations

import yaml
from conftest import REPO

from ssmbench import code_digest
from ssmbench.code_digest import (
    NOT_RESULT_CODE,
    digested_modules,
    family_modules,
    training_code_digest,
    walk_modules,
)

PACKAGE = REPO / "src" / "ssmbench"


def rel(paths):
    return [p.relative_to(code_digest.PACKAGE).as_posix() for p in paths]


# --- the code digest -------------------------------------------------------------------


def test_code_digest_is_per_family():
    """A run depends on its own family's code: adding or editing another family (a new
    baseline) must not make every existing run stale."""
    ms4 = {p.name for p in family_modules("ms4")}
    assert {"ms4.py", "s4d.py"} <= ms4 and "mamba.py" not in ms4
    assert "mamba.py" in {p.name for p in family_modules("mamba1")}
    assert "ms4.py" not in {p.name for p in family_modules("mamba1")}
    for family in ("ms4", "mamba1", "quant"):
        names = rel(family_modules(family))
        assert "models/families.py" not in names and "models/__init__.py" not in names
    assert training_code_digest("ms4") != training_code_digest("mamba1")
    assert training_code_digest("ms4") == training_code_digest("ms4")


def test_digest_covers_the_train_package_the_store_and_the_registry():
    names = rel(digested_modules("ms4"))
    train = {p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / "train").rglob("*.py")}
    # every module of the train package (a new one counts by itself) but provenance
    assert train - set(NOT_RESULT_CODE) <= set(names)
    assert "train/provenance.py" not in names
    for name in ("data/store.py", "complexity.py", "models/registry.py"):
        assert name in names
    # the registry's functions count, the family table does not
    assert "models/families.py" not in rel(digested_modules())
    assert set(rel(digested_modules("ms4"))) <= set(rel(digested_modules()))


def test_the_walk_follows_imports_of_new_modules(tmp_path, monkeypatch):
    """A family module split in two (or a shared frame module) is followed by its imports:
    relative, absolute, `from package import module`, and into a subpackage."""
    package = tmp_path / "ssmbench"
    models = package / "models"
    (models / "deep").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (models / "__init__.py").write_text("from .families import FAMILIES\n")
    (models / "families.py").write_text("from .fam import Net\nFAMILIES = {'fam': Net}\n")
    (models / "fam.py").write_text(
        "from .frame import Head\nfrom ssmbench.models.deep import layer\n"
        "from ssmbench.models import families\nclass Net(Head): pass\n"
    )
    (models / "frame.py").write_text("from . import blocks\nclass Head: pass\n")
    (models / "blocks.py").write_text("X = 1\n")
    (models / "other.py").write_text("Y = 2\n")
    (models / "deep" / "__init__.py").write_text("")
    (models / "deep" / "layer.py").write_text("import ssmbench.models.deep.scan\n")
    (models / "deep" / "scan.py").write_text("Z = 3\n")
    monkeypatch.setattr(code_digest, "PACKAGE", package)
    found = rel(walk_modules(models / "fam.py", models, code_digest.MODELS_NOT_WALKED))
    assert found == [
        "models/blocks.py", "models/deep/__init__.py", "models/deep/layer.py",
        "models/deep/scan.py", "models/fam.py", "models/frame.py",
    ]  # fmt: skip


def test_comments_and_docstrings_change_nothing_code_does(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('def f(x):\n    """Doc."""\n    return x + 1\n')
    before = code_digest._syntax(path)
    edited = tmp_path / "n.py"
    edited.write_text('def f(x):  # a comment\n    """Other doc."""\n\n    return x + 1\n')
    assert code_digest._syntax(edited) == before
    changed = tmp_path / "o.py"
    changed.write_text('def f(x):\n    """Doc."""\n    return x + 2\n')
    assert code_digest._syntax(changed) != before


def test_dvc_train_stage_deps_cover_the_digest_and_nothing_unexplained():
    """Every module the code digest hashes is a dep of the DVC train stage; every src dep
    of that stage is hashed or listed here with why it does not change a result."""
    not_results = {
        "src/ssmbench/config.py": "resolves the settings, which each record holds itself",
        "src/ssmbench/precedence.py": "orders the settings' places; each record holds the result",
        "src/ssmbench/io.py": "atomic file writes",
        "src/ssmbench/staleness.py": "decides which runs run again, not what they compute",
        "src/ssmbench/code_digest.py": "hashes the code: a change reruns every run, changes none",
        "src/ssmbench/resources.py": "a run's CPUs, memory, GPU and time limit",
        **{f"src/ssmbench/{name}": why for name, why in NOT_RESULT_CODE.items()},
        **{f"src/ssmbench/{name}": "no family's result" for name in code_digest.MODELS_NOT_WALKED},
    }
    deps = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["train"]["deps"]
    src_deps = [REPO / d for d in deps if d.startswith("src/")]
    hashed = {p.relative_to(REPO).as_posix() for p in digested_modules()}
    for module in hashed:
        assert any(
            (REPO / module) == dep or (REPO / module).is_relative_to(dep) for dep in src_deps
        ), f"{module} is hashed by the code digest but no dep of dvc.yaml's train stage"
    for dep in src_deps:
        files = sorted(dep.rglob("*.py")) if dep.is_dir() else [dep]
        assert files, f"dvc.yaml train dep {dep} holds no module"
        for path in files:
            name = path.relative_to(REPO).as_posix()
            assert name in hashed or name in not_results, (
                f"dvc.yaml train dep {name} is neither hashed by the code digest nor listed "
                "as not changing a result"
            )
