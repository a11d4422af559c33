"""The conformance engine: run an adapter over the corpus and judge every (case, output).

Statuses
--------
``pass`` / ``pass_relaxed``
    Within tolerance (``pass_relaxed``: only under a ``relax`` expectation).
``fail``
    Outside tolerance, or an error case whose invalid input was accepted.
``error``
    The adapter raised on a valid case, timed out, returned None, a wrong shape, a wrong dtype
    kind or a non-finite value where a finite one is expected; or the case's corpus file is
    corrupt.
``wrong_error``
    An error case rejected with a different (or unmapped) error category.
``not_applicable``
    The adapter does not support the op or the case's convention values.
``xfail`` / ``xpass``
    A failure declared in the expectations file / a declared failure that passed (fails the run).
``skip``
    Skipped by the expectations file.

A run fails (exit code 1) on any fail, error, wrong_error or xpass, on any expectations-file
error, and when no case was executed (everything not applicable or skipped).
"""

from __future__ import annotations

import concurrent.futures
import datetime
import hashlib
import platform
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np

from posenc_ref import __version__, corpus
from posenc_ref.registry import get_op
from posenc_ref.runner.adapters import as_output_array, error_category, normalise_outputs, supports
from posenc_ref.runner.diagnosis import diagnose
from posenc_ref.runner.expectations import Expectation
from posenc_ref.tolerance import Comparison, Policy, compare, policy

STATUSES: Final = ("pass", "pass_relaxed", "fail", "error", "wrong_error", "not_applicable", "xfail", "xpass", "skip")
FAILING: Final = frozenset({"fail", "error", "wrong_error", "xpass"})
EXECUTED: Final = frozenset({"pass", "pass_relaxed", "fail", "error", "wrong_error", "xfail", "xpass"})
ERROR_OUTPUT: Final = "error"
"""Output name under which error cases report (they have no arrays)."""


@dataclass
class Result:
    """The verdict on one (case, output)."""

    case_id: str
    op: str
    family: str
    output: str
    status: str
    message: str = ""
    comment: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    level: str = "must"
    comparison: Comparison | None = None
    tolerance: str | None = None
    tolerance_source: str | None = None
    diagnosis: list[str] = field(default_factory=list)
    expectation: Expectation | None = None
    rerun: str = ""
    seconds: float = 0.0


@dataclass
class Run:
    """Everything one conformance run found; reports are rendered from this."""

    adapter: dict[str, Any]
    corpus: dict[str, Any]
    results: list[Result]
    expectation_errors: list[str]
    started: str
    seconds: float
    command: str
    environment: dict[str, str]

    def counts(self) -> dict[str, int]:
        counter = Counter(r.status for r in self.results)
        return {status: counter.get(status, 0) for status in STATUSES}

    @property
    def executed(self) -> int:
        return sum(r.status in EXECUTED for r in self.results)

    @property
    def passed(self) -> bool:
        return not self.expectation_errors and self.executed > 0 and not any(r.status in FAILING for r in self.results)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


class Worker:
    """Runs adapter calls on one thread so a per-case timeout can abandon a stuck call."""

    def __init__(self) -> None:
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="posenc-adapter")

    def call(self, fn: Callable[[], Any], timeout: float | None) -> Any:
        future = self.pool.submit(fn)
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="posenc-adapter")
            raise

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def _expectation_for(expectations: list[Expectation], case_id: str, output: str | None) -> Expectation | None:
    for entry in expectations:
        if entry.matches(case_id, output):
            return entry
    return None


def _relaxed(pol: Policy, factor: float) -> Policy:
    return Policy(pol.tolerance_class, pol.dtype, pol.n_ulp * factor, pol.c_phase * factor, pol.phase_dtype)


def _apply_expectation(status: str, expectation: Expectation | None) -> str:
    if expectation is None or expectation.status != "xfail":
        return status
    if status in ("pass", "pass_relaxed"):
        return "xpass"
    return "xfail" if status in ("fail", "error", "wrong_error") else status


def run_conformance(
    adapter: Any,
    *,
    spec: str,
    corpus_dir: Path | None = None,
    select: Callable[[Mapping[str, Any]], bool] | None = None,
    expectations: list[Expectation] | None = None,
    allow_modified: bool = False,
    timeout: float | None = 60.0,
    progress: Callable[[int, int, str], None] | None = None,
    rerun_extra: str = "",
) -> Run:
    """Run ``adapter`` over the corpus and return a :class:`Run`.

    Raises :class:`~posenc_ref.corpus.CorpusError` when the corpus fails verification and
    ``allow_modified`` is false (the run then refuses to start).
    """
    directory = Path(corpus_dir) if corpus_dir else corpus.default_corpus_dir()
    problems = corpus.verify(directory)
    if problems and not allow_modified:
        raise corpus.CorpusError(problems + ["(pass --allow-modified to run anyway; it is stamped into the report)"])
    manifest = corpus.read_manifest(directory)
    expectations = expectations or []
    all_ids = [(c["id"], tuple(c["outputs"]) or (ERROR_OUTPUT,)) for c in manifest["cases"]]
    expectation_errors = [
        f"{e.source}: expectation {e.id!r}{f' (output {e.output!r})' if e.output else ''} matches no case"
        for e in expectations
        if not any(e.matches(cid, None) and (e.output is None or e.output in outs) for cid, outs in all_ids)
    ]
    entries = [c for c in manifest["cases"] if select is None or select(c)]
    results: list[Result] = []
    worker = Worker()
    start = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    try:
        for n, entry in enumerate(entries, 1):
            if progress:
                progress(n, len(entries), entry["id"])
            results.extend(run_case(adapter, worker, directory, entry, expectations, timeout,
                                    f"posenc-ref conformance {spec} --case {entry['id']}{rerun_extra}"))
    finally:
        worker.close()
    manifest_bytes = (directory / "manifest.json").read_bytes()
    return Run(
        adapter={"spec": spec, "name": str(adapter.name), "version": str(getattr(adapter, "version", "")),
                 "dtype": adapter.dtype},
        corpus={"path": str(directory), "version": manifest["version"], "format_version": manifest["format_version"],
                "manifest_sha256": hashlib.sha256(manifest_bytes).hexdigest(), "modified": bool(problems),
                "problems": problems, "cases_selected": len(entries), "cases_total": len(manifest["cases"])},
        results=results,
        expectation_errors=expectation_errors,
        started=started,
        seconds=time.monotonic() - start,
        command=f"posenc-ref conformance {spec}{rerun_extra}",
        environment={"posenc_ref": __version__, "numpy": np.__version__, "python": platform.python_version(),
                     "platform": platform.platform()},
    )


