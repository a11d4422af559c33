"""The ``rope.scores`` fits of the diagnosis (:mod:`posenc_ref.runner.diagnosis_fit` says how they work)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope
from posenc_ref.opspec import OpRecord
from posenc_ref.runner._diagnosis_fit_values import _FITTED, _SKIPPED, Fit, _show, _values

GRID: Final = 48
"""Points of the coarse grid of a ``rope.scores`` search (over ``log s`` or ``log base``)."""
GOLDEN_STEPS: Final = 40
"""Golden-section steps of each refinement stage of a ``rope.scores`` search."""

_GOLDEN: Final = (math.sqrt(5.0) - 1.0) / 2.0
_STAGE: Final = 32  # each refinement stage reaches offsets at least this many times the last
_CUT: Final = 0.1  # a scores fit must cut the residual of the case's own params to this share
_LARGEST_SCALE: Final = 64.0  # the linear factors searched: 1 to this
_BASES: Final = (10.0, 1e8)  # the bases searched


def _offsets(inputs: Mapping[str, NDArray[Any]], shape: tuple[int, ...]) -> NDArray[np.int64]:
    """``|m - n|`` of every score (B, H, Tq, Tk)."""
    qp = np.asarray(inputs["q_positions"], dtype=np.int64).reshape(-1, shape[2])
    kp = np.asarray(inputs["k_positions"], dtype=np.int64).reshape(-1, shape[3])
    return np.broadcast_to(np.abs(qp[:, None, :, None] - kp[:, None, None, :]), shape)


def _stages(offsets: NDArray[np.int64]) -> list[int]:
    """The smallest positive offset, then each at least :data:`_STAGE` times the last, then the largest."""
    taken: list[int] = []
    for d in np.unique(offsets[offsets > 0]).tolist():
        if not taken or d >= _STAGE * taken[-1]:
            taken.append(int(d))
    largest = int(offsets.max()) if offsets.size else 0
    return taken + ([largest] if taken and largest > taken[-1] else [])


def _golden(f: Callable[[float], float], lo: float, hi: float) -> None:
    """:data:`GOLDEN_STEPS` golden-section steps on ``[lo, hi]`` (``f`` keeps its own best)."""
    c, d = hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo)
    fc, fd = f(c), f(d)
    for _ in range(GOLDEN_STEPS):
        if fc <= fd:
            hi, d, fd = d, c, fc
            c = hi - _GOLDEN * (hi - lo)
            fc = f(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + _GOLDEN * (hi - lo)
            fd = f(d)


def _explains(actual: NDArray[np.float64], fit: NDArray[np.float64], reference: NDArray[np.float64]) -> bool:
    """Whether ``fit`` cuts the residual to :data:`_CUT` of the case's own and of ``actual``'s size."""
    residual = float(np.linalg.norm(actual - fit))
    return math.isfinite(residual) and residual <= _CUT * min(float(np.linalg.norm(actual - reference)),
                                                               float(np.linalg.norm(actual)))


def _search(scores: Callable[[float], NDArray[np.float64]], actual: NDArray[np.float64],
            reference: NDArray[np.float64], usable: NDArray[np.bool_], offsets: NDArray[np.int64], lo: float,
            hi: float, rate: Callable[[float], float]) -> float | None:
    """The ``x`` in ``[lo, hi]`` whose ``scores(x)`` is closest to ``actual``, None if none explains it.

    First on the scores at offsets up to the smallest positive one: the best of :data:`GRID`
    points, then :data:`GOLDEN_STEPS` golden-section steps within a grid step of it; then at each
    larger stage of offsets (:func:`_stages`, the last takes every usable score) golden-section
    steps within the bracket where the fastest pair's angle moves by at most half a radian
    (``rate(x)``: its change per unit of ``x`` and of offset). The search stops at the first stage
    whose best fit does not :func:`_explains` the scores of that stage.
    """
    stages = _stages(offsets[usable])
    x, half = lo, hi - lo
    for index, d in enumerate(stages):
        where = usable & (offsets <= d)
        tried: dict[float, tuple[float, NDArray[np.float64]]] = {}

        def f(t: float) -> float:
            try:
                fit = scores(t)[where]
            except _SKIPPED:
                fit = np.full(int(where.sum()), np.inf)
            tried[t] = (float(np.linalg.norm(actual[where] - fit)), fit)
            return tried[t][0]
        if index == 0:
            grid = np.linspace(lo, hi, GRID)
            x, half = float(grid[int(np.argmin([f(float(t)) for t in grid]))]), float(grid[1] - grid[0])
        else:
            speed = d * rate(x)
            half = min(half, 0.5 / speed) if speed > 0 else half
        _golden(f, max(lo, x - half), min(hi, x + half))
        x = min(tried, key=lambda t: (tried[t][0], t))
        if not _explains(actual[where], tried[x][1], reference[where]):
            return None
    return x if stages else None


def _scores(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
            failing: Mapping[str, NDArray[Any]]) -> Iterator[Fit]:
    if "scores" not in failing:
        return
    actual = np.asarray(failing["scores"], dtype=np.float64)
    factor = float(params.get("attention_factor", 1.0))

    def call(changed: Mapping[str, Any]) -> NDArray[np.float64]:
        return np.asarray(op.call(changed, inputs)["scores"], dtype=np.float64)
    plain = call(params)
    usable = np.isfinite(actual) & np.isfinite(plain)
    if actual.shape != plain.shape or actual.ndim != 4 or not usable.any():
        return
    head = np.shape(inputs["q"])[-1]
    scaling = {k: params[k] for k in rope.SCALING if k in params}
    rotation = {"base": float(params.get("base", 10000.0)), "rotary_dim": params.get("rotary_dim"),
                "partial": params.get("partial", "prefix"), "func": "diagnosis"}
    space, w_plain = rope.rotary_frequencies(head, **rotation)
    scaled = rope.scaled_frequencies(head, **rotation, **scaling)[2]
    named = params.get("rope_type", "default") != "default"
    plain_params = {**params, **rope.SCALING}
    offsets = _offsets(inputs, actual.shape)
    exponent = 2.0 * np.arange(space // 2) / space
    # a uniform scale s of the plain frequencies: pair i turns d w_i / s, by that much per unit log s
    linear = _search(lambda x: call({**plain_params, "rope_type": "linear", "factor": math.exp(x)}), actual, plain,
                     usable, offsets, 0.0, math.log(_LARGEST_SCALE), lambda x: float(np.max(w_plain)) / math.exp(x))
    for s in _values(math.exp(linear), None if named else 1.0) if linear is not None else ():
        if s >= 1.0:
            yield (f"matches rope_type='linear' with factor {_show(s)}{_FITTED}",
                   {**plain_params, "rope_type": "linear", "factor": s}, inputs)
    # a base b: pair i turns d b^-e_i, by e_i d b^-e_i per unit log b; a scaled case keeps its scaling
    based = _search(lambda x: call({**(params if named else plain_params), "base": math.exp(x)}), actual, plain,
                    usable, offsets, math.log(_BASES[0]), math.log(_BASES[1]),
                    lambda x: float(np.max(exponent * np.exp(-exponent * x))))
    for value in _values(math.exp(based), rotation["base"]) if based is not None else ():
        if named:
            yield f"matches the reference with base {_show(value)}{_FITTED}", {**params, "base": value}, inputs
        else:
            yield (f"matches rope_type='default' with base {_show(value)}{_FITTED}",
                   {**plain_params, "base": value}, inputs)
    # the attention factor a on the rotated channels of q and k: their part of each score scales by a^2,
    # the part 3 f^2 R that doubling the case's factor f adds (pass-through channels are not scaled)
    a, b = actual[usable], plain[usable]
    rotated = call({**params, "attention_factor": 2.0 * factor})[usable] - b
    u = float((a - b) @ rotated) / float(rotated @ rotated) if float(rotated @ rotated) > 0 else 0.0
    ratio = 1.0 + 3.0 * u  # (a / f)^2
    if ratio > 0 and abs(math.sqrt(ratio) - 1.0) > 1e-9 and _explains(a, b + u * rotated, b):
        if params.get("rope_type") in ("yarn", "longrope"):
            for value in _values(scaled * math.sqrt(ratio), params.get("scaling_attention_factor")):
                yield (f"matches the reference with scaling_attention_factor {_show(value)}{_FITTED}",
                       {**params, "scaling_attention_factor": value}, inputs)
        for value in _values(factor * math.sqrt(ratio), factor):
            yield (f"matches the reference with attention_factor {_show(value)}{_FITTED}",
                   {**params, "attention_factor": value}, inputs)
