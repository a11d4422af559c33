"""T5 buckets and bias: known answers, agreement with the float32 library formula, properties, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_ref import SpecError
from posenc_ref.t5 import log_ladder, t5_bias, t5_bucket

# Reference notes, A7: bucket ranges of |r| for (32, 128).
BIDIRECTIONAL_RANGES = [((0, 7), None), ((8, 11), 8), ((12, 15), 9), ((16, 22), 10), ((23, 31), 11), ((32, 45), 12),
                        ((46, 63), 13), ((64, 90), 14), ((91, 5000), 15)]
CAUSAL_RANGES = [((16, 18), 16), ((19, 20), 17), ((87, 98), 29), ((99, 112), 30), ((113, 5000), 31)]


def test_bidirectional_anchor_r_minus10_to_10():
    assert t5_bucket(np.arange(-10, 11)).tolist() == [8, 8, 8, 7, 6, 5, 4, 3, 2, 1, 0,
                                                       17, 18, 19, 20, 21, 22, 23, 24, 24, 24]


def test_bidirectional_ranges_on_both_sides():
    for (lo, hi), bucket in BIDIRECTIONAL_RANGES:
        n = np.arange(lo, hi + 1)
        expect = n if bucket is None else np.full(n.shape, bucket)
        np.testing.assert_array_equal(t5_bucket(-n), expect)
        np.testing.assert_array_equal(t5_bucket(n[n > 0]), (expect + 16)[n > 0])
    assert 16 not in t5_bucket(np.arange(-300, 301))  # r = 0 maps to 0, so bucket 16 is never produced


def test_causal_ranges_and_future_keys():
    np.testing.assert_array_equal(t5_bucket(-np.arange(16), direction="unidirectional"), np.arange(16))
    for (lo, hi), bucket in CAUSAL_RANGES:
        assert set(t5_bucket(-np.arange(lo, hi + 1), direction="unidirectional").tolist()) == {bucket}
    assert t5_bucket([1, 5, 1000], direction="unidirectional").tolist() == [0, 0, 0]


def test_saturation_comes_before_max_distance():
    assert t5_bucket([-90, -91, -127, -128]).tolist() == [14, 15, 15, 15]
    assert t5_bucket([-112, -113], direction="unidirectional").tolist() == [30, 31]


def _hf_float32(rel, num_buckets, max_distance, bidirectional):
    """transformers' _relative_position_bucket, float32 as torch runs it, written out in NumPy."""
    rel = np.asarray(rel, dtype=np.int64)
    buckets = np.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0) * num_buckets
        rel = np.abs(rel)
    else:
        rel = -np.minimum(rel, 0)
    max_exact = num_buckets // 2
    is_small = rel < max_exact
    with np.errstate(divide="ignore", invalid="ignore"):
        large = max_exact + (np.log(rel.astype(np.float32) / np.float32(max_exact))
                             / np.float32(math.log(max_distance / max_exact))
                             * np.float32(num_buckets - max_exact)).astype(np.int64)
    return buckets + np.where(is_small, rel, np.minimum(large, num_buckets - 1))


@pytest.mark.parametrize("num_buckets,max_distance", [(32, 128), (64, 256), (32, 256), (16, 64), (128, 1024),
                                                      (8, 20)])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_bit_exact_to_the_float32_library_formula(num_buckets, max_distance, bidirectional):
    rel = np.arange(-4096, 4097)
    direction = "bidirectional" if bidirectional else "unidirectional"
    got = t5_bucket(rel, num_buckets=num_buckets, max_distance=max_distance, direction=direction)
    np.testing.assert_array_equal(got, _hf_float32(rel, num_buckets, max_distance, bidirectional))


def test_exact_integer_points_are_exact_in_float32():
    """At 16, 32, 64 the raw value is an integer; float32 gets exactly 2.0, 4.0, 6.0 (notes, A7)."""
    raw = np.log(np.array([16, 32, 64], dtype=np.float32) / np.float32(8)) / np.float32(math.log(16)) * np.float32(8)
    assert raw.tolist() == [2.0, 4.0, 6.0]
    assert t5_bucket([-15, -16, -31, -32, -63, -64]).tolist() == [9, 10, 11, 12, 13, 14]
    assert log_ladder(np.array([16, 32, 64, 128]), 8, 128, 8, rounding="floor").tolist() == [2, 4, 6, 8]
    assert log_ladder(np.array([16, 32, 64, 128]), 8, 128, 8, rounding="ceil").tolist() == [2, 4, 6, 8]


