"""Render the built site in headless Chromium with no network and check what a reader sees.

``python docs/check_render.py [docs/_build/html]`` (after ``python docs/build.py``). Exit 0 when
every page passes, 1 otherwise; one line per page, then a summary.

Per page:

* **links**: every internal ``href``/``src`` names a file of the site, and every ``#anchor``
  an ``id`` on the target page; no page loads a script, stylesheet or image from the network;
* **math**: every math element of the HTML is typeset by MathJax (one ``mjx-container`` each),
  with no TeX error mark (``merror``, ``data-mjx-error``, red text for an undefined macro) and
  no raw TeX left in the text (``\\(``, ``\\[`` or a ``$...$`` span holding a TeX command);
* **figures**: every ``<img>`` has loaded (``complete`` and a natural width above 0).

Each page is opened from a copy of the site into which a small script is injected: after the
``load`` event and MathJax's first typeset it writes what it saw into the page, and Chromium's
``--dump-dom`` returns the result. Chromium runs inside ``unshare -n`` (a network namespace with
only loopback) where that is allowed, and always with every host name mapped to nothing, so a
page that needs the network fails instead of fetching.

``--negative-control`` then breaks a copy of the site (MathJax removed, one figure deleted) and
requires the check to catch both.
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
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

MATH_CLASS = "math notranslate nohighlight"
REPORT_ID = "posenc-render-check"
PROBE = f"""<script>
(function () {{
  function report() {{
    var images = Array.prototype.slice.call(document.images);
    var broken = images.filter(function (i) {{ return !(i.complete && i.naturalWidth > 0); }})
                       .map(function (i) {{ return i.getAttribute("src"); }});
    var out = document.createElement("pre");
    out.id = "{REPORT_ID}";
    out.textContent = JSON.stringify({{images: images.length, broken: broken,
      mathjax: typeof window.MathJax === "object" && !!window.MathJax.startup}});
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
    if raw:
        result.problems.append(f"raw TeX in the text: {raw[:3]}")
    if int(report["images"]) != expected_images:
        result.problems.append(f"{report['images']} images in the browser, {expected_images} in the HTML")
    for src in report["broken"]:
        result.problems.append(f"figure did not load: {src}")
    return result


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


def dump_dom(chromium: str, prefix: list[str], url: str) -> str:
    with tempfile.TemporaryDirectory() as profile:
        command = [*prefix, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   "--disable-extensions", "--host-resolver-rules=MAP * ~NOTFOUND",
                   "--allow-file-access-from-files", f"--user-data-dir={profile}",
                   "--virtual-time-budget=15000", "--dump-dom", url]
        done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
        return done.stdout


def _inject(html_text: str) -> str:
    index = html_text.rfind("</body>")
    if index < 0:
        return html_text + PROBE
    return html_text[:index] + PROBE + html_text[index:]


def check_site(site: Path, *, jobs: int = 2, only: list[Path] | None = None) -> list[PageResult]:
    paths = sorted(p for p in site.rglob("*.html") if p.relative_to(site).parts[0] not in ("_static", "_sources"))
    if only is not None:
        paths = [p for p in paths if p in only]
    pages = {path: parse_page(path) for path in paths}
    link_problems = check_links(site, pages)
    chromium, prefix = _chromium(), _offline_prefix()
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "site"
        shutil.copytree(site, copy)
        for path in paths:
            target = copy / path.relative_to(site)
            target.write_text(_inject(target.read_text(encoding="utf-8")), encoding="utf-8")

        def one(path: Path) -> PageResult:
            dom = dump_dom(chromium, prefix, (copy / path.relative_to(site)).resolve().as_uri())
            result = assess_dom(str(path.relative_to(site)), dom, pages[path].math, pages[path].images)
            result.problems[:0] = link_problems[path]
            return result

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, paths))


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


def negative_control(site: Path) -> tuple[str, bool]:
    """Break a copy of the site (no MathJax, one figure deleted) and check that both are caught."""
    pages = {path: parse_page(path) for path in sorted(site.glob("*.html"))}
    page = next((path for path, parsed in pages.items() if parsed.math and parsed.images), None)
    if page is None:
        return "negative control: no page with both math and figures", False
    with tempfile.TemporaryDirectory() as tmp:
        broken = Path(tmp) / "site"
        shutil.copytree(site, broken)
        (broken / "_static" / "mathjax" / "tex-svg.js").unlink()
        image = next(u for u in pages[page].resources if u.endswith(".svg") and not _is_external(u))
        (broken / page.relative_to(site)).parent.joinpath(unquote(urlsplit(image).path)).unlink()
        [result] = check_site(broken, jobs=1, only=[broken / page.relative_to(site)])
    caught = [needle for needle in ("not typeset", "figure did not load") if any(needle in p for p in result.problems)]
    ok = len(caught) == 2
    return f"negative control on {page.name} without MathJax and one figure: caught {caught}", ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default=str(Path(__file__).resolve().parent / "_build" / "html"))
    parser.add_argument("--jobs", type=int, default=2, help="pages rendered at once (default 2)")
    parser.add_argument("--negative-control", action="store_true",
                        help="also break a copy of the site and check that the failures are caught")
    args = parser.parse_args(argv)
    site = Path(args.site)
    if not (site / "index.html").is_file():
        print(f"check_render.py: {site}/index.html not found; build first: python docs/build.py")
        return 1
    text, ok = summary(check_site(site, jobs=args.jobs))
    print(text)
    if args.negative_control:
        control, control_ok = negative_control(site)
        print(control)
        ok = ok and control_ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
