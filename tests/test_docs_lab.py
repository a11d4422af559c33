"""The executable pages: the lab, "Why position?" and the landing page's tour run as doctests."""

import doctest
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
EXECUTED = sorted([DOCS / "index.md", DOCS / "why-position.md", *(DOCS / "lab").glob("*.md")])
FLAGS = doctest.ELLIPSIS


def run_page(path: Path) -> doctest.TestResults:
    return doctest.testfile(str(path), module_relative=False, optionflags=FLAGS, report=True, verbose=False)


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: str(p.relative_to(DOCS)))
def test_page_runs(path):
    results = run_page(path)
    assert results.failed == 0, f"{path.name}: {results.failed} of {results.attempted} examples failed"
    if path != DOCS / "lab" / "index.md":  # the lab's index page only lists the tutorials
        assert results.attempted > 0


def test_every_lab_page_has_examples():
    pages = [p for p in (DOCS / "lab").glob("*.md") if p.name != "index.md"]
    assert len(pages) >= 3
    for page in pages:
        assert ">>> " in page.read_text(encoding="utf-8"), page.name


def test_a_wrong_printed_value_fails(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```pycon\n>>> 1 + 1\n3\n\n```\n", encoding="utf-8")
    assert doctest.testfile(str(page), module_relative=False, report=False).failed == 1


@pytest.mark.parametrize("check", ["scale_check", "extrapolation_check", "order_check"])
def test_every_check_is_used_in_a_tutorial(check):
    used = [p.name for p in EXECUTED if f"{check}(" in p.read_text(encoding="utf-8")]
    assert used, f"posenc_ref.checks.{check} is not exercised by any executed page"
