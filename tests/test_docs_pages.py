"""Documentation pages that quote the registry stay current."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
LISTING = re.compile(r"`python -m posenc_ref\.cli list --cases --op '([^']+)'`:\n\n```text\n(.*?)```", re.S)
QUOTED = [(page, m.group(1), m.group(2)) for page in sorted(DOCS.glob("*.md"))
          for m in LISTING.finditer(page.read_text(encoding="utf-8"))]


def test_scheme_pages_quote_their_case_listings():
    assert {pattern for _, pattern, _ in QUOTED} >= {"sinusoidal.*", "grid2d.*"}


@pytest.mark.parametrize(("page", "pattern", "quoted"), QUOTED, ids=lambda v: getattr(v, "name", None))
def test_case_listing_is_current(page, pattern, quoted):
    out = subprocess.run([sys.executable, "-m", "posenc_ref.cli", "list", "--cases", "--op", pattern],
                         capture_output=True, text=True, check=True).stdout
    assert out == quoted, f"{page.name}: the case listing for {pattern!r} is stale; paste the command's output"


@pytest.mark.parametrize("page", ["sinusoidal.md", "grid2d.md", "learned.md"])
def test_source_sections_name_existing_functions(page):
    import importlib

    text = (DOCS / page).read_text(encoding="utf-8")
    included = re.findall(r"```\{literalinclude\} \.\./posenc_ref/(\w+)\.py\n:language: python\n:pyobject: (\w+)", text)
    assert included
    for module, name in included:
        assert callable(getattr(importlib.import_module(f"posenc_ref.{module}"), name))
