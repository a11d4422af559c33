"""Render the built site in headless Chromium with no network and check what a reader sees.

``python docs/check_render.py [docs/_build/html]`` (after ``python docs/build.py``). Exit 0 when
every page passes, 1 otherwise; one line per page, then a summary.

Per page, at two window widths (1400 px and 1024 px):

* **links**: every internal ``href``/``src`` names a file of the site, and every ``#anchor``
  an ``id`` on the target page; no page loads a script, stylesheet or image from the network;
* **math**: every math element of the HTML is typeset by MathJax (one ``mjx-container`` each),
  with no TeX error mark (``merror``, ``data-mjx-error``, red text for an undefined macro);
* **raw TeX**: no TeX left in anything a reader sees: a text node outside code and typeset math
  (figure captions and table cells included), the page title, an ``alt``, ``title`` or
  ``aria-label`` attribute (``$...$``, ``\\(``, ``\\[``, a ``\\command``, ``_{`` or ``^{``);
* **overflow**: the page never scrolls sideways, no element reaches past the text column
  unless it sits in its own scroll box (tables and display equations may scroll inside their
  box), and no code block scrolls sideways (code wraps);
* **navigation**: the persistent sidebar is shown, and every page of the site is linked from it
  at most two levels deep (a section to open, then the page: two clicks);
* **figures**: every ``<img>`` has loaded (``complete`` and a natural width above 0), and every
  axis of a figure that has tick labels has an axis label (read from the SVG matplotlib wrote).

A screenshot of every page at each width is saved into the site itself, under
``_screenshots/<width>/`` (``index.png``, ``rope.png``, ``derivations/rope.norm.png``), so a
reviewer can flip through what a reader sees.

Each page is opened from a copy of the site into which a small script is injected: after the
``load`` event and MathJax's first typeset it writes what it saw into the page, and Chromium's
``--dump-dom`` returns the result. Chromium runs inside ``unshare -n`` (a network namespace with
only loopback) where that is allowed, and always with every host name mapped to nothing, so a
page that needs the network fails instead of fetching.

``--negative-control`` then breaks copies of the site, one defect each (MathJax removed, a figure
deleted, raw TeX in a caption, a title and an alt text, an unwrappable code line, a clipped
table, a page dropped from the sidebar, a figure axis without its label), and requires the check
to catch every one.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

MATH_CLASS = "math notranslate nohighlight"
REPORT_ID = "posenc-render-check"
SIDEBAR_ID = "posenc-site-nav"
WIDTHS = (1400, 1024)
WINDOW_HEIGHT = 1800
PROBE = f"""<script>
(function () {{
  var SKIP = {{SCRIPT: 1, STYLE: 1, PRE: 1, CODE: 1, TEXTAREA: 1, "MJX-CONTAINER": 1, KBD: 1}};
  function skipped(node) {{
    for (var p = node.parentElement; p; p = p.parentElement) {{
      if (SKIP[p.tagName.toUpperCase()] || p.id === "{REPORT_ID}") {{ return true; }}
    }}
    return false;
  }}
  function texts() {{
    var out = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, null), node;
    while ((node = walker.nextNode())) {{
      if (node.nodeValue.trim() && !skipped(node)) {{ out.push(node.nodeValue); }}
    }}
    document.querySelectorAll("[alt], [title], [aria-label]").forEach(function (e) {{
      ["alt", "title", "aria-label"].forEach(function (a) {{
        if (e.hasAttribute(a) && !skipped(e)) {{ out.push(a + ": " + e.getAttribute(a)); }}
      }});
    }});
    out.push("page title: " + document.title);
    return out;
  }}
  function ownScrollBox(e, stop) {{
    for (var p = e.parentElement; p && p !== stop; p = p.parentElement) {{
      var o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll") {{ return true; }}
    }}
    return false;
  }}
  function describe(e) {{
    var text = (e.textContent || "").replace(/\\s+/g, " ").trim().slice(0, 50);
    return e.tagName.toLowerCase() + (e.className && typeof e.className === "string" ? "." +
      e.className.trim().split(/\\s+/).join(".") : "") + (text ? " '" + text + "'" : "");
  }}
  function overflow() {{
    var out = [], doc = document.documentElement;
    if (doc.scrollWidth > window.innerWidth + 1) {{
      out.push("the page scrolls sideways (" + doc.scrollWidth + " px wide in a " + window.innerWidth + " px window)");
    }}
    var column = document.querySelector(".bd-article") || document.body;
    var right = column.getBoundingClientRect().right + 1;
    column.querySelectorAll("*").forEach(function (e) {{
      if (e.closest("mjx-assistive-mml, #{REPORT_ID}, svg") && e.tagName.toLowerCase() !== "svg") {{ return; }}
      var style = getComputedStyle(e);
      if (style.visibility === "hidden" || style.opacity === "0") {{ return; }}  // e.g. a heading's hover link
      var box = e.getBoundingClientRect();
      if (box.width > 0 && box.height > 0 && box.right > right && !ownScrollBox(e, column)) {{
        out.push(describe(e) + " reaches " + Math.round(box.right) + " px, past the text column at "
                 + Math.round(right));
      }}
    }});
    column.querySelectorAll("pre").forEach(function (e) {{
      if (e.scrollWidth > e.clientWidth + 1) {{
        out.push("a code block scrolls sideways (" + e.scrollWidth + " px in " + e.clientWidth + "): " + describe(e));
      }}
    }});
    return out;
  }}
  function sidebar() {{
    var nav = document.getElementById("{SIDEBAR_ID}");
    if (!nav) {{ return 0; }}
    var box = nav.getBoundingClientRect();
    return box.width > 0 && box.left < window.innerWidth && box.right > 0 ? nav.querySelectorAll("a").length : 0;
  }}
  function report() {{
    var images = Array.prototype.slice.call(document.images);
    var broken = images.filter(function (i) {{ return !(i.complete && i.naturalWidth > 0); }})
                       .map(function (i) {{ return i.getAttribute("src"); }});
    var out = document.createElement("pre");
    out.id = "{REPORT_ID}";
    out.style.display = "none";
    var data = {{images: images.length, broken: broken,
      mathjax: typeof window.MathJax === "object" && !!window.MathJax.startup,
      width: window.innerWidth, overflow: overflow(), sidebar_links: sidebar(), texts: texts()}};
    out.textContent = JSON.stringify(data);
    document.body.appendChild(out);
  }}
  window.addEventListener("load", function () {{
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {{
      MathJax.startup.promise.then(report, report);
    }} else {{
      report();
    }}
  }});
}})();
</script>"""


class _Page(HTMLParser):
    """Ids, links, resources, math elements and images of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.resources: list[str] = []
        self.math = 0
        self.images = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        for key in ("id", "name"):
            if values.get(key) and (key == "id" or tag == "a"):
                self.ids.add(values[key])
        if MATH_CLASS in values.get("class", ""):
            self.math += 1
        if tag == "img":
            self.images += 1
        if tag == "a" and "href" in values:
            self.links.append(values["href"])
        for key in ("src", "href"):
            if key in values and tag in ("script", "link", "img", "iframe", "source", "object"):
                self.resources.append(values[key])


