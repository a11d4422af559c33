"""Fitted continuous parameters of the convention diagnosis (:mod:`posenc_ref.runner.diagnosis`).

A library that reads the wrong scale, base or attention factor rarely exposes its frequencies:
it returns rotated vectors or cos/sin tables. The fits here read the parameters back from the
actual output and turn each into hypotheses that the diagnosis evaluates like any other (the
tolerance decides):

* ``rope.inv_freq``: the frequencies and the attention factor as returned;
* ``rope.cos_sin``: per pair, the angle ``atan2(sin, cos)`` and the gain ``hypot(cos, sin)``;
* ``rope.scores``: a closed-form ratio for the attention factor, a bounded 1-D search for the
  scale and the base (below);
* ``rope.apply``: for pair ``(u, v)`` of ``x`` and ``(u', v')`` of ``y`` (paired by the
  case's ``layout``), the angle ``atan2(u v' - v u', u u' + v v')`` and the gain
  ``|(u', v')| / |(u, v)|``, summed over the rows of one position before the ``atan2``.

The angle at the smallest positive position ``p`` gives ``w_i = theta_i / p`` for the pairs with
``p w_i < pi/2`` (no wrap), refined at each larger position by the whole turns the estimate
predicts (positions at least doubling, so the work stays bounded). From ``w`` and the gain: a
uniform scale of the op's plain frequencies (``rope_type='linear'`` with factor ``s``), a base
(``rope_type='default'``, and for a scaled case the same scaling at another base), and the
attention factor. Each fitted value is tried rounded to 3, 4 and 6 significant digits and as
fitted: a library's value is usually a short decimal, and at positions near 10^6 only the exact
value passes.

``rope.scores`` sums the pairs' products, so its per-pair angles do not separate; it is fitted
through the reference itself. The attention factor from the part of the scores that doubling
the case's factor adds (``a^2`` on the rotated channels, pass-through channels unscaled), in
closed form. A uniform scale ``s`` (``log s`` over [1, 64]) and a base (``log b`` over [10, 1e8],
a scaled case keeping its scaling): the best of
:data:`~posenc_ref.runner.diagnosis_fit_scores.GRID` points on the scores at the smallest positive
offset ``|m - n|``, refined by :data:`~posenc_ref.runner.diagnosis_fit_scores.GOLDEN_STEPS`
golden-section steps, then again at
offsets at least 32 times larger within the bracket where the fastest pair's angle moves by
half a radian. A fit that does not cut the residual of the case's own params (and the size of
the actual) tenfold at every stage is dropped, so a random output costs no tolerance checks. With
one score at the smallest offset the value is not pinned down and the fit can miss.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope, rope_scaling
from posenc_ref.opspec import OpRecord
from posenc_ref.runner._diagnosis_fit_values import _FITTED, _SKIPPED, Fit, _show, _values
from posenc_ref.runner.diagnosis_fit_scores import _scores


def _base_estimate(w: NDArray[np.float64], exponent: NDArray[np.float64]) -> float | None:
    """The median over pairs of ``w_i ** (-1 / e_i)`` (``w_i = b ** -e_i``), None without a usable pair."""
    usable = (exponent > 0) & np.isfinite(w) & (w > 0)
    if not usable.any():
        return None
    return float(np.median(np.exp(-np.log(w[usable]) / exponent[usable])))


def _ladder(positions: NDArray[Any]) -> NDArray[np.int64]:
    """The smallest positive position, then each one at least twice the last taken (at most 64)."""
    taken: list[int] = []
    for p in np.unique(positions[positions > 0]).tolist():
        if not taken or p >= 2 * taken[-1]:
            taken.append(int(p))
    return np.array(taken, dtype=np.int64)


def _frequencies(angle: NDArray[np.float64], positions: NDArray[np.float64],
                 case: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per pair, the frequency whose turns give ``angle`` (R, P) at ``positions`` (R,), ascending, > 0.

    NaN where the first position may wrap (``p w_i >= pi/2`` for the case's frequency) or the
    angle is not below a half turn.
    """
    first = angle[0] / positions[0]
    w = np.where((positions[0] * case < math.pi / 2) & (np.abs(angle[0]) < 3.0), first, np.nan)
    for theta, p in zip(angle[1:], positions[1:]):
        turns = np.round((p * w - theta) / (2 * math.pi))
        w = (theta + 2 * math.pi * turns) / p
    return w


