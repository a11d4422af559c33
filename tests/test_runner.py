"""The conformance engine: calibration, mutants, statuses, expectations, robustness."""

import dataclasses
import json
import time

import numpy as np
import pytest

from posenc_ref import corpus
from posenc_ref.registry import get_op
from posenc_ref.runner.adapters import AdapterLoadError, load_adapter, round_value_inputs
from posenc_ref.runner.emulation import to_dtype
from posenc_ref.runner.engine import _relaxed, run_conformance
from posenc_ref.runner.expectations import ExpectationsError, load_expectations
from posenc_ref.runner.mutants import MUTANTS
from posenc_ref.tolerance import POLICIES, policy


def run(adapter, **kwargs):
    spec = kwargs.pop("spec", getattr(adapter, "name", "test"))
    return run_conformance(load_adapter(adapter) if isinstance(adapter, str) else adapter, spec=spec, **kwargs)


def statuses(result_run):
    return {(r.case_id, r.output): r.status for r in result_run.results}


@pytest.mark.parametrize("name", ["numpy", "numpy-float32", "numpy-float16", "numpy-bfloat16",
                                  "numpy-float16-inputs", "numpy-bfloat16-inputs"])
def test_calibration_set_passes_everything_with_2x_headroom(name):
    result = run(name)
    assert result.passed and result.counts()["pass"] == len(result.results) > 0
    worst = min(r.comparison.headroom for r in result.results if r.comparison)
    assert worst >= 2.0, f"{name}: headroom {worst}"


def _without_input_term(monkeypatch):
    for key, pol in list(POLICIES.items()):
        monkeypatch.setitem(POLICIES, key, dataclasses.replace(pol, c_input=0.0))


@pytest.mark.parametrize("name", ["numpy-float16-inputs", "numpy-bfloat16-inputs"])
def test_inputs_held_in_the_narrow_dtype_need_the_input_term(monkeypatch, name):
    _without_input_term(monkeypatch)
    result = run(name)
    failed = {r.op for r in result.results if r.status == "fail"}
    assert {"rope.apply", "rope.scores", "shaw.logits", "deberta.scores"} <= failed


class _NarrowMutant:
    """A convention mutant that holds its inputs in ``dtype`` and rounds its result to it."""

    version = "mutant"

    def __init__(self, mutant, dtype):
        self.mutant, self.dtype = mutant, dtype
        self.name = f"mutant:{mutant.name}@{dtype}"
        self.capabilities = {op: {} for op in mutant.ops}

    def run(self, op, params, inputs):
        result = self.mutant.run(op, params, round_value_inputs(op, inputs, self.dtype))
        return {name: to_dtype(np.asarray(value, dtype=np.float32), self.dtype) for name, value in result.items()}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["rope-layout-swapped", "rope-positions-off-by-one"])
def test_input_term_lets_no_convention_mutant_pass(monkeypatch, name, dtype):
    """A wrong layout or off-by-one positions fails exactly the same cases with and without the term."""
    mutant = MUTANTS[name]
    narrow = _NarrowMutant(mutant, dtype)
    failed = [r for r in run(narrow).results if r.status == "fail"]
    at_float64 = {r.case_id for r in run(f"mutant:{name}").results if r.status == "fail"}
    # judged with the term, the diagnosis (which recomputes under the same policy) names the slip
    diagnosed = [r for r in failed if any(mutant.diagnosis in d for d in r.diagnosis)]
    assert len(diagnosed) >= 0.9 * len(failed)
    _without_input_term(monkeypatch)
    without_term = {r.case_id for r in run(narrow).results if r.status == "fail"}
    assert {r.case_id for r in failed} == without_term
    assert len(without_term) >= len(at_float64) - 1 > 20


def test_relaxing_a_policy_scales_the_input_term_too():
    pol = policy("phase", "bfloat16")
    assert _relaxed(pol, 10.0).c_input == 10.0 * pol.c_input > 0


