"""``golden check``: every case recomputed from its stored inputs (:func:`check`), and the
comparisons of the reference with the oracle that ``golden generate`` shares.

Part of :mod:`posenc_ref.corpus`, which re-exports everything public here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref._corpus_read import Corpus, GoldenCase
from posenc_ref.errors import SpecError
from posenc_ref.opspec import Case, OpRecord
from posenc_ref.registry import OPS, get_op
from posenc_ref.tolerance import compare, policy

CHECK_ULPS: Final = 2
"""``golden check``: a recomputed oracle float may differ from the stored one by this many ulps."""

SCALE_RTOL: Final = 1e-9
"""``golden check``: a recomputed phase or input scale may differ from the stored one by this (relative)."""

Progress = Callable[[int, int, str], None]


def _jsonable(params: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, (np.integer, np.floating)):
            value = value.item()
        if isinstance(value, (dict, list)):  # a model case's config: a JSON object, kept as it is
            value = json.loads(json.dumps(value))
        elif not isinstance(value, (int, float, str, bool, type(None))):
            raise TypeError(f"parameter {key}={value!r} is not JSON-serialisable")
        out[key] = value
    return out


def _expected_error(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, Any], case: Case) -> None:
    try:
        op.call(params, inputs)
    except SpecError as exc:
        if exc.category != case.error:
            raise RuntimeError(f"{case.id}: the reference raised {exc.category}, "
                               f"the case declares {case.error}") from exc
        return
    raise RuntimeError(f"{case.id}: the reference raised nothing, the case declares {case.error}")


def _reference_disagreements(op: OpRecord, case_id: str, params: Mapping[str, Any],
                             inputs: Mapping[str, Any], expected: Mapping[str, NDArray[Any]]) -> list[str]:
    """Where the float64 reference misses the oracle values under the float64 policy."""
    actual = op.call(params, inputs)
    problems = []
    for out in op.outputs:
        phase = out.phase(params, inputs) if out.phase else None
        scale = out.input_scale(params, inputs) if out.input_scale else None
        verdict = compare(actual[out.name], expected[out.name], policy(out.tolerance, "float64"), phase, scale)
        if actual[out.name].shape != expected[out.name].shape or not verdict.passed:
            problems.append(f"{case_id}/{out.name}: reference differs from the oracle "
                            f"(worst {verdict.abs_error:.3g} at {verdict.worst_index}, allowed {verdict.allowed:.3g})")
    return problems


def _ulp_distance(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """Largest distance in float64 ulps between two float64 arrays of the same shape."""
    def key(x: NDArray[Any]) -> NDArray[np.uint64]:
        bits = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
        sign = np.uint64(1 << 63)
        return np.where(bits & sign, ~bits, bits | sign)  # unsigned keys in the order of the floats

    ka, kb = key(a), key(b)
    return float(np.where(ka > kb, ka - kb, kb - ka).max(initial=0))


def check(directory: Path, *, progress: Progress | None = None) -> list[str]:
    """Recompute every case from its stored inputs and compare with the corpus.

    Integrity first (:func:`verify`; a manifest that is intact but not the one this package
    ships is reported and still recomputed, to show what differs); then the case ids and parameters against
    the registry; then, per case: the oracle recomputed from the stored inputs (integers exact, floats within
    ``CHECK_ULPS`` float64 ulps), the float64 reference within its float64 tolerance, the stored phases and
    input scales against the records (within ``SCALE_RTOL``), and error cases raising their declared category.
    Returns readable problems (empty when clean).
    """
    from posenc_ref import oracle

    loaded = Corpus(directory)
    problems = list(loaded.problems)
    if [p for p in problems if p != loaded.digest_problem]:
        return problems  # a manifest that is not the shipped one but is intact is still recomputed
    stored = {c["id"]: c for c in loaded.cases}
    registered = {case.id: (op, case) for op in OPS for case in op.cases}
    problems += [f"{cid}: registered but not in the corpus (run `posenc-ref golden generate`)"
                 for cid in registered if cid not in stored]
    problems += [f"{cid}: in the corpus but not registered" for cid in stored if cid not in registered]
    for n, (cid, entry) in enumerate(stored.items(), 1):
        if progress:
            progress(n, len(stored), cid)
        if cid not in registered:
            continue
        op, case = registered[cid]
        params = _jsonable(op.full_params(case.params))
        if entry["params"] != params:
            problems.append(f"{cid}: params differ: corpus {entry['params']} vs registry {params}")
            continue
        golden = loaded.case(entry)
        if case.error:
            try:
                _expected_error(op, params, golden.inputs, case)
            except RuntimeError as exc:
                problems.append(str(exc))
            continue
        fresh = oracle.expected(op.name, params, golden.inputs)
        for name, out in golden.outputs.items():
            if fresh[name].shape != out.expected.shape:
                problems.append(f"{cid}/{name}: oracle shape {fresh[name].shape} vs stored {out.expected.shape}")
            elif out.tolerance == "exact":
                if not np.array_equal(fresh[name], out.expected):
                    problems.append(f"{cid}/{name}: recomputed integers differ from the stored ones")
            elif (distance := _ulp_distance(fresh[name], out.expected)) > CHECK_ULPS:
                problems.append(f"{cid}/{name}: recomputed oracle is {distance:g} ulp from the stored value")
        problems += _reference_disagreements(get_op(entry["op"]), cid, params, golden.inputs,
                                             {k: v.expected for k, v in golden.outputs.items()})
        problems += _scale_disagreements(op, cid, params, golden)
    return problems


def _scale_disagreements(op: OpRecord, case_id: str, params: Mapping[str, Any], golden: GoldenCase) -> list[str]:
    """Stored phases and input scales that the op's record no longer computes (or no longer has)."""
    problems = []
    for out in op.outputs:
        stored = golden.outputs.get(out.name)
        if stored is None:
            continue
        for label, function, array in (("phase", out.phase, stored.phase),
                                       ("input scale", out.input_scale, stored.input_scale)):
            if function is None or array is None:
                if (function is None) != (array is None):
                    problems.append(f"{case_id}/{out.name}: the {label} is "
                                    f"{'stored but not in the registry' if function is None else 'missing'}")
                continue
            fresh = np.asarray(function(params, golden.inputs), dtype=np.float64)
            try:
                fresh = np.broadcast_to(fresh, array.shape)
            except ValueError:
                problems.append(f"{case_id}/{out.name}: the stored {label} has shape {list(array.shape)}, the "
                                f"recomputed one {list(fresh.shape)}")
                continue
            if not np.allclose(fresh, array, rtol=SCALE_RTOL, atol=0.0):
                problems.append(f"{case_id}/{out.name}: the stored {label} differs from the recomputed one")
    return problems
