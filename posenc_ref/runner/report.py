"""Conformance reports: terminal summary, JSON (schema in ``conformance/report.schema.json``),
JUnit XML and a Markdown matrix."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any, Final

from posenc_ref.runner.diagnosis import group_failures
from posenc_ref.runner.engine import FAILING, STATUSES, Result, Run

REPORT_FORMAT: Final = "posenc-ref-conformance-report/1"


def _num(value: float | None) -> float | str | None:
    """JSON has no infinities or NaN: write them as the strings ``"inf"``, ``"-inf"``, ``"nan"``."""
    if value is None:
        return None
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _integer_miss(c: Any) -> bool:
    """An exact-class miss between finite values (its abs/rel/ulp error reads inf by convention)."""
    return bool(c.allowed == 0 and math.isinf(c.abs_error) and c.expected is not None and c.actual is not None
                and math.isfinite(c.expected) and math.isfinite(c.actual))


def describe_failure(r: Result) -> str:
    """The full failure text of one (case, output): what, where, by how much, why, how to rerun."""
    lines = [f"{r.status.upper()} {r.case_id} [{r.output}]", f"  case:      {r.comment}",
             "  params:    " + ", ".join(f"{k}={v!r}" for k, v in r.params.items())]
    if r.message:
        lines.append(f"  problem:   {r.message}")
    c = r.comparison
    if c is not None and c.worst_index is not None:
        lines += [
            f"  worst:     index {c.worst_index}: expected {c.expected!r}, actual {c.actual!r}",
            f"  error:     abs {c.abs_error:.3g}, rel {c.rel_error:.3g}, {c.ulp_error:.3g} ulp; "
            f"{c.n_bad} element(s) outside tolerance" if not _integer_miss(c) else
            f"  error:     {c.n_bad} element(s) differ; here actual - expected = "
            f"{(c.actual or 0.0) - (c.expected or 0.0):+g}",
            f"  tolerance: {c.allowed:.3g} here = {r.tolerance} [{r.tolerance_source}]; headroom {c.headroom:.3g}",
        ]
    if (r.status == "fail" and c is not None) or r.diagnosis:
        found = "; ".join(r.diagnosis) if r.diagnosis else "no known convention mistake matches"
        lines.append(f"  diagnosis: {found}")
    if r.expectation is not None:
        lines.append(f"  expected:  {r.expectation.status} per {r.expectation.source}: {r.expectation.reason} "
                     f"({r.expectation.link})")
    lines.append(f"  rerun:     {r.rerun}")
    return "\n".join(lines)


def terminal(runs: Sequence[Run], *, verbose: bool = False) -> str:
    """Failures in full, then counts by status and a family x adapter/dtype matrix."""
    out: list[str] = []
    for run in runs:
        for r in run.results:
            if r.status in FAILING or (verbose and r.status != "pass"):
                out.append(describe_failure(r))
        for problem in run.expectation_errors:
            out.append(f"EXPECTATIONS {problem}")
        if run.corpus["modified"]:
            out.append(f"WARNING corpus at {run.corpus['path']} failed verification; run under --allow-modified "
                       f"({len(run.corpus['problems'])} problem(s); affected cases are errors)")
    out.append(matrix(runs, markdown=False))
    for run in runs:
        counts = ", ".join(f"{n} {s}" for s, n in run.counts().items() if n)
        headrooms = [r.comparison.headroom for r in run.results if r.status == "pass" and r.comparison]
        finite = [h for h in headrooms if math.isfinite(h)]
        worst = f"{min(finite):.3g}" if finite else ("exact" if headrooms else "n/a")
        verdict = "PASSED" if run.passed else "FAILED"
        note = "" if run.executed else " (no case was executed)"
        out.append(f"{run.adapter['name']} ({run.adapter['dtype']}): {verdict}{note}: {counts}; "
                   f"worst headroom {worst}; corpus {run.corpus['version']}; {run.seconds:.2f} s")
        out += [f"  {line}" for line in group_failures(run.results)]  # failures grouped by explanation
    return "\n".join(out)


def _cell(results: list[Result]) -> str:
    if not results:
        return "-"
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    good = counts["pass"] + counts["pass_relaxed"] + counts["xfail"]
    bad = sum(counts[s] for s in FAILING)
    na = counts["not_applicable"] + counts["skip"]
    return f"{good} ok / {bad} bad / {na} n/a"


def matrix(runs: Sequence[Run], *, markdown: bool = True) -> str:
    """Family x (adapter, dtype): ok / bad / not-applicable counts."""
    families = sorted({r.family for run in runs for r in run.results})
    header = ["family"] + [f"{run.adapter['name']} ({run.adapter['dtype']})" for run in runs]
    rows = [[fam] + [_cell([r for r in run.results if r.family == fam]) for run in runs] for fam in families]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *rows])


def _result_json(r: Result) -> dict[str, Any]:
    c = r.comparison
    return {
        "case_id": r.case_id, "op": r.op, "family": r.family, "output": r.output, "status": r.status,
        "message": r.message, "comment": r.comment, "params": dict(r.params), "level": r.level,
        "comparison": None if c is None else {
            "n_bad": c.n_bad, "worst_index": list(c.worst_index) if c.worst_index is not None else None,
            "expected": _num(c.expected), "actual": _num(c.actual), "abs_error": _num(c.abs_error),
            "rel_error": _num(c.rel_error), "ulp_error": _num(c.ulp_error), "allowed": _num(c.allowed),
            "headroom": _num(c.headroom)},
        "tolerance": r.tolerance, "tolerance_source": r.tolerance_source, "diagnosis": list(r.diagnosis),
        "expectation": None if r.expectation is None else {
            "id": r.expectation.id, "status": r.expectation.status, "reason": r.expectation.reason,
            "link": r.expectation.link, "source": r.expectation.source, "output": r.expectation.output,
            "factor": r.expectation.factor},
        "rerun": r.rerun, "seconds": r.seconds,
    }


def to_json(runs: Sequence[Run]) -> dict[str, Any]:
    """The JSON report (validates against ``conformance/report.schema.json``)."""
    return {
        "format": REPORT_FORMAT,
        "passed": all(run.passed for run in runs),
        "runs": [{
            "adapter": run.adapter, "corpus": run.corpus, "started": run.started, "seconds": run.seconds,
            "command": run.command, "environment": run.environment, "passed": run.passed,
            "executed": run.executed, "counts": run.counts(), "expectation_errors": run.expectation_errors,
            "results": [_result_json(r) for r in run.results],
        } for run in runs],
    }


def write_json(runs: Sequence[Run], path: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(to_json(runs), handle, indent=1)
        handle.write("\n")


def to_junit(runs: Sequence[Run]) -> str:
    """JUnit XML: one testsuite per adapter, one testcase per (case, output)."""
    root = ET.Element("testsuites", name="posenc-ref conformance")
    for run in runs:
        counts = run.counts()
        suite = ET.SubElement(root, "testsuite", name=f"{run.adapter['name']}[{run.adapter['dtype']}]",
                              tests=str(len(run.results)),
                              failures=str(counts["fail"] + counts["wrong_error"] + counts["xpass"]),
                              errors=str(counts["error"]),
                              skipped=str(counts["not_applicable"] + counts["skip"] + counts["xfail"]),
                              time=f"{run.seconds:.3f}")
        for r in run.results:
            case = ET.SubElement(suite, "testcase", classname=r.op, name=f"{r.case_id}[{r.output}]",
                                 time=f"{r.seconds:.6f}")
            if r.status in ("fail", "wrong_error", "xpass"):
                failure = ET.SubElement(case, "failure", message=f"{r.status}: {r.message or r.case_id}")
                failure.text = describe_failure(r)
            elif r.status == "error":
                ET.SubElement(case, "error", message=r.message).text = describe_failure(r)
            elif r.status in ("not_applicable", "skip", "xfail"):
                ET.SubElement(case, "skipped", message=f"{r.status}: {r.message}")
        for problem in run.expectation_errors:
            case = ET.SubElement(suite, "testcase", classname="expectations", name="expectations-file")
            ET.SubElement(case, "error", message=problem)
    return ET.tostring(root, encoding="unicode")
