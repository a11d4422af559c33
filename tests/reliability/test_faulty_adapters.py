"""The faulty-adapter catalogue: no adapter behaviour ends a run with status 0 or loses a result.

Each entry is an adapter that misbehaves in one way (in process, under ``--isolate`` or as a
child process). Every one must be reported for its case (status ``error`` or ``wrong_error``
with the words given), the other cases must still be judged, and the run must fail.
"""

import json
import sys
import textwrap
import time

import numpy as np
import pytest

from posenc_ref.cli import main
from posenc_ref.registry import get_op
from posenc_ref.runner.adapters import load_adapter
from posenc_ref.runner.engine import run_conformance

ONE = "sinusoidal.table.d6.position1.known_answer"
OTHER = "sinusoidal.table.position0.d8"
ERR = "sinusoidal.table.error.odd_dim_error_policy"
CASES = (ONE, OTHER, ERR)


def only(*ids):
    return lambda entry: entry["id"] in ids


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no str for you")


class Faulty:
    """Misbehaves (``fault``) on ONE and on the error case; the reference elsewhere."""

    name = "faulty"
    version = "0"
    dtype = "float64"

    def __init__(self, fault):
        self.fault = fault

    def run(self, op, params, inputs):
        if params["dim"] in (6, 7):
            return self.fault()
        return get_op(op).call(params, inputs)


def _raise(exc):
    def fault():
        raise exc
    return fault


class Custom(BaseException):
    pass


# (label, fault, words in the message, status on the error case: an unmapped Exception is a
# wrong error there; anything that is not an Exception, or a timeout, is no rejection at all)
IN_PROCESS = [
    ("runtime-error", _raise(RuntimeError("kernel exploded")), "RuntimeError: kernel exploded", "wrong_error"),
    ("sys-exit-0", _raise(SystemExit(0)), "SystemExit: 0", "error"),
    ("keyboard-interrupt", _raise(KeyboardInterrupt()), "KeyboardInterrupt", "error"),
    ("base-exception", _raise(Custom("odd")), "Custom: odd", "error"),
    ("unprintable-exception", _raise(Unprintable()), "<str() of the exception raised RuntimeError>",
     "wrong_error"),
    ("generator-exit", _raise(GeneratorExit()), "GeneratorExit", "error"),
    ("hangs", lambda: time.sleep(3), "timed out after 0.5 s", "error"),
]


@pytest.mark.parametrize("label,fault,words,on_error_case", IN_PROCESS, ids=[c[0] for c in IN_PROCESS])
def test_in_process_fault_is_that_cases_error_and_the_run_goes_on(label, fault, words, on_error_case):
    run = run_conformance(Faulty(fault), spec=label, select=only(*CASES), timeout=0.5)
    by_case = {r.case_id: r for r in run.results}
    assert by_case[ONE].status == "error" and words in by_case[ONE].message
    assert by_case[ERR].status == on_error_case and words in by_case[ERR].message
    assert by_case[OTHER].status == "pass"
    assert not run.passed and run.exit_code == 1
    assert by_case[ONE].adapter == "faulty"
    if label != "hangs":  # reported at once as what it is, never as the 0.5 s timeout
        assert "timed out" not in by_case[ONE].message and "timed out" not in by_case[ERR].message
        assert by_case[ONE].exception is not None and by_case[ONE].exception["frames"]


def test_garbage_returns_are_errors():
    class Garbage:
        def __array__(self, *args, **kwargs):
            raise MemoryError("nope")

    for value, words in [(None, "returned None"), (Garbage(), "numpy.asarray refuses"),
                         (np.full((1, 6), np.nan), "where a finite value is expected"),
                         (np.zeros((2, 2)), "returned shape (2, 2)")]:
        run = run_conformance(Faulty(lambda v=value: v), spec="garbage", select=only(ONE, OTHER))
        by_case = {r.case_id: r for r in run.results}
        assert by_case[ONE].status == "error" and words in by_case[ONE].message, words
        assert by_case[OTHER].status == "pass" and not run.passed


def test_faults_outside_run_are_contained():
    class Outside(Faulty):
        def supports(self, op, params):
            if params["dim"] == 6:
                raise SystemExit(0)
            return True

        def error_category(self, exc):
            raise KeyboardInterrupt

    run = run_conformance(Outside(_raise(ValueError("bad"))), spec="outside", select=only(*CASES))
    by_case = {r.case_id: r for r in run.results}
    assert by_case[ONE].status == "error" and "supports() raised SystemExit" in by_case[ONE].message
    assert by_case[ERR].status == "wrong_error" and "error_category() raised KeyboardInterrupt" in by_case[ERR].message
    assert by_case[OTHER].status == "pass" and run.exit_code == 1


