"""The subprocess protocol: the JavaScript example, crash and timeout isolation, the handshake."""

import json
import shutil
import sys
import textwrap
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from posenc_ref.cli import main
from posenc_ref.corpus import default_corpus_dir
from posenc_ref.registry import get_op
from posenc_ref.runner.adapters import AdapterLoadError, load_adapter
from posenc_ref.runner.engine import run_conformance
from posenc_ref.runner.subprocess_adapter import PROTOCOL, SubprocessAdapter

ROOT = Path(__file__).resolve().parents[1]
JS = ROOT / "conformance" / "examples" / "js" / "posenc.js"
SCHEMA = json.loads((ROOT / "conformance" / "protocol.schema.json").read_text(encoding="utf-8"))
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

# A child in Python that answers with the reference, except: it crashes on learned.lookup with
# offset 2, hangs on the MAE 3x5 grid case, and writes garbage on the fairseq d=10 case. Every message it
# reads and writes is checked against the protocol schema.
CHILD = textwrap.dedent("""
    import json, os, sys, time
    import jsonschema
    import numpy as np
    from posenc_ref.errors import SpecError
    from posenc_ref.registry import get_op

    schema = json.load(open(sys.argv[1]))
    log = open(sys.argv[2], "a")

    def check(message, direction):
        jsonschema.validate(message, {"$defs": schema["$defs"], "$ref": "#/$defs/" + direction})

    def send(message):
        check(message, "from_implementation")
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()

    log.write("start\\n"); log.flush()
    for line in sys.stdin:
        message = json.loads(line)
        check(message, "to_implementation")
        if message["type"] == "hello":
            send({"type": "hello", "protocol": message["protocol"], "name": "py-child", "version": "0",
                  "dtype": "float64"})
        elif message["type"] == "shutdown":
            break
        else:
            op, params = message["op"], message["params"]
            if op == "learned.lookup" and params["offset"] == 2:
                os._exit(3)
            if op == "grid2d.sincos" and params["dim"] == 16 and params["block_layout"] == "sin_cos" \
                    and params["ladder"] == "paper" and params["axis_order"] == "x_first":
                time.sleep(60)
            if op == "sinusoidal.fairseq" and params["dim"] == 10:
                sys.stdout.write("garbage\\n"); sys.stdout.flush(); continue
            inputs = {k: np.load(v) for k, v in message["inputs"].items()}
            try:
                outputs = get_op(op).call(params, inputs)
            except SpecError as exc:
                send({"type": "error", "seq": message["seq"], "category": exc.category, "message": str(exc)})
                continue
            paths = {}
            for name, array in outputs.items():
                paths[name] = name + ".npy"
                np.save(os.path.join(message["output_dir"], name + ".npy"), array)
            send({"type": "result", "seq": message["seq"], "outputs": paths})
""")


@needs_node
def test_javascript_example_passes_through_the_protocol():
    adapter = load_adapter(f"subprocess:node {JS}")
    try:
        assert (adapter.name, adapter.dtype) == ("posenc-js", "float64")
        run = run_conformance(adapter, spec="js")
    finally:
        adapter.close()
    by_op = {}
    for r in run.results:
        by_op.setdefault(r.op, set()).add(r.status)
    assert run.passed and run.executed >= 50
    assert by_op["sinusoidal.table"] == by_op["learned.lookup"] == by_op["grid2d.sincos"] == {"pass"}
    assert by_op["alibi.slopes"] == by_op["alibi.bias"] == {"pass"}
    # it declares rope_type "default" only: the scaled rope.apply cases are not applicable, the rest pass
    rope = [r for r in run.results if r.op == "rope.apply"]
    scaled = {r.status for r in rope if r.params.get("rope_type", "default") != "default" and r.status != "pass"}
    assert {r.status for r in rope if r.params.get("rope_type") == "default"} == {"pass"}
    assert scaled == {"not_applicable"}
    assert by_op["sinusoidal.fairseq"] == {"not_applicable"}
    assert adapter.restarts == 0


