"""The repros of the hardening issue that concern reference functions, one regression test each.

Hangs on valid parameters, NaN from finite input, integer wrap-around and silent rounding, 0-d
inputs, unbounded allocations, messages naming an inner helper. Exact expected values are
derived here independently: from exact integer arithmetic or from mpmath at 50 digits.
"""

from __future__ import annotations

import time

import mpmath
import numpy as np
import pytest

from posenc_ref.alibi import alibi_bias, alibi_slopes
from posenc_ref.attention import attention
from posenc_ref.deberta import deberta_bucket, deberta_index
from posenc_ref.errors import MAX_ELEMENTS_VARIABLE, SpecError, max_elements
from posenc_ref.grid2d import grid_sincos_2d
from posenc_ref.learned import learned_init
from posenc_ref.rope import rope_cos_sin
from posenc_ref.rope_scaling import longrope_inv_freq, yarn_mscale
from posenc_ref.rope_variants import mrope_cos_sin, rope_xpos
from posenc_ref.shaw import shaw_logits
from posenc_ref.sinusoidal import fairseq_sinusoidal, sinusoidal_table
from posenc_ref.t5 import log_ladder, t5_bias, t5_bucket
from posenc_ref.transformer_xl import xl_score


def _timed(call):  # type: ignore[no-untyped-def]
    """``call()``, checked to finish in under 5 s of CPU: these inputs once hung or built huge arrays."""
    start = time.process_time()
    result = call()
    assert time.process_time() - start < 5.0
    return result


def _ladder_exact(n: int, exact: int, limit: int, steps: int, rounding: str) -> int:
    """floor/ceil of steps * ln(n/exact) / ln(limit/exact) from mpmath at 50 digits (far from ties)."""
    with mpmath.workdps(50):
        value = steps * mpmath.log(mpmath.mpf(n) / exact) / mpmath.log(mpmath.mpf(limit) / exact)
        return int(mpmath.floor(value) if rounding == "floor" else mpmath.ceil(value))


# --- item 1: hangs on valid parameters ------------------------------------------------------


def test_t5_bucket_large_distance_above_the_exact_region_is_fast() -> None:
    # was 15 s for one element; the answer is the cap N - 1
    assert _timed(lambda: t5_bucket([100017], num_buckets=4096, max_distance=1025)).tolist() == [4095]


def test_deberta_bucket_far_beyond_the_limit_is_fast_and_exact() -> None:
    # the repro (-2**62) ran past 60 s; -2**62 is now refused (beyond 2**53), -2**52 is answered
    with pytest.raises(SpecError, match=r"deberta_bucket: relative_positions must be below 2\*\*53"):
        _timed(lambda: deberta_bucket([-2**62], position_buckets=4096, max_relative_positions=2050))
    got = _timed(lambda: deberta_bucket([-2**52, 2**40 + 3], position_buckets=4096, max_relative_positions=2050))
    want = [-(2048 + _ladder_exact(2**52, 2048, 2049, 2047, "ceil")), 2048 + _ladder_exact(2**40 + 3, 2048, 2049,
                                                                                          2047, "ceil")]
    assert got.tolist() == want


def test_log_ladder_ties_are_exact_without_big_powers() -> None:
    # (n/E)^S = (L/E)^r exactly: n = E * (L/E)^(r/S) with L/E = 2^S, so n = E * 2^r
    exact, steps = 3, 40
    limit = exact * 2**steps
    n = np.array([exact * 2**r for r in range(0, steps + 1)] + [exact * 2**r - 1 for r in range(1, steps + 1)])
    floor = _timed(lambda: log_ladder(n, exact, limit, steps, rounding="floor"))
    ceil = _timed(lambda: log_ladder(n, exact, limit, steps, rounding="ceil"))
    assert floor.tolist() == list(range(steps + 1)) + list(range(steps))
    assert ceil.tolist() == list(range(steps + 1)) + list(range(1, steps + 1))


def test_log_ladder_matches_integer_definition_for_small_arguments() -> None:
    # floor: the largest r with n^S E^r >= L^r E^S (exact integers, feasible at these sizes)
    rng = np.random.default_rng(16)
    for _ in range(200):
        exact = int(rng.integers(1, 40))
        limit = exact + int(rng.integers(1, 300))
        steps = int(rng.integers(1, 30))
        n = int(rng.integers(exact, 5 * limit))
        r = 0
        while n**steps * exact ** (r + 1) >= limit ** (r + 1) * exact**steps:
            r += 1
        ceil = r if n**steps * exact**r == limit**r * exact**steps else r + 1
        assert log_ladder([n], exact, limit, steps, rounding="floor").tolist() == [r]
        assert log_ladder([n], exact, limit, steps, rounding="ceil").tolist() == [ceil]


