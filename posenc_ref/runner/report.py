"""Conformance reports: terminal summary, JSON (schema in ``conformance/report.schema.json``),
JUnit XML and Markdown (the matrix, each adapter's verdict and its failures grouped by
explanation)."""

from __future__ import annotations

import json
import math
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from posenc_ref.runner.diagnosis import failure_groups, group_failures
from posenc_ref.runner.engine import FAILING, STATUSES, Result, Run

REPORT_FORMAT: Final = "posenc-ref-conformance-report/1"
_NOT_XML: Final = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def safe_text(text: str) -> str:
    """``text`` with lone surrogates written as escapes (``\\udc80``), so any encoder takes it."""
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")


def xml_text(text: str) -> str:
    """``text`` in the XML 1.0 character set: surrogates and control characters (NUL, BEL, ESC,
    ...) written as escapes (``\\x1b``)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", safe_text(text))


def _sanitised(value: Any) -> Any:
    """A JSON value with every string (keys included) passed through :func:`safe_text`."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_text(str(k)): _sanitised(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_sanitised(v) for v in value]
    return value


def check_report_paths(paths: Sequence[str | None]) -> list[str]:
    """Problems with report output paths, found before a run starts (empty when all are fine):
    a missing or unwritable folder, a path that is a folder, the same file named twice."""
    problems = []
    seen: set[Path] = set()
    for given in paths:
        if not given:
            continue
        path = Path(given)
        folder = path.parent if str(path.parent) else Path(".")
        if path.is_dir():
            problems.append(f"report path {given!r} is a directory; give a file name")
        elif not folder.is_dir():
            problems.append(f"report path {given!r}: the folder {str(folder)!r} does not exist")
        elif not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            problems.append(f"report path {given!r} is not writable")
        resolved = path.resolve()
        if resolved in seen:
            problems.append(f"report path {given!r} is named twice")
        seen.add(resolved)
    return problems


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
    whose = f" (adapter {r.adapter})" if r.adapter else ""
    lines = [f"{r.status.upper()} {r.case_id} [{r.output}]{whose}", f"  case:      {r.comment}",
             "  params:    " + ", ".join(f"{k}={v!r}" for k, v in r.params.items())]
    if r.message:
        lines.append(f"  problem:   {r.message}")
    if r.exception and r.exception.get("frames"):
        lines += [f"  at:        {frame}" for frame in r.exception["frames"]]
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
    return safe_text("\n".join(out))


def _cell(results: list[Result]) -> str:
    if not results:
        return "-"
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    good = counts["pass"] + counts["pass_relaxed"] + counts["xfail"]
    bad = sum(counts[s] for s in FAILING)
    na = counts["not_applicable"] + counts["skip"]
    return f"{good} ok / {bad} bad / {na} n/a"


def markdown_report(runs: Sequence[Run]) -> str:
    """The Markdown report: the family x (adapter, dtype) matrix, then each adapter's verdict and
    its failures grouped by explanation (:func:`~posenc_ref.runner.diagnosis.failure_groups`)."""
    out = [matrix(runs)]
    for run in runs:
        verdict = "PASSED" if run.passed else "FAILED"
        counts = ", ".join(f"{n} {s}" for s, n in run.counts().items() if n)
        out += ["", f"**{_md(run.adapter['name'])} ({run.adapter['dtype']})**: {verdict}: {counts}"]
        groups = group_failures(run.results)
        if groups:
            out += ["", "Failures by explanation:", ""] + [f"- {_md(line)}" for line in groups]
    return "\n".join(out)


def _md(text: str) -> str:
    """Text for a Markdown line: the characters Markdown would read as markup escaped."""
    return re.sub(r"([\\`*_\[\]<>|#])", r"\\\1", text)


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


def _comparison_json(r: Result, full: bool) -> dict[str, Any] | None:
    c = r.comparison
    if c is None:
        return None
    if not full:
        return {"n_bad": c.n_bad, "headroom": _num(c.headroom)}
    return {"n_bad": c.n_bad, "worst_index": list(c.worst_index) if c.worst_index is not None else None,
            "expected": _num(c.expected), "actual": _num(c.actual), "abs_error": _num(c.abs_error),
            "rel_error": _num(c.rel_error), "ulp_error": _num(c.ulp_error), "allowed": _num(c.allowed),
            "headroom": _num(c.headroom)}