def _inv_freq(op: OpRecord, params: Mapping[str, Any], failing: Mapping[str, NDArray[Any]]) -> Iterator[Fit]:
    if "dim" not in params:
        return
    dim, base = int(params["dim"]), float(params.get("base", 10000.0))
    if "inv_freq" in failing:
        actual = np.asarray(failing["inv_freq"], dtype=np.float64)
        plain = rope_scaling.rope_inv_freq(dim=dim, base=base)[0]
        usable = np.isfinite(actual) & (actual > 0)
        if usable.sum() >= 2 and actual.shape == plain.shape:
            for factor in _values(float(np.median(plain[usable] / actual[usable]))):
                if factor >= 1.0:
                    yield (f"matches rope_type='linear' with factor {_show(factor)}{_FITTED}",
                           {"dim": dim, "base": base, "rope_type": "linear", "factor": factor}, {})
            fitted = _base_estimate(actual, 2.0 * np.arange(dim // 2) / dim)
            for value in _values(fitted) if fitted is not None else ():
                yield f"matches rope_type='default' with base {_show(value)}{_FITTED}", {"dim": dim, "base": value}, {}
    if "attention_factor" in failing and params.get("rope_type") in ("yarn", "longrope"):
        for value in _values(float(np.asarray(failing["attention_factor"]).ravel()[0])):
            yield (f"matches the reference with attention_factor {_show(value)}{_FITTED}",
                   {**params, "attention_factor": value}, {})


def _cos_sin(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
             failing: Mapping[str, NDArray[Any]]) -> Iterator[Fit]:
    if not {"cos", "sin"} & set(failing):
        return
    w_case = np.asarray(inputs["inv_freq"], dtype=np.float64)
    pos = np.asarray(inputs["positions"])
    reference = op.call(params, inputs)  # a table that passed stands in for its actual
    tables = {name: np.asarray(failing.get(name, reference[name]), dtype=np.float64) for name in ("cos", "sin")}
    n, width = w_case.size, params.get("width", "full")
    if tables["cos"].shape != reference["cos"].shape or tables["sin"].shape != reference["sin"].shape:
        return
    # the width's column of each pair: half and full list the pairs first, full_interleaved twice in a row
    cos, sin = ((t[..., 0::2] if width == "full_interleaved" else t[..., :n]) for t in (tables["cos"], tables["sin"]))
    factor = float(params.get("attention_factor", 1.0))
    gain = float(np.sqrt(np.mean(cos**2 + sin**2)))
    steps = _ladder(pos)
    if steps.size:
        angle = np.stack([np.arctan2(sin[pos == p].sum(axis=0), cos[pos == p].sum(axis=0)) for p in steps])
        w = _frequencies(angle, steps.astype(np.float64), w_case)
        usable = np.isfinite(w) & (w > 0) & (w_case > 0)
        if usable.any():
            for s in _values(float(np.median(w_case[usable] / w[usable])), 1.0):
                if s > 1.0:
                    yield (f"matches rope_type='linear' with factor {_show(s)}{_FITTED}", dict(params),
                           {**inputs, "inv_freq": w_case / s})
        fitted = _base_estimate(np.where(usable, w, np.nan), 2.0 * np.arange(n) / (2 * n))
        for value in _values(fitted) if fitted is not None else ():
            yield (f"matches rope_type='default' with base {_show(value)}{_FITTED}", dict(params),
                   {**inputs, "inv_freq": rope_scaling.rope_inv_freq(dim=2 * n, base=value)[0]})
    if abs(gain / factor - 1.0) > 1e-9:
        for value in _values(gain, factor):
            yield (f"matches the reference with attention_factor {_show(value)}{_FITTED}",
                   {**params, "attention_factor": value}, inputs)


def _pairs(layout: str, space: int) -> tuple[NDArray[np.int64], ...]:
    """Channels ``(u, v)`` read from x and ``(u', v')`` written to y for each pair under ``layout``."""
    read = "half" if layout == "half" else "interleaved"  # interleaved_to_half reads interleaved pairs ...
    write = "interleaved" if layout == "interleaved" else "half"  # ... and writes them in half order
    n = space // 2
    into = rope.rope_layout_permutation(space, from_layout=read, to_layout="half")
    out = rope.rope_layout_permutation(space, from_layout=write, to_layout="half")
    return into[:n], into[n:], out[:n], out[n:]


def _apply(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
           failing: Mapping[str, NDArray[Any]]) -> Iterator[Fit]:
    if "y" not in failing:
        return
    x, y = np.asarray(inputs["x"], dtype=np.float64), np.asarray(failing["y"], dtype=np.float64)
    if x.ndim != 4 or y.shape != x.shape:
        return
    if params.get("x_layout", "BHTD") == "BHTD":
        x, y = x.transpose(0, 2, 1, 3), y.transpose(0, 2, 1, 3)  # (B, T, H, D)
    pos = np.broadcast_to(np.asarray(inputs["positions"]).reshape(-1, x.shape[1]), x.shape[:2])  # (B, T)
    head = x.shape[-1]
    scaling = {k: params[k] for k in rope.SCALING if k in params}
    rotation = {"base": float(params.get("base", 10000.0)), "rotary_dim": params.get("rotary_dim"),
                "partial": params.get("partial", "prefix"), "func": "diagnosis"}
    space, w_plain = rope.rotary_frequencies(head, **rotation)
    _, w_case, scaled = rope.scaled_frequencies(head, **rotation, **scaling)
    iu, iv, ou, ov = _pairs(str(params.get("layout", "half")), space)
    u, v, u2, v2 = x[..., iu], x[..., iv], y[..., ou], y[..., ov]  # (B, T, H, P)
    factor = float(params.get("attention_factor", 1.0))
    total = factor * scaled
    gain = float(np.sqrt(np.sum(u2**2 + v2**2) / np.sum(u**2 + v**2)))
    steps = _ladder(pos)
    plain_params = {**params, **rope.SCALING}
    named = params.get("rope_type", "default") != "default"
    if steps.size:
        angle = np.stack([np.arctan2((u[pos == p] * v2[pos == p] - v[pos == p] * u2[pos == p]).sum(axis=(0, 1)),
                                     (u[pos == p] * u2[pos == p] + v[pos == p] * v2[pos == p]).sum(axis=(0, 1)))
                          for p in steps])  # (positions, P)
        w = _frequencies(angle, steps.astype(np.float64), np.maximum(w_case, w_plain))
        usable = np.isfinite(w) & (w > 0) & (w_plain > 0)
        # the reading's own attention factor: the case's, or the gain seen where that differs
        kept = factor if abs(gain / factor - 1.0) <= 1e-9 else next(
            (a for a in (total, *_values(gain)) if abs(gain / a - 1.0) <= 1e-6), factor)
        also = "" if kept == factor else f", attention_factor {_show(kept)}"
        if usable.any():
            for s in _values(float(np.median(w_plain[usable] / w[usable])), None if named else 1.0):
                if s >= 1.0:
                    yield (f"matches rope_type='linear' with factor {_show(s)}{also}{_FITTED}",
                           {**plain_params, "rope_type": "linear", "factor": s, "attention_factor": kept}, inputs)
        exponent = 2.0 * np.arange(space // 2) / space
        fitted = _base_estimate(np.where(usable, w, np.nan), exponent)
        base = float(params.get("base", 10000.0))
        for value in _values(fitted, None if named else base) if fitted is not None else ():
            yield (f"matches rope_type='default' with base {_show(value)}{also}{_FITTED}",
                   {**plain_params, "base": value, "attention_factor": kept}, inputs)
        ratio = np.where(usable & (w_case > 0), w / np.where(w_case > 0, w_case, 1.0), np.nan)
        moved = _base_estimate(ratio, exponent) if named else None
        for value in _values(base * moved, base) if moved is not None else ():
            yield f"matches the reference with base {_show(value)}{_FITTED}", {**params, "base": value}, inputs
    if abs(gain / total - 1.0) > 1e-9:
        if params.get("rope_type") in ("yarn", "longrope"):
            for value in _values(gain / factor, params.get("scaling_attention_factor")):
                yield (f"matches the reference with scaling_attention_factor {_show(value)}{_FITTED}",
                       {**params, "scaling_attention_factor": value}, inputs)
        for value in _values(gain / scaled, factor):
            yield (f"matches the reference with attention_factor {_show(value)}{_FITTED}",
                   {**params, "attention_factor": value}, inputs)


def fitted(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
           failing: Mapping[str, NDArray[Any]]) -> list[Fit]:
    """The fitted hypotheses of a failure, in a fixed order; a fit that cannot be made is skipped, never raised."""
    fits = {"rope.inv_freq": lambda: _inv_freq(op, params, failing),
            "rope.cos_sin": lambda: _cos_sin(op, params, inputs, failing),
            "rope.apply": lambda: _apply(op, params, inputs, failing),
            "rope.scores": lambda: _scores(op, params, inputs, failing)}
    if op.name not in fits:
        return []
    found: list[Fit] = []
    try:
        with np.errstate(all="ignore"):
            for fit in fits[op.name]():
                found.append(fit)
    except _SKIPPED:
        pass
    return found
