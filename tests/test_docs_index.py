"""docs/README.md is the index of the documentation: every page of docs/ listed once, with
a line saying what it holds, in three groups (guides, reference, results). README.md links
to it and stays short enough to read through, and every relative link of README.md and of
the pages of docs/ resolves, anchors included."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO

DOCS = REPO / "docs"
INDEX = DOCS / "README.md"
GROUPS = ("Guides", "Reference", "Results")
#: README.md's length the project keeps it within
README_MAX_LINES = 160
#: a Markdown link: [text](target), target without spaces
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
#: an index entry: a list item that starts with a link to a page, then ": what it holds"
ENTRY = re.compile(r"^\* \[(?P<text>[^\]]+)\]\((?P<target>[^)\s#]+)\): (?P<what>\S.*)$")


def _sections(text: str) -> dict[str, list[str]]:
    """The lines under each ``## `` heading."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return sections


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but ``-`` and ``_`` left
    out, spaces as ``-``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not re.match(r"^#{1,6} ", line):
            continue
        slug = _slug(line.lstrip("#"))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _broken(page: Path, target: str) -> str | None:
    """Why the relative link ``target`` of ``page`` does not resolve; None when it does
    (a web address is not followed)."""
    if re.match(r"^[a-z]+:", target):
        return None
    path, _, anchor = target.partition("#")
    file = (page.parent / path).resolve() if path else page
    if not file.exists():
        return f"{page.relative_to(REPO)}: {target}: no such file"
    if anchor and file.suffix == ".md" and anchor not in _anchors(file):
        return f"{page.relative_to(REPO)}: {target}: no heading #{anchor} in {path or page.name}"
    return None


def test_the_index_has_the_three_groups_in_order():
    assert list(_sections(INDEX.read_text(encoding="utf-8"))) == list(GROUPS)


def test_every_page_of_docs_is_in_the_index_once_with_what_it_holds():
    sections = _sections(INDEX.read_text(encoding="utf-8"))
    listed: list[str] = []
    for group in GROUPS:
        entries = [ENTRY.match(line) for line in sections[group] if line.startswith("* ")]
        assert entries and all(entries), f"{group}: each item is '* [page](page): what it holds'"
        for entry in entries:
            assert entry["text"] == entry["target"], entry.group(0)
            assert len(entry["what"]) >= 20, f"{entry['target']}: say what it holds"
            listed.append(entry["target"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if p != INDEX)
    twice = sorted({p for p in listed if listed.count(p) > 1})
    assert not twice, f"listed more than once in docs/README.md: {twice}"
    missing = sorted(set(pages) - set(listed))
    assert not missing, f"pages of docs/ that docs/README.md does not list: {missing}"
    stray = sorted(set(listed) - set(pages))
    assert not stray, f"docs/README.md lists pages docs/ does not hold: {stray}"


PAGES = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_every_link_resolves(page):
    links = LINK.findall(page.read_text(encoding="utf-8"))
    broken = [why for target in links if (why := _broken(page, target))]
    assert not broken, "\n".join(broken)


def test_the_readme_links_to_the_index_and_stays_short():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/README.md" in LINK.findall(text)
    lines = len(text.splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move detail into docs/"
    )


def test_anchors_are_those_github_makes():
    assert _slug("Your copy of the archive: `paths.uea_archive`") == (
        "your-copy-of-the-archive-pathsuea_archive"
    )
    assert _slug("Add a model, a dataset, a table or figure") == (
        "add-a-model-a-dataset-a-table-or-figure"
    )
    assert _slug("The zoo at the paper's protocol (`uea10-zoo`)") == (
        "the-zoo-at-the-papers-protocol-uea10-zoo"
    )