def test_a_runner_side_exception_is_reported_at_once_as_what_it_is(corpus_copy):
    path = corpus_copy / "manifest.json"
    manifest = json.loads(path.read_text())
    entry = next(c for c in manifest["cases"] if c["id"] == ONE)
    entry["outputs"]["table"]["tolerance"] = "bogus"
    path.write_text(json.dumps(manifest))
    run = run_conformance(load_adapter("numpy"), spec="numpy", corpus_dir=corpus_copy, select=only(ONE, OTHER),
                          allow_modified=True, timeout=30)
    by_case = {r.case_id: r for r in run.results}
    assert by_case[ONE].status == "error" and "internal error of the runner" in by_case[ONE].message
    assert "no tolerance policy for class 'bogus'" in by_case[ONE].message and "timed out" not in by_case[ONE].message
    assert by_case[OTHER].status == "pass" and run.exit_code == 1
    assert any("unknown tolerance class 'bogus'" in p for p in run.corpus["problems"])


def _module(tmp_path, body, name="impl.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


REFERENCE = """\
import ctypes, os, sys, time
from posenc_ref.registry import get_op
class Impl:
    name = "impl"
    dtype = "float64"
    def run(self, op, params, inputs):
        FAULT
        return get_op(op).call(params, inputs)
"""


@pytest.mark.parametrize("where,body", [
    ("import", "import sys\nsys.exit(0)\n"),
    ("factory", "import sys\ndef ADAPTER():\n    sys.exit(0)\n"),
    ("import-keyboard", "raise KeyboardInterrupt\n"),
    ("name", "class A:\n    dtype = 'float64'\n    def run(self, *a): pass\n"
             "    @property\n    def name(self):\n        raise ValueError('no name')\nADAPTER = A()\n"),
    ("dtype", "class A:\n    name = 'a'\n    dtype = ['float32']\n    def run(self, *a): pass\nADAPTER = A()\n"),
])
def test_faults_while_loading_never_exit_0(tmp_path, capsys, where, body):
    path = _module(tmp_path, body)
    code = main(["conformance", str(path), "--case", ONE])
    err = capsys.readouterr().err
    assert code == 2 and "posenc-ref conformance:" in err and "Traceback" not in err


def test_sys_exit_in_at_dtype_is_a_load_error(tmp_path, capsys):
    path = _module(tmp_path, REFERENCE.replace("FAULT", "pass") + "    def at_dtype(self, dtype):\n"
                   "        sys.exit(0)\nADAPTER = Impl\n")
    assert main(["conformance", str(path), "--dtype", "float32", "--case", ONE]) == 2
    assert "at_dtype('float32') raised SystemExit" in capsys.readouterr().err


ISOLATED = [
    ("segfault", "ctypes.string_at(0)", "killed by SIGSEGV"),
    ("os-exit", "os._exit(7)", "exit status 7"),
    ("abort", "os.abort()", "killed by SIGABRT"),
    ("sys-exit", "sys.exit(0)", "SystemExit: 0"),
    # a hang is reported by the isolated child's own 2 s deadline or, on a loaded machine, by the
    # runner's watchdog at 2 s + GRACE: either way the case errors as a hang and the run goes on
    ("hangs", "time.sleep(30)", ("no answer within 2 s", "timed out after 4 s")),
]


@pytest.mark.parametrize("label,fault,words", ISOLATED, ids=[c[0] for c in ISOLATED])
def test_native_crash_under_isolate_is_that_cases_error(tmp_path, capsys, label, fault, words):
    body = REFERENCE.replace("FAULT", f"if params['dim'] in (6, 7):\n            {fault}") + "ADAPTER = Impl\n"
    path = _module(tmp_path, body)
    report = tmp_path / "report.json"
    code = main(["conformance", str(path), "--isolate", "--timeout", "2", "--report-json", str(report),
                 "-k", ONE, "-k", OTHER, "-k", ERR])
    capsys.readouterr()
    assert code == 1
    results = {r["case_id"]: r for r in json.loads(report.read_text())["runs"][0]["results"]}
    alternatives = words if isinstance(words, tuple) else (words,)
    for case in (ONE, ERR):
        assert results[case]["status"] == "error" and any(w in results[case]["message"] for w in alternatives)
    assert results[OTHER]["status"] == "pass"  # the run went on in a fresh child


CHILD = """
import json, os, sys
import numpy as np
from posenc_ref.errors import SpecError
from posenc_ref.registry import get_op

MODE = sys.argv[1]
out = sys.stdout.buffer

def send(message):
    out.write((json.dumps(message) + "\\n").encode()); out.flush()

for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "hello":
        caps = {"sinusoidal.table": {}}
        if MODE == "caps-list":
            caps = ["sinusoidal.table"]
        if MODE == "caps-values":
            caps = {"sinusoidal.table": ["dim"]}
        send({"type": "hello", "protocol": message["protocol"], "name": "child", "dtype": "float64",
              "capabilities": caps})
        continue
    if message["type"] == "shutdown":
        break
    params, seq = message["params"], message["seq"]
    faulty = params["dim"] in (6, 7)
    if faulty and MODE == "long-line":
        out.write(b"x" * (3 << 20)); out.flush()
        continue
    if faulty and MODE == "bad-bytes":
        out.write(b"\\xff\\xfe not json\\n"); out.flush()
        continue
    if faulty and MODE == "crash":
        os._exit(5)
    inputs = {k: np.load(v) for k, v in message["inputs"].items()}
    try:
        outputs = get_op(message["op"]).call(params, inputs)
    except SpecError as exc:
        send({"type": "error", "seq": seq, "category": exc.category, "message": str(exc)})
        continue
    paths = {}
    for name, array in outputs.items():
        if faulty and MODE == "huge-output":
            with open(os.path.join(message["output_dir"], name + ".npy"), "wb") as f:
                np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False,
                                                         "shape": (10 ** 12,)})
        else:
            np.save(os.path.join(message["output_dir"], name + ".npy"), array)
        paths[name] = name + ".npy"
    send({"type": "result", "seq": seq, "outputs": paths})
    if faulty and MODE == "twice":
        send({"type": "result", "seq": seq, "outputs": paths})
"""

SUBPROCESS = [
    ("long-line", "error", "longer than the limit of 1048576 bytes (MAX_LINE_BYTES)"),
    ("bad-bytes", "error", "\\\\xff\\\\xfe not json"),
    ("crash", "error", "exit status 5"),
    ("huge-output", "error", "MAX_OUTPUT_BYTES"),
]


@pytest.fixture
def child(tmp_path):
    path = tmp_path / "child.py"
    path.write_text(CHILD)
    return path


@pytest.mark.parametrize("mode,status,words", SUBPROCESS, ids=[c[0] for c in SUBPROCESS])
def test_subprocess_fault_is_that_cases_error(tmp_path, capsys, child, mode, status, words):
    report = tmp_path / "report.json"
    code = main(["conformance", f"subprocess:{sys.executable} {child} {mode}", "--report-json", str(report),
                 "--report-full", "-k", ONE, "-k", OTHER, "-k", ERR])
    capsys.readouterr()
    assert code == 1
    results = {r["case_id"]: r for r in json.loads(report.read_text())["runs"][0]["results"]}
    assert results[ONE]["status"] == status and words in results[ONE]["message"], results[ONE]["message"]
    assert results[OTHER]["status"] == "pass"
    if mode != "huge-output":  # the error case is rejected before any output is written
        assert results[ERR]["status"] == "error", results[ERR]  # a crash is not a wrong error


def test_a_child_answering_twice_does_not_cost_the_next_case(tmp_path, capsys, child):
    report = tmp_path / "report.json"
    code = main(["conformance", f"subprocess:{sys.executable} {child} twice", "--report-json", str(report),
                 "--op", "sinusoidal.table"])
    capsys.readouterr()
    results = json.loads(report.read_text())["runs"][0]["results"]
    assert code == 0 and {r["status"] for r in results} == {"pass"}


@pytest.mark.parametrize("argument,env,words", [
    ("caps-list", {}, "capabilities must be an object, got list"),
    ("caps-values", {}, "capabilities['sinusoidal.table'] must be an object"),
    ("ok", {"POSENC_SUBPROCESS_TIMEOUT": "-1"}, "POSENC_SUBPROCESS_TIMEOUT must be finite and above 0"),
    ("ok", {"POSENC_SUBPROCESS_TIMEOUT": "nan"}, "POSENC_SUBPROCESS_TIMEOUT must be finite and above 0"),
    ("ok", {"POSENC_SUBPROCESS_TIMEOUT": "inf"}, "POSENC_SUBPROCESS_TIMEOUT must be finite and above 0"),
    ("ok", {"POSENC_SUBPROCESS_TIMEOUT": "soon"}, "POSENC_SUBPROCESS_TIMEOUT must be a number of seconds"),
    ("'unclosed", {}, "cannot be split like a shell would"),
])
def test_subprocess_usage_errors_are_exit_2(monkeypatch, capsys, child, argument, env, words):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code = main(["conformance", f"subprocess:{sys.executable} {child} {argument}", "--case", ONE])
    err = capsys.readouterr().err
    assert code == 2 and words in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_timeout_must_be_finite_and_positive(capsys, value):
    with pytest.raises(SystemExit) as exited:
        main(["conformance", "numpy", "--timeout", value])
    assert exited.value.code == 2 and "--timeout must be finite and above 0" in capsys.readouterr().err


def test_runner_timeout_lowers_the_childs_own(monkeypatch, child):
    from posenc_ref.runner.adapters import load_adapter
    from posenc_ref.runner.engine import GRACE, reconcile_timeout

    monkeypatch.setenv("POSENC_SUBPROCESS_TIMEOUT", "100")
    adapter = load_adapter(f"subprocess:{sys.executable} {child} ok")
    try:
        assert adapter.child_timeout == 100
        assert reconcile_timeout(adapter, 3.0) == 3.0 + GRACE and adapter.child_timeout == 3.0
    finally:
        adapter.close()
    assert reconcile_timeout(Faulty(None), 3.0) == 3.0
