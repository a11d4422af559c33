"""The conformance engine: run an adapter over the corpus and judge every (case, output).

Statuses
--------
``pass`` / ``pass_relaxed``
    Within tolerance (``pass_relaxed``: only under a ``relax`` expectation).
``fail``
    Outside tolerance, or an error case whose invalid input was accepted.
``error``
    The adapter raised on a valid case, timed out, returned None, a wrong shape, a wrong dtype
    kind or a non-finite value where a finite one is expected; on any case, it crashed (a dead
    child process, a protocol breach) or raised a ``BaseException`` that is not an
    ``Exception`` (``SystemExit``, ``KeyboardInterrupt``); or the case's corpus file is corrupt;
    or the runner itself failed on the case (reported at once as an internal error).
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

Entry points: :func:`run_conformance` (a whole run, as the CLI does it), :func:`run_cases` (a
list of manifest entries under the one timeout, :func:`run_batch`) and :func:`run_case` (one
case on the calling thread: its pieces are ``_judge_error_case`` and ``_judge_outputs``).
"""

from __future__ import annotations

import datetime
import platform
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np

from posenc_ref import __version__, corpus
from posenc_ref.registry import get_op
from posenc_ref.runner.adapters import (AdapterCrash, as_output_array, dtype_for, error_category, normalise_outputs,
                                        supports)
from posenc_ref.runner.diagnosis import diagnose, nonfinite_output
from posenc_ref.runner.expectations import Expectation
from posenc_ref.runner.models import call_model, diagnose_model, is_model_op, model_supports, uses_run_model
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
    adapter: str = ""
    """The adapter's name, so that every failure block says whose it is."""
    exception: dict[str, Any] | None = None
    """For an ``error`` (or ``wrong_error``) from adapter code: its type, message and last frames."""


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


GRACE: Final = 2.0
"""Seconds the runner's clock gives an adapter with its own per-call limit (a child process)
beyond that limit, so the adapter kills and restarts its child before the runner abandons it."""


def reconcile_timeout(adapter: Any, timeout: float | None) -> float | None:
    """The runner's per-case limit for ``adapter``, reconciled with the adapter's own.

    An adapter that runs cases in a child process (``subprocess:``, ``--isolate``) has its own
    per-case limit in ``child_timeout``: it kills and restarts the child past it, which is the
    clean way out of a stuck case. The runner lowers that limit to its own ``timeout`` and
    watches at the adapter's limit plus :data:`GRACE`, so the child's limit always acts first.
    """
    own = getattr(adapter, "child_timeout", None)
    if not isinstance(own, (int, float)) or isinstance(own, bool):
        return timeout
    if timeout is not None:
        own = min(float(own), timeout)
        adapter.child_timeout = own
    return float(own) + GRACE


Judge = Callable[[Mapping[str, Any]], list[Result]]


def run_batch(judge: Judge, entries: list[Mapping[str, Any]], timeout: float | None,
              failed: Callable[[Mapping[str, Any], str], list[Result]],
              progress: Callable[[int, int, str], None] | None = None,
              on_timeout: Callable[[], None] | None = None) -> list[Result]:
    """Judge every entry on one helper thread, watched by this one: the runner's one timeout.

    Handing every case to a thread and back costs more than small cases take, so the helper
    thread runs the cases back to back while this thread only watches the clock (``timeout``
    seconds per case; ``None``: no limit). Adapter code always runs on the helper thread, so a
    ``KeyboardInterrupt`` there is the adapter's, never the user's.

    * A case running past ``timeout`` is recorded through ``failed`` ("timed out after ..."),
      ``on_timeout`` is called (it may kill a child process), the thread is abandoned (Python
      cannot kill it) and a fresh thread goes on from the next case.
    * An exception escaping ``judge`` is the runner's own (``judge`` contains adapter code): it
      is recorded at once through ``failed`` as an internal error naming its type and message,
      and the run goes on.
    """
    per_case: list[list[Result] | None] = [None] * len(entries)
    lock = threading.Lock()  # orders "a case finished" against "that case timed out"
    start = 0
    while start < len(entries):
        current = {"index": start, "since": time.monotonic()}
        finished = threading.Event()
        cancelled = threading.Event()

        def work(begin: int, current: dict[str, float], finished: threading.Event,
                 cancelled: threading.Event) -> None:
            try:
                for i in range(begin, len(entries)):
                    with lock:
                        if cancelled.is_set():
                            return
                        current["index"], current["since"] = i, time.monotonic()
                    if progress:
                        progress(i + 1, len(entries), str(entries[i]["id"]))
                    try:
                        results = judge(entries[i])
                    except BaseException as exc:  # the runner's own failure: say what it is, at once
                        results = failed(entries[i], "internal error of the runner (not the adapter's): "
                                                     + describe_exception(exc)[2])
                    with lock:
                        if cancelled.is_set():
                            return
                        per_case[i] = results
            finally:
                finished.set()

        threading.Thread(target=work, args=(start, current, finished, cancelled), daemon=True,
                         name="posenc-adapter").start()
        tick = 0.05 if timeout is None else min(0.05, timeout)
        while not finished.wait(tick):
            if timeout is None:
                continue
            with lock:
                index = int(current["index"])
                if time.monotonic() - current["since"] > timeout and per_case[index] is None:
                    cancelled.set()
                    per_case[index] = failed(entries[index], f"timed out after {timeout:g} s")
                    start = index + 1
                    break
        else:
            start = len(entries)
        if cancelled.is_set() and on_timeout is not None:
            on_timeout()
    return [r for results in per_case for r in (results or [])]