# --- item 3: NaN from finite input ----------------------------------------------------------


@pytest.mark.parametrize("call,words", [
    (lambda: attention(np.full((1, 1, 1, 2), 1e155), np.full((1, 1, 2, 2), 1e155), np.ones((1, 1, 2, 2))),
     ("attention", "q", "k")),
    (lambda: attention(np.ones((1, 1, 1, 2)), np.ones((1, 1, 2, 2)), np.ones((1, 1, 2, 2)), scale=1e308),
     ("attention", "scale")),
    (lambda: rope_cos_sin([10], [1e308]), ("rope_cos_sin", "positions", "inv_freq")),
    (lambda: sinusoidal_table([10**9], dim=6, ladder="t2t", base=1e-300), ("sinusoidal_table", "positions")),
    (lambda: alibi_slopes(num_heads=1, bias_max=1075), ("alibi_slopes", "bias_max", "1075")),
    (lambda: yarn_mscale(float("nan")), ("yarn_mscale", "factor", "nan")),
])
def test_finite_input_never_gives_nan_silently(call, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SpecError) as info:
        call()
    assert info.value.category == "invalid_argument"
    for word in words:
        assert word in str(info.value)


def test_alibi_slopes_at_the_subnormal_edge_are_non_zero() -> None:
    assert float(alibi_slopes(num_heads=1, bias_max=1074.0)[0]) == 2.0**-1074


# --- item 4: integer wrap-around and silent rounding ---------------------------------------


@pytest.mark.parametrize("value", [np.array([-2**63]), np.array([2**63], dtype=np.uint64)])
@pytest.mark.parametrize("function", [t5_bucket, deberta_bucket])
def test_buckets_never_wrap(function, value) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SpecError, match=f"{function.__name__}: relative_positions must be below 2\\*\\*53"):
        function(value)


def test_sinusoidal_offset_cannot_wrap() -> None:
    with pytest.raises(SpecError, match="sinusoidal_table: position_offset must be <= 2\\*\\*53"):
        sinusoidal_table(np.array([2**62]), dim=2, position_offset=2**62)
    with pytest.raises(SpecError, match=r"positions \+ position_offset must stay below 2\*\*53"):
        sinusoidal_table(np.array([2**52]), dim=2, position_offset=2**52)


def test_int64_positions_beyond_2_53_are_refused_like_floats() -> None:
    # 2**53 + 1 used to be rounded to 2**53 silently (sin gives -0.8489 where the exact value is -0.9034)
    with mpmath.workdps(50):
        exact = float(mpmath.sin(2**53 + 1))
    assert exact == pytest.approx(-0.9034, abs=1e-4)
    for positions in (np.array([2**53 + 1]), np.array([2.0**53 + 2])):
        with pytest.raises(SpecError, match="sinusoidal_table: positions must be below 2\\*\\*53"):
            sinusoidal_table(positions, dim=2)
    below = sinusoidal_table(np.array([2**52 + 1]), dim=2)  # still exact as a float64
    with mpmath.workdps(50):
        assert abs(float(below[0, 0]) - float(mpmath.sin(2**52 + 1))) < 1e-3


def test_mrope_section_whose_int64_sum_wraps_is_refused() -> None:
    section = np.array([2**62, 2**62, -2**63 + 4])  # wraps to dim/2 = 4 in int64
    assert int(section.sum()) == 4
    with pytest.raises(SpecError, match="mrope_cos_sin: mrope_section"):
        mrope_cos_sin(np.zeros((3, 2), dtype=np.int64), section, dim=8)


# --- item 6: crashes, sizes, names -----------------------------------------------------------


def test_zero_dimensional_inputs() -> None:
    for function, value, expected in ((t5_bucket, np.int64(5), 21), (deberta_bucket, np.int64(-300), None)):
        out = function(value)
        assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == np.int64
        if expected is not None:
            assert int(out) == expected
    assert int(deberta_bucket(np.int64(-300))) == int(deberta_bucket([-300])[0])


def test_size_guard_refuses_before_allocating(monkeypatch: pytest.MonkeyPatch) -> None:
    # sinusoidal_table([0], dim=10**9) allocated ~4 GB before a MemoryError
    with pytest.raises(SpecError, match="sinusoidal_table: the table of shape .* above the size guard"):
        _timed(lambda: sinusoidal_table([0], dim=10**9))
    with pytest.raises(SpecError, match="learned_init: the table"):
        _timed(lambda: learned_init(10**6, 10**6, seed=0))
    with pytest.raises(SpecError, match="alibi_bias: the bias"):
        _timed(lambda: alibi_bias(np.arange(10**5), np.arange(10**5), num_heads=64))
    monkeypatch.setenv(MAX_ELEMENTS_VARIABLE, "100")
    assert max_elements() == 100
    with pytest.raises(SpecError, match=r"above the size guard of 100 \(POSENC_REF_MAX_ELEMENTS\)"):
        sinusoidal_table(np.arange(26), dim=4)
    assert sinusoidal_table(np.arange(25), dim=4).shape == (25, 4)
    monkeypatch.setenv(MAX_ELEMENTS_VARIABLE, "-3")
    with pytest.raises(SpecError, match="POSENC_REF_MAX_ELEMENTS must be a positive integer"):
        sinusoidal_table([0], dim=4)


