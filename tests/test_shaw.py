"""Shaw et al. relative positions: clipped index, key and value terms, memory, bad input."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_ref import SpecError
from posenc_ref.shaw import shaw_logits, shaw_output, shaw_relative_index


def test_index_known_answer_by_hand():
    # clip(j - i, -2, 2) + 2 for 5 positions, written out row by row
    expected = [
        [2, 3, 4, 4, 4],
        [1, 2, 3, 4, 4],
        [0, 1, 2, 3, 4],
        [0, 0, 1, 2, 3],
        [0, 0, 0, 1, 2],
    ]
    assert shaw_relative_index(np.arange(5), np.arange(5), max_relative_position=2).tolist() == expected
    mirrored = shaw_relative_index(np.arange(5), np.arange(5), max_relative_position=2, sign="query_minus_key")
    assert mirrored.tolist() == (4 - np.array(expected)).tolist()


def test_cache_and_memory_alignment_follow_tensor2tensor():
    # cache mode: the one query is at Tk - 1 and sees distances -(Tk-1)..0
    assert shaw_relative_index([9], np.arange(10), max_relative_position=4).tolist() == [[0] * 6 + [1, 2, 3, 4]]
    # memory: the queries are the last Tq key positions
    index = shaw_relative_index(np.arange(4, 7), np.arange(7), max_relative_position=3)
    assert index[:, -3:].tolist() == [[3, 4, 5], [2, 3, 4], [1, 2, 3]]


def _naive_logits(q, k, table, index):
    return np.einsum("id,jd->ij", q, k) + np.einsum("id,ijd->ij", q, table[index])  # the (Tq, Tk, D) gather


@pytest.mark.parametrize("sign", ["key_minus_query", "query_minus_key"])
def test_logits_and_output_equal_the_naive_gather(sign):
    rng = np.random.default_rng(0)
    tq, tk, dim, k = 5, 9, 6, 3
    q, keys, values = rng.normal(size=(tq, dim)), rng.normal(size=(tk, dim)), rng.normal(size=(tk, dim))
    a_k, a_v = rng.normal(size=(2 * k + 1, dim)), rng.normal(size=(2 * k + 1, dim))
    alpha = rng.dirichlet(np.ones(tk), size=tq)
    qp, kp = np.arange(4, 9), np.arange(9)
    index = shaw_relative_index(qp, kp, max_relative_position=k, sign=sign)
    logits = shaw_logits(q, keys, a_k, qp, kp, max_relative_position=k, sign=sign)
    np.testing.assert_allclose(logits, _naive_logits(q, keys, a_k, index), rtol=0, atol=1e-12)
    output = shaw_output(alpha, values, a_v, qp, kp, max_relative_position=k, sign=sign)
    naive = np.einsum("ij,jd->id", alpha, values) + np.einsum("ij,ijd->id", alpha, a_v[index])
    np.testing.assert_allclose(output, naive, rtol=0, atol=1e-12)


def test_hf_relative_key_is_the_query_minus_key_sign_without_clipping():
    # HF relative_key: row (i - j) + max_pos - 1 of a (2 max_pos - 1, D) table, no clip
    rng = np.random.default_rng(1)
    max_pos, dim = 6, 4
    q, keys = rng.normal(size=(max_pos, dim)), rng.normal(size=(max_pos, dim))
    table = rng.normal(size=(2 * max_pos - 1, dim))
    i, j = np.arange(max_pos)[:, None], np.arange(max_pos)[None, :]
    hf = q @ keys.T + np.einsum("id,ijd->ij", q, table[i - j + max_pos - 1])
    ours = shaw_logits(q, keys, table, np.arange(max_pos), np.arange(max_pos),
                       max_relative_position=max_pos - 1, sign="query_minus_key")
    np.testing.assert_allclose(ours, hf, rtol=0, atol=1e-12)


def test_clipping_makes_far_keys_share_a_row():
    table = np.arange(5.0)[:, None]  # row r holds r
    logits = shaw_logits(np.ones((1, 1)), np.zeros((8, 1)), table, [0], np.arange(8), max_relative_position=2)
    assert logits.tolist() == [[2.0, 3.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0]]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(0, 50), st.integers(1, 6), st.integers(0, 3))
def test_index_is_bounded_and_shift_invariant(k, shift, tk, tq_less):
    tq = max(tk - tq_less, 1)
    qp, kp = np.arange(tk - tq, tk), np.arange(tk)
    index = shaw_relative_index(qp, kp, max_relative_position=k)
    assert index.min() >= 0 and index.max() <= 2 * k
    np.testing.assert_array_equal(index, shaw_relative_index(qp + shift, kp + shift, max_relative_position=k))


def test_memory_stays_below_the_naive_gather():
    t, dim, k = 256, 64, 4
    rng = np.random.default_rng(2)
    q, keys, a_k = rng.normal(size=(t, dim)), rng.normal(size=(t, dim)), rng.normal(size=(2 * k + 1, dim))
    positions = np.arange(t)
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    shaw_logits(q, keys, a_k, positions, positions, max_relative_position=k)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak - base < (8 * t * t * dim) / 8  # the (T, T, D) gather would be 32 MiB here
    assert peak - base < 6 * 8 * t * t


@pytest.mark.parametrize(
    "call,category,fragment",
    [
        (lambda: shaw_relative_index([0], [0], max_relative_position=0), "invalid_argument",
         "max_relative_position must be >= 1, got max_relative_position=0"),
        (lambda: shaw_relative_index([7], [0, 1, 2], max_relative_position=2), "invalid_argument",
         "query position 7 (q_positions[0]) is not among the key positions"),
        (lambda: shaw_relative_index([[0]], [0], max_relative_position=2), "invalid_shape", "q_positions must be 1-D"),
        (lambda: shaw_relative_index([0], [0], max_relative_position=2, sign="j-i"), "invalid_argument",
         "sign must be one of"),
        (lambda: shaw_logits(np.zeros((2, 4)), np.zeros((3, 4)), np.zeros((5, 4)), [0, 1, 2], [0, 1, 2],
                             max_relative_position=2), "invalid_shape", "q has 2 rows but q_positions has 3"),
        (lambda: shaw_logits(np.zeros((3, 4)), np.zeros((3, 3)), np.zeros((5, 4)), [0, 1, 2], [0, 1, 2],
                             max_relative_position=2), "invalid_shape", "q and k must have the same width"),
        (lambda: shaw_logits(np.zeros((3, 4)), np.zeros((3, 4)), np.zeros((7, 4)), [0, 1, 2], [0, 1, 2],
                             max_relative_position=2), "invalid_shape", "rel_keys must have shape (5, 4)"),
        (lambda: shaw_output(np.zeros((3, 2)), np.zeros((3, 4)), np.zeros((5, 4)), [0, 1, 2], [0, 1, 2],
                             max_relative_position=2), "invalid_shape", "weights must have shape (3, 3)"),
        (lambda: shaw_output(np.zeros((3, 3)), np.zeros((3, 4)), np.zeros((5, 2)), [0, 1, 2], [0, 1, 2],
                             max_relative_position=2), "invalid_shape", "rel_values must have shape (5, 4)"),
    ],
)
def test_bad_input(call, category, fragment):
    with pytest.raises(SpecError) as info:
        call()
    assert info.value.category == category
    assert fragment in str(info.value)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-2, 9), max_size=4), st.lists(st.integers(-2, 9), max_size=5), st.integers(-1, 3),
       st.integers(1, 3), st.integers(-1, 2))
def test_arbitrary_input_raises_only_spec_errors(qp, kp, k, dim, table_extra):
    rng = np.random.default_rng(0)
    rows = max(2 * k + 1 + table_extra, 1)
    for call in (
        lambda: shaw_logits(rng.normal(size=(len(qp), dim)), rng.normal(size=(len(kp), dim)),
                            rng.normal(size=(rows, dim)), qp, kp, max_relative_position=k),
        lambda: shaw_output(rng.normal(size=(len(qp), len(kp))), rng.normal(size=(len(kp), dim)),
                            rng.normal(size=(rows, dim)), qp, kp, max_relative_position=k),
    ):
        try:
            call()
        except SpecError:
            pass


def test_wrong_kinds_are_type_errors():
    with pytest.raises(TypeError):
        shaw_relative_index("012", [0], max_relative_position=1)
    with pytest.raises(TypeError):
        shaw_relative_index([0], [0], max_relative_position=1.5)
