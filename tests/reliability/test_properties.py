"""Hypothesis properties of the reference functions: bounded work, finite out, exact buckets, errors only.

The example budget is fixed and database-free: each property draws
``POSENC_REF_PROPERTY_EXAMPLES`` examples (40 by default; CI's Hypothesis profile also
derandomizes them, see ``tests/conftest.py``), and nothing is stored between runs. The longer
run explores more::

    POSENC_REF_PROPERTY_EXAMPLES=5000 python -m pytest -q tests/reliability/test_properties.py

Work is measured in process CPU time (robust to a loaded machine): no call drawn here may
take a second.
"""

from __future__ import annotations

import os
import time
import tracemalloc
from typing import Any

import mpmath
import numpy as np
import pytest
from bad_input_table import BASES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from posenc_ref.alibi import alibi_bias, alibi_slopes
from posenc_ref.attention import attention
from posenc_ref.deberta import deberta_bucket
from posenc_ref.errors import EXACT_LIMIT, SpecError
from posenc_ref.rope import rope_cos_sin
from posenc_ref.sinusoidal import sinusoidal_table
from posenc_ref.t5 import LADDER_LIMIT, log_ladder, t5_bucket

EXAMPLES = int(os.environ.get("POSENC_REF_PROPERTY_EXAMPLES", "40"))
BUDGET = settings(max_examples=EXAMPLES, database=None, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CPU_LIMIT_S = 5.0
"""CPU seconds a call may take (the sizes drawn take milliseconds; the bound catches unbounded work)."""
MEMORY_SLACK = 4 * 2**20
"""Bytes any call may allocate beyond :data:`MEMORY_FACTOR` times its output (a refusal: this alone)."""
MEMORY_FACTOR = 16
"""The peak memory a call traces (``tracemalloc``, which sees NumPy's buffers) is at most this many
times the bytes of what it returns, plus :data:`MEMORY_SLACK`: work and memory bounded by the output."""


def _nbytes(result: Any) -> int:
    parts = result if isinstance(result, tuple) else (result,)
    return sum(int(p.nbytes) for p in parts if isinstance(p, np.ndarray))


def _within_budget(start: float, output_bytes: int) -> None:
    seconds = time.process_time() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert seconds < CPU_LIMIT_S, f"{seconds:.2f} s of CPU"
    assert peak <= MEMORY_SLACK + MEMORY_FACTOR * output_bytes, f"peak {peak} bytes for {output_bytes} of output"


def _bounded(call: Any) -> Any:
    """``call()``, held to 1 s of CPU time and to memory bounded by its output (a refusal by the slack)."""
    tracemalloc.start()
    start = time.process_time()
    try:
        result = call()
    except BaseException:
        _within_budget(start, 0)
        raise
    _within_budget(start, _nbytes(result))
    return result


def _ladder_mpmath(n: int, exact: int, limit: int, steps: int) -> tuple[int, bool]:
    """floor of the ladder value at 60 digits, and whether it is far (> 1e-30) from an integer."""
    with mpmath.workdps(60):
        value = steps * mpmath.log(mpmath.mpf(n) / exact) / mpmath.log(mpmath.mpf(limit) / exact)
        return int(mpmath.floor(value)), abs(value - mpmath.nint(value)) > mpmath.mpf(10) ** -30


positions_1d = hnp.arrays(np.int64, st.integers(1, 8), elements=st.integers(0, EXACT_LIMIT - 1))


@BUDGET
@given(st.integers(1, 40), st.integers(1, 2**20), st.integers(1, 60), st.integers(1, 2**40),
       st.sampled_from(["floor", "ceil"]))
def test_log_ladder_is_exact_against_mpmath(exact: int, span: int, steps: int, distance: int, rounding: str) -> None:
    limit = exact + span
    n = exact + distance
    floor, far = _ladder_mpmath(n, exact, limit, steps)
    if floor >= LADDER_LIMIT:
        with pytest.raises(SpecError):
            log_ladder([n], exact, limit, steps, rounding=rounding)
        return
    got = int(_bounded(lambda: log_ladder([n], exact, limit, steps, rounding=rounding))[0])
    if far:
        assert got == (floor if rounding == "floor" else floor + 1)
    else:
        assert got in (floor, floor + 1)


@BUDGET
@given(st.integers(1, 12), st.integers(0, 200), st.integers(1, 12), st.integers(0, 40))
def test_log_ladder_ties_match_integer_arithmetic(exact: int, extra: int, steps: int, r: int) -> None:
    # n^S E^r against L^r E^S decided in integers at small sizes, ties included
    limit = exact + 1 + extra
    n = min(max(exact, round(exact * (limit / exact) ** (min(r, 3 * steps) / steps))), 10**6)
    floor = 0
    while n**steps * exact ** (floor + 1) >= limit ** (floor + 1) * exact**steps:
        floor += 1
    tie = n**steps * exact**floor == limit**floor * exact**steps
    assert log_ladder([n], exact, limit, steps, rounding="floor").tolist() == [floor]
    assert log_ladder([n], exact, limit, steps, rounding="ceil").tolist() == [floor if tie else floor + 1]


@BUDGET
@given(st.integers(2, 4096), st.integers(1, 2**20), st.sampled_from(["bidirectional", "unidirectional"]),
       hnp.arrays(np.int64, st.integers(1, 64), elements=st.integers(-(EXACT_LIMIT - 1), EXACT_LIMIT - 1)))
def test_t5_buckets_are_bounded_monotone_and_fast(num_buckets: int, above: int, direction: str,
                                                  rel: np.ndarray) -> None:
    side = num_buckets // 2 if direction == "bidirectional" else num_buckets
    if side < 2:
        return
    max_distance = side // 2 + above
    buckets = _bounded(lambda: t5_bucket(rel, num_buckets=num_buckets, max_distance=max_distance,
                                         direction=direction))
    assert buckets.dtype == np.int64 and buckets.shape == rel.shape
    assert ((buckets >= 0) & (buckets < num_buckets)).all()
    magnitude = np.abs(rel) if direction == "bidirectional" else np.maximum(-rel, 0)
    for sign in ((rel > 0), (rel <= 0)):
        order = np.argsort(magnitude[sign], kind="stable")
        assert (np.diff(buckets[sign][order]) >= 0).all()


@BUDGET
@given(st.integers(4, 4096), st.integers(1, 2**20), st.sampled_from(["none", "max_relative_positions"]),
       hnp.arrays(np.int64, st.integers(1, 64), elements=st.integers(-(EXACT_LIMIT - 1), EXACT_LIMIT - 1)))
def test_deberta_buckets_are_odd_monotone_and_fast(buckets: int, above: int, clamp: str, delta: np.ndarray) -> None:
    limit = buckets // 2 + 1 + above
    try:
        out = _bounded(lambda: deberta_bucket(delta, position_buckets=buckets, max_relative_positions=limit,
                                              distance_clamp=clamp))
    except SpecError as exc:
        assert "2**36" in str(exc) and clamp == "none"
        return
    assert (np.sign(out) == np.sign(delta)).all()
    assert (deberta_bucket(-delta, position_buckets=buckets, max_relative_positions=limit,
                           distance_clamp=clamp) == -out).all()
    order = np.argsort(np.abs(delta), kind="stable")
    assert (np.diff(np.abs(out)[order]) >= 0).all()


@BUDGET
@given(positions_1d, st.integers(1, 16).map(lambda h: 2 * h), st.floats(1e-300, 1e300),
       st.sampled_from(["paper", "t2t"]), st.sampled_from(["interleaved", "concat_sin_cos", "concat_cos_sin"]))
def test_sinusoidal_finite_in_finite_out(positions: np.ndarray, dim: int, base: float, ladder: str,
                                         layout: str) -> None:
    try:
        table = _bounded(lambda: sinusoidal_table(positions, dim=dim, base=base, ladder=ladder, layout=layout))
    except SpecError as exc:
        assert exc.category == "invalid_argument" and "overflows float64" in str(exc)
        return
    assert table.shape == positions.shape + (dim,) and np.isfinite(table).all()


@BUDGET
@given(positions_1d, hnp.arrays(np.float64, st.integers(1, 8), elements=st.floats(-1e308, 1e308)))
def test_rope_cos_sin_finite_in_finite_out(positions: np.ndarray, inv_freq: np.ndarray) -> None:
    try:
        cos, sin = _bounded(lambda: rope_cos_sin(positions, inv_freq))
    except SpecError as exc:
        assert "positions x inv_freq overflows" in str(exc)
        assert not np.isfinite(float(np.abs(positions).max()) * float(np.abs(inv_freq).max()))
        return
    assert np.isfinite(cos).all() and np.isfinite(sin).all()


@BUDGET
@given(st.integers(1, 512), st.floats(1e-3, 1074.0), st.sampled_from(["press", "geometric"]), positions_1d)
def test_alibi_slopes_are_positive_and_biases_finite(num_heads: int, bias_max: float, rule: str,
                                                     positions: np.ndarray) -> None:
    slopes = alibi_slopes(num_heads=num_heads, slope_rule=rule, bias_max=bias_max)
    assert (slopes > 0).all() and np.isfinite(slopes).all()
    bias = _bounded(lambda: alibi_bias(positions, positions, num_heads=num_heads, slope_rule=rule,
                                       bias_max=bias_max))
    assert np.isfinite(bias).all()


magnitudes = st.floats(1e-300, 1e300)


@BUDGET
@given(magnitudes, magnitudes, magnitudes, st.one_of(st.none(), st.floats(1e-300, 1e300)), st.integers(0, 2**32))
def test_attention_finite_in_finite_out(q_scale: float, k_scale: float, v_scale: float, scale: float | None,
                                        seed: int) -> None:
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((1, 2, 3, 4)) * q_scale
    k = rng.standard_normal((1, 1, 5, 4)) * k_scale
    v = rng.standard_normal((1, 1, 5, 4)) * v_scale
    if not (np.isfinite(q).all() and np.isfinite(k).all() and np.isfinite(v).all()):
        return
    try:
        out = _bounded(lambda: attention(q, k, v, scale=scale))
    except SpecError as exc:
        assert "overflows float64" in str(exc)
        return
    assert np.isfinite(out).all()


wild_values = st.one_of(
    st.integers(-2**16, 2**16),
    st.sampled_from([2**53, 2**53 + 1, 2**63, -2**63, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.lists(st.integers(-2**16, 2**16), max_size=4),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=4),
    hnp.arrays(st.sampled_from([np.int64, np.uint64, np.float64, np.float16, np.bool_, np.int8, np.complex128]),
               hnp.array_shapes(min_dims=0, max_dims=4, max_side=3)),
)


@BUDGET
@given(st.sampled_from(sorted(BASES)), st.data())
def test_any_argument_gives_a_result_or_a_declared_error(func: str, data: st.DataObject) -> None:
    function, positional, base = BASES[func]
    names = sorted(base)
    if not names:
        return
    name = data.draw(st.sampled_from(names), label="argument")
    value = data.draw(wild_values, label="value")
    values = {**base, name: value}
    args = tuple(values.pop(n) for n in positional)
    try:
        result = _bounded(lambda: function(*args, **values))
    except SpecError as exc:
        assert str(exc).startswith(f"{func}: ") and exc.category in ("invalid_argument", "out_of_range",
                                                                      "invalid_shape")
        return
    except TypeError as exc:
        assert str(exc).startswith(f"{func}: "), str(exc)
        return
    for array in result if isinstance(result, tuple) else (result,):
        if isinstance(array, np.ndarray) and array.dtype.kind == "f" and func != "attention":
            assert np.isfinite(array).all()