def run_case(adapter: Any, worker: Worker, directory: Path, entry: Mapping[str, Any],
             expectations: list[Expectation], timeout: float | None, rerun: str) -> list[Result]:
    """Run and judge one case (its manifest ``entry``); one :class:`Result` per output."""
    dtype = adapter.dtype
    op_name = entry["op"]
    outputs = tuple(entry["outputs"]) or (ERROR_OUTPUT,)
    try:
        family = get_op(op_name).family
    except KeyError:
        family = op_name.split(".")[0]
    base = {"case_id": entry["id"], "op": op_name, "family": family, "comment": entry["comment"],
            "params": entry["params"], "level": entry["level"], "rerun": rerun}

    def every(status: str, message: str, expectation: Expectation | None = None) -> list[Result]:
        return [Result(output=o, status=status, message=message, expectation=expectation, **base) for o in outputs]

    whole_case = _expectation_for(expectations, entry["id"], None)
    if whole_case and whole_case.status == "skip" and whole_case.output is None:
        return every("skip", whole_case.reason, whole_case)
    reason = supports(adapter, op_name, entry["params"])
    if reason:
        return every("not_applicable", reason)
    try:
        golden = corpus.load_case(directory, entry)
    except corpus.CorpusError as exc:
        return every("error", "corrupt corpus file, not used: " + "; ".join(exc.problems))
    inputs = {k: v.copy() for k, v in golden.inputs.items()}
    t0 = time.monotonic()
    try:
        returned = worker.call(lambda: adapter.run(op_name, dict(golden.params), inputs), timeout)
        raised: BaseException | None = None
    except concurrent.futures.TimeoutError:
        return every("error", f"timed out after {timeout:g} s")
    except Exception as exc:  # the adapter's own exception, whatever it is
        raised, returned = exc, None
    seconds = time.monotonic() - t0

    if golden.expected_error:
        expectation = _expectation_for(expectations, entry["id"], ERROR_OUTPUT)
        want = golden.expected_error
        if raised is None:
            status, message = "fail", f"accepted invalid input; expected an error of category {want}"
        else:
            got = error_category(adapter, raised)
            native = f"{type(raised).__name__}: {raised}"
            if got == want:
                status, message = "pass", f"raised {want} ({native})"
            else:
                status = "wrong_error"
                message = f"raised {got or 'an unmapped exception'} ({native}); expected {want}"
        return [Result(output=ERROR_OUTPUT, status=_apply_expectation(status, expectation), message=message,
                       expectation=expectation, seconds=seconds, **base)]

    if raised is not None:
        return [Result(output=o, status=_apply_expectation("error", _expectation_for(expectations, entry["id"], o)),
                       message=f"adapter raised {type(raised).__name__}: {raised}", seconds=seconds,
                       expectation=_expectation_for(expectations, entry["id"], o), **base) for o in outputs]
    try:
        by_name = normalise_outputs(returned, outputs)
    except ValueError as exc:
        return every("error", f"adapter {exc}")

    results = []
    failing: dict[str, np.ndarray[Any, Any]] = {}
    for name in outputs:
        golden_out = golden.outputs[name]
        expectation = _expectation_for(expectations, entry["id"], name)
        actual, garbage = as_output_array(by_name[name], golden_out.expected, golden_out.tolerance == "exact")
        if actual is None:
            results.append(Result(output=name, status=_apply_expectation("error", expectation),
                                  message=f"adapter {garbage}", expectation=expectation, seconds=seconds, **base))
            continue
        pol = policy(golden_out.tolerance, dtype)
        source = f"policy {golden_out.tolerance}/{dtype}"
        relaxed = expectation is not None and expectation.status == "relax"
        if relaxed and expectation is not None:
            pol = _relaxed(pol, expectation.factor)
            source += f" x {expectation.factor:g} ({expectation.source})"
        verdict = compare(actual, golden_out.expected, pol, golden_out.phase)
        status = ("pass_relaxed" if relaxed else "pass") if verdict.passed else "fail"
        if status == "fail":
            failing[name] = actual
        results.append(Result(output=name, status=_apply_expectation(status, expectation), comparison=verdict,
                              tolerance=pol.describe(),
                              tolerance_source=source, expectation=expectation, seconds=seconds, **base))
    if failing:
        try:
            found = diagnose(get_op(op_name), golden.params, golden.inputs, failing, dtype)
        except KeyError:
            found = []
        for result in results:
            if result.output in failing:
                result.diagnosis = found
    return results
