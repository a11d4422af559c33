"""Reports: the JSON report validates against the published schema; JUnit and Markdown are well formed."""

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from posenc_ref.runner.adapters import load_adapter
from posenc_ref.runner.diagnosis import group_failures
from posenc_ref.runner.engine import run_conformance
from posenc_ref.runner.expectations import load_expectations
from posenc_ref.runner.report import markdown_report, matrix, terminal, to_json, to_junit

jsonschema = pytest.importorskip("jsonschema")
SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "conformance" / "report.schema.json").read_text())


def run(spec, **kwargs):
    return run_conformance(load_adapter(spec), spec=spec, **kwargs)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    exp = tmp_path_factory.mktemp("exp") / "e.json"
    exp.write_text(json.dumps({"expectation": [
        {"id": "sinusoidal.table.paper.concat_sin_cos.*", "status": "xfail", "reason": "r", "link": "l"},
        {"id": "sinusoidal.table.t2t.*", "output": "table", "status": "relax", "factor": 2, "reason": "r",
         "link": "l"},
        {"id": "learned.*", "status": "skip", "reason": "r", "link": "l"},
        {"id": "nothing.*", "status": "xfail", "reason": "r", "link": "l"},
    ]}))
    return [run("numpy"), run("numpy-float32"), run("mutant:sinusoid-layout-swapped"),
            run("numpy-float16-angles", expectations=load_expectations(exp))]


def test_json_report_validates(runs):
    report = to_json(runs)
    jsonschema.validate(report, SCHEMA)
    json.dumps(report, allow_nan=False)  # strict JSON: no bare Infinity or NaN
    statuses = {r["status"] for run in report["runs"] for r in run["results"]}
    assert {"pass", "fail", "xfail", "pass_relaxed", "skip", "not_applicable"} <= statuses
    assert report["runs"][3]["expectation_errors"]


def test_schema_rejects_a_broken_report(runs):
    report = to_json(runs[:1])
    report["runs"][0]["results"][0]["status"] = "passed"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report, SCHEMA)


def test_junit_and_markdown(runs):
    root = ET.fromstring(to_junit(runs))
    assert [s.get("name") for s in root] == ["numpy[float64]", "numpy-float32[float32]",
                                           "mutant:sinusoid-layout-swapped[float64]", "numpy-float16-angles[float16]"]
    mutant = root[2]
    assert int(mutant.get("failures")) > 0 and mutant.find("testcase/failure") is not None
    assert "diagnosis: matches the reference under layout=" in mutant.find("testcase/failure").text
    md = matrix(runs)
    assert md.splitlines()[0].startswith("| family | numpy (float64) |") and "| absolute |" in md
    text = terminal(runs)
    assert all(not line.endswith(" ") for line in text.splitlines())
    assert "numpy (float64): PASSED" in text and "mutant:sinusoid-layout-swapped (float64): FAILED" in text


def test_report_metadata(runs):
    meta = to_json(runs[:1])["runs"][0]
    assert meta["corpus"]["version"] and len(meta["corpus"]["manifest_sha256"]) == 64
    assert {"posenc_ref", "numpy", "python", "platform"} <= set(meta["environment"])
    assert meta["adapter"] == {"spec": "numpy", "name": "numpy", "version": "reference", "dtype": "float64"}
    assert not math.isnan(meta["seconds"])


def test_failures_grouped_by_explanation_in_json_and_markdown(runs):
    """The JSON report and the Markdown report carry the same groups as the terminal summary."""
    mutant = runs[2]
    failing = [r for r in mutant.results if r.status in ("fail", "error")]
    lines = group_failures(mutant.results)
    assert failing and lines
    groups = to_json(runs)["runs"][2]["failure_groups"]
    assert sum(g["count"] for g in groups) == len(failing)  # each failing output once
    assert all(g["total"] == len(failing) for g in groups)
    assert [g["count"] for g in groups] == sorted((g["count"] for g in groups), reverse=True)
    assert groups[0]["explanation"].startswith("matches the reference under layout=")
    assert {c for g in groups for c in g["case_ids"]} == {r.case_id for r in failing}
    assert to_json(runs)["runs"][0]["failure_groups"] == []  # the reference fails nothing
    md = markdown_report(runs).splitlines()
    assert md[:len(matrix(runs).splitlines())] == matrix(runs).splitlines()
    assert "**numpy (float64)**: PASSED: " + ", ".join(
        f"{n} {s}" for s, n in runs[0].counts().items() if n) in md
    at = md.index("**mutant:sinusoid-layout-swapped (float64)**: FAILED: " + ", ".join(
        f"{n} {s}" for s, n in mutant.counts().items() if n))
    listed = [line[2:] for line in md[at + 1:] if line.startswith("- ")][:len(lines)]
    assert [line.replace("\\", "") for line in listed] == lines  # the same lines, Markdown-escaped


def test_the_markdown_report_escapes_markup():
    from posenc_ref.runner.report import _md
    assert _md("a_b *c* [d] `e` |f|") == "a\\_b \\*c\\* \\[d\\] \\`e\\` \\|f\\|"
