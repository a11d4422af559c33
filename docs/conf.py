"""Sphinx configuration of the posenc-ref documentation. Build with ``python docs/build.py``."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))  # document the checkout, not some installed copy

import posenc_ref  # noqa: E402
from posenc_ref.registry import OPS  # noqa: E402

project = "posenc-ref"
author = "the posenc-ref authors"
copyright = "the posenc-ref authors"
release = version = posenc_ref.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "matplotlib.sphinxext.plot_directive",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "figures/README.md", "lab/README.md"]

# MyST: $...$ and $$...$$ math, labelled equations, heading anchors for links like page.md#section.
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# Math: MathJax 3 SVG from the build tree (docs/build.py installs it); the default is a CDN.
html_static_path = ["_build/vendor"]
mathjax_path = "mathjax/tex-svg.js"

# API reference: numpydoc layout, docstring validation during the build.
autodoc_member_order = "bysource"
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = {"PR02", "PR03", "PR10", "SS03"}
numpydoc_validation_exclude = {r"\.__init__$", r"\.__call__$"}
nitpick_ignore_regex = [(r"py:.*", r"numpy(\..*)?"), (r"py:.*", r"(np|NDArray|Any|Path|Mapping)(\..*)?")]

# Figures: every figure is a script under docs/figures/ that imports posenc_ref, run at build time.
plot_basedir = str(DOCS)
plot_formats = ["svg"]
plot_include_source = False
plot_html_show_formats = False
plot_html_show_source_link = False
plot_rcparams = {"savefig.bbox": "tight", "font.size": 9.0}
plot_apply_rcparams = True

html_theme = "pydata_sphinx_theme"
html_title = f"posenc-ref {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_last_updated_fmt = None

API_MARKER = "<!-- api: scheme modules, generated from posenc_ref.registry.OPS by docs/conf.py -->"


def scheme_modules() -> list[str]:
    """Every module that holds the reference function of a registered op, in registry order."""
    modules: list[str] = []
    for op in OPS:
        name = op.function.__module__
        if name not in modules:
            modules.append(name)
    return modules


def scheme_api_rst() -> str:
    """The API section of the scheme modules: one ``automodule`` per module of a registered op."""
    blocks = []
    for name in scheme_modules():
        underline = "-" * (len(name) + 4)
        blocks.append(f"``{name}``\n{underline}\n\n.. automodule:: {name}\n   :members:\n")
    return "```{eval-rst}\n" + "\n".join(blocks) + "```\n"


def _source_read(app: Any, docname: str, source: list[str]) -> None:
    if docname == "api" and API_MARKER in source[0]:
        source[0] = source[0].replace(API_MARKER, scheme_api_rst())


_LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s]+)\)")


def include_links(relative_path: str, text: str) -> str:
    """Rewrite the relative links of a Markdown file included from outside ``docs/``.

    A link into ``docs/`` (``../docs/tolerance.md``) becomes the page; a link to any other file
    of the repository (``examples/float32_adapter.py``) becomes a download of that file, so the
    included page reads the same on GitHub and in the site.
    """
    folder = Path(relative_path).parent.as_posix()

    def fix(match: re.Match[str]) -> str:
        target = (DOCS / folder / match.group(1)).resolve()
        if DOCS in target.parents and target.suffix == ".md":
            return f"]({target.relative_to(DOCS).as_posix()})"
        return f"](path:{Path('..', target.relative_to(DOCS.parent)).as_posix()})"

    return _LINK.sub(fix, text)


def _include_read(app: Any, relative_path: Path, parent_docname: str, content: list[str]) -> None:
    if not Path(relative_path).as_posix().startswith("../"):
        return
    content[0] = include_links(Path(relative_path).as_posix(), content[0])


_STARRED_SHAPE = re.compile(r"\((\*)(?=\w)")


def _prepare_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    # The module docstrings are the scheme pages' spec text, shown on those pages; the API page
    # shows the functions only.
    if what == "module":
        lines.clear()
        return
    # Shapes are written "(*positions.shape, dim)" in Returns types; escape the star for RST.
    lines[:] = [_STARRED_SHAPE.sub(r"(\\*", line) for line in lines]


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _source_read)
    app.connect("include-read", _include_read)
    app.connect("autodoc-process-docstring", _prepare_docstring, priority=100)
    return {"parallel_read_safe": True}
