"""Build the documentation site strictly: ``python docs/build.py`` (output: ``docs/_build/html``).

1. Installs MathJax 3.2.2 (the single-file SVG build ``es5/tex-svg.js`` and its licence) from the
   npm registry into ``docs/_build/vendor/mathjax``, the build tree only: it is never committed
   and the built pages never load anything from a CDN. The tarball's sha256 is pinned.
2. Runs ``sphinx-build -n -W --keep-going -b html docs docs/_build/html``: every warning,
   including a broken cross-reference, a numpydoc validation error or a figure script that
   raises, fails the build.

Needs the ``docs`` extra (``python -m pip install -e ".[docs]"``) and ``npm`` on the path.
``--clean`` removes ``docs/_build/html`` and ``docs/_build/doctrees`` first.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
BUILD = DOCS / "_build"
VENDOR = BUILD / "vendor" / "mathjax"
MATHJAX = "mathjax@3.2.2"
MATHJAX_SHA256 = "1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09"
MEMBERS = {"package/es5/tex-svg.js": "tex-svg.js", "package/LICENSE": "LICENSE"}


def install_mathjax() -> Path:
    """Put ``tex-svg.js`` and its licence into ``docs/_build/vendor/mathjax`` (once)."""
    if all((VENDOR / name).is_file() for name in MEMBERS.values()):
        return VENDOR
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("docs/build.py: npm not found; it fetches MathJax from the npm registry into the build tree")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([npm, "pack", MATHJAX, "--silent"], cwd=tmp, check=True, stdout=subprocess.DEVNULL)
        tarball = next(Path(tmp).glob("mathjax-*.tgz"))
        digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
        if digest != MATHJAX_SHA256:
            sys.exit(f"docs/build.py: {tarball.name} has sha256 {digest}, expected {MATHJAX_SHA256}")
        VENDOR.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarball) as archive:
            for member, name in MEMBERS.items():
                source = archive.extractfile(member)
                if source is None:
                    sys.exit(f"docs/build.py: {member} missing from {tarball.name}")
                (VENDOR / name).write_bytes(source.read())
    return VENDOR


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clean", action="store_true", help="remove the previous HTML build and doctrees first")
    args = parser.parse_args(argv)
    if args.clean:
        for name in ("html", "doctrees", "plot_directive"):
            shutil.rmtree(BUILD / name, ignore_errors=True)
    install_mathjax()
    command = [sys.executable, "-m", "sphinx", "-n", "-W", "--keep-going", "-b", "html",
               "-d", str(BUILD / "doctrees"), str(DOCS), str(BUILD / "html")]
    return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
