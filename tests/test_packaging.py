"""The wheel ships every package and the whole corpus (the installed CLI runs without a checkout)."""

import fnmatch
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")


@pytest.fixture(scope="module")
def setuptools_config():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_is_listed(setuptools_config):
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "posenc_ref").rglob("__init__.py")}
    assert found <= set(setuptools_config["packages"])


def test_every_corpus_file_is_package_data(setuptools_config):
    golden = ROOT / setuptools_config["package-dir"]["posenc_ref.golden_data"]
    patterns = setuptools_config["package-data"]["posenc_ref.golden_data"]
    files = [p.relative_to(golden).as_posix() for p in golden.rglob("*") if p.is_file()]
    assert files and all(any(fnmatch.fnmatch(f, pat) for pat in patterns) for f in files)