def _result_json(r: Result, full: bool = True) -> dict[str, Any]:
    """One result; unless ``full``, a result that is not failing keeps only what identifies it,
    its status and its headroom (a failing one is always written in full)."""
    full = full or r.status in FAILING or r.status in ("xfail", "pass_relaxed")
    brief = {"case_id": r.case_id, "op": r.op, "family": r.family, "output": r.output, "status": r.status,
             "comparison": _comparison_json(r, full), "seconds": r.seconds}
    if not full:
        if r.message:
            brief["message"] = r.message
        return brief
    return {
        **brief, "adapter": r.adapter, "message": r.message, "comment": r.comment, "params": dict(r.params),
        "level": r.level, "tolerance": r.tolerance, "tolerance_source": r.tolerance_source,
        "diagnosis": list(r.diagnosis),
        "expectation": None if r.expectation is None else {
            "id": r.expectation.id, "status": r.expectation.status, "reason": r.expectation.reason,
            "link": r.expectation.link, "source": r.expectation.source, "output": r.expectation.output,
            "factor": r.expectation.factor},
        "exception": r.exception, "rerun": r.rerun,
    }


def to_json(runs: Sequence[Run], *, full: bool = True) -> dict[str, Any]:
    """The JSON report (validates against ``conformance/report.schema.json``); every string
    sanitised (:func:`safe_text`). ``full=False`` is the compact form (``_result_json``)."""
    report: dict[str, Any] = _sanitised({
        "format": REPORT_FORMAT,
        "passed": all(run.passed for run in runs),
        "full": full,
        "runs": [{
            "adapter": run.adapter, "corpus": run.corpus, "started": run.started, "seconds": run.seconds,
            "command": run.command, "environment": run.environment, "passed": run.passed,
            "executed": run.executed, "counts": run.counts(), "expectation_errors": run.expectation_errors,
            "failure_groups": [{**group, "largest_residual": _num(group["largest_residual"])}
                               for group in failure_groups(run.results)],
            "results": [_result_json(r, full) for r in run.results],
        } for run in runs],
    })
    return report


def write_json(runs: Sequence[Run], path: str, *, full: bool = False) -> None:
    """The JSON report into ``path``: compact (no indentation, brief passing results) unless ``full``."""
    report = to_json(runs, full=full)
    with open(path, "w", encoding="utf-8") as handle:
        if full:
            json.dump(report, handle, indent=1, allow_nan=False)
        else:
            json.dump(report, handle, separators=(",", ":"), allow_nan=False)
        handle.write("\n")


def to_junit(runs: Sequence[Run]) -> str:
    """JUnit XML: one testsuite per adapter, one testcase per (case, output); every string in
    the XML 1.0 character set (:func:`xml_text`)."""
    x = xml_text
    root = ET.Element("testsuites", name="posenc-ref conformance")
    for run in runs:
        counts = run.counts()
        suite = ET.SubElement(root, "testsuite", name=x(f"{run.adapter['name']}[{run.adapter['dtype']}]"),
                              tests=str(len(run.results)),
                              failures=str(counts["fail"] + counts["wrong_error"] + counts["xpass"]),
                              errors=str(counts["error"]),
                              skipped=str(counts["not_applicable"] + counts["skip"] + counts["xfail"]),
                              time=f"{run.seconds:.3f}")
        for r in run.results:
            case = ET.SubElement(suite, "testcase", classname=x(r.op), name=x(f"{r.case_id}[{r.output}]"),
                                 time=f"{r.seconds:.6f}")
            if r.status in ("fail", "wrong_error", "xpass"):
                failure = ET.SubElement(case, "failure", message=x(f"{r.status}: {r.message or r.case_id}"))
                failure.text = x(describe_failure(r))
            elif r.status == "error":
                ET.SubElement(case, "error", message=x(r.message)).text = x(describe_failure(r))
            elif r.status in ("not_applicable", "skip", "xfail"):
                ET.SubElement(case, "skipped", message=x(f"{r.status}: {r.message}"))
        for problem in run.expectation_errors:
            case = ET.SubElement(suite, "testcase", classname="expectations", name="expectations-file")
            ET.SubElement(case, "error", message=x(problem))
    return ET.tostring(root, encoding="unicode")
