"""Every `docs/<page>.md#<anchor>` the code, tests, manifests and READMEs cite exists, and nothing
cites a document outside the repository.

The code explains itself by pointing at docs/upstream-behaviour.md and docs/differences.md; a
renamed or dropped section would leave those pointers dangling without this check. A citation
may name further anchors of the same page after it (`docs/upstream-behaviour.md#tfjob, #jaxjob`).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("kubetrain", "tests", "benchmarks", "examples", "manifests")
SUFFIXES = {".py", ".md", ".yaml", ".c"}

CITATION = re.compile(r"docs/([\w-]+\.md)#([\w-]+)((?:(?:,\s*|\s+and\s+)#[\w-]+)*)")
FOLLOWING = re.compile(r"#([\w-]+)")
ANCHOR = re.compile(r'<a id="([\w-]+)"></a>')
HEADING = re.compile(r"^#+\s+(.+?)\s*$", re.MULTILINE)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text()
    return set(ANCHOR.findall(text)) | {_slug(h) for h in HEADING.findall(text)}


def _source_files() -> list[Path]:
    files = [REPO / "README.md", *(p for d in SOURCES for p in (REPO / d).rglob("*") if p.suffix in SUFFIXES)]
    return [p for p in files if p.is_file() and "__pycache__" not in p.parts]


def _citations() -> list[tuple[str, str, str]]:
    """(citing file, page, anchor) for every citation in the tree."""
    found = []
    for path in _source_files():
        for match in CITATION.finditer(path.read_text(errors="replace")):
            page, first, more = match.groups()
            for anchor in [first, *FOLLOWING.findall(more)]:
                found.append((str(path.relative_to(REPO)), page, anchor))
    return found


def test_the_code_cites_the_docs_pages() -> None:
    pages = {page for _, page, _ in _citations()}
    assert {"upstream-behaviour.md", "differences.md"} <= pages


def test_no_citation_points_outside_the_repository() -> None:
    """Section signs (`§4.2`) and spec paths cited a document the repository does not hold."""
    outside = re.compile(r"§|upstream-behavior\.md|performance-reliability\.md|design §")
    offenders = [
        str(path.relative_to(REPO))
        for path in _source_files()
        if path != Path(__file__).resolve() and outside.search(path.read_text(errors="replace"))
    ]
    assert offenders == []


def test_every_cited_anchor_exists() -> None:
    anchors = {page.name: _anchors(page) for page in (REPO / "docs").glob("*.md")}
    dangling = [
        f"{where}: docs/{page}#{anchor}"
        for where, page, anchor in _citations()
        if anchor not in anchors.get(page, set())
    ]
    assert dangling == []
