"""The pytest plugin, exercised in a scratch project."""

import json

import pytest

from posenc_ref.corpus import default_corpus_dir


def _learned_outputs() -> int:
    """What ``-k learned`` selects: one test per output (or one error test) of each case whose id
    names learned, counted from the manifest itself so a new case does not break the count."""
    manifest = json.loads((default_corpus_dir() / "manifest.json").read_text())
    count = sum(len(entry["outputs"]) or 1 for entry in manifest["cases"] if "learned" in entry["id"])
    assert count > 0
    return count

ADAPTER = '''
import numpy as np
from posenc_ref.registry import get_op


class Shifted:
    name = "shifted"
    dtype = "float32"
    capabilities = {"sinusoidal.table": {}}

    def run(self, op, params, inputs):
        record = get_op(op)
        return record.call(params, {"positions": np.asarray(inputs["positions"]) + 1})


ADAPTER = Shifted
'''


@pytest.fixture
def project(pytester):
    pytester.makepyfile(my_adapter=ADAPTER)
    pytester.syspathinsert()
    return pytester


def test_plugin_is_silent_without_the_option(project):
    project.makepyfile(test_nothing="def test_one():\n    assert True\n")
    result = project.runpytest()
    result.assert_outcomes(passed=1)


def test_one_test_per_case_output_with_case_ids(project):
    result = project.runpytest("--posenc-adapter=numpy", "-k", "learned")
    result.assert_outcomes(passed=_learned_outputs())
    result = project.runpytest("--posenc-adapter=numpy",
                               "-k", "sinusoidal.fairseq.left_padded", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*::sinusoidal.fairseq.left_padded.d8?positions? PASSED*",
                                 "*::sinusoidal.fairseq.left_padded.d8?embedding? PASSED*"])


def test_failures_carry_the_runner_report_and_not_applicable_skips(project):
    result = project.runpytest("--posenc-adapter=my_adapter:ADAPTER",
                               "-k", "known_answer or learned.lookup.bert")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "*FAIL sinusoidal.table.d6.position1.known_answer ?table?*",
        "*diagnosis: matches the reference with positions + 1 (off by one)*",
        "*rerun:     posenc-ref conformance my_adapter:ADAPTER --case sinusoidal.table.d6.position1.known_answer",
    ])


def test_expectations_turn_failures_into_xfail(project):
    project.makefile(".toml", exp='[[expectation]]\nid = "sinusoidal.table.d6.*"\nstatus = "xfail"\n'
                                  'reason = "positions start at 1"\nlink = "https://example.org/1"\n')
    result = project.runpytest("--posenc-adapter=my_adapter:ADAPTER",
                               "--posenc-expectations=exp.toml", "-k", "known_answer")
    result.assert_outcomes(xfailed=1)


def test_unmatched_expectation_fails_and_nothing_executed_fails(project):
    project.makefile(".toml", exp='[[expectation]]\nid = "no.such.case"\nstatus = "xfail"\nreason = "r"\nlink = "l"\n')
    result = project.runpytest("--posenc-adapter=numpy", "--posenc-expectations=exp.toml", "-k", "learned")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*expectation 'no.such.case' matches no case*"])
    result = project.runpytest("--posenc-adapter=my_adapter:ADAPTER", "-k", "learned")
    result.assert_outcomes(skipped=_learned_outputs())
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*no case was executed*"])


def test_usage_errors_and_dtype(project):
    result = project.runpytest("--posenc-adapter=not_a_module_xyz:A")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*posenc-ref: importing module 'not_a_module_xyz' failed*"])
    result = project.runpytest("--posenc-adapter=numpy", "--posenc-dtype=float16", "-k", "known_answer")
    result.assert_outcomes(passed=1)


def test_without_paths_only_the_conformance_cases_are_collected(project):
    """From a folder whose testpaths hold other tests (a checkout against an installed package),
    `pytest --posenc-adapter=...` collects the cases alone: nothing imports a second copy."""
    project.makeini("[pytest]\ntestpaths = here\n")
    project.mkdir("here")
    project.path.joinpath("here", "test_other.py").write_text("def test_other():\n    raise AssertionError\n")
    result = project.runpytest("--posenc-adapter=numpy", "-k", "learned")
    result.assert_outcomes(passed=_learned_outputs())
    result = project.runpytest("--posenc-adapter=numpy", "-k", "learned or other", "here")
    result.assert_outcomes(passed=_learned_outputs(), failed=1)
