"""The hypotheses of the convention diagnosis (:mod:`posenc_ref.runner.diagnosis`), simplest first.

Each hypothesis is a recomputation of the failing case under one changed reading: another value
of a discrete parameter, a pair of slips, YaRN's bundle unbundled, a fitted continuous
parameter (:mod:`posenc_ref.runner.diagnosis_fit`), shifted positions, a narrower precision.
:func:`hypotheses` lists the singles and :func:`pair_hypotheses` the pairs, in a fixed order and
at most :data:`MAX_HYPOTHESES` together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope_scaling
from posenc_ref.opspec import REQUIRED, OpRecord
from posenc_ref.runner.diagnosis_fit import fitted
from posenc_ref.runner.emulation import EMULATIONS, emulate
from posenc_ref.runner.emulation import attention as attention_emulation
from posenc_ref.runner.emulation import rope as rope_emulation
from posenc_ref.tolerance import Dtype

MAX_HYPOTHESES: Final = 256
"""The most recomputations of one failing case the search makes."""


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
    # rope.apply / rope.scores name the variant's explicit factor scaling_attention_factor
    explicit = "scaling_attention_factor" if any(p.name == "scaling_attention_factor" for p in op.params) else (
        "attention_factor")
    if kind == "yarn":
        if params.get("truncate") is False:
            yield ("matches the reference under truncate=True (YaRN truncate=False ignored: the ramp bounds "
                   "floored/ceiled)"), {**params, "truncate": True}
        if params.get(explicit) is not None:
            yield (f"explicit attention_factor ignored: matches the reference with {explicit}=None "
                   "(the mscale rule instead)"), {**params, explicit: None}
        literal = {name: _LITERAL_BETA for name in ("beta_fast", "beta_slow") if params.get(name) == 0}
        if literal:
            names = " and ".join(f"{name}=0" for name in literal)
            yield f"matches {names} read literally (not as the default 32 / 1)", {**params, **literal}
        if params.get("yarn_convention", "transformers") != "vllm_deepseek" and params.get("factor"):
            s, m, m_all = float(params["factor"]), params.get("mscale"), params.get("mscale_all_dim")
            rule = rope_scaling.yarn_mscale(s, 1.0 if m is None else m) / rope_scaling.yarn_mscale(
                s, 0.0 if m_all is None else m_all)
            yield ("matches the vLLM DeepSeek mscale rule g(s, mscale) / g(s, mscale_all_dim or 0) "
                   f"= {rule:.6g}"), {**params, explicit: rule}
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


OFFSETS: Final = (2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8, -8)
"""The position offsets the search tries beyond +1/-1, all position inputs shifted together."""


def _offsets(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Iterator[Hypothesis]:
    """Every position input shifted by the same offset (a cache length or a padding offset slip);
    offsets that would pass below 0 are not tried (the formula is derivable for one step only)."""
    names = op.position_inputs
    if not names:
        return
    lowest = min((int(np.min(inputs[name])) for name in names if np.asarray(inputs[name]).size), default=0)
    for delta in OFFSETS:
        if lowest + delta < 0:
            continue
        shifted = {**inputs, **{name: np.asarray(inputs[name]) + delta for name in names}}
        sign = "+" if delta > 0 else "-"
        yield (f"matches the reference with positions {sign} {abs(delta)} (a position offset; "
               f"offsets up to {max(OFFSETS)} are searched)"), _call(op, params, shifted), params, shifted, None


def _attention(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Iterator[Hypothesis]:
    """For ops that take ``q``, ``k``, ``v``: the scale, the window's edge and the GQA head mapping."""
    qkv = ("q", "k", "v")
    if not set(qkv) <= set(op.inputs) or any(n not in inputs or np.ndim(inputs[n]) != 4 for n in qkv):
        return
    names = {p.name for p in op.params}
    q, k = np.asarray(inputs["q"]), np.asarray(inputs["k"])
    d = q.shape[-1]
    if "scale" in names and params.get("scale") is None and d > 1:
        for value, text in ((1.0, "logits not scaled: matches the reference with scale=1 (1/sqrt(D) left out)"),
                            (1.0 / d, f"matches the reference with scale=1/D = 1/{d} (1/D for 1/sqrt(D))")):
            changed = {**params, "scale": value}
            yield text, _call(op, changed, inputs), changed, inputs, None
    window = params.get("window")
    if "window" in names and window is not None:
        for value in (int(window) + 1, int(window) - 1):
            if value >= 1:
                edge = "one more key" if value > int(window) else "one key fewer"
                changed = {**params, "window": value}
                yield (f"matches the reference with window={value} (the window edge off by one: {edge} "
                       "per query)"), _call(op, changed, inputs), changed, inputs, None
    if op.name == "attention":
        def naive() -> Outputs:
            return attention_emulation.softmax_without_max(params, inputs)
        yield ("matches a float32 softmax without max subtraction: exp(s) / sum exp(s), where exp overflows "
               "past a logit of 88.7 and the row turns into NaN"), naive, params, inputs, "float32"
    heads, kv_heads = q.shape[1], k.shape[1]
    if 1 < kv_heads < heads and heads % kv_heads == 0:
        order = np.arange(heads) % kv_heads
        tiled = {**inputs, "k": k[:, order], "v": np.asarray(inputs["v"])[:, order]}
        yield (f"GQA heads tiled: matches the reference with query head h reading kv head h % {kv_heads} "
               f"(not h // {heads // kv_heads})"), _call(op, params, tiled), params, tiled, None


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


def _rope_apply_slips(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Iterator[
        Hypothesis]:
    """``rope.apply``: ggml's running-product angles; the attention factor on the pass-through channels."""
    if op.name != "rope.apply":
        return
    full = op.full_params(params)

    def running() -> Outputs:
        op.call(params, inputs)  # the reference's errors
        return {"y": rope_emulation.rotate_running_product(np.asarray(inputs["x"]), inputs["positions"], full)}
    yield ("matches ggml's float32 running-product angles (theta = p, then theta *= base^(-2/d) after each pair; "
           "pair i's angle rounded i times)"), running, params, inputs, None
    head_dim = np.shape(inputs["x"])[-1]
    if rope_emulation.has_pass_through_factor(full, head_dim):
        def whole_head() -> Outputs:
            return {"y": rope_emulation.factor_on_pass_through(op.call(params, inputs)["y"], full)}
        yield (f"attention factor {rope_emulation.whole_factor(full, head_dim):.6g} also on the "
               f"{head_dim - int(full['rotary_dim'])} pass-through channels: matches the reference with them "
               "scaled too"), whole_head, params, inputs, None


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
    found += list(_attention(op, params, inputs))
    found += list(_precision(op, params, inputs, dtype))
    found += list(_rope_apply_slips(op, params, inputs))
    for label, changed, cinputs in fitted(op, params, inputs, failing):
        found.append((label, _call(op, changed, cinputs), changed, cinputs, None))
    found += list(_offsets(op, params, inputs))
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