def test_float16_angles_fail_and_are_diagnosed():
    result = run("numpy-float16-angles")
    assert not result.passed
    failed = [r for r in result.results if r.status == "fail"]
    # (a model case's diagnosis names its layer first: "layer 0 (full_attention): matches ...")
    assert failed and all(any(d.split(": ", 1)[-1].startswith("matches the reference computed with float16 ")
                              for d in r.diagnosis) for r in failed)
    # positions past float16's range give non-finite angles: reported as error, not as a number
    assert any(r.status == "error" and "finite" in r.message for r in result.results)


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_every_mutant_fails_and_is_diagnosed(name):
    mutant = MUTANTS[name]
    result = run(f"mutant:{name}")
    bad = [r for r in result.results if r.status in ("fail", "error", "wrong_error")]
    assert bad, f"mutant {name} ({mutant.mistake}) passes every case"
    assert not result.passed
    if mutant.diagnosis:
        diagnosed = [r for r in bad if any(mutant.diagnosis in d for d in r.diagnosis)]
        assert diagnosed, f"mutant {name}: no failure names {mutant.diagnosis!r}"
    # the reference passes every case the mutant is run on
    ref = run("numpy", select=lambda e: e["op"] in mutant.ops)
    assert ref.passed


class Scripted:
    """An adapter whose behaviour per op is a function of the case."""

    name = "scripted"
    version = "1"
    dtype = "float64"

    def __init__(self, behave, capabilities=None):
        self.behave = behave
        if capabilities is not None:
            self.capabilities = capabilities

    def run(self, op, params, inputs):
        return self.behave(op, params, inputs)


def reference(op, params, inputs):
    return get_op(op).call(params, inputs)


ONE = "sinusoidal.table.d6.position1.known_answer"
ERR = "sinusoidal.table.error.odd_dim_error_policy"


def only(*ids):
    return lambda e: e["id"] in ids


@pytest.mark.parametrize(
    "returned,fragment",
    [
        (lambda t: None, "returned None"),
        (lambda t: t[:, :3], "returned shape (1, 3), expected (1, 6)"),
        (lambda t: np.where(t > 0.9, np.nan, t), "where a finite value is expected"),
        (lambda t: t.astype(np.int64), "where floats are expected"),
        (lambda t: "garbage", "where floats are expected"),
        (lambda t: [[object()]], "where floats are expected"),
    ],
)
def test_garbage_outputs_are_errors(returned, fragment):
    adapter = Scripted(lambda op, p, i: returned(reference(op, p, i)["table"]))
    (result,) = run(adapter, select=only(ONE)).results
    assert result.status == "error" and fragment in result.message


def test_raising_timing_out_and_crashing_cases_do_not_lose_other_results():
    def behave(op, params, inputs):
        if params["dim"] == 16 and params["ladder"] == "t2t":
            raise RuntimeError("kernel exploded")
        if params["dim"] == 12:
            time.sleep(5)
        return reference(op, params, inputs)

    result = run(Scripted(behave), select=lambda e: e["op"] == "sinusoidal.table", timeout=0.5)
    st = statuses(result)
    assert st[("sinusoidal.table.t2t.interleaved.d16.p0-15", "table")] == "error"
    assert st[("sinusoidal.table.position_offset3.t2t.concat", "table")] == "error"
    messages = {r.case_id: r.message for r in result.results}
    assert "timed out" in messages["sinusoidal.table.position_offset3.t2t.concat"]
    assert "RuntimeError: kernel exploded" in messages["sinusoidal.table.t2t.interleaved.d16.p0-15"]
    assert st[(ONE, "table")] == "pass" and st[(ERR, "error")] == "pass"
    assert not result.passed


def test_error_case_statuses():
    accept = run(Scripted(lambda op, p, i: np.zeros((1, 7))), select=only(ERR)).results[0]
    assert accept.status == "fail" and "accepted invalid input" in accept.message
    wrong = run(Scripted(lambda op, p, i: (_ for _ in ()).throw(IndexError("x"))), select=only(ERR)).results[0]
    assert wrong.status == "wrong_error" and "raised out_of_range" in wrong.message
    unmapped = run(Scripted(lambda op, p, i: (_ for _ in ()).throw(RuntimeError("x"))), select=only(ERR)).results[0]
    assert unmapped.status == "wrong_error" and "unmapped" in unmapped.message


def test_not_applicable_and_zero_executed_fails_the_run():
    adapter = Scripted(reference, capabilities={"learned.lookup": {}})
    result = run(adapter, select=lambda e: e["op"] == "sinusoidal.table")
    assert set(statuses(result).values()) == {"not_applicable"} and not result.passed and result.executed == 0
    partial = Scripted(reference, capabilities={"sinusoidal.table": {"layout": ("interleaved",)}})
    result = run(partial, select=lambda e: e["op"] == "sinusoidal.table")
    st = statuses(result)
    assert st[("sinusoidal.table.paper.concat_sin_cos.d16.p0-15", "table")] == "not_applicable"
    assert st[(ONE, "table")] == "pass" and result.passed
    assert run(Scripted(reference), select=lambda e: False).exit_code == 1