def describe_exception(exc: BaseException) -> tuple[str, str, str]:
    """``(type name, message, "Type: message")`` of any exception, even one whose ``str()`` raises."""
    kind = type(exc).__name__
    try:
        message = str(exc)
    except BaseException as inner:  # an adapter's exception may fail even at being printed
        message = f"<str() of the exception raised {type(inner).__name__}>"
    return kind, message, f"{kind}: {message}" if message else kind


def exception_info(exc: BaseException, frames: int = 5) -> dict[str, Any]:
    """The type, message and last ``frames`` frames of an exception, for the report of an ``error``."""
    kind, message, _ = describe_exception(exc)
    remote = getattr(exc, "remote_frames", None)  # raised in an isolated child (--isolate)
    try:
        stack = traceback.extract_tb(exc.__traceback__)[-frames:]
        where = [f"{Path(f.filename).name}:{f.lineno} in {f.name}: {(f.line or '').strip()}" for f in stack]
    except Exception:  # a broken traceback must not hide the error itself
        where = []
    if isinstance(remote, list) and remote:
        where = [str(frame) for frame in remote[-frames:]]
    elif isinstance(exc, AdapterCrash):
        where = []  # raised by the runner's side of a child process: its frames are not the adapter's
    return {"type": kind, "message": message, "frames": where}


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
    manifest = loaded.manifest
    expectations = expectations or []
    entries = [c for c in manifest["cases"] if select is None or select(c)]
    start = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")

    def rerun(entry: Mapping[str, Any]) -> str:
        return f"posenc-ref conformance {spec} --case {entry['id']}{rerun_extra}"

    results = run_cases(adapter, loaded, entries, expectations, rerun, timeout=timeout, progress=progress)
    return Run(
        adapter=adapter_info(adapter, spec),
        corpus=corpus_info(directory, loaded, len(entries), corpus_dir is None),
        results=results,
        expectation_errors=unmatched_expectations(expectations, manifest),
        started=started,
        seconds=time.monotonic() - start,
        command=f"posenc-ref conformance {spec}{rerun_extra}",
        environment=environment(),
    )


def run_cases(adapter: Any, loaded: corpus.Corpus, entries: list[Mapping[str, Any]],
              expectations: list[Expectation], rerun: Callable[[Mapping[str, Any]], str], *,
              timeout: float | None = 60.0, progress: Callable[[int, int, str], None] | None = None) -> list[Result]:
    """Every entry run through ``adapter`` (:func:`run_case`) under the runner's one timeout
    (:func:`run_batch`, reconciled with the adapter's own by :func:`reconcile_timeout`)."""
    watch = reconcile_timeout(adapter, timeout)
    name = safe_name(adapter)

    def judge(entry: Mapping[str, Any]) -> list[Result]:
        return run_case(adapter, loaded, entry, expectations, rerun(entry))

    def failed(entry: Mapping[str, Any], message: str) -> list[Result]:
        return case_error(entry, expectations, message, rerun(entry), adapter=name)

    interrupt = getattr(adapter, "interrupt", None)
    return run_batch(judge, entries, watch, failed, progress, interrupt if callable(interrupt) else None)


def safe_name(adapter: Any) -> str:
    """``str(adapter.name)``, or a note when reading it fails (adapter code)."""
    try:
        return str(adapter.name)
    except Exception as exc:  # adapter code
        return f"<name raised {type(exc).__name__}>"


def adapter_info(adapter: Any, spec: str) -> dict[str, Any]:
    """The report's ``adapter`` block; a per-op dtype mapping is listed under ``dtypes``."""
    info: dict[str, Any] = {"spec": spec, "name": safe_name(adapter),
                            "version": str(getattr(adapter, "version", "")), "dtype": dtype_label(adapter.dtype)}
    if isinstance(adapter.dtype, Mapping):
        info["dtypes"] = {str(k): str(v) for k, v in adapter.dtype.items()}
    return info


