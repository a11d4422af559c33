"""Convention diagnosis: when an output fails, search for the explanation.

For a failing output the runner recomputes the case from its stored inputs under a bounded,
deterministic list of hypotheses and reports, simplest first, every one that brings the actual
output within tolerance:

* every other value of each discrete parameter of the op (the ``choices`` of convention and
  non-convention parameters alike, ``layout``, ``alignment``, ``fully_masked``, ..., the flip
  of a boolean and the listed ``suspects``), one at a time; then, only when no single
  hypothesis explains the failure, every pair of convention slips (a layout and a ladder);
* YaRN's composite convention unbundled into its independent choices: ramp truncation
  (``truncate=False`` ignored), the mscale rule (vLLM DeepSeek's ``g(s, mscale) / g(s,
  mscale_all_dim or 0)``), an explicit ``attention_factor`` honoured or not, and beta 0 read
  literally instead of as the default; the bundle ``yarn_convention='vllm_deepseek'`` stays a
  named alias. LongRoPE: which factor set; dynamic NTK: which length;
* fitted continuous parameters (:mod:`posenc_ref.runner.diagnosis_fit`) of ``rope.inv_freq``
  (from the frequencies returned), ``rope.cos_sin`` and ``rope.apply`` (from the per-pair
  angles and gains of the tables or the rotated vectors, at the smallest positive positions):
  a uniform scale of the plain frequencies ("matches rope_type='linear' with factor 2.6
  (fitted)", also for a case already scaled, e.g. dynamic NTK read as a uniform rescale), a
  base ("matches rope_type='default' with base 500000 (fitted)"; for a scaled ``rope.apply``
  case also "matches the reference with base 10000 (fitted)"), an attention factor ("matches
  the reference with attention_factor 1.2 (fitted)"; ``scaling_attention_factor`` for YaRN and
  LongRoPE). Each value is tried rounded to 3, 4 and 6 significant digits and as fitted, and
  the shortest that matches is reported. ``rope.scores`` (a score sums the pairs, so their
  angles do not separate): the attention factor from the scores' ratio to the reference, the
  scale and the base by a bounded search on ``log s`` / ``log base`` (a grid, then
  golden-section steps at growing offsets ``|m - n|``) with the reference function;
* positions shifted by +1 and -1 for each position input; a shift below 0 is evaluated by the
  formula (``rope.cos_sin`` by the angle-addition identity, ``rope.apply`` through the
  inverse of the rotation at position 1), not rejected;
* precision: the reference judged at float32 tolerance for an adapter that declares float64
  (float32 angles in a float64 pipeline), and the runner's float32/float16 emulations;
* every position input shifted together by a larger offset (+-2 to +-8, none below 0);
* for ops taking ``q``, ``k``, ``v``: the scale (1 and 1/D for the default 1/sqrt(D)), the
  window's edge (``window`` +- 1) and the GQA head mapping (query head ``h`` reading kv head
  ``h % Hkv``), besides the alignment and the fully-masked policy among the discrete choices;
* NaN outputs (the engine hands them over), which then match ``fully_masked='nan'``.

Integer outputs get a line of their own: the count of differing elements, the offset and
where ("buckets off by +1 at 12 of 4096 elements"). When nothing explains a failure the
answer is one ``unexplained: ...`` line naming the closest candidate and its residual.
:func:`group_failures` condenses a run's failures into one line per explanation (the terminal
summary prints it under each adapter's verdict).

The search is bounded: at most :data:`~posenc_ref.runner.diagnosis_hypotheses.MAX_HYPOTHESES`
recomputations of the case (singles and pairs together), in a fixed order, so the same failure
always gets the same answer; ``benchmarks/bench_diagnosis.py`` measures the time per failing
output (under 1 s on the corpus).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError
from posenc_ref.opspec import OpRecord, Output
from posenc_ref.runner._diagnosis_fit_values import fit_key
from posenc_ref.runner.diagnosis_hypotheses import MAX_HYPOTHESES, Outputs, hypotheses, pair_hypotheses
from posenc_ref.tolerance import Comparison, Dtype, compare, policy

UNEXPLAINED: Final = "unexplained"
"""How the line that reports no explanation begins."""


def _integer_lines(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
                   failing: Mapping[str, NDArray[Any]]) -> list[str]:
    """For integer outputs: how many elements differ, by how much and where."""
    outputs = {out.name: out for out in op.outputs}
    integer = [name for name in failing if outputs[name].dtype == "int64"]
    if not integer:
        return []
    try:
        expected = op.call(params, inputs)
    except (SpecError, ValueError, TypeError):
        return []
    lines = []
    for name in integer:
        actual, want = np.asarray(failing[name]), np.asarray(expected[name])
        if actual.shape != want.shape:
            continue
        diff = actual.astype(np.int64) - want.astype(np.int64)
        where = np.argwhere(diff != 0)
        if not where.size:
            continue
        offsets = sorted({int(v) for v in diff[diff != 0]})
        shown = ", ".join(f"{v:+d}" for v in offsets[:4]) + (", ..." if len(offsets) > 4 else "")
        first = ", ".join(str(tuple(int(i) for i in row)) for row in where[:3])
        more = ", ..." if len(where) > 3 else ""
        lines.append(f"{name} off by {shown} at {len(where)} of {diff.size} elements (at {first}{more})")
    return lines


def _within(out: Output, actual: NDArray[Any], expected: NDArray[Any], cparams: Mapping[str, Any],
            cinputs: Mapping[str, Any], dtype: Dtype) -> Comparison:
    """``compare`` under the output's policy at ``dtype``, with its phase and input scale where it has them."""
    try:
        phase = out.phase(cparams, cinputs) if out.phase else None
        scale = out.input_scale(cparams, cinputs) if out.input_scale else None
    except (SpecError, ValueError, TypeError, KeyError):
        phase = scale = None
    if out.tolerance == "phase" and phase is None:
        phase = np.zeros(np.shape(expected))  # no phase derivable (a formula-shifted case): the tightest bound
    with np.errstate(all="ignore"):
        return compare(actual, expected, policy(out.tolerance, dtype), phase, scale)


