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

import datetime
import platform
import queue
import threading
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
from posenc_ref.runner.diagnosis import diagnose, nonfinite_output
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


class AdapterTimeout(Exception):
    """An adapter call ran past the per-case timeout."""


class Worker:
    """Runs adapter calls on one helper thread so a per-case timeout can abandon a stuck call.

    A call that times out keeps its thread (Python cannot kill it); the worker starts a fresh
    thread for the next case, so the run goes on. Without a timeout, calls run inline.
    """

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        self.requests: queue.SimpleQueue[Callable[[], Any] | None] = queue.SimpleQueue()
        self.replies: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, args=(self.requests, self.replies), daemon=True,
                         name="posenc-adapter").start()

    @staticmethod
    def _serve(requests: queue.SimpleQueue[Callable[[], Any] | None],
               replies: queue.SimpleQueue[tuple[bool, Any]]) -> None:
        while (job := requests.get()) is not None:
            try:
                replies.put((True, job()))
            except BaseException as exc:  # handed back to the caller, whatever it is
                replies.put((False, exc))

    def call(self, fn: Callable[[], Any], timeout: float | None) -> Any:
        """``fn()``; raises :class:`AdapterTimeout` after ``timeout`` seconds, or what ``fn`` raised."""
        if timeout is None:
            return fn()
        self.requests.put(fn)
        try:
            ok, value = self.replies.get(timeout=timeout)
        except queue.Empty:
            self.requests.put(None)  # the stuck thread exits if it ever returns
            self._start()
            raise AdapterTimeout(f"timed out after {timeout:g} s") from None
        if ok:
            return value
        raise value

    def close(self) -> None:
        self.requests.put(None)


def run_batch(judge: Callable[[Mapping[str, Any], float | None], list[Result]], entries: list[Mapping[str, Any]],
              timeout: float | None, timed_out: Callable[[Mapping[str, Any], str], list[Result]],
              progress: Callable[[int, int, str], None] | None = None) -> list[Result]:
    """Judge every entry on one helper thread, watched by this one; a stuck case is abandoned.

    Handing every case to a thread and back costs more than small cases take, so the helper
    thread runs the cases back to back while this thread only watches the clock. When a case
    runs past ``timeout`` it is recorded through ``timed_out``, its thread is abandoned (Python
    cannot kill it), and a fresh thread goes on from the next case.
    """
    if timeout is None:
        out = []
        for n, entry in enumerate(entries, 1):
            if progress:
                progress(n, len(entries), str(entry["id"]))
            out.extend(judge(entry, None))
        return out
    per_case: list[list[Result] | None] = [None] * len(entries)
    lock = threading.Lock()  # orders "a case finished" against "that case timed out"
    start = 0
    while start < len(entries):
        current = {"index": start, "since": time.monotonic()}
        finished = threading.Event()
        cancelled = threading.Event()

        def work(begin: int, current: dict[str, float], finished: threading.Event,
                 cancelled: threading.Event) -> None:
            for i in range(begin, len(entries)):
                with lock:
                    if cancelled.is_set():
                        return
                    current["index"], current["since"] = i, time.monotonic()
                if progress:
                    progress(i + 1, len(entries), str(entries[i]["id"]))
                results = judge(entries[i], None)
                with lock:
                    if cancelled.is_set():
                        return
                    per_case[i] = results
            finished.set()

        threading.Thread(target=work, args=(start, current, finished, cancelled), daemon=True,
                         name="posenc-adapter").start()
        while not finished.wait(min(0.05, timeout)):
            with lock:
                index = int(current["index"])
                if time.monotonic() - current["since"] > timeout and per_case[index] is None:
                    cancelled.set()
                    per_case[index] = timed_out(entries[index], f"timed out after {timeout:g} s")
                    start = index + 1
                    break
        else:
            start = len(entries)
    return [r for results in per_case for r in (results or [])]


def _expectation_for(expectations: list[Expectation], case_id: str, output: str | None) -> Expectation | None:
    for entry in expectations:
        if entry.matches(case_id, output):
            return entry
    return None


def _relaxed(pol: Policy, factor: float) -> Policy:
    return Policy(pol.tolerance_class, pol.dtype, pol.n_ulp * factor, pol.c_phase * factor, pol.phase_dtype,
                  pol.c_input * factor)