def dtype_label(dtype: Any) -> str:
    """A dtype for headings: the dtype itself, or for a per-op mapping its ``default`` (else ``mixed``)."""
    if isinstance(dtype, Mapping):
        return str(dtype.get("default", "mixed"))
    return str(dtype)


def corpus_info(directory: Path, loaded: corpus.Corpus, selected: int, bundled: bool) -> dict[str, Any]:
    """The report's ``corpus`` block; the path is never an absolute machine path."""
    manifest = loaded.manifest
    return {"path": "bundled" if bundled else report_path(directory), "version": manifest["version"],
            "format_version": manifest["format_version"], "manifest_sha256": loaded.manifest_sha256,
            "modified": bool(loaded.problems), "problems": loaded.problems, "cases_selected": selected,
            "cases_total": len(manifest["cases"])}


def report_path(path: Path) -> str:
    """``path`` relative to the working directory when under it, else its last two parts."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix() or "."
    except (ValueError, OSError):
        parts = Path(path).parts
        return "/".join(parts[-2:]) if len(parts) > 1 else str(path)


def environment() -> dict[str, str]:
    return {"posenc_ref": __version__, "numpy": np.__version__, "python": platform.python_version(),
            "platform": platform.platform()}


def _category(adapter: Any, exc: BaseException) -> tuple[str | None, str]:
    """The adapter's category for ``exc``, and a note when its mapper itself failed."""
    try:
        return error_category(adapter, exc), ""
    except BaseException as mapper_exc:  # the adapter's mapper is adapter code too
        return None, f"; error_category() raised {describe_exception(mapper_exc)[2]}"


def _base(entry: Mapping[str, Any], rerun: str, adapter: str) -> dict[str, Any]:
    try:
        family = get_op(entry["op"]).family
    except KeyError:
        family = str(entry["op"]).split(".")[0]
    return {"case_id": entry["id"], "op": entry["op"], "family": family, "comment": entry["comment"],
            "params": entry["params"], "level": entry["level"], "rerun": rerun, "adapter": adapter}


def case_error(entry: Mapping[str, Any], expectations: list[Expectation], message: str, rerun: str,
               seconds: float = 0.0, *, adapter: str = "") -> list[Result]:
    """An ``error`` for every output of a case (subject to its xfail expectations)."""
    return _Verdicts(entry, expectations, rerun, adapter).every("error", message, seconds)


class _Verdicts:
    """Builds the :class:`Result` of each output of one case, its expectations applied."""

    def __init__(self, entry: Mapping[str, Any], expectations: list[Expectation], rerun: str, adapter: str) -> None:
        self.entry = entry
        self.outputs = tuple(entry["outputs"]) or (ERROR_OUTPUT,)
        self.base = _base(entry, rerun, adapter)
        self.expected_for = {o: _expectation_for(expectations, entry["id"], o) for o in self.outputs}
        self.whole_case = _expectation_for(expectations, entry["id"], None)

    def one(self, output: str, status: str, message: str = "", seconds: float = 0.0, **extra: Any) -> Result:
        expectation = self.expected_for[output]
        return Result(output=output, status=_apply_expectation(status, expectation), message=message,
                      expectation=expectation, seconds=seconds, **self.base, **extra)

    def every(self, status: str, message: str, seconds: float = 0.0, **extra: Any) -> list[Result]:
        return [self.one(o, status, message, seconds, **extra) for o in self.outputs]

    def plain(self, status: str, message: str, **extra: Any) -> list[Result]:
        """``status`` for every output, expectations not applied (skip, not_applicable, corrupt corpus)."""
        return [Result(output=o, status=status, message=message, **self.base, **extra) for o in self.outputs]


@dataclass
class _Call:
    """What one call into adapter code gave: its value, or what it raised."""

    value: Any = None
    raised: BaseException | None = None
    seconds: float = 0.0


def _call_adapter(fn: Callable[[], Any]) -> _Call:
    """``fn()`` with everything it raises caught: ``SystemExit``, ``KeyboardInterrupt`` and any
    other ``BaseException`` from adapter code are that adapter's error, never the runner's end."""
    t0 = time.monotonic()
    try:
        value = fn()
    except BaseException as exc:  # adapter code; see the docstring
        return _Call(None, exc, time.monotonic() - t0)
    return _Call(value, None, time.monotonic() - t0)