@needs_node
def test_javascript_rope_apply_rotates_both_layouts_at_explicit_positions():
    from posenc_ref.alibi import alibi_bias
    from posenc_ref.rope import rope_apply

    adapter = load_adapter(f"subprocess:node {JS}")
    x = np.random.default_rng(3).normal(size=(2, 5, 3, 8))  # BTHD
    pos = np.array([[0, 1, 2, 3, 4], [7, 100, 3, 3, 40000]])  # per-sequence, unordered, far out
    try:
        for layout in ("half", "interleaved"):
            params = {"base": 10000.0, "rotary_dim": 6, "partial": "prefix", "layout": layout, "x_layout": "BTHD",
                      "attention_factor": 1.0}
            got = np.asarray(adapter.run("rope.apply", params, {"x": x, "positions": pos})["y"])
            want = rope_apply(x, pos, rotary_dim=6, layout=layout, x_layout="BTHD")
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
            other = rope_apply(x, pos, rotary_dim=6, layout="interleaved" if layout == "half" else "half",
                               x_layout="BTHD")
            assert np.abs(got - other).max() > 0.1  # the layouts really differ
        params = {"num_heads": 6, "form": "bottom_right", "slope_rule": "press", "bias_max": 8.0}
        got = np.asarray(adapter.run("alibi.bias", params, {"query_positions": np.array([0, 1]),
                                                            "key_positions": np.array([0, 1, 2, 3])})["bias"])
    finally:
        adapter.close()
    np.testing.assert_allclose(got, alibi_bias([0, 1], [0, 1, 2, 3], num_heads=6, form="bottom_right"), rtol=1e-15)


@needs_node
def test_javascript_example_computes_in_float32_when_asked_and_refuses_float16():
    adapter = load_adapter(f"subprocess:node {JS}")
    try:
        with pytest.raises(Exception, match="asked for dtype 'float16', the process computes in 'float64'"):
            adapter.at_dtype("float16")
        narrow = adapter.at_dtype("float32")
        try:
            assert narrow.dtype == "float32"
            run = run_conformance(narrow, spec="js32")
            params = {"dim": 8, "base": 10000.0, "ladder": "paper", "layout": "interleaved", "odd_width": "error",
                      "position_offset": 0, "scale": 1.0}
            wide = adapter.run("sinusoidal.table", params, {"positions": np.array([1_234_567])})["table"]
            rounded = narrow.run("sinusoidal.table", params, {"positions": np.array([1_234_567])})["table"]
        finally:
            narrow.close()
    finally:
        adapter.close()
    assert run.passed and run.executed >= 50
    # float32 angles really are float32: at p = 1234567 they move the sine by far more than float64 would.
    assert np.all(rounded == rounded.astype(np.float32)) and np.abs(rounded - wide).max() > 1e-4