@pytest.mark.parametrize("call,func", [
    (lambda: alibi_slopes(num_heads=0), "alibi_slopes"),
    (lambda: alibi_bias([0], [0], num_heads=0), "alibi_bias"),
    (lambda: fairseq_sinusoidal([[1, 2]], dim=4, padding_idx=-1), "fairseq_sinusoidal"),
    (lambda: fairseq_sinusoidal([[1, 2]], dim=4, padding_idx=1, base=-1.0), "fairseq_sinusoidal"),
    (lambda: grid_sincos_2d([0], [0], dim=4, base=0.0), "grid_sincos_2d"),
    (lambda: grid_sincos_2d([0], [0], dim=4, ladder="bogus"), "grid_sincos_2d"),
    (lambda: deberta_index([0], [0], position_buckets=2), "deberta_index"),
    (lambda: shaw_logits(np.ones((1, 2)), np.ones((1, 2)), np.zeros((3, 2)), [0], [0], max_relative_position=0),
     "shaw_logits"),
    (lambda: xl_score(np.ones((1, 2)), np.ones((1, 2)), np.zeros(2), np.zeros(2), np.ones((2, 2)), [0], [0],
                      base=-1.0), "xl_score"),
    (lambda: t5_bias([0], [0], np.zeros((32, 1)), max_distance=2), "t5_bias"),
    (lambda: longrope_inv_freq([1.0], [2.0, 3.0], dim=2, factor=4.0, original_max_position=4, context_length=8),
     "longrope_inv_freq"),
    (lambda: rope_xpos(np.ones((1, 1, 2, 4)), np.ones((1, 1, 2, 4)), [0, -1]), "rope_xpos"),
])
def test_messages_name_the_function_called(call, func) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SpecError) as info:
        call()
    assert str(info.value).startswith(f"{func}: ")


def test_exact_decision_uses_no_big_powers() -> None:
    # a tie deep in the log region: exact 2**20, limit 2**21, steps 2**20 (n**steps would have 2**25 bits)
    exact, steps = 2**20, 2**20
    n = np.array([exact * 2, exact * 2 - 1, exact + 1])
    got = _timed(lambda: log_ladder(n, exact, 2 * exact, steps, rounding="floor"))
    assert got[0] == steps
    assert got[1] == _ladder_exact(int(n[1]), exact, 2 * exact, steps, "floor")
    assert got[2] == _ladder_exact(int(n[2]), exact, 2 * exact, steps, "floor")


def test_found_by_the_properties() -> None:
    # float16 positions were compared with 2**53 in float16 (an overflow warning, an error here)
    from posenc_ref.resample import cubic_kernel

    assert sinusoidal_table(np.array([2048.0], dtype=np.float16), dim=2).shape == (1, 2)
    assert t5_bucket(np.array(0.0, dtype=np.float16)).shape == ()
    # the cubic kernel overflowed x**3 for huge x; it is 0 for |x| >= 2
    assert cubic_kernel([1e300, -1e300, 2.0]).tolist() == [0.0, 0.0, 0.0]
    # sizes far beyond memory are refused before the allocation
    from posenc_ref.checks import extrapolation_check, scale_check
    from posenc_ref.rope import rope_layout_permutation
    from posenc_ref.rope_scaling import rope_inv_freq

    for call, func in ((lambda: rope_inv_freq(dim=2**53), "rope_inv_freq"),
                       (lambda: rope_layout_permutation(2**53, from_layout="half", to_layout="interleaved"),
                        "rope_layout_permutation"),
                       (lambda: extrapolation_check(lambda p: np.zeros((len(p), 1)), trained_length=2**53),
                        "extrapolation_check")):
        with pytest.raises(SpecError, match=f"{func}: .* above the size guard"):
            _timed(call)
    # a row norm of 1e160 is finite (its square is not); 1e308 rows overflow the mean
    assert scale_check(np.full((1, 2), 1e150), [[1e160, 0.0]]).ratio == pytest.approx(1e10 / np.sqrt(2))
    with pytest.raises(SpecError, match="scale_check: the mean row norm of embeddings overflows"):
        scale_check(np.full((2, 2), 1e308), [[1.0, 1.0]])
