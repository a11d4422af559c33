"""The runner's hardening: the adapter protocol frictions, reports that are always written and valid."""

import json
import sys
import xml.dom.minidom
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from posenc_ref.cli import main
from posenc_ref.registry import get_op
from posenc_ref.runner.adapters import AdapterLoadError, check_adapter
from posenc_ref.runner.engine import run_conformance
from posenc_ref.runner.report import describe_failure, safe_text, to_json, to_junit, xml_text

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "conformance" / "report.schema.json").read_text(encoding="utf-8"))
ONE = "sinusoidal.table.d6.position1.known_answer"
ERR = "sinusoidal.table.error.odd_dim_error_policy"


def only(*ids):
    return lambda entry: entry["id"] in ids


class Reference:
    name = "ref"
    dtype = "float64"

    def run(self, op, params, inputs):
        return get_op(op).call(params, inputs)


def test_supports_gets_the_case_kind_and_inputs_when_it_asks():
    seen = []

    class Three(Reference):
        def supports(self, op, params, case_kind):
            seen.append(("three", case_kind))
            return True if case_kind == "valid" else "no error cases here"

    class Four(Reference):
        def supports(self, op, params, case_kind, inputs):
            seen.append(("four", case_kind, sorted(inputs), inputs["positions"].tolist()))
            return True

    class Two(Reference):
        def supports(self, op, params):
            seen.append(("two",))
            return True

    three = {r.case_id: r.status for r in run_conformance(Three(), spec="3", select=only(ONE, ERR)).results}
    assert three == {ONE: "pass", ERR: "not_applicable"}
    run_conformance(Four(), spec="4", select=only(ONE))
    run_conformance(Two(), spec="2", select=only(ONE))
    assert ("three", "valid") in seen and ("three", "error") in seen
    assert ("four", "valid", ["positions"], [1]) in seen and ("two",) in seen


def test_per_op_dtype_mapping():
    class Mixed(Reference):
        dtype = {"sinusoidal.table": "float32", "default": "float64"}

    run = run_conformance(Mixed(), spec="mixed", select=lambda e: e["op"] in ("sinusoidal.table", "learned.lookup"))
    tolerances = {r.op: r.tolerance_source for r in run.results if r.tolerance_source}
    assert tolerances["sinusoidal.table"].endswith("/float32") and tolerances["learned.lookup"].endswith("/float64")
    assert run.adapter["dtype"] == "float64" and run.adapter["dtypes"]["sinusoidal.table"] == "float32"
    jsonschema.validate(to_json([run]), SCHEMA)

    class Partial(Reference):
        dtype = {"sinusoidal.table": "float32"}

    run = run_conformance(Partial(), spec="partial", select=lambda e: e["op"] in ("sinusoidal.table", "learned.lookup"))
    assert {r.status for r in run.results if r.op == "learned.lookup"} == {"not_applicable"}
    assert run.adapter["dtype"] == "mixed"
    for bad in ({"sinusoidal.table": "float8"}, {"no.such.op": "float32"}, {}):
        obj = Reference()
        obj.dtype = bad
        with pytest.raises(AdapterLoadError, match="per-op dtype mapping"):
            check_adapter(obj, "x")


def test_failure_blocks_name_their_adapter():
    run = run_conformance(__import__("posenc_ref.runner.adapters", fromlist=["load_adapter"]).load_adapter(
        "mutant:positions-off-by-one"), spec="mutant", select=only(ONE))
    assert describe_failure(run.results[0]).splitlines()[0].endswith("(adapter mutant:positions-off-by-one)")


class Nasty(Reference):
    """Raises messages with a lone surrogate and XML-invalid control characters."""

    name = "nasty\udcff"

    def run(self, op, params, inputs):
        raise ValueError("bad \udc80 byte, NUL \x00 ESC \x1b BEL \x07 end")