@settings(max_examples=50, deadline=None)
@given(num_buckets=st.integers(4, 200), ratio=st.integers(1, 40), bidirectional=st.booleans())
def test_monotone_in_distance_and_exact_on_the_exact_region(num_buckets, ratio, bidirectional):
    direction = "bidirectional" if bidirectional else "unidirectional"
    side = num_buckets // 2 if bidirectional else num_buckets
    exact = side // 2
    max_distance = exact + ratio
    n = np.arange(0, 3 * max_distance + 10)
    buckets = t5_bucket(-n, num_buckets=num_buckets, max_distance=max_distance, direction=direction)
    assert np.all(np.diff(buckets) >= 0) and buckets.max() <= side - 1
    np.testing.assert_array_equal(buckets[:exact], n[:exact])
    assert buckets[max_distance] == side - 1  # saturated by max_distance at the latest
    if bidirectional:
        positive = t5_bucket(n[1:], num_buckets=num_buckets, max_distance=max_distance)
        np.testing.assert_array_equal(positive, buckets[1:] + side)


def test_bias_lookup_offsets_and_layouts():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(32, 3))
    full = t5_bias(np.arange(40), np.arange(40), table, direction="unidirectional")
    assert full.shape == (3, 40, 40)
    step = t5_bias([39], np.arange(40), table, direction="unidirectional")  # decoding with a cache of 39
    np.testing.assert_array_equal(step[:, 0], full[:, 39])
    np.testing.assert_array_equal(full[1, 5, 7], table[0, 1])  # a future key reads bucket 0
    np.testing.assert_array_equal(t5_bias(np.arange(5), np.arange(5), table.T, table_layout="heads_buckets"),
                                  t5_bias(np.arange(5), np.arange(5), table))
    cross = t5_bias([0, 4], np.arange(9), table)  # Tq != Tk
    for h in range(3):
        for a, i in enumerate([0, 4]):
            for j in range(9):
                assert cross[h, a, j] == table[t5_bucket([j - i])[0], h]


@pytest.mark.parametrize(
    "call,match,category",
    [
        (lambda: t5_bucket([1], num_buckets=3), "num_buckets must be >= 4 under direction='bidirectional'",
         "invalid_argument"),
        (lambda: t5_bucket([1], num_buckets=1, direction="unidirectional"), "num_buckets must be >= 2",
         "invalid_argument"),
        (lambda: t5_bucket([1], max_distance=8), r"max_distance must be above the exact region \(> 8",
         "invalid_argument"),
        (lambda: t5_bucket([1], max_distance=4), "got max_distance=4", "invalid_argument"),
        (lambda: t5_bucket([1], direction="causal"), "direction must be one of 'bidirectional', 'unidirectional'",
         "invalid_argument"),
        (lambda: t5_bucket([0.5]), "whole numbers", "invalid_argument"),
        (lambda: t5_bias([0], [0], np.zeros((16, 2))), r"table must have shape \(num_buckets, H\)", "invalid_shape"),
        (lambda: t5_bias([0], [0], np.zeros((2, 16)), num_buckets=16, table_layout="buckets_heads"),
         "got shape \\(2, 16\\)", "invalid_shape"),
        (lambda: t5_bias([[0]], [[0], [1]], np.zeros((32, 2))), "leading", "invalid_shape"),
        (lambda: t5_bias([0], [0], np.full((32, 2), np.nan)), "table must be finite", "invalid_argument"),
    ],
)
def test_bad_input(call, match, category):
    with pytest.raises(SpecError, match=match) as info:
        call()
    assert info.value.category == category
    assert str(info.value).startswith(("t5_bucket: ", "t5_bias: "))


@settings(max_examples=80, deadline=None)
@given(num_buckets=st.integers(-2, 70), max_distance=st.integers(-2, 300),
       direction=st.sampled_from(("bidirectional", "unidirectional", "both")),
       rel=st.lists(st.integers(-(10**6), 10**6), max_size=6))
def test_any_input_gives_buckets_in_range_or_a_spec_error(num_buckets, max_distance, direction, rel):
    try:
        buckets = t5_bucket(rel, num_buckets=num_buckets, max_distance=max_distance, direction=direction)
    except SpecError:
        return
    assert buckets.shape == (len(rel),) and np.all((buckets >= 0) & (buckets < num_buckets))


def test_sparse_positions_take_the_direct_path_and_agree():
    """Positions far apart (few pairs, wide distance range) skip the per-distance table; same values."""
    table = np.random.default_rng(2).normal(size=(32, 2))
    q, k = np.array([0, 5000]), np.array([0, 90, 91, 4999, 10000])
    direct = t5_bias(q, k, table)
    for a in range(2):
        np.testing.assert_array_equal(direct[:, a], table[t5_bucket(k - q[a])].T)