def parse_page(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _is_external(url: str) -> bool:
    scheme = urlsplit(url).scheme
    return bool(scheme) or url.startswith("//")


def check_links(site: Path, pages: dict[Path, _Page]) -> dict[Path, list[str]]:
    """Broken internal links and network resources, by page."""
    ids = {path.resolve(): page.ids for path, page in pages.items()}
    problems: dict[Path, list[str]] = {path: [] for path in pages}
    for path, page in pages.items():
        for url in page.resources:
            if _is_external(url) and not url.startswith("data:"):
                problems[path].append(f"loads {url} from the network")
        for url in page.links + page.resources:
            if _is_external(url):
                continue
            parts = urlsplit(url)
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path.resolve()
            if site.resolve() not in target.parents and target != site.resolve():
                problems[path].append(f"link {url} leaves the site")
            elif not target.exists():
                problems[path].append(f"broken link {url}")
            elif parts.fragment and target.suffix == ".html":
                anchors = ids.get(target)
                if anchors is None:
                    anchors = parse_page(target).ids
                if unquote(parts.fragment) not in anchors:
                    problems[path].append(f"broken anchor {url}")
    return problems


_STRIP = re.compile(r"<(style|script|pre|code|textarea)\b.*?</\1>", re.S | re.I)
_TAGS = re.compile(r"<[^>]+>")
_ERRORS = re.compile(r'merror|data-mjx-error|mathcolor="(?:red|#cc0000)"|color:\s*red', re.I)
_RAW_TEX = re.compile(r"\\\(|\\\[|\$[^$\n]*\\[A-Za-z]+[^$\n]*\$")
# In what a reader sees (text nodes, titles, alt texts): a pair of dollars, \( or \[, a TeX command
# of two letters or more, or a TeX sub-/superscript group.
_RAW_TEX_TEXT = re.compile(r"\\\(|\\\[|\$[^$\n]+\$|\\[A-Za-z]{2,}|[_^]\{")
# Scheme pages state their formula typeset (pages of the "Schemes" sidebar section).
SCHEME_PAGES = ("sinusoidal.html", "grid2d.html", "learned.html", "rope.html", "alibi.html", "t5.html",
                "deberta.html", "shaw.html", "transformer-xl.html", "resample.html", "attention.html")
NOT_IN_SIDEBAR = ("index.html", "genindex.html", "search.html", "py-modindex.html")


@dataclass
class PageResult:
    """What one page showed in the browser."""

    page: str
    math: int = 0
    typeset: int = 0
    images: int = 0
    loaded: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def raw_tex(texts: Iterable[str]) -> list[str]:
    """The strings of ``texts`` that hold TeX a reader would see as source."""
    return [text.strip()[:80] for text in texts if _RAW_TEX_TEXT.search(text)]


def assess_dom(page: str, dom: str, expected_math: int, expected_images: int) -> PageResult:
    """Judge the DOM Chromium produced for a page with ``expected_math`` math elements and images."""
    result = PageResult(page, math=expected_math, images=expected_images)
    match = re.search(rf'<pre id="{REPORT_ID}"[^>]*>(.*?)</pre>', dom, re.S)
    if match is None:
        result.problems.append("the page never finished loading (no probe report)")
        return result
    report = json.loads(html.unescape(match.group(1)))
    body = _STRIP.sub("", dom)
    result.typeset = body.count("<mjx-container")
    result.loaded = int(report["images"]) - len(report["broken"])
    if expected_math and not report["mathjax"]:
        result.problems.append("MathJax did not start")
    if result.typeset < expected_math:
        result.problems.append(f"{expected_math - result.typeset} of {expected_math} equations not typeset")
    errors = len(_ERRORS.findall(body))
    if errors:
        result.problems.append(f"{errors} TeX error mark(s)")
    raw = _RAW_TEX.findall(html.unescape(_TAGS.sub(" ", body)))
    raw += raw_tex(report.get("texts", []))
    if raw:
        result.problems.append(f"raw TeX in the text: {sorted(set(raw))[:3]}")
    if int(report["images"]) != expected_images:
        result.problems.append(f"{report['images']} images in the browser, {expected_images} in the HTML")
    for src in report["broken"]:
        result.problems.append(f"figure did not load: {src}")
    for problem in report.get("overflow", [])[:5]:
        result.problems.append(f"overflow: {problem}")
    if "sidebar_links" in report and not report["sidebar_links"]:
        result.problems.append("the sidebar is not shown (no navigation links visible)")
    if "<blockquote" in body:
        result.problems.append("a blockquote (a Markdown line starting with '>'?)")
    return result


class _Sidebar(HTMLParser):
    """The links of the site sidebar of one page, with their depth (1 = a top entry)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.inside = 0
        self.depth = 0
        self.depths: list[int] = []
        self.links: list[tuple[str, int]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "nav" and values.get("id") == SIDEBAR_ID:
            self.inside = 1
            return
        if not self.inside:
            return
        if tag == "nav":
            self.inside += 1
        if tag == "li":
            level = re.search(r"toctree-l(\d+)", values.get("class", ""))
            self.depths.append(int(level.group(1)) if level else (self.depths[-1] if self.depths else 1))
        if tag == "a" and "href" in values:
            self.links.append((values["href"], self.depths[-1] if self.depths else 1))

    def handle_endtag(self, tag: str) -> None:
        if not self.inside:
            return
        if tag == "nav":
            self.inside -= 1
        if tag == "li" and self.depths:
            self.depths.pop()


def check_sidebar(site: Path, paths: list[Path]) -> dict[Path, list[str]]:
    """Pages missing from the sidebar (of the home page), or linked deeper than two levels."""
    problems: dict[Path, list[str]] = {path: [] for path in paths}
    index = site / "index.html"
    parser = _Sidebar()
    parser.feed(index.read_text(encoding="utf-8"))
    reached: dict[Path, int] = {}
    for href, depth in parser.links:
        target = (index.parent / unquote(urlsplit(href).path)).resolve() if urlsplit(href).path else index.resolve()
        reached[target] = min(depth, reached.get(target, depth))
    for path in paths:
        relative = path.relative_to(site).as_posix()
        if relative in NOT_IN_SIDEBAR:
            continue
        depth = reached.get(path.resolve())
        if depth is None:
            problems[path].append("not reachable from the sidebar (no link to it in the site navigation)")
        elif depth > 2:
            problems[path].append(f"{depth} levels deep in the sidebar (at most 2)")
        if f'id="{SIDEBAR_ID}"' not in path.read_text(encoding="utf-8"):
            problems[path].append("has no site sidebar")
    return problems


_SVG = "{http://www.w3.org/2000/svg}"


def unlabelled_axes(svg: Path) -> list[str]:
    """Axes of a matplotlib SVG whose tick labels have no axis label (``axes_1 x``, ...)."""
    import xml.etree.ElementTree as ElementTree

    try:
        root = ElementTree.parse(svg).getroot()
    except ElementTree.ParseError as exc:
        return [f"unreadable SVG ({exc})"]
    missing = []
    for axes in root.iter(f"{_SVG}g"):
        if not axes.get("id", "").startswith("axes_"):
            continue
        for axis in axes.findall(f"{_SVG}g"):
            name = axis.get("id", "")
            if not name.startswith("matplotlib.axis_"):
                continue
            children = axis.findall(f"{_SVG}g")
            ticks = [c for c in children if re.match(r"[xy]tick_", c.get("id", ""))]
            labelled_ticks = [t for t in ticks if any(g.get("id", "").startswith("text_") for g in t.iter(f"{_SVG}g"))]
            label = [c for c in children if c.get("id", "").startswith("text_")]
            if labelled_ticks and not label:
                missing.append(f"{axes.get('id')} {'x' if name.endswith('_1') else 'y'}")
    return missing


def check_figures(site: Path, pages: dict[Path, _Page]) -> dict[Path, list[str]]:
    """Figures of each page with an axis that has tick labels but no axis label."""
    problems: dict[Path, list[str]] = {path: [] for path in pages}
    for path, page in pages.items():
        for url in page.resources:
            if _is_external(url) or not urlsplit(url).path.endswith(".svg"):
                continue
            svg = (path.parent / unquote(urlsplit(url).path)).resolve()
            if svg.is_file():
                for axis in unlabelled_axes(svg):
                    problems[path].append(f"figure {svg.name}: {axis} axis has tick labels but no axis label")
    return problems


def check_formulas(site: Path, pages: dict[Path, _Page]) -> dict[Path, list[str]]:
    """Scheme pages without a single typeset formula."""
    return {path: ["a scheme page without a typeset formula"]
            if path.relative_to(site).as_posix() in SCHEME_PAGES and not page.math else []
            for path, page in pages.items()}


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    sys.exit("check_render.py: no chromium on the path (Debian: apt-get install -y chromium)")


def _offline_prefix() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True, check=False).returncode == 0:
        return [unshare, "-n"]
    print("check_render.py: unshare -n not permitted here; relying on Chromium's host-resolver block only")
    return []


def dump_dom(chromium: str, prefix: list[str], url: str, *, width: int = WIDTHS[0],
             screenshot: Path | None = None) -> str:
    """The DOM of ``url`` after load in a ``width`` px window; with ``screenshot``, a PNG of it too."""
    with tempfile.TemporaryDirectory() as profile:
        command = [*prefix, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   "--disable-extensions", "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars",
                   "--allow-file-access-from-files", f"--user-data-dir={profile}",
                   f"--window-size={width},{WINDOW_HEIGHT}",
                   "--virtual-time-budget=15000", "--dump-dom", url]
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            command.insert(-1, f"--screenshot={screenshot}")
        done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
        return done.stdout


def _inject(html_text: str) -> str:
    index = html_text.rfind("</body>")
    if index < 0:
        return html_text + PROBE
    return html_text[:index] + PROBE + html_text[index:]


def site_pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if not p.relative_to(site).parts[0].startswith("_"))


def check_site(site: Path, *, jobs: int = 2, only: list[Path] | None = None,
               widths: tuple[int, ...] = WIDTHS, screenshots: Path | None = None) -> list[PageResult]:
    """Every page (or those in ``only``) at every width; screenshots into ``screenshots/<width>/``."""
    paths = site_pages(site)
    pages = {path: parse_page(path) for path in paths}
    static = [check_links(site, pages), check_sidebar(site, paths), check_figures(site, pages),
              check_formulas(site, pages)]
    if only is not None:
        paths = [p for p in paths if p in only]
    chromium, prefix = _chromium(), _offline_prefix()
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "site"
        shutil.copytree(site, copy, ignore=shutil.ignore_patterns("_screenshots"))
        for path in paths:
            target = copy / path.relative_to(site)
            target.write_text(_inject(target.read_text(encoding="utf-8")), encoding="utf-8")

        def one(task: tuple[Path, int]) -> PageResult:
            path, width = task
            relative = path.relative_to(site)
            shot = screenshots / str(width) / relative.with_suffix(".png") if screenshots is not None else None
            dom = dump_dom(chromium, prefix, (copy / relative).resolve().as_uri(), width=width, screenshot=shot)
            return assess_dom(str(relative), dom, pages[path].math, pages[path].images)

        tasks = [(path, width) for path in paths for width in widths]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = dict(zip(tasks, pool.map(one, tasks)))
    merged = []
    for path in paths:
        first = results[(path, widths[0])]
        problems = [problem for check in static for problem in check[path]]
        seen: set[str] = set()
        for width in widths:
            for problem in results[(path, width)].problems:
                if problem not in seen:
                    seen.add(problem)
                    problems.append(f"[{width} px] {problem}")
        merged.append(PageResult(first.page, first.math, first.typeset, first.images, first.loaded, problems))
    return merged


def summary(results: Iterable[PageResult]) -> tuple[str, bool]:
    results = list(results)
    lines = []
    for r in results:
        mark = "ok  " if r.ok else "FAIL"
        lines.append(f"{mark} {r.page}: math {r.typeset}/{r.math} typeset, figures {r.loaded}/{r.images} loaded")
        lines += [f"       {problem}" for problem in r.problems]
    failed = [r for r in results if not r.ok]
    total_math = sum(r.math for r in results)
    lines.append(f"render check: {len(results) - len(failed)} of {len(results)} pages ok "
                 f"({total_math} equations, {sum(r.images for r in results)} figures)")
    ok = bool(results) and not failed and total_math > 0
    if total_math == 0:
        lines.append("FAIL: no math found at all")
    return "\n".join(lines), ok


# --- negative controls: each breaks a copy of the site in one way the check must catch ------------

def _edit(path: Path, old: str, new: str, *, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    if old not in text:
        raise RuntimeError(f"negative control: {old[:40]!r} not found in {path}")
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def _page_with(site: Path, predicate: Callable[[_Page], bool]) -> Path:
    for path in sorted(site.glob("*.html")):
        if path.name not in NOT_IN_SIDEBAR and predicate(parse_page(path)):
            return path
    raise RuntimeError("negative control: no suitable page in the site")


def _break_mathjax(site: Path, page: Path) -> None:
    (site / "_static" / "mathjax" / "tex-svg.js").unlink()


def _break_figure(site: Path, page: Path) -> None:
    image = next(u for u in parse_page(page).resources if u.endswith(".svg") and not _is_external(u))
    page.parent.joinpath(unquote(urlsplit(image).path)).unlink()


def _raw_tex_caption(site: Path, page: Path) -> None:
    _edit(page, "<figcaption>", r"<figcaption><p>Wavelengths $2\pi / w_k$ of the columns</p>")


def _raw_tex_title(site: Path, page: Path) -> None:
    _edit(page, "<title>", "<title>RoPE scores depend only on the offset, through R_{n-m} ")


def _raw_tex_alt(site: Path, page: Path) -> None:
    _edit(page, "<img ", r'<img alt="$PE(p) \cdot PE(p + k)$" ')


def _long_code(site: Path, page: Path) -> None:
    _edit(page, '<div class="highlight"><pre>',
          '<div class="highlight"><pre style="white-space: pre">' + "x" * 400 + "\n")


def _clipped_table(site: Path, page: Path) -> None:
    _edit(page, "</article>",
          '<div style="overflow: hidden"><table style="display: table; width: 1329px; max-width: none">'
          "<tr><td>a table wider than the text column</td></tr></table></div></article>")


def _blockquote(site: Path, page: Path) -> None:
    _edit(page, "</article>", "<blockquote><p>= 2.77; the transformers pipeline</p></blockquote></article>")


def _drop_from_sidebar(site: Path, page: Path) -> None:
    text = (site / "index.html").read_text(encoding="utf-8")
    link = re.search(rf'<li class="toctree-l\d[^"]*"><a class="reference internal" '
                     rf'href="{re.escape(page.name)}">.*?</li>', text, re.S)
    if link is None:
        raise RuntimeError(f"negative control: no sidebar entry for {page.name}")
    (site / "index.html").write_text(text.replace(link.group(0), ""), encoding="utf-8")


def _hide_sidebar(site: Path, page: Path) -> None:
    _edit(page, "</head>", f"<style>#{SIDEBAR_ID} {{ display: none }}</style></head>")


def _unlabel_axis(site: Path, page: Path) -> None:
    image = next(u for u in parse_page(page).resources if u.endswith(".svg") and not _is_external(u))
    svg = page.parent.joinpath(unquote(urlsplit(image).path))
    text = svg.read_text(encoding="utf-8")
    cut = re.sub(r'(<g id="matplotlib\.axis_1">.*?)'
                 r'(\n\s*<g id="text_\d+">(?:(?!<g id="(?:matplotlib|xtick|ytick)).)*?</g>\n)'
                 r'(?=\s*</g>\s*<g id="matplotlib\.axis_2">)', r"\1\n", text, count=1, flags=re.S)
    if cut == text or not unlabelled_axes_text(cut):
        raise RuntimeError(f"negative control: could not remove an axis label from {svg.name}")
    svg.write_text(cut, encoding="utf-8")


def unlabelled_axes_text(svg_text: str) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "figure.svg"
        path.write_text(svg_text, encoding="utf-8")
        return unlabelled_axes(path)


def _strip_math(site: Path, page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace(MATH_CLASS, "docutils literal"), encoding="utf-8")


def _has_math_and_figure(page: _Page) -> bool:
    return bool(page.math and page.images)


CONTROLS: tuple[tuple[str, Callable[[Path, Path], None], str], ...] = (
    ("MathJax removed", _break_mathjax, "not typeset"),
    ("a figure deleted", _break_figure, "figure did not load"),
    ("raw TeX in a figure caption", _raw_tex_caption, "raw TeX"),
    ("raw TeX in the page title", _raw_tex_title, "raw TeX"),
    ("raw TeX in an alt text", _raw_tex_alt, "raw TeX"),
    ("a code line that cannot wrap", _long_code, "code block scrolls sideways"),
    ("a table clipped by its box", _clipped_table, "past the text column"),
    ("a stray blockquote", _blockquote, "blockquote"),
    ("a page dropped from the sidebar", _drop_from_sidebar, "not reachable from the sidebar"),
    ("the sidebar hidden", _hide_sidebar, "sidebar is not shown"),
    ("a figure axis without its label", _unlabel_axis, "no axis label"),
    ("a scheme page's formulas as code", _strip_math, "without a typeset formula"),
)


def negative_control(site: Path, *, jobs: int = 2) -> tuple[str, bool]:
    """Break copies of the site, one defect each, and check that every defect is caught."""
    scheme = next(site / name for name in SCHEME_PAGES if _has_math_and_figure(parse_page(site / name))
                  and '<div class="highlight"><pre>' in (site / name).read_text(encoding="utf-8"))
    lines, ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        for number, (label, breaker, needle) in enumerate(CONTROLS):
            broken = Path(tmp) / f"site{number}"
            shutil.copytree(site, broken, ignore=shutil.ignore_patterns("_screenshots"))
            page = broken / scheme.relative_to(site)
            breaker(broken, page)
            [result] = check_site(broken, jobs=jobs, only=[page], widths=(WIDTHS[-1],))
            caught = any(needle in problem for problem in result.problems)
            ok = ok and caught
            lines.append(f"negative control on {page.name}, {label}: {'caught' if caught else 'NOT CAUGHT'}"
                         + ("" if caught else f" (problems: {result.problems})"))
            shutil.rmtree(broken)
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default=str(Path(__file__).resolve().parent / "_build" / "html"))
    parser.add_argument("--jobs", type=int, default=2, help="pages rendered at once (default 2)")
    parser.add_argument("--negative-control", action="store_true",
                        help="also break copies of the site, one defect each, and check that each is caught")
    parser.add_argument("--no-screenshots", action="store_true", help="do not save screenshots into SITE/_screenshots")
    args = parser.parse_args(argv)
    site = Path(args.site)
    if not (site / "index.html").is_file():
        print(f"check_render.py: {site}/index.html not found; build first: python docs/build.py")
        return 1
    shots = None if args.no_screenshots else site / "_screenshots"
    if shots is not None:
        shutil.rmtree(shots, ignore_errors=True)
    text, ok = summary(check_site(site, jobs=args.jobs, screenshots=shots))
    print(text)
    if shots is not None:
        print(f"screenshots: {shots}/{{{','.join(map(str, WIDTHS))}}}/")
    if args.negative_control:
        control, control_ok = negative_control(site, jobs=args.jobs)
        print(control)
        ok = ok and control_ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
