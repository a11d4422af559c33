import shutil
from pathlib import Path

import pytest

from posenc_ref import corpus

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    return corpus.default_corpus_dir()


@pytest.fixture
def corpus_copy(tmp_path: Path, corpus_dir: Path) -> Path:
    """A private copy of the corpus that a test may damage."""
    target = tmp_path / "golden"
    shutil.copytree(corpus_dir, target)
    return target