def test_crash_timeout_and_garbage_are_errors_and_the_child_is_restarted(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    log = tmp_path / "starts.log"
    adapter = SubprocessAdapter([sys.executable, str(script), str(ROOT / "conformance" / "protocol.schema.json"),
                                 str(log)], timeout=1.0)
    try:
        run = run_conformance(adapter, spec="child", timeout=30.0)
    finally:
        adapter.close()
    by_case = {(r.case_id, r.output): r for r in run.results}
    crashed = by_case[("learned.lookup.bart.offset2", "rows")]
    assert crashed.status == "error" and "exit status 3" in crashed.message
    hung = by_case[("grid2d.mae.grid3x5.d16", "table")]
    assert hung.status == "error" and "no answer within 1 s" in hung.message
    garbage = by_case[("sinusoidal.fairseq.right_padded.d10", "embedding")]
    assert garbage.status == "error" and "not a JSON line" in garbage.message
    # Everything else still ran, on restarted children, and passed (error cases rejected rightly).
    others = [r for r in run.results if r.op == "sinusoidal.table" or r.case_id == "learned.lookup.bert.p0-11"]
    assert others and all(r.status == "pass" for r in others)
    assert run.exit_code == 1
    failed_cases = {r.case_id for r in run.results if r.status in ("error", "wrong_error")}
    assert failed_cases == _child_faults()
    assert {"learned.lookup.bart.offset2", "learned.lookup.error.beyond_table_with_offset", "grid2d.mae.grid3x5.d16",
            "sinusoidal.fairseq.right_padded.d10"} <= failed_cases
    assert adapter.restarts == len(failed_cases)
    assert log.read_text().count("start") == 1 + adapter.restarts


def _child_faults():
    """The cases CHILD exits, hangs or writes garbage on, found by its own rules over the corpus manifest."""
    faulty = set()
    for entry in json.loads((default_corpus_dir() / "manifest.json").read_text())["cases"]:
        op, p = entry["op"], get_op(entry["op"]).full_params(entry["params"])
        if (op == "learned.lookup" and p["offset"] == 2) or (op == "sinusoidal.fairseq" and p["dim"] == 10) or (
                op == "grid2d.sincos" and p["dim"] == 16 and p["block_layout"] == "sin_cos"
                and p["ladder"] == "paper" and p["axis_order"] == "x_first"):
            faulty.add(entry["id"])
    return faulty


def test_handshake_failures_are_load_errors(tmp_path):
    silent = tmp_path / "silent.py"
    silent.write_text("import sys\nsys.stdin.readline()\nprint('{\"type\": \"hello\", \"protocol\": \"other/9\"}')\n")
    with pytest.raises(AdapterLoadError, match="expected a hello for protocol"):
        load_adapter(f"subprocess:{sys.executable} {silent}")
    dying = tmp_path / "dying.py"
    dying.write_text("import sys\nsys.stderr.write('no luck\\n')\nsys.exit(4)\n")
    with pytest.raises(AdapterLoadError, match="exit status 4; stderr: no luck"):
        load_adapter(f"subprocess:{sys.executable} {dying}")
    with pytest.raises(AdapterLoadError, match="cannot start"):
        load_adapter("subprocess:/nonexistent/posenc-impl")


def test_protocol_schema_accepts_the_documented_messages_and_refuses_others():
    def valid(message, direction):
        jsonschema.validate(message, {"$defs": SCHEMA["$defs"], "$ref": f"#/$defs/{direction}"})

    valid({"type": "hello", "protocol": PROTOCOL, "corpus_version": "1.0.0"}, "to_implementation")
    valid({"type": "run", "seq": 1, "op": "sinusoidal.table", "params": {"dim": 4},
           "inputs": {"positions": "/tmp/p.npy"}, "output_dir": "/tmp/out"}, "to_implementation")
    valid({"type": "error", "seq": 1, "category": "out_of_range", "message": "row 20"}, "from_implementation")
    with pytest.raises(jsonschema.ValidationError):
        valid({"type": "error", "seq": 1, "category": "oops", "message": "x"}, "from_implementation")
    with pytest.raises(jsonschema.ValidationError):
        valid({"type": "result", "seq": 1}, "from_implementation")


def test_python_adapter_that_raises_on_every_case_is_reported_per_case(tmp_path, capsys):
    broken = tmp_path / "broken.py"
    broken.write_text(textwrap.dedent("""
        class Broken:
            name = "broken"
            dtype = "float32"
            def run(self, op, params, inputs):
                raise RuntimeError("kernel not compiled")
        ADAPTER = Broken()
    """))
    report = tmp_path / "report.json"
    code = main(["conformance", f"{broken}:ADAPTER", "--report-json", str(report)])
    assert code == 1
    results = json.loads(report.read_text())["runs"][0]["results"]
    valid = [r for r in results if r["output"] != "error"]
    assert valid and all(r["status"] == "error" and "kernel not compiled" in r["message"] for r in valid)
    errors = [r for r in results if r["output"] == "error"]
    assert errors and all(r["status"] == "wrong_error" for r in errors)
    assert "FAILED" in capsys.readouterr().out
