"""Documentation pages that quote the registry stay current."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
LISTING = re.compile(r"`python -m posenc_ref\.cli list --cases --op '([^']+)'`:\n\n```text\n(.*?)```", re.S)
INCLUDED = re.compile(r"```\{literalinclude\} \.\./posenc_ref/(\w+)\.py\n:language: python\n:pyobject: (\w+)")
QUOTED = [(page, m.group(1), m.group(2)) for page in sorted(DOCS.glob("*.md"))
          for m in LISTING.finditer(page.read_text(encoding="utf-8"))]


def test_scheme_pages_quote_their_case_listings():
    assert {pattern for _, pattern, _ in QUOTED} >= {
        "sinusoidal.*", "grid2d.*", "learned.*", "rope.*", "alibi.*", "t5.*", "deberta.*", "shaw.*", "transformer_xl.*",
        "resample.*", "attention*"}


@pytest.mark.parametrize(("page", "pattern", "quoted"), QUOTED, ids=lambda v: getattr(v, "name", None))
def test_case_listing_is_current(page, pattern, quoted):
    out = subprocess.run([sys.executable, "-m", "posenc_ref.cli", "list", "--cases", "--op", pattern],
                         capture_output=True, text=True, check=True).stdout
    assert out == quoted, f"{page.name}: the case listing for {pattern!r} is stale; paste the command's output"


SOURCE_PAGES = ["sinusoidal.md", "grid2d.md", "learned.md", "rope.md", "alibi.md", "t5.md", "deberta.md", "shaw.md",
                "transformer-xl.md", "resample.md", "attention.md"]


@pytest.mark.parametrize("page", SOURCE_PAGES)
def test_source_sections_name_existing_functions(page):
    import importlib

    text = (DOCS / page).read_text(encoding="utf-8")
    included = INCLUDED.findall(text)
    assert included
    for module, name in included:
        assert callable(getattr(importlib.import_module(f"posenc_ref.{module}"), name))


@pytest.mark.parametrize("page", SOURCE_PAGES)
def test_source_sections_show_the_ops_of_their_page(page):
    """Each registered op whose function lives in a module a page includes is shown on that page."""
    from posenc_ref.registry import OPS

    text = (DOCS / page).read_text(encoding="utf-8")
    included = set(INCLUDED.findall(text))
    modules = {module for module, _ in included}
    for op in OPS:
        module = op.function.__module__.removeprefix("posenc_ref.")
        if module in modules:
            assert (module, op.function.__name__) in included, f"{page} does not show {op.name}'s source"
