"""Documentation pages that quote the registry stay current."""

import re
from pathlib import Path

import pytest
from _loading import load_file

DOCS = Path(__file__).resolve().parent.parent / "docs"
INCLUDED = re.compile(r"```\{literalinclude\} \.\./posenc_ref/(\w+)\.py\n:language: python\n:pyobject: (\w+)")
CASE_TABLE = re.compile(r"```\{case-table\} (\S+)\n```")
OPS_TABLE = re.compile(r"```\{ops-table\} (\S+)\n```")
PAGES = sorted(DOCS.glob("*.md"))


@pytest.fixture(scope="module")
def registry_pages():
    """The docs' Sphinx extension (needs docutils: the docs extra; .ci/run runs these tests there too)."""
    pytest.importorskip("docutils")
    return load_file(DOCS / "_ext" / "registry_pages.py", "_docs_registry_pages")


def test_scheme_pages_list_their_cases_from_the_registry():
    used = {m.group(1) for page in PAGES for m in CASE_TABLE.finditer(page.read_text(encoding="utf-8"))}
    assert used >= {"sinusoidal.*", "grid2d.*", "learned.*", "rope.*", "alibi.*", "t5.*", "deberta.*", "shaw.*",
                    "transformer_xl.*", "resample.*", "attention*"}


def test_every_registered_op_has_its_cases_on_a_page():
    import fnmatch

    from posenc_ref.registry import OPS

    patterns = [m.group(1) for page in PAGES for m in CASE_TABLE.finditer(page.read_text(encoding="utf-8"))]
    missing = [op.name for op in OPS if not any(fnmatch.fnmatch(op.name, p) for p in patterns)]
    assert not missing, f"ops whose cases no page lists: {missing}"


def test_no_page_pastes_a_case_listing():
    from posenc_ref.registry import OPS

    ids = [case.id for op in OPS for case in op.cases]
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        pasted = [case_id for case_id in ids if re.search(rf"^\s+{re.escape(case_id)}\s{{2,}}", text, re.M)]
        assert not pasted, f"{page.name} pastes `list --cases` output ({pasted[:3]}); use a case-table block"


def test_no_page_types_a_signature_of_a_reference_function():
    from posenc_ref.registry import OPS

    names = {op.function.__name__ for op in OPS}
    for page in PAGES:
        typed = re.findall(r"`(\w+)\([^`]*(?:, /|\(\*,|, \*,)[^`]*\)`", page.read_text(encoding="utf-8"))
        assert not set(typed) & names, f"{page.name} types the signature of {set(typed) & names}; use ops-table"


def test_signatures_are_read_from_the_functions(registry_pages):
    import inspect

    from posenc_ref.registry import OPS

    for op in OPS:
        text = registry_pages.signature_text(op.function)
        assert text.startswith(f"{op.function.__name__}(")
        assert all(line == line.rstrip() and len(line) <= registry_pages.SIGNATURE_WIDTH for line in text.splitlines())
        for name, parameter in inspect.signature(op.function).parameters.items():
            shown = name if parameter.default is parameter.empty else f"{name}={parameter.default!r}"
            assert shown in text, (op.name, shown)


def test_case_tables_hold_every_case_of_their_ops(registry_pages):
    from docutils import nodes

    directive = registry_pages.CaseTable.__new__(registry_pages.CaseTable)
    directive.arguments = ["rope.*"]
    shown = [node for node in directive.run() if isinstance(node, nodes.table)]
    ops = registry_pages.matching_ops("rope.*")
    assert len(shown) == len(ops)
    for table, op in zip(shown, ops):
        body = next(table.findall(nodes.tbody))
        rows = [[entry.astext() for entry in row.findall(nodes.entry)] for row in body.findall(nodes.row)]
        assert [row[0] for row in rows] == [case.id for case in op.cases]
        assert [row[2] for row in rows] == [case.comment for case in op.cases]


def test_an_unknown_pattern_or_name_stops_the_build(registry_pages):
    from sphinx.errors import ExtensionError

    with pytest.raises(ExtensionError, match="no registered op matches"):
        registry_pages.matching_ops("nosuch.*")
    with pytest.raises(ExtensionError, match="has no 'no_such_function'"):
        registry_pages.resolve("posenc_ref.rope.no_such_function")
    assert registry_pages.resolve("posenc_ref.rope.rope_apply").__name__ == "rope_apply"


def test_ops_tables_name_registered_ops(registry_pages):
    for page in PAGES:
        for pattern in OPS_TABLE.findall(page.read_text(encoding="utf-8")):
            assert registry_pages.matching_ops(pattern)


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


def table_rows_with_wrong_cell_counts(text: str) -> list[str]:
    """Markdown table rows whose cell count differs from the header's (a ``|`` inside a cell).

    GitHub-flavoured Markdown splits a row at every unescaped ``|``, inside backticks too, and
    silently drops cells beyond the header's count.
    """
    bad, header, fenced = [], None, False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("|"):
            header = None if not line.startswith("|") else header
            continue
        cells = len(re.split(r"(?<!\\)\|", line.strip().strip("|")))
        if header is None:
            header = cells
        elif cells != header:
            bad.append(line)
    return bad


def test_no_table_cell_is_split_by_a_pipe():
    for page in [*PAGES, *sorted((DOCS / "lab").glob("*.md")), DOCS.parent / "conformance" / "README.md"]:
        bad = table_rows_with_wrong_cell_counts(page.read_text(encoding="utf-8"))
        assert not bad, f"{page.name}: table rows with a cell split by '|': {bad[:2]}"


def test_no_line_starts_a_blockquote_by_accident():
    for page in [*PAGES, *sorted((DOCS / "lab").glob("*.md"))]:
        fenced, stray = False, []
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced and re.match(r">(?!>>)", line):
                stray.append(line)
        assert not stray, f"{page.name}: lines that render as a blockquote: {stray[:2]}"


def test_the_lint_catches_the_defects_it_is_for():
    table = "| parameter | value | who |\n|---|---|---|\n| `R` | paper ladder, `[sin | cos]` concatenated | both |\n"
    assert table_rows_with_wrong_cell_counts(table) == [table.splitlines()[2]]
    assert table_rows_with_wrong_cell_counts(table.replace("[sin | cos]", "[sin, cos]")) == []


def test_no_page_holds_control_characters():
    # A TeX command written into an ordinary Python string ("\b", "\t") arrives as a control character.
    for page in [*PAGES, *sorted((DOCS / "lab").glob("*.md")), *sorted((DOCS / "derivations").glob("*.md"))]:
        bad = re.findall(r"[\x00-\x08\x0b-\x1f\x7f]", page.read_text(encoding="utf-8"))
        assert not bad, f"{page.name}: control characters {sorted(set(bad))}"
