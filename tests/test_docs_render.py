"""The docs tooling without Sphinx or Chromium: the render check's judgement, link check, conf helpers.

The browser run itself (``python docs/check_render.py``) needs a built site and Chromium; CI runs
it after the strict build. Here its parts are fed pages whose verdict is known.
"""

from pathlib import Path

import pytest
from _loading import load_file

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _load(name):
    return load_file(DOCS / f"{name}.py", f"_docs_{name}")


check_render = _load("check_render")
REPORT = '<pre id="posenc-render-check" tabindex="-1">{{"images": {n}, "broken": {broken}, "mathjax": true}}</pre>'


def dom(body, n=0, broken="[]"):
    report = REPORT.format(n=n, broken=broken)
    return f"<html><head><style>.merror {{}}</style></head><body>{body}{report}</body></html>"


def test_typeset_page_passes():
    body = ('<span class="math notranslate nohighlight"><mjx-container jax="SVG"><svg/></mjx-container></span>'
            '<img src="a.svg">')
    result = check_render.assess_dom("p.html", dom(body, n=1), 1, 1)
    assert result.ok, result.problems
    assert (result.typeset, result.loaded) == (1, 1)


@pytest.mark.parametrize(("body", "n", "broken", "expected"), [
    ('<span class="math notranslate nohighlight">\\(x^2\\)</span>', 0, "[]", "not typeset"),
    ('<span class="math notranslate nohighlight">\\(x^2\\)</span>', 0, "[]", "raw TeX"),
    ('<mjx-container><svg><g data-mjx-error="Undefined control"/></svg></mjx-container>', 0, "[]", "TeX error"),
    ('<mjx-container><svg><mtext mathcolor="red">\\foo</mtext></svg></mjx-container>', 0, "[]", "TeX error"),
    ("<p>the formula $\\alpha + 1$ was left as text</p><mjx-container></mjx-container>", 0, "[]", "raw TeX"),
    ('<mjx-container></mjx-container><img src="gone.svg">', 1, '["gone.svg"]', "figure did not load: gone.svg"),
    ("<mjx-container></mjx-container>", 0, "[]", "0 images in the browser, 1 in the HTML"),
])
def test_failures_are_reported(body, n, broken, expected):
    result = check_render.assess_dom("p.html", dom(body, n=n, broken=broken), 1, 1)
    assert not result.ok
    assert any(expected in problem for problem in result.problems), result.problems


def test_tex_in_code_blocks_is_not_raw_tex():
    body = "<pre>$\\alpha$ \\(x\\)</pre><code>\\[y\\]</code>"
    assert check_render.assess_dom("p.html", dom(body), 0, 0).ok


def test_a_page_that_never_loaded_fails():
    result = check_render.assess_dom("p.html", "<html><body></body></html>", 0, 0)
    assert result.problems == ["the page never finished loading (no probe report)"]