def run_case(adapter: Any, loaded: corpus.Corpus, entry: Mapping[str, Any], expectations: list[Expectation],
             rerun: str) -> list[Result]:
    """Run and judge one case (its manifest ``entry``) on the calling thread; one :class:`Result`
    per output. Timeouts are :func:`run_batch`'s business."""
    verdicts = _Verdicts(entry, expectations, rerun, safe_name(adapter))
    whole_case = verdicts.whole_case
    if whole_case and whole_case.status == "skip":
        return verdicts.plain("skip", whole_case.reason, expectation=whole_case)
    try:
        golden = loaded.case(entry)
    except corpus.CorpusError as exc:
        return verdicts.plain("error", "corrupt corpus file, not used: " + "; ".join(exc.problems))
    inputs = {k: v.copy() for k, v in golden.inputs.items()}
    kind = "error" if golden.expected_error else "valid"
    model_level = uses_run_model(adapter, golden.op)
    if model_level:
        asked = _call_adapter(lambda: model_supports(adapter, golden.op, golden.params))
    elif not hasattr(adapter, "run"):
        asked = _Call(f"{golden.op}: the adapter runs model cases only (run_model, no run)")
    else:
        asked = _call_adapter(lambda: supports(adapter, golden.op, golden.params, case_kind=kind,
                                               inputs={k: v.copy() for k, v in inputs.items()}))
    if asked.raised is not None:
        return verdicts.every("error", f"adapter supports() raised {describe_exception(asked.raised)[2]}",
                              exception=exception_info(asked.raised))
    if asked.value:
        return verdicts.plain("not_applicable", str(asked.value))
    if model_level:
        call = _call_adapter(lambda: call_model(adapter, golden.op, golden.params, inputs))
    else:
        call = _call_adapter(lambda: adapter.run(golden.op, dict(golden.params), inputs))
    if golden.expected_error:
        return _judge_error_case(adapter, verdicts, golden.expected_error, call)
    if call.raised is not None:
        return verdicts.every("error", f"adapter raised {describe_exception(call.raised)[2]}", call.seconds,
                              exception=exception_info(call.raised))
    return _judge_outputs(adapter, verdicts, golden, call)


def _judge_error_case(adapter: Any, verdicts: _Verdicts, want: str, call: _Call) -> list[Result]:
    """An error case: the adapter must reject the input with the category ``want``.

    A crash (:class:`~posenc_ref.runner.adapters.AdapterCrash`: a dead child, a protocol
    breach) or a ``BaseException`` that is not an ``Exception`` (``SystemExit``,
    ``KeyboardInterrupt``) is no rejection: it is an ``error``, as on a valid case.
    """
    raised, seconds = call.raised, call.seconds
    if raised is None:
        return verdicts.every("fail", f"accepted invalid input; expected an error of category {want}", seconds)
    native = describe_exception(raised)[2]
    if isinstance(raised, AdapterCrash) or not isinstance(raised, Exception):
        return verdicts.every("error", f"adapter raised {native} (a crash, not a rejection); expected {want}",
                              seconds, exception=exception_info(raised))
    got, note = _category(adapter, raised)
    if got == want:
        return verdicts.every("pass", f"raised {want} ({native})", seconds)
    return verdicts.every("wrong_error", f"raised {got or 'an unmapped exception'} ({native}); expected {want}{note}",
                          seconds, exception=exception_info(raised))


def _judge_outputs(adapter: Any, verdicts: _Verdicts, golden: corpus.GoldenCase, call: _Call) -> list[Result]:
    """A valid case: each returned output against its golden values, then the diagnosis of failures."""
    seconds = call.seconds
    try:
        by_name = normalise_outputs(call.value, verdicts.outputs)
    except ValueError as exc:
        return verdicts.every("error", f"adapter {exc}", seconds)
    dtype = dtype_for(adapter.dtype, golden.op)
    results = []
    failing: dict[str, np.ndarray[Any, Any]] = {}
    for name in verdicts.outputs:
        golden_out = golden.outputs[name]
        expectation = verdicts.expected_for[name]
        actual, garbage = as_output_array(by_name[name], golden_out.expected, golden_out.tolerance == "exact")
        if actual is None:
            nonfinite = nonfinite_output(by_name[name], golden_out.expected)
            if nonfinite is not None:  # NaN/inf where finite values are expected: still diagnosed
                failing[name] = nonfinite
            results.append(verdicts.one(name, "error", f"adapter {garbage}", seconds))
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
        results.append(verdicts.one(name, status, "", seconds, comparison=verdict, tolerance=pol.describe(),
                                    tolerance_source=source))
    if failing:
        try:
            check = diagnose_model if is_model_op(golden.op) else diagnose
            found = check(get_op(golden.op), golden.params, golden.inputs, failing, dtype)
        except KeyError:
            found = []
        for result in results:
            if result.output in failing:
                result.diagnosis = found
    return results