def _apply_expectation(status: str, expectation: Expectation | None) -> str:
    if expectation is None or expectation.status != "xfail":
        return status
    if status in ("pass", "pass_relaxed"):
        return "xpass"
    return "xfail" if status in ("fail", "error", "wrong_error") else status


def open_corpus(corpus_dir: Path | None, allow_modified: bool) -> tuple[Path, corpus.Corpus]:
    """The corpus read and verified once; :class:`~posenc_ref.corpus.CorpusError` when it fails
    verification and ``allow_modified`` is false, or has no readable manifest."""
    directory = Path(corpus_dir) if corpus_dir else corpus.default_corpus_dir()
    loaded = corpus.Corpus(directory)
    if loaded.problems and (not allow_modified or not loaded.manifest):
        note = "(pass --allow-modified to run anyway; it is stamped into the report)"
        raise corpus.CorpusError(loaded.problems + [note])
    return directory, loaded


def unmatched_expectations(expectations: list[Expectation], manifest: Mapping[str, Any]) -> list[str]:
    """One message per expectation entry that matches no (case, output) of the corpus."""
    all_ids = [(c["id"], tuple(c["outputs"]) or (ERROR_OUTPUT,)) for c in manifest["cases"]]
    return [
        f"{e.source}: expectation {e.id!r}{f' (output {e.output!r})' if e.output else ''} matches no case"
        for e in expectations
        if not any(e.matches(cid, None) and (e.output is None or e.output in outs) for cid, outs in all_ids)
    ]


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

    The corpus is read and verified once. Raises :class:`~posenc_ref.corpus.CorpusError` when
    it fails verification and ``allow_modified`` is false, or when it has no readable manifest.
    """
    directory, loaded = open_corpus(corpus_dir, allow_modified)
    problems = loaded.problems
    manifest = loaded.manifest
    expectations = expectations or []
    expectation_errors = unmatched_expectations(expectations, manifest)
    entries = [c for c in manifest["cases"] if select is None or select(c)]
    start = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")

    def rerun(entry: Mapping[str, Any]) -> str:
        return f"posenc-ref conformance {spec} --case {entry['id']}{rerun_extra}"

    def judge(entry: Mapping[str, Any], case_timeout: float | None) -> list[Result]:
        return run_case(adapter, None, loaded, entry, expectations, case_timeout, rerun(entry))

    def timed_out(entry: Mapping[str, Any], message: str) -> list[Result]:
        return case_error(entry, expectations, message, rerun(entry))

    results = run_batch(judge, entries, timeout, timed_out, progress)
    return Run(
        adapter={"spec": spec, "name": str(adapter.name), "version": str(getattr(adapter, "version", "")),
                 "dtype": adapter.dtype},
        corpus={"path": str(directory), "version": manifest["version"], "format_version": manifest["format_version"],
                "manifest_sha256": loaded.manifest_sha256, "modified": bool(problems),
                "problems": problems, "cases_selected": len(entries), "cases_total": len(manifest["cases"])},
        results=results,
        expectation_errors=expectation_errors,
        started=started,
        seconds=time.monotonic() - start,
        command=f"posenc-ref conformance {spec}{rerun_extra}",
        environment={"posenc_ref": __version__, "numpy": np.__version__, "python": platform.python_version(),
                     "platform": platform.platform()},
    )


def _category(adapter: Any, exc: BaseException) -> tuple[str | None, str]:
    """The adapter's category for ``exc``, and a note when its mapper itself failed."""
    try:
        return error_category(adapter, exc), ""
    except Exception as mapper_exc:  # the adapter's mapper is adapter code too
        return None, f"; error_category() raised {type(mapper_exc).__name__}: {mapper_exc}"


def _base(entry: Mapping[str, Any], rerun: str) -> dict[str, Any]:
    try:
        family = get_op(entry["op"]).family
    except KeyError:
        family = str(entry["op"]).split(".")[0]
    return {"case_id": entry["id"], "op": entry["op"], "family": family, "comment": entry["comment"],
            "params": entry["params"], "level": entry["level"], "rerun": rerun}


def case_error(entry: Mapping[str, Any], expectations: list[Expectation], message: str, rerun: str,
               seconds: float = 0.0) -> list[Result]:
    """An ``error`` for every output of a case (subject to its xfail expectations)."""
    outputs = tuple(entry["outputs"]) or (ERROR_OUTPUT,)
    base = _base(entry, rerun)
    results = []
    for o in outputs:
        expectation = _expectation_for(expectations, entry["id"], o)
        results.append(Result(output=o, status=_apply_expectation("error", expectation), message=message,
                              expectation=expectation, seconds=seconds, **base))
    return results