def _judge(op: OpRecord, candidate: Outputs, failing: Mapping[str, NDArray[Any]], cparams: Mapping[str, Any],
           cinputs: Mapping[str, Any], dtype: Dtype, passing: Mapping[str, NDArray[Any]]) -> tuple[bool, float]:
    """Whether ``candidate`` explains every failing output, and its largest absolute residual (over all outputs).

    ``passing`` holds the reference's values of the outputs that passed: a hypothesis must
    keep those within tolerance too (a rope_type that zeroes the failing attention factor but
    moves the frequencies that passed explains nothing).
    """
    outputs = {out.name: out for out in op.outputs}
    matched, residual = True, 0.0
    for name, value in passing.items():
        if np.shape(candidate[name]) != np.shape(value):
            return False, math.inf
        moved = np.asarray(candidate[name], dtype=np.float64)
        matched = matched and _within(outputs[name], moved, value, cparams, cinputs, dtype).passed
        with np.errstate(all="ignore"):
            gap = np.abs(moved - value)
        gap = np.where(np.isnan(moved) & np.isnan(value), 0.0, np.where(np.isnan(gap), np.inf, gap))
        residual = max(residual, float(gap.max()) if gap.size else 0.0)
    for name, actual in failing.items():
        out = outputs[name]
        expected = np.asarray(candidate[name])
        if expected.shape != actual.shape:
            return False, math.inf
        verdict = _within(out, actual, expected, cparams, cinputs, dtype)
        with np.errstate(all="ignore"):
            gap = np.abs(np.asarray(actual, dtype=np.float64) - expected.astype(np.float64))
        same = np.isnan(np.asarray(actual, dtype=np.float64)) & np.isnan(expected.astype(np.float64))
        gap = np.where(same, 0.0, np.where(np.isnan(gap), np.inf, gap))
        residual = max(residual, float(gap.max()) if gap.size else 0.0)
        matched = matched and verdict.passed
    return matched, residual


