"""One case run and judged on the calling thread (:func:`run_case`): the adapter called, its
error category or its outputs judged against the corpus, the expectations applied.

Part of :mod:`posenc_ref.runner.engine`, which re-exports everything public here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from posenc_ref import corpus
from posenc_ref.registry import get_op
from posenc_ref.runner._engine_batch import describe_exception, exception_info
from posenc_ref.runner._engine_results import ERROR_OUTPUT, Result
from posenc_ref.runner.adapters import (
    AdapterCrash,
    as_output_array,
    dtype_for,
    error_category,
    normalise_outputs,
    supports,
)
from posenc_ref.runner.diagnosis import diagnose, nonfinite_output
from posenc_ref.runner.expectations import Expectation
from posenc_ref.runner.models import call_model, diagnose_model, is_model_op, model_supports, uses_run_model
from posenc_ref.tolerance import Policy, compare, policy


def _expectation_for(expectations: list[Expectation], case_id: str, output: str | None) -> Expectation | None:
    for entry in expectations:
        if entry.matches(case_id, output):
            return entry
    return None


def _relaxed(pol: Policy, factor: float) -> Policy:
    return Policy(pol.tolerance_class, pol.dtype, pol.n_ulp * factor, pol.c_phase * factor, pol.phase_dtype,
                  pol.c_input * factor, pol.c_carried * factor)


def _apply_expectation(status: str, expectation: Expectation | None) -> str:
    if expectation is None or expectation.status != "xfail":
        return status
    if status in ("pass", "pass_relaxed"):
        return "xpass"
    return "xfail" if status in ("fail", "error", "wrong_error") else status


def safe_name(adapter: Any) -> str:
    """``str(adapter.name)``, or a note when reading it fails (adapter code)."""
    try:
        return str(adapter.name)
    except Exception as exc:  # adapter code
        return f"<name raised {type(exc).__name__}>"


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
        results.append(verdicts.one(name, status, "", seconds, comparison=verdict,
                                    tolerance=pol.describe(golden_out.phase is not None), tolerance_source=source))
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