def test_reports_survive_surrogates_and_control_characters(tmp_path, capsys, monkeypatch):
    module = tmp_path / "nasty.py"
    module.write_text("from tests_nasty import Nasty\nADAPTER = Nasty\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules["tests_nasty"] = sys.modules[__name__]
    paths = {flag: tmp_path / name for flag, name in
             (("--report-json", "r.json"), ("--junit", "r.xml"), ("--markdown", "r.md"))}
    args = ["conformance", f"{module}:ADAPTER", "-k", ONE]
    for flag, path in paths.items():
        args += [flag, str(path)]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "\\udc80" in out and "\udc80" not in out
    report = json.loads(paths["--report-json"].read_text(encoding="utf-8"))
    jsonschema.validate(report, SCHEMA)
    text = paths["--junit"].read_text(encoding="utf-8")
    document = xml.dom.minidom.parseString(text.encode("utf-8"))  # expat: a strict XML 1.0 parser
    message = document.getElementsByTagName("error")[0].getAttribute("message")
    assert "\\x00" in message and "\\x1b" in message and "\\x07" in message and "\\udc80" in message
    assert xml_text("a\x00b") == "a\\x00b" and safe_text("\ud800") == "\\ud800"


def test_report_paths_are_checked_before_the_run(tmp_path, capsys):
    for flag in ("--report-json", "--junit", "--markdown"):
        code = main(["conformance", "numpy", flag, str(tmp_path / "missing" / "r.out")])
        err = capsys.readouterr().err
        assert code == 2 and "does not exist" in err and "Traceback" not in err
    assert main(["conformance", "numpy", "--junit", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_compact_and_full_json_reports_validate(tmp_path, capsys):
    compact, full, mutant = tmp_path / "c.json", tmp_path / "f.json", tmp_path / "m.json"
    select = ["--op", "sinusoidal.*"]
    assert main(["conformance", "numpy", "--report-json", str(compact), *select]) == 0
    assert main(["conformance", "numpy", "--report-json", str(full), "--report-full", *select]) == 0
    assert main(["conformance", "mutant:positions-off-by-one", "--report-json", str(mutant), "--case", ONE,
                 "--case", "sinusoidal.table.position0.d8"]) == 1
    capsys.readouterr()
    small, big, bad = (json.loads(p.read_text()) for p in (compact, full, mutant))
    for report in (small, big, bad):
        jsonschema.validate(report, SCHEMA)
    assert len(compact.read_bytes()) < len(full.read_bytes()) / 2
    assert small["full"] is False and big["full"] is True
    passing = [r for r in small["runs"][0]["results"] if r["status"] == "pass" and r["comparison"]]
    assert passing and set(passing[0]["comparison"]) == {"n_bad", "headroom"} and "params" not in passing[0]
    failing = [r for r in bad["runs"][0]["results"] if r["status"] == "fail"]
    assert failing and "worst_index" in failing[0]["comparison"] and failing[0]["rerun"] and failing[0]["params"]
    assert small["runs"][0]["corpus"]["path"] == "bundled"
    assert str(ROOT) not in compact.read_text() and str(ROOT) not in full.read_text()


def test_adapter_error_reports_type_message_and_frames():
    class Deep(Reference):
        def run(self, op, params, inputs):
            return self.inner()

        def inner(self):
            raise ZeroDivisionError("deep down")

    (result,) = run_conformance(Deep(), spec="deep", select=only(ONE)).results
    assert result.exception["type"] == "ZeroDivisionError" and result.exception["message"] == "deep down"
    assert any("in inner" in frame for frame in result.exception["frames"])
    jsonschema.validate(to_json([run_conformance(Deep(), spec="deep", select=only(ONE))]), SCHEMA)
    assert "in inner" in to_junit([run_conformance(Deep(), spec="deep", select=only(ONE))])


def test_offline_implementation_file_that_is_not_utf8_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "implementation.json").write_bytes(b'{"name": "\xff", "dtype": "float32"}')
    assert main(["conformance", "verify", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not UTF-8" in err and "Traceback" not in err


def test_isolated_adapter_passes_like_the_adapter_itself(tmp_path, capsys):
    module = tmp_path / "iso.py"
    module.write_text("from posenc_ref.runner.adapters import ReferenceAdapter\n"
                      "class Impl(ReferenceAdapter):\n"
                      "    def supports(self, op, params, case_kind, inputs):\n"
                      "        return True if op.startswith('sinusoidal.') else 'only sinusoids'\n"
                      "ADAPTER = Impl\n")
    report = tmp_path / "r.json"
    assert main(["conformance", str(module), "--isolate", "--op", "sinusoidal.*", "--op", "learned.*",
                 "--report-json", str(report)]) == 0
    capsys.readouterr()
    results = json.loads(report.read_text())["runs"][0]["results"]
    statuses = {(r["op"].split(".")[0], r["status"]) for r in results}
    assert statuses == {("sinusoidal", "pass"), ("learned", "not_applicable")}
    assert np.isfinite(json.loads(report.read_text())["runs"][0]["seconds"])