def run_case(adapter: Any, worker: Worker | None, loaded: corpus.Corpus, entry: Mapping[str, Any],
             expectations: list[Expectation], timeout: float | None, rerun: str) -> list[Result]:
    """Run and judge one case (its manifest ``entry``); one :class:`Result` per output.

    With a ``worker`` and a ``timeout`` the adapter call runs on the worker's thread and is
    abandoned past the timeout; otherwise it runs on the calling thread.
    """
    dtype = adapter.dtype
    op_name = entry["op"]
    outputs = tuple(entry["outputs"]) or (ERROR_OUTPUT,)
    base = _base(entry, rerun)
    expected_for = {o: _expectation_for(expectations, entry["id"], o) for o in outputs}

    def every(status: str, message: str, seconds: float = 0.0) -> list[Result]:
        return [Result(output=o, status=_apply_expectation(status, expected_for[o]), message=message,
                       expectation=expected_for[o], seconds=seconds, **base) for o in outputs]

    whole_case = _expectation_for(expectations, entry["id"], None)
    if whole_case and whole_case.status == "skip":
        return [Result(output=o, status="skip", message=whole_case.reason, expectation=whole_case, **base)
                for o in outputs]
    try:
        reason = supports(adapter, op_name, entry["params"], error_case=bool(entry.get("expected_error")))
    except Exception as exc:  # adapter code
        return every("error", f"adapter supports() raised {type(exc).__name__}: {exc}")
    if reason:
        return [Result(output=o, status="not_applicable", message=reason, **base) for o in outputs]
    try:
        golden = loaded.case(entry)
    except corpus.CorpusError as exc:
        return [Result(output=o, status="error", message="corrupt corpus file, not used: " + "; ".join(exc.problems),
                       **base) for o in outputs]
    inputs = {k: v.copy() for k, v in golden.inputs.items()}
    t0 = time.monotonic()
    def call() -> Any:
        return adapter.run(op_name, dict(golden.params), inputs)

    try:
        returned = worker.call(call, timeout) if worker is not None else call()
        raised: BaseException | None = None
    except AdapterTimeout as exc:
        return every("error", str(exc), time.monotonic() - t0)
    except Exception as exc:  # the adapter's own exception, whatever it is
        raised, returned = exc, None
    seconds = time.monotonic() - t0

    if golden.expected_error:
        want = golden.expected_error
        if raised is None:
            return every("fail", f"accepted invalid input; expected an error of category {want}", seconds)
        got, note = _category(adapter, raised)
        native = f"{type(raised).__name__}: {raised}"
        if got == want:
            return every("pass", f"raised {want} ({native})", seconds)
        return every("wrong_error", f"raised {got or 'an unmapped exception'} ({native}); expected {want}{note}",
                     seconds)
    if raised is not None:
        return every("error", f"adapter raised {type(raised).__name__}: {raised}", seconds)
    try:
        by_name = normalise_outputs(returned, outputs)
    except ValueError as exc:
        return every("error", f"adapter {exc}", seconds)

    results = []
    failing: dict[str, np.ndarray[Any, Any]] = {}
    for name in outputs:
        golden_out = golden.outputs[name]
        expectation = expected_for[name]
        actual, garbage = as_output_array(by_name[name], golden_out.expected, golden_out.tolerance == "exact")
        if actual is None:
            nonfinite = nonfinite_output(by_name[name], golden_out.expected)
            if nonfinite is not None:  # NaN/inf where finite values are expected: still diagnosed
                failing[name] = nonfinite
            results.append(Result(output=name, status=_apply_expectation("error", expectation),
                                  message=f"adapter {garbage}", expectation=expectation, seconds=seconds, **base))
            continue
        pol = policy(golden_out.tolerance, dtype)
        source = f"policy {golden_out.tolerance}/{dtype}"
        relaxed = expectation is not None and expectation.status == "relax"
        if relaxed and expectation is not None:
            pol = _relaxed(pol, expectation.factor)
            source += f" x {expectation.factor:g} ({expectation.source})"
        verdict = compare(actual, golden_out.expected, pol, golden_out.phase, golden_out.input_scale)
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
