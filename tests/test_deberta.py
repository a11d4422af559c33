"""DeBERTa v2/v3 buckets, indices and disentangled scores: known answers, properties, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_ref import SpecError
from posenc_ref.deberta import deberta_bucket, deberta_index, deberta_scores

# Reference notes, A7 (b=256, M=512): delta -> bucket; 512 and 600 differ between the codebases.
ANCHORS = {127: 127, 128: 128, 129: 129, 130: 130, 200: 169, 300: 207, 400: 233, 511: 255}


def test_v3_anchor_buckets_on_both_sides():
    for clamp in ("none", "max_relative_positions"):
        for delta, bucket in ANCHORS.items():
            assert deberta_bucket([delta, -delta], distance_clamp=clamp).tolist() == [bucket, -bucket]
    assert deberta_bucket([512, 600, -600]).tolist() == [256, 270, -270]  # transformers
    assert deberta_bucket([512, 600, -600], distance_clamp="max_relative_positions").tolist() == [255, 255, -255]


def test_600_token_rows_differ_only_from_512():
    q, k = np.arange(600), np.arange(600)
    hf = deberta_index(q, k)
    original = deberta_index(q, k, distance_clamp="max_relative_positions")
    delta = q[:, None] - k[None, :]
    assert np.array_equal(hf[np.abs(delta) < 512], original[np.abs(delta) < 512])
    assert set(hf[delta <= -512].tolist()) == {0} and set(original[delta <= -512].tolist()) == {1}
    assert set(hf[delta >= 512].tolist()) == {511} and set(original[delta >= 512].tolist()) == {511}


def _da_utils_float64(delta, buckets, limit):
    """make_log_bucket_position as microsoft/DeBERTa writes it (NumPy float64, ceil), written out here."""
    delta = np.asarray(delta)
    sign = np.sign(delta)
    mid = buckets // 2
    abs_pos = np.where((delta < mid) & (delta > -mid), mid - 1, np.abs(delta))
    log_pos = np.ceil(np.log(abs_pos / mid) / np.log((limit - 1) / mid) * (mid - 1)) + mid
    return np.where(abs_pos <= mid, delta, log_pos * sign).astype(np.int64)


def _hf_float32(delta, buckets, limit):
    delta = np.asarray(delta)
    mid = buckets // 2
    abs_pos = np.where((delta < mid) & (delta > -mid), mid - 1, np.abs(delta)).astype(np.float32)
    log_pos = np.ceil(np.log(abs_pos / np.float32(mid)) / np.log(np.float32((limit - 1) / mid))
                      * np.float32(mid - 1)) + mid
    return np.where(abs_pos <= mid, delta, log_pos * np.sign(delta)).astype(np.int64)


@pytest.mark.parametrize("buckets,limit", [(256, 512), (8, 16), (16, 64), (64, 128), (32, 100), (128, 1024)])
def test_agrees_with_both_codebases_formulas(buckets, limit):
    delta = np.arange(-3000, 3001)
    got = deberta_bucket(delta, position_buckets=buckets, max_relative_positions=limit)
    np.testing.assert_array_equal(got, _da_utils_float64(delta, buckets, limit))
    np.testing.assert_array_equal(got, _hf_float32(delta, buckets, limit))


def test_ceil_not_trunc():
    # (b=8, M=16): mid 4, the value 3 ln(n/4)/ln(15/4) is 0.52 at n=5: ceil gives 5, trunc would give 4
    assert deberta_bucket([5, 15, 16], position_buckets=8, max_relative_positions=16).tolist() == [5, 7, 8]


@settings(max_examples=40, deadline=None)
@given(buckets=st.integers(4, 300), extra=st.integers(1, 400))
def test_odd_monotone_and_exact_near_zero(buckets, extra):
    mid = buckets // 2
    limit = mid + 1 + extra
    delta = np.arange(0, 3 * limit)
    got = deberta_bucket(delta, position_buckets=buckets, max_relative_positions=limit)
    np.testing.assert_array_equal(deberta_bucket(-delta, position_buckets=buckets, max_relative_positions=limit),
                                  -got)
    assert np.all(np.diff(got) >= 0)
    np.testing.assert_array_equal(got[: mid + 1], delta[: mid + 1])
    assert got[limit - 1] == mid + mid - 1  # the ladder reaches b - 1 exactly at M - 1


def _scores_by_hand(qp, kp, q, k, pos_key, pos_query, terms, **params):
    heads, dim = q.shape[0], q.shape[-1]
    out = np.zeros((heads, len(qp), len(kp)))
    span = params["position_buckets"]
    for h in range(heads):
        for a, i in enumerate(qp):
            for b, j in enumerate(kp):
                row = min(2 * span - 1, max(0, int(deberta_bucket([i - j], **params)[0]) + span))
                total = q[h, a] @ k[h, b]
                if "c2p" in terms:
                    total += q[h, a] @ pos_key[h, row]
                if "p2c" in terms:
                    total += k[h, b] @ pos_query[h, row]
                out[h, a, b] = total / math.sqrt(dim * (1 + len(terms)))
    return out


@pytest.mark.parametrize("pos_att_type", ["c2p|p2c", "c2p", "p2c"])
def test_scores_by_hand_with_cross_lengths(pos_att_type):
    rng = np.random.default_rng(1)
    params = {"position_buckets": 8, "max_relative_positions": 16}
    qp, kp = [3, 4, 20], list(range(0, 30, 4))
    q, k = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 8, 4))
    pos_key, pos_query = rng.normal(size=(2, 16, 4)), rng.normal(size=(2, 16, 4))
    got = deberta_scores(qp, kp, q, k, pos_key, pos_query, pos_att_type=pos_att_type, **params)
    expect = _scores_by_hand(qp, kp, q, k, pos_key, pos_query, pos_att_type.split("|"), distance_clamp="none",
                             **params)
    np.testing.assert_allclose(got, expect, rtol=1e-13, atol=1e-13)


def test_p2c_uses_the_code_index_not_the_papers():
    """With Qr nonzero on one row only, p2c lights up exactly where idx(i - j) reads that row."""
    params = {"position_buckets": 4, "max_relative_positions": 8}
    q, k = np.zeros((1, 3, 2)), np.ones((1, 3, 2))
    pos_query = np.zeros((1, 8, 2))
    pos_query[0, 4 + 1] = 1.0  # the row of delta = i - j = +1
    got = deberta_scores(range(3), range(3), q, k, np.zeros((1, 8, 2)), pos_query, pos_att_type="p2c", **params)
    lit = (got[0] != 0).astype(int).tolist()
    assert lit == [[0, 0, 0], [1, 0, 0], [0, 1, 0]]  # i - j = 1; the paper's delta(j, i) would light j - i = 1


@pytest.mark.parametrize(
    "call,match,category",
    [
        (lambda: deberta_bucket([1], position_buckets=2), "position_buckets must be >= 4", "invalid_argument"),
        (lambda: deberta_bucket([1], max_relative_positions=129),
         r"max_relative_positions - 1 must be above the exact region \(> 128", "invalid_argument"),
        (lambda: deberta_bucket([1], distance_clamp="clip"), "distance_clamp must be one of 'none'",
         "invalid_argument"),
        (lambda: deberta_index([[0]], [[0], [1]]), "leading", "invalid_shape"),
        (lambda: deberta_index([0], [-3]), "key_positions must be >= 0", "invalid_argument"),
        (lambda: deberta_scores([0], [0], np.ones((1, 1, 2)), np.ones((1, 1, 3)), np.ones((1, 8, 2)),
                                np.ones((1, 8, 2)), position_buckets=4, max_relative_positions=8),
         r"k must have shape \(H, Tk, D\)", "invalid_shape"),
        (lambda: deberta_scores([0], [0], np.ones((1, 1, 2)), np.ones((1, 1, 2)), np.ones((1, 6, 2)),
                                np.ones((1, 8, 2)), position_buckets=4, max_relative_positions=8),
         r"pos_key must have shape \(H, 2 \* position_buckets, D\)", "invalid_shape"),
        (lambda: deberta_scores([[0]], [[0]], np.ones((1, 1, 2)), np.ones((1, 1, 2)), np.ones((1, 8, 2)),
                                np.ones((1, 8, 2)), position_buckets=4, max_relative_positions=8),
         "must be 1-D", "invalid_shape"),
        (lambda: deberta_scores([0], [0], np.ones((1, 1, 2)), np.ones((1, 1, 2)), np.ones((1, 8, 2)),
                                np.ones((1, 8, 2)), position_buckets=4, max_relative_positions=8, pos_att_type="p2p"),
         "pos_att_type must be one of", "invalid_argument"),
    ],
)
def test_bad_input(call, match, category):
    with pytest.raises(SpecError, match=match) as info:
        call()
    assert info.value.category == category
    assert str(info.value).split(":")[0] in ("deberta_bucket", "deberta_index", "deberta_scores")


@settings(max_examples=80, deadline=None)
@given(buckets=st.integers(-2, 300), limit=st.integers(-2, 600),
       clamp=st.sampled_from(("none", "max_relative_positions", "clip")),
       rel=st.lists(st.integers(-(10**6), 10**6), max_size=6))
def test_any_input_gives_odd_buckets_or_a_spec_error(buckets, limit, clamp, rel):
    try:
        got = deberta_bucket(rel, position_buckets=buckets, max_relative_positions=limit, distance_clamp=clamp)
    except SpecError:
        return
    np.testing.assert_array_equal(np.sign(got), np.sign(rel))
    if clamp != "none":
        assert np.all(np.abs(got) <= 2 * (buckets // 2) - 1)  # the ladder tops out at M - 1