def diagnose(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
             failing: Mapping[str, NDArray[Any]], dtype: Dtype) -> list[str]:
    """The explanations of the failing outputs in ``failing`` (name -> actual array), simplest first.

    Integer outputs add a line saying which elements differ and by how much; when no
    hypothesis explains the failure, the answer ends in one ``unexplained: ...`` line with the
    closest candidate and its residual.
    """
    params = op.full_params(params)
    found: list[str] = []
    closest: tuple[float, str] | None = None
    fits: set[str | None] = set()  # a fit's shortest matching rounding is reported, its longer ones not
    try:
        reference = op.call(params, inputs)
    except (SpecError, ValueError, TypeError):
        reference = {}
    passing = {name: np.asarray(value, dtype=np.float64) for name, value in reference.items() if name not in failing}
    singles = hypotheses(op, params, inputs, failing, dtype)
    for index, (label, compute, cparams, cinputs, judge) in enumerate(
            [*singles, *pair_hypotheses(op, params, inputs, MAX_HYPOTHESES - len(singles))]):
        if index == len(singles) and found:
            break  # a single slip explains it: pairs are not tried
        try:
            with np.errstate(all="ignore"):
                candidate = compute()
        except (SpecError, ValueError, TypeError, FloatingPointError, KeyError, OverflowError, ZeroDivisionError):
            continue
        matched, residual = _judge(op, candidate, failing, cparams, cinputs, judge or dtype, passing)
        if matched and label not in found and (fit_key(label) is None or fit_key(label) not in fits):
            found.append(label)
            fits.add(fit_key(label))
        elif not matched and judge is None and (closest is None or residual < closest[0]):
            closest = (residual, label)
    lines = _integer_lines(op, params, inputs, failing)
    if not found:
        if closest is not None and math.isfinite(closest[0]):
            lines.append(f"{UNEXPLAINED}: no known mistake explains it; closest candidate: "
                         f"{closest[1]} (residual {closest[0]:.3g})")
        else:
            lines.append(f"{UNEXPLAINED}: no known mistake explains it")
    return found + lines


def nonfinite_output(value: Any, expected: NDArray[Any]) -> NDArray[np.float64] | None:
    """A float output of the right shape holding NaN or inf where finite values are expected, else None.

    The engine reports such an output as an error; it still hands it to :func:`diagnose`,
    which can name the policy behind it (``fully_masked='nan'``).
    """
    if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
        return None  # Note: anything else was judged garbage already; converting it again runs adapter code
    array = np.asarray(value, dtype=np.float64)
    if array.shape != np.shape(expected) or np.all(np.isfinite(array)):
        return None
    return array


_RESIDUAL: Final = re.compile(r" \(residual ([^)]*)\)$")


def failure_groups(results: Iterable[Any]) -> list[dict[str, Any]]:
    """The diagnosed failures of one run grouped by explanation, largest group first.

    ``results`` are the engine's results; each failing (``fail``/``error``) output with a
    diagnosis counts once, under the first line of its diagnosis (the simplest explanation);
    the unexplained ones are grouped by their closest candidate. Each group is a dict:
    ``explanation``, ``count``, ``total`` (the diagnosed failing outputs of the run),
    ``unexplained`` (bool), ``largest_residual`` (the unexplained group's largest residual,
    else None) and ``case_ids`` (sorted, each once). The JSON report writes these groups
    (``failure_groups``); :func:`group_failures` writes them as lines.
    """
    groups: dict[str, list[tuple[str, float]]] = {}
    for r in results:
        if r.status not in ("fail", "error") or not r.diagnosis:
            continue
        key = next((line for line in r.diagnosis if not line.startswith(UNEXPLAINED)), r.diagnosis[-1])
        found = _RESIDUAL.search(key) if key.startswith(UNEXPLAINED) else None
        if found is not None:
            key = key[:found.start()]
        residual = float(found.group(1)) if found is not None else 0.0
        groups.setdefault(key, []).append((r.case_id, residual))
    total = sum(len(v) for v in groups.values())
    return [{"explanation": key, "count": len(members), "total": total,
             "unexplained": key.startswith(UNEXPLAINED),
             "largest_residual": (max(res for _, res in members) if key.startswith(UNEXPLAINED) else None),
             "case_ids": sorted({case_id for case_id, _ in members})}
            for key, members in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))]


def group_failures(results: Iterable[Any]) -> list[str]:
    """:func:`failure_groups` as lines: "38 of 41 failing outputs: <explanation>", an unexplained
    group with its largest residual."""
    lines = []
    for group in failure_groups(results):
        residual = group["largest_residual"]
        worst = f" (largest residual {residual:.3g})" if residual else ""
        lines.append(f"{group['count']} of {group['total']} failing outputs: {group['explanation']}{worst}")
    return lines
