import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

from posenc_ref import corpus

# CI runs the property tests on a fixed set of examples (a red CI must mean a change broke
# something); local runs explore new examples every time.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

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