def test_links(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text(
        '<a href="sub/page.html#here">ok</a><a href="sub/page.html#nowhere">bad anchor</a>'
        '<a href="missing.html">missing</a><a href="https://example.org/">external link is fine</a>'
        '<script src="https://cdn.example.org/x.js"></script><img src="sub/fig.svg">', encoding="utf-8")
    (tmp_path / "sub" / "page.html").write_text('<h2 id="here">x</h2><a href="../index.html">up</a>', encoding="utf-8")
    (tmp_path / "sub" / "fig.svg").write_text("<svg/>", encoding="utf-8")
    pages = {p: check_render.parse_page(p) for p in tmp_path.rglob("*.html")}
    problems = check_render.check_links(tmp_path, pages)
    assert sorted(problems[tmp_path / "index.html"]) == [
        "broken anchor sub/page.html#nowhere", "broken link missing.html",
        "loads https://cdn.example.org/x.js from the network"]
    assert problems[tmp_path / "sub" / "page.html"] == []
    assert pages[tmp_path / "index.html"].images == 1


def test_summary_fails_without_math():
    text, ok = check_render.summary([check_render.PageResult("a.html")])
    assert not ok and "no math found" in text


def test_probe_is_injected_before_body_end():
    page = check_render._inject("<html><body><p>x</p></body></html>")
    assert page.index("posenc-render-check") < page.index("</body>")


@pytest.fixture(scope="module")
def conf():
    return _load("conf")


def test_api_page_lists_every_scheme_module(conf):
    from posenc_ref.registry import OPS

    rst = conf.scheme_api_rst()
    for op in OPS:
        assert f".. automodule:: {op.function.__module__}" in rst
    assert len(conf.scheme_modules()) == len({op.function.__module__ for op in OPS})
    assert conf.API_MARKER in (DOCS / "api.md").read_text(encoding="utf-8")


def test_api_page_lists_every_family_module(conf):
    import pkgutil

    import posenc_ref.oracle

    rst = conf.family_api_rst()
    for info in pkgutil.iter_modules(posenc_ref.oracle.__path__):
        if not info.name.startswith("_"):
            assert f".. automodule:: posenc_ref.oracle.{info.name}" in rst
    assert conf.FAMILY_MARKER in (DOCS / "api.md").read_text(encoding="utf-8")
    assert "posenc_ref.oracle.sinusoidal.sinusoidal_table" in conf.public_objects()


def test_included_conformance_links_are_rewritten(conf):
    text = ("[guide](../docs/tolerance.md#the-rule) [adapter](examples/float32_adapter.py) "
            "[examples](examples/) [web](https://example.org/x.md) [here](#statuses)")
    assert conf.include_links("../conformance/README.md", text) == (
        "[guide](tolerance.md#the-rule) [adapter](path:../conformance/examples/float32_adapter.py) "
        "examples (`conformance/examples/`) [web](https://example.org/x.md) [here](#statuses)")


def test_links_leaving_docs_become_downloads(conf):
    text = "[bench](../../benchmarks/bench_absolute.py) [page](../sinusoidal.md#formula) [c](../../conformance/)"
    assert conf.outside_links("lab/index", text) == (
        "[bench](path:../../benchmarks/bench_absolute.py) [page](../sinusoidal.md#formula) c (`conformance/`)")


def test_mathjax_is_pinned_not_committed():
    build = _load("build")
    assert build.MATHJAX == "mathjax@3.2.2" and len(build.MATHJAX_SHA256) == 64
    assert not list(DOCS.glob("_static/**/*.js")), "third-party bundles are installed at build time, not committed"


def report_dom(**report):
    data = {"images": 0, "broken": [], "mathjax": True, "overflow": [], "sidebar_links": 40, "texts": []}
    data.update(report)
    import json

    return f'<html><body><pre id="posenc-render-check">{json.dumps(data)}</pre></body></html>'


@pytest.mark.parametrize("text", [
    "Wavelengths $2pi / w_k$ of both ladders",  # a caption whose $...$ was never typeset
    "RoPE scores depend only on the offset, through R_{n-m}",  # a derivation title
    "page title: \\frac{a}{b}",
    "alt: $PE(p) \\cdot PE(p + k)$",
])
def test_raw_tex_in_what_a_reader_sees_is_reported(text):
    result = check_render.assess_dom("p.html", report_dom(texts=[text]), 0, 0)
    assert any("raw TeX" in problem for problem in result.problems), result.problems


@pytest.mark.parametrize("text", ["costs O(n d^2) per layer", "positions 0..95, d = 128", "k >= 2.77"])
def test_plain_text_is_not_raw_tex(text):
    assert check_render.raw_tex([text]) == []


def test_overflow_hidden_sidebar_and_blockquotes_are_reported():
    result = check_render.assess_dom(
        "p.html", report_dom(overflow=["table reaches 1329 px, past the text column at 1100"], sidebar_links=0), 0, 0)
    assert any(p.startswith("overflow: table") for p in result.problems)
    assert any("sidebar is not shown" in p for p in result.problems)
    quoted = report_dom().replace("<body>", "<body><blockquote><p>= 2.77</p></blockquote>")
    assert any("blockquote" in p for p in check_render.assess_dom("p.html", quoted, 0, 0).problems)
    assert check_render.assess_dom("p.html", report_dom(), 0, 0).ok


def _sidebar_page(links):
    items = "".join(f'<li class="toctree-l{depth}"><a class="reference internal" href="{href}">x</a></li>'
                    for href, depth in links)
    return f'<html><body><nav id="posenc-site-nav"><ul>{items}</ul></nav></body></html>'


def test_sidebar_reachability(tmp_path):
    links = [("a.html", 1), ("sub/b.html", 2), ("sub/deep.html", 3)]
    for name in ("index.html", "a.html", "sub/b.html", "sub/deep.html", "orphan.html", "search.html"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(_sidebar_page(links), encoding="utf-8")
    (tmp_path / "nosidebar.html").write_text("<html><body></body></html>", encoding="utf-8")
    paths = check_render.site_pages(tmp_path)
    problems = check_render.check_sidebar(tmp_path, paths)
    assert problems[tmp_path / "a.html"] == [] and problems[tmp_path / "sub" / "b.html"] == []
    assert problems[tmp_path / "search.html"] == []
    assert problems[tmp_path / "sub" / "deep.html"] == ["3 levels deep in the sidebar (at most 2)"]
    assert "not reachable from the sidebar" in problems[tmp_path / "orphan.html"][0]
    assert "has no site sidebar" in problems[tmp_path / "nosidebar.html"][-1]


def test_unlabelled_axes(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")  # the docs extra; .ci/run runs this file there too
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2)
    left.plot([0, 1], [0, 1])
    left.set_xlabel("position")
    left.set_ylabel("value")
    right.plot([0, 1], [1, 0])
    right.set_xlabel("position")  # no y label
    fig.savefig(tmp_path / "f.svg")
    plt.close(fig)
    assert check_render.unlabelled_axes(tmp_path / "f.svg") == ["axes_2 y"]
    fig, ax = plt.subplots()
    ax.imshow([[0, 1], [1, 0]])
    ax.axis("off")  # no axes declared: nothing to label
    fig.savefig(tmp_path / "g.svg")
    plt.close(fig)
    assert check_render.unlabelled_axes(tmp_path / "g.svg") == []


def test_every_defect_of_the_issue_has_a_negative_control():
    needles = {needle for _, _, needle in check_render.CONTROLS}
    assert needles >= {"not typeset", "figure did not load", "raw TeX", "code block scrolls sideways",
                       "past the text column", "blockquote", "not reachable from the sidebar", "no axis label",
                       "without a typeset formula", "sidebar is not shown"}