def write(tmp_path, entries, suffix=".json"):
    path = tmp_path / f"exp{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps({"expectation": entries}))
    else:
        path.write_text(entries)
    return load_expectations(path)


def test_expectations_xfail_xpass_relax_skip_and_unmatched(tmp_path):
    swapped = "mutant:sinusoid-layout-swapped"
    link = "https://example.org/issue/1"
    concat = "sinusoidal.table.paper.concat_sin_cos.d16.p0-15"
    exp = write(tmp_path, [{"id": concat, "status": "xfail", "reason": "layout bug", "link": link}])
    result = run(swapped, select=only(concat), expectations=exp)
    assert statuses(result)[(concat, "table")] == "xfail" and result.passed
    result = run("numpy", select=only(concat), expectations=exp)
    assert statuses(result)[(concat, "table")] == "xpass" and not result.passed

    relaxed = write(tmp_path, [{"id": "sinusoidal.table.*.d16.p0-15", "status": "relax", "factor": 1000,
                                "reason": "float16 angles", "link": link}])
    result = run("numpy-float16-angles", select=lambda e: e["id"].endswith("d16.p0-15"), expectations=relaxed)
    assert set(statuses(result).values()) == {"pass_relaxed"} and result.passed
    assert all("x 1000" in r.tolerance_source for r in result.results)
    assert not run("numpy-float16-angles", select=lambda e: e["id"].endswith("d16.p0-15")).passed

    skip = write(tmp_path, [{"id": "learned.*", "status": "skip", "reason": "no tables", "link": link}])
    result = run("numpy", select=lambda e: e["op"] == "learned.lookup", expectations=skip)
    assert set(statuses(result).values()) == {"skip"}

    dangling = write(tmp_path, [{"id": "no.such.case*", "status": "xfail", "reason": "r", "link": link}])
    result = run("numpy", select=only(ONE), expectations=dangling)
    assert result.expectation_errors and "matches no case" in result.expectation_errors[0] and not result.passed


def test_expectations_toml_and_validation(tmp_path):
    exp = write(tmp_path, '[[expectation]]\nid = "learned.*"\nstatus = "skip"\nreason = "r"\nlink = "l"\n', ".toml")
    assert exp[0].id == "learned.*" and exp[0].source == "exp.toml:1"
    for bad, message in [
        ([{"id": "x", "status": "xfail", "link": "l"}], "'reason' is required"),
        ([{"id": "x", "status": "maybe", "reason": "r", "link": "l"}], "status must be one of"),
        ([{"id": "x", "status": "relax", "reason": "r", "link": "l"}], "relax needs factor > 1"),
        ([{"id": "x", "status": "xfail", "reason": "r", "link": "l", "factor": 2}], "factor only applies"),
        ([{"id": "x", "status": "xfail", "reason": "r", "link": "l", "until": "1.0"}], "unknown key"),
    ]:
        with pytest.raises(ExpectationsError, match=message):
            write(tmp_path, bad)
    with pytest.raises(ExpectationsError, match="does not exist"):
        load_expectations(tmp_path / "missing.toml")


def test_modified_corpus_is_refused_unless_allowed(corpus_copy):
    entry = next(c for c in corpus.read_manifest(corpus_copy)["cases"] if c["id"] == ONE)
    path = corpus_copy / entry["outputs"]["table"]["file"]
    np.save(path, np.load(path) * 2, allow_pickle=False)
    with pytest.raises(corpus.CorpusError, match="sha256 mismatch"):
        run("numpy", corpus_dir=corpus_copy)
    result = run("numpy", corpus_dir=corpus_copy, allow_modified=True)
    assert result.corpus["modified"] and result.corpus["problems"]
    bad = [r for r in result.results if r.case_id == ONE]
    assert bad[0].status == "error" and "corrupt corpus file, not used" in bad[0].message
    assert sum(r.status == "pass" for r in result.results) == len(result.results) - 1


