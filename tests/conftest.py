import os
import re
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


# The slow tests: each takes 4-70 s on a 2-core machine (about twelve minutes together). The default
# run (`python -m pytest`) leaves them out so that it stays under five minutes; `python -m pytest
# -m slow` runs them, and .ci/run runs both. Each entry: a node-id prefix, and what the test does
# that takes the time.
SLOW = (
    ("tests/test_corpus.py::test_regenerating_reproduces_the_shipped_corpus_exactly[50]",
     "the whole corpus generated again at 50 oracle digits (the run at 15 stays in the default set)"),
    ("tests/test_corpus.py::test_regenerating_keeps_stored_inputs", "the whole corpus generated again"),
    ("tests/test_corpus.py::test_check_detects_", "golden check over a damaged copy of the corpus"),
    ("tests/test_corpus.py::test_a_corpus_without_input_scales_still_reads", "four conformance runs over a copy"),
    ("tests/test_corpus.py::test_shipped_corpus_verifies_and_checks", "golden check: every case recomputed"),
    ("tests/test_cli.py::test_golden_verify_check_and_tampering", "golden check through the CLI, twice"),
    ("tests/test_cli.py::test_golden_generate", "the whole corpus generated through the CLI"),
    ("tests/test_diagnosis.py::test_the_catalogue_is_named_at_90_percent",
     "every nameable mutant run over its ops' cases with diagnosis"),
    ("tests/test_subprocess_adapter.py::test_crash_timeout_and_garbage_are_errors_and_the_child_is_restarted",
     "waits out per-case timeouts of a hanging child"),
    ("tests/reliability/test_tamper_catalogue.py::test_every_tampered_corpus_is_refused_by_name",
     "a copy of the corpus per tampering, each verified"),
    ("tests/test_runner.py::test_input_term_lets_no_convention_mutant_pass", "narrow-dtype mutant runs"),
    ("tests/test_runner.py::test_inputs_held_in_the_narrow_dtype_need_the_input_term", "narrow-dtype runs"),
    ("tests/test_runner.py::test_float16_angles_fail_and_are_diagnosed", "a float16 run with diagnosis"),
    ("tests/test_runner.py::test_every_mutant_fails_and_is_diagnosed[rope-float32-angles-claimed-float64]",
     "a RoPE mutant over every RoPE case, with diagnosis"),
    ("tests/test_runner.py::test_every_mutant_fails_and_is_diagnosed[rope-layout-swapped]", "the same"),
    ("tests/test_runner.py::test_every_mutant_fails_and_is_diagnosed[rope-bf16-", "the same"),
    ("tests/test_runner.py::test_every_mutant_fails_and_is_diagnosed[rope-positions-", "the same"),
    ("tests/test_runner.py::test_every_mutant_fails_and_is_diagnosed[rope-xpos-same-sign-powers]", "the same"),
    ("tests/test_runner.py::test_every_mutant_fails_and_is_diagnosed[rope-partial-denominator-head-dim]", "the same"),
    ("tests/test_docs_commands.py::test_documented_command[conformance/README.md:*: pytest --posenc-adapter",
     "a pytest run of the plugin over the corpus"),
    ("tests/test_docs_commands.py::test_documented_command[README.md:*: pytest --posenc-adapter", "the same"),
    ("tests/test_docs_commands.py::test_documented_command[docs/tolerance.md:*: "
     "python -m posenc_ref.cli conformance numpy numpy-float32",
     "three conformance runs over the whole corpus"),
    ("tests/test_docs_commands.py::test_documented_command[README.md:*: python3 -m venv",
     "a fresh virtual environment and install"),
    ("tests/test_docs_commands.py::test_documented_command[README.md:*: posenc-ref golden check", "golden check"),
    ("tests/test_docs_commands.py::test_documented_command[README.md:*: posenc-ref golden audit", "golden audit"),
)
"""``*`` in a prefix stands for a line number (a documented command's id begins with its file and line)."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a test of several seconds to a minute, left out of the default run "
                                       "(run with -m slow; .ci/run runs it)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    patterns = [re.compile(re.escape(prefix).replace(r"\*", r"\d+")) for prefix, _ in SLOW]
    for item in items:
        if any(pattern.match(item.nodeid) for pattern in patterns):
            item.add_marker(pytest.mark.slow)
