"""docs/findings.md is current with the last recorded engine runs, and every recorded
discrepancy is explained by a finding (conformance/engines/findings.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _loading import load_file

_PATH = Path(__file__).resolve().parents[1] / "conformance" / "engines" / "findings.py"
findings = load_file(_PATH, "engine_findings_under_test")


def test_page_is_current_and_every_recorded_discrepancy_is_explained() -> None:
    assert findings.stale() == []


def test_every_engine_has_a_record() -> None:
    for engine in findings.ENGINES:
        data = findings._load(engine)
        assert data is not None, f"no recorded run for {engine}"
        assert data["cases_run"], f"{engine}: the recorded run executed no model case"


def test_every_finding_matches_a_recorded_result_and_says_its_cause() -> None:
    for finding in findings.FINDINGS:
        data = findings._load(finding.engine)
        assert data is not None
        grouped, _ = findings.explain(finding.engine, data)
        assert finding.id in grouped, f"{finding.id} explains no recorded result (stale finding)"
        assert finding.cause and finding.computes and finding.config_says and finding.report


def test_an_unexplained_result_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record: dict[str, Any] = {"not_passing": [{"case": "model.x.full.rope_apply.long", "output": "cos",
                                               "status": "fail", "message": "m", "diagnosis": []}]}
    grouped, unexplained = findings.explain("vllm", record)
    assert not grouped and unexplained == record["not_passing"]


def test_record_keeps_non_passing_results_and_not_applicable_reasons(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(findings, "RESULTS", tmp_path)
    result = {"case_id": "model.a.full.rope_apply.long", "output": "cos", "status": "fail", "message": "",
              "diagnosis": ["layer 0 (full_attention): matches the reference with `factor` ignored"],
              "comparison": {"worst_index": [0, 1], "expected": 1.0, "actual": 2.0, "abs_error": 1.0,
                             "rel_error": 1.0, "n_bad": 3}}
    skipped = {"case_id": "model.b.encoder.t5_bias.long", "output": "bias", "status": "not_applicable",
               "message": "model.t5: not covered", "diagnosis": [], "comparison": None}
    passed = {**result, "output": "sin", "status": "pass"}
    report = {"runs": [{"results": [result, skipped, passed], "adapter": {"name": "x"},
                        "environment": {"python": "3.11"}, "corpus": {"version": "1", "manifest_sha256": "ab",
                                                                      "cases_selected": 2},
                        "started": "now", "seconds": 1.25, "counts": {"fail": 1}}]}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    out = findings.record("vllm", path)
    assert [r["output"] for r in out["not_passing"]] == ["cos"]
    assert out["not_passing"][0]["worst"]["n_bad"] == 3
    assert out["cases_run"] == ["model.a.full.rope_apply.long"]
    assert out["not_applicable"] == {"model.b.encoder.t5_bias.long": "model.t5: not covered"}