def test_failure_report_carries_everything_needed():
    from posenc_ref.runner.report import describe_failure

    result = run("mutant:positions-off-by-one", spec="mutant:positions-off-by-one", select=only(ONE))
    text = describe_failure(result.results[0])
    for fragment in ("FAIL sinusoidal.table.d6.position1.known_answer [table]", "case:", "params:    dim=6",
                     "worst:     index (0, ", "ulp", "tolerance:", "[policy phase/float64]", "headroom",
                     "diagnosis: matches the reference with positions + 1 (off by one)",
                     "rerun:     posenc-ref conformance mutant:positions-off-by-one --case " + ONE):
        assert fragment in text, fragment


def test_adapter_loading(tmp_path):
    source = tmp_path / "impl.py"
    source.write_text("import numpy as np\nclass Impl:\n    name = 'impl'\n    dtype = 'float32'\n"
                      "    def run(self, op, params, inputs):\n        return None\nADAPTER = Impl\nBROKEN = 3\n")
    assert load_adapter(f"{source}").name == "impl"
    assert load_adapter(f"{source}:ADAPTER").dtype == "float32"
    with pytest.raises(AdapterLoadError, match="has no 'name'"):
        load_adapter(f"{source}:BROKEN")
    with pytest.raises(AdapterLoadError, match="has no attribute 'NOPE'"):
        load_adapter(f"{source}:NOPE")
    with pytest.raises(AdapterLoadError, match="does not exist"):
        load_adapter(str(tmp_path / "missing.py"))
    with pytest.raises(AdapterLoadError, match="unknown adapter 'torch'"):
        load_adapter("torch")
    with pytest.raises(AdapterLoadError, match="importing module 'no_such_module_xyz' failed"):
        load_adapter("no_such_module_xyz:A")
    with pytest.raises(AdapterLoadError, match="unknown mutant"):
        load_adapter("mutant:nope")
    assert load_adapter("posenc_ref.runner.adapters:ReferenceAdapter").name == "numpy"
    assert load_adapter("numpy").at_dtype("float32").name == "numpy-float32"


def test_adapter_code_that_raises_outside_run_is_contained():
    class Flaky(Scripted):
        def supports(self, op, params):
            if params.get("dim") == 6:
                raise RuntimeError("capability lookup broke")
            return True

        def error_category(self, exc):
            raise KeyError("no mapping")

    result = run(Flaky(lambda op, p, i: (_ for _ in ()).throw(ValueError("bad"))), select=only(ONE, ERR))
    st = {r.case_id: r for r in result.results}
    assert st[ONE].status == "error" and "supports() raised RuntimeError" in st[ONE].message
    assert st[ERR].status == "wrong_error" and "error_category() raised KeyError" in st[ERR].message


def test_xfail_applies_to_timeouts_and_malformed_returns(tmp_path):
    exp = write(tmp_path, [{"id": "sinusoidal.fairseq.left_padded.d8", "status": "xfail", "reason": "r",
                            "link": "l"}, {"id": ONE, "status": "xfail", "reason": "r", "link": "l"}])

    def behave(op, params, inputs):
        if op == "sinusoidal.fairseq":
            return (1, 2, 3)
        time.sleep(3)

    result = run(Scripted(behave), select=only(ONE, "sinusoidal.fairseq.left_padded.d8"), expectations=exp,
                 timeout=0.3)
    assert {r.status for r in result.results} == {"xfail"} and result.passed


def test_capabilities_do_not_hide_error_cases():
    partial = Scripted(reference, capabilities={"sinusoidal.table": {"ladder": ("paper",), "layout": ("interleaved",)}})
    wanted = ("sinusoidal.table.error.unknown_ladder", "sinusoidal.table.t2t.interleaved.d16.p0-15")
    result = run(partial, select=only(*wanted))
    st = {r.case_id: r.status for r in result.results}
    assert st == {"sinusoidal.table.error.unknown_ladder": "pass",
                  "sinusoidal.table.t2t.interleaved.d16.p0-15": "not_applicable"}


def test_skip_is_for_whole_cases(tmp_path):
    with pytest.raises(ExpectationsError, match="skip applies to whole cases"):
        write(tmp_path, [{"id": ONE, "status": "skip", "output": "table", "reason": "r", "link": "l"}])


def test_report_json_writes_non_finite_numbers_by_name():
    from posenc_ref.runner.report import _num

    assert [_num(float("inf")), _num(float("-inf")), _num(float("nan")), _num(1.5)] == ["inf", "-inf", "nan", 1.5]
