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
* fitted continuous parameters of ``rope.inv_freq``: a uniform frequency scale ("matches
  rope_type='linear' with factor 2.60 (fitted)"), a base, an attention factor;
* positions shifted by +1 and -1 for each position input; a shift below 0 is evaluated by the
  formula (``rope.cos_sin`` by the angle-addition identity, ``rope.apply`` through the
  inverse of the rotation at position 1), not rejected;
* precision: the reference judged at float32 tolerance for an adapter that declares float64
  (float32 angles in a float64 pipeline), and the runner's float32/float16 emulations;
* NaN outputs (the engine hands them over), which then match ``fully_masked='nan'``.

Integer outputs get a line of their own: the count of differing elements, the offset and
where ("buckets off by +1 at 12 of 4096 elements"). When nothing explains a failure the
answer is one ``unexplained: ...`` line naming the closest candidate and its residual.
:func:`group_failures` condenses a run's failures into one line per explanation (the terminal
summary prints it under each adapter's verdict).

The search is bounded: at most :data:`MAX_HYPOTHESES` recomputations of the case (singles and
pairs together), in a fixed order, so the same failure always gets the same answer; ``benchmarks/bench_diagnosis.py``
measures the time per failing output (well under 1 s on the corpus).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope_scaling
from posenc_ref.errors import SpecError
from posenc_ref.opspec import REQUIRED, OpRecord, Output
from posenc_ref.runner.emulation import EMULATIONS, emulate
from posenc_ref.tolerance import Comparison, Dtype, compare, policy

MAX_HYPOTHESES: Final = 256
"""The most recomputations of one failing case the search makes."""

UNEXPLAINED: Final = "unexplained"
"""How the line that reports no explanation begins."""

Outputs = dict[str, NDArray[Any]]
Hypothesis = tuple[str, Callable[[], Outputs], Mapping[str, Any], Mapping[str, Any], "Dtype | None"]
"""``(label, compute, params, inputs for the phase, judged at dtype or None for the adapter's)``."""

_YARN_BUNDLE = ("truncation always, the DeepSeek mscale rule, an explicit attention_factor ignored")
_MISSING: Final = object()
_LITERAL_BETA = 1e-12  # beta -> 0+: the correction bound goes past d - 1, the limit of a literal 0


def _call(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, Any]) -> Callable[[], Outputs]:
    return lambda: op.call(params, inputs)


def _current(op: OpRecord, params: Mapping[str, Any]) -> dict[str, Any]:
    """The case's parameters with every non-None default filled in (alternatives to try against)."""
    full = dict(params)
    for p in op.params:
        if p.name not in full and p.default is not REQUIRED and p.default is not None:
            full[p.name] = p.default
    return full


def _discrete(op: OpRecord, params: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    current = _current(op, params)
    for param in op.params:
        if param.name not in current:
            continue
        values: tuple[Any, ...] = param.choices + param.suspects
        if param.kind == "bool":
            values += (not current[param.name],)
        for value in values:
            if value == current[param.name]:
                continue
            changed = {**params, param.name: value}
            label = f"matches the reference under {param.name}={value!r}"
            if param.name == "yarn_convention" and value == "vllm_deepseek":
                label += f" (a bundle: {_YARN_BUNDLE})"
            yield label, changed


def _pairs(op: OpRecord, params: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Two convention slips at once (a layout and a ladder, an alignment and a policy), each pair once."""
    convention = {p.name for p in op.params if p.is_convention}
    singles = [(label, changed) for label, changed in _discrete(op, params)
               if next(k for k in changed if changed[k] != params.get(k, _MISSING)) in convention]
    for i, (first, a) in enumerate(singles):
        name_a = next(k for k in a if a[k] != params.get(k, _MISSING))
        for second, b in singles[i + 1:]:
            name_b = next(k for k in b if b[k] != params.get(k, _MISSING))
            if name_a != name_b:
                text = second.removeprefix("matches the reference under ")
                yield f"{first} and {text}", {**a, name_b: b[name_b]}


def _rope_scaling_choices(op: OpRecord, params: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The independent choices inside YaRN, LongRoPE and dynamic NTK (``rope_type`` ops)."""
    kind = params.get("rope_type", "longrope" if op.name == "rope.longrope_inv_freq" else None)
    if kind == "yarn":
        if params.get("truncate") is False:
            yield ("matches the reference under truncate=True (YaRN truncate=False ignored: the ramp bounds "
                   "floored/ceiled)"), {**params, "truncate": True}
        if params.get("attention_factor") is not None:
            yield ("explicit attention_factor ignored: matches the reference with attention_factor=None "
                   "(the mscale rule instead)"), {**params, "attention_factor": None}
        literal = {name: _LITERAL_BETA for name in ("beta_fast", "beta_slow") if params.get(name) == 0}
        if literal:
            names = " and ".join(f"{name}=0" for name in literal)
            yield f"matches {names} read literally (not as the default 32 / 1)", {**params, **literal}
        if params.get("yarn_convention", "transformers") != "vllm_deepseek" and params.get("factor"):
            s, m, m_all = float(params["factor"]), params.get("mscale"), params.get("mscale_all_dim")
            rule = rope_scaling.yarn_mscale(s, 1.0 if m is None else m) / rope_scaling.yarn_mscale(
                s, 0.0 if m_all is None else m_all)
            yield ("matches the vLLM DeepSeek mscale rule g(s, mscale) / g(s, mscale_all_dim or 0) "
                   f"= {rule:.6g}"), {**params, "attention_factor": rule}
    if kind == "longrope" and "context_length" in params and "original_max_position" in params:
        trained = int(params["original_max_position"])
        if int(params["context_length"]) <= trained:
            yield ("LongRoPE always the long factors: matches the reference with the long_factor set at "
                   f"context_length <= {trained}"), {**params, "context_length": trained + 1}
        else:
            yield ("LongRoPE always the short factors: matches the reference with the short_factor set at "
                   f"context_length > {trained}"), {**params, "context_length": trained}
    if kind == "dynamic" and params.get("context_length") and params.get("original_max_position"):
        trained = int(params["original_max_position"])
        if int(params["context_length"]) != trained:
            yield (f"dynamic NTK at the trained length: matches the reference with context_length={trained}"
                   ), {**params, "context_length": trained}


def _fitted(op: OpRecord, params: Mapping[str, Any], failing: Mapping[str, NDArray[Any]]) -> Iterator[
        tuple[str, dict[str, Any]]]:
    """Continuous parameters of ``rope.inv_freq`` fitted to the actual frequencies."""
    if op.name != "rope.inv_freq" or "dim" not in params:
        return
    dim, base = int(params["dim"]), float(params.get("base", 10000.0))
    if "inv_freq" in failing:
        actual = np.asarray(failing["inv_freq"], dtype=np.float64)
        try:
            plain = rope_scaling.rope_inv_freq(dim=dim, base=base)[0]
        except SpecError:
            return
        usable = np.isfinite(actual) & (actual > 0)
        if usable.sum() >= 2 and actual.shape == plain.shape:
            factor = float(np.median(plain[usable] / actual[usable]))
            if factor >= 1.0:
                yield (f"matches rope_type='linear' with factor {factor:.4g} (fitted)",
                       {"dim": dim, "base": base, "rope_type": "linear", "factor": factor})
            exponent = 2.0 * np.arange(dim // 2)[usable] / dim
            if exponent.any():
                fitted = float(math.exp(-np.sum(np.log(actual[usable]) * exponent) / np.sum(exponent**2)))
                yield f"matches rope_type='default' with base {fitted:.6g} (fitted)", {"dim": dim, "base": fitted}
    if "attention_factor" in failing and params.get("rope_type") in ("yarn", "longrope"):
        value = float(np.asarray(failing["attention_factor"]).ravel()[0])
        if math.isfinite(value) and value > 0:
            yield (f"matches the reference with attention_factor {value:.6g} (fitted)",
                   {**params, "attention_factor": value})


def _shift_below_zero(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
                      name: str) -> Callable[[], Outputs] | None:
    """The op at ``inputs[name] - 1`` where that passes below 0, by the formula (None: not derivable)."""
    pos = np.asarray(inputs[name])
    if op.name == "rope.cos_sin":
        def cos_sin() -> Outputs:
            at = op.call({**params, "attention_factor": 1.0}, inputs)
            one = op.call({**params, "attention_factor": 1.0}, {**inputs, name: np.ones_like(pos)})
            factor = float(params.get("attention_factor", 1.0))
            c, s, c1, s1 = at["cos"], at["sin"], one["cos"], one["sin"]
            return {"cos": factor * (c * c1 + s * s1), "sin": factor * (s * c1 - c * s1)}
        return cos_sin
    if op.name == "rope.apply":
        def apply() -> Outputs:
            x = np.asarray(inputs["x"], dtype=np.float64)
            d = x.shape[-1]
            bhtd = params.get("x_layout", "BHTD") == "BHTD"
            basis = np.eye(d).reshape((1, d, 1, d) if bhtd else (1, 1, d, d))
            plain = {**params, "attention_factor": 1.0}

            def rows(p: int) -> NDArray[np.float64]:  # row j: A(p) e_j, A(p) = P R(p) (P a layout permutation)
                at = op.call(plain, {"x": basis, name: np.full(1, p, dtype=np.int64)})["y"]
                return np.asarray(at, dtype=np.float64).reshape(d, d)
            # R(-1) = A(1)^-1 A(0); as rows, x R(-1)^T = x rows(0) rows(1)^-1
            back = np.linalg.solve(rows(1).T, (x @ rows(0)).reshape(-1, d).T).T.reshape(x.shape)
            return op.call(params, {**inputs, "x": back})
        return apply
    return None


def _positions(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Iterator[Hypothesis]:
    groups = [op.position_inputs] + ([(name,) for name in op.position_inputs] if len(op.position_inputs) > 1 else [])
    for group in groups if op.position_inputs else ():
        for delta in (1, -1):
            shifted = {**inputs, **{name: np.asarray(inputs[name]) + delta for name in group}}
            which = "" if group == ("positions",) else " and ".join(group) + ", "
            sign = "+" if delta > 0 else "-"
            text = f"matches the reference with positions {sign} 1 ({which}off by one)"
            below = delta < 0 and any(np.asarray(inputs[name]).size and np.min(inputs[name]) == 0 for name in group)
            formula = _shift_below_zero(op, params, inputs, group[0]) if below and len(group) == 1 else None
            if formula is not None:
                yield text + ", position 0 evaluated as -1 by the formula", formula, params, inputs, None
            else:
                yield text, _call(op, params, shifted), params, shifted, None


def _precision(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
               dtype: Dtype) -> Iterator[Hypothesis]:
    what = op.low_precision_intermediates
    if not what:
        return
    if dtype == "float64":
        yield (f"consistent with float32 {what}: within the float32 tolerance of the reference "
               "(the adapter declares float64)"), _call(op, params, inputs), params, inputs, "float32"
    if op.name in EMULATIONS:
        angle_dtypes: tuple[Dtype, ...] = ("float32", "float16") if dtype == "float64" else ("float16",)
        for angles in angle_dtypes:
            note = " (the adapter declares float64)" if angles == "float32" else ""
            label = f"matches the reference computed with {angles} {what}{note}"
            yield label, _emulated(op.name, params, inputs, angles), params, inputs, None


def _emulated(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
              angles: Dtype) -> Callable[[], Outputs]:
    return lambda: emulate(op, params, inputs, output_dtype="float32", angle_dtype=angles)


def hypotheses(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
               failing: Mapping[str, NDArray[Any]], dtype: Dtype) -> list[Hypothesis]:
    """Every hypothesis the search tries for this failure, simplest first (at most MAX_HYPOTHESES)."""
    found: list[Hypothesis] = []
    tried: list[Mapping[str, Any]] = []
    for label, changed in (*_rope_scaling_choices(op, params), *_discrete(op, params)):
        if changed not in tried:  # a named choice first; the plain flip it covers is not tried again
            tried.append(changed)
            found.append((label, _call(op, changed, inputs), changed, inputs, None))
    found += list(_positions(op, params, inputs))
    found += list(_precision(op, params, inputs, dtype))
    for label, changed in _fitted(op, params, failing):
        found.append((label, _call(op, changed, inputs), changed, inputs, None))
    return found[:MAX_HYPOTHESES]


def pair_hypotheses(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
                    budget: int) -> list[Hypothesis]:
    """Pairs of convention slips, tried only when no single hypothesis explains a failure (at most ``budget``)."""
    found: list[Hypothesis] = []
    for label, changed in _pairs(op, params):
        if len(found) >= budget:
            break
        found.append((label, _call(op, changed, inputs), changed, inputs, None))
    return found


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
        if matched and label not in found:
            found.append(label)
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


def group_failures(results: Iterable[Any]) -> list[str]:
    """The diagnosed failures of one run grouped by explanation, largest group first.

    ``results`` are the engine's results; each failing (``fail``/``error``) output with a
    diagnosis counts once, under the first line of its diagnosis (the simplest explanation);
    the unexplained ones are grouped by their closest candidate, with the largest residual.
    Lines read "38 of 41 failing outputs: <explanation>".
    """
    groups: dict[str, list[float]] = {}
    for r in results:
        if r.status not in ("fail", "error") or not r.diagnosis:
            continue
        key = next((line for line in r.diagnosis if not line.startswith(UNEXPLAINED)), r.diagnosis[-1])
        found = _RESIDUAL.search(key) if key.startswith(UNEXPLAINED) else None
        if found is not None:
            key = key[:found.start()]
        groups.setdefault(key, []).append(float(found.group(1)) if found is not None else 0.0)
    total = sum(len(v) for v in groups.values())
    lines = []
    for key, residuals in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        worst = f" (largest residual {max(residuals):.3g})" if key.startswith(UNEXPLAINED) and max(residuals) else ""
        lines.append(f"{len(residuals)} of {total} failing outputs: {key}{worst}")
    return lines
