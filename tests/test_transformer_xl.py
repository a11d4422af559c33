"""Transformer-XL / XLNet: the four-term score, both shifts against direct indexing, bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_ref import SpecError
from posenc_ref.sinusoidal import sinusoidal_table
from posenc_ref.transformer_xl import (
    direct_index,
    rel_shift,
    rel_shift_transformer_xl,
    rel_shift_xlnet,
    shift_row_distances,
    xl_relative_embedding,
    xl_score,
)


def _problem(tq, tk, dim=4, dim_r=6, seed=0):
    rng = np.random.default_rng(seed)
    return {"q": rng.normal(size=(tq, dim)), "k": rng.normal(size=(tk, dim)), "u": rng.normal(size=dim),
            "v": rng.normal(size=dim), "w_r": rng.normal(size=(dim_r, dim))}


def _score(p, qp, kp, **kwargs):
    return xl_score(p["q"], p["k"], p["u"], p["v"], p["w_r"], qp, kp, **kwargs)


def test_r_rows_are_the_paper_ladder_in_the_concatenated_layout():
    distances = np.arange(12)
    table = sinusoidal_table(distances, dim=8, ladder="paper", layout="concat_sin_cos")
    np.testing.assert_array_equal(xl_relative_embedding(distances, dim=8), table)
    # odd in sin, even in cos for the negative distances of XLNet "bi"
    neg = xl_relative_embedding(-distances, dim=8)
    np.testing.assert_array_equal(neg[:, :4], -table[:, :4])
    np.testing.assert_array_equal(neg[:, 4:], table[:, 4:])


def test_score_is_the_four_paper_terms_summed_term_by_term():
    p = _problem(3, 5)
    qp, kp = np.arange(2, 5), np.arange(5)
    expected = np.empty((3, 5))
    for i in range(3):
        for j in range(5):
            r = xl_relative_embedding([qp[i] - kp[j]], dim=6)[0] @ p["w_r"]
            a = p["q"][i] @ p["k"][j]
            b = p["q"][i] @ r
            c = p["u"] @ p["k"][j]
            d = p["v"] @ r
            expected[i, j] = a + b + c + d
    np.testing.assert_allclose(_score(p, qp, kp), expected, rtol=0, atol=1e-12)


def _bd(p, rows):
    """BD against the given row distances: (q_i + v) . W_R^T R_rho for every row."""
    return (p["q"] + p["v"]) @ (xl_relative_embedding(rows, dim=p["w_r"].shape[0]) @ p["w_r"]).T


@pytest.mark.parametrize("tq,tk", [(3, 5), (4, 4), (1, 6), (5, 9)])
def test_xl_shift_equals_direct_indexing_exactly_on_its_valid_region_and_is_wrong_outside(tq, tk):
    p = _problem(tq, tk, seed=tq * 10 + tk)
    memory = tk - tq
    rows = shift_row_distances(tq, tk, variant="transformer_xl")
    bd = _bd(p, rows)
    shifted, valid = rel_shift(bd, variant="transformer_xl", k_len=tk)
    i, j = np.meshgrid(np.arange(tq), np.arange(tk), indexing="ij")
    region = j <= memory + i
    np.testing.assert_array_equal(valid, region.astype(np.int64))
    # the notes' closed form: shifted[i, j] = BD[i, j + Tq - 1 - i] where valid, bit for bit
    np.testing.assert_array_equal(shifted[region], bd[i[region], (j + tq - 1 - i)[region]])
    # direct indexing by distance m + i - j on rows extended to the negative distances the XL rows
    # lack: equal on the valid region, and the true (bidirectional) value outside it
    qp, kp = np.arange(memory, tk), np.arange(tk)
    extended = np.arange(tk - 1, -tk, -1)
    direct = direct_index(_bd(p, extended), extended, qp, kp)
    np.testing.assert_array_equal(shifted[region], direct[region])
    assert not np.isclose(shifted[~region], direct[~region]).any()
    # what is there instead: a zero right above the diagonal, then the next row's entries
    if (~region).any():
        assert (shifted[i == j - memory - 1] == 0.0).all()


@pytest.mark.parametrize("tq,tk,attn_type", [(3, 5, "bi"), (4, 4, "bi"), (3, 5, "uni"), (2, 7, "uni")])
def test_xlnet_shift_equals_direct_indexing_on_its_valid_region(tq, tk, attn_type):
    p = _problem(tq, tk, seed=tq + tk)
    memory = tk - tq
    rows = shift_row_distances(tq, tk, variant="xlnet", attn_type=attn_type)
    bd = _bd(p, rows)
    shifted, valid = rel_shift(bd, variant="xlnet", k_len=tk)
    i, j = np.meshgrid(np.arange(tq), np.arange(tk), indexing="ij")
    region = (j <= memory + i) if attn_type == "uni" else np.ones_like(i, dtype=bool)
    np.testing.assert_array_equal(valid, region.astype(np.int64))
    # the notes' closed form: shifted[i, j] = BD[i, j + Tq - i], row distance Tk - (j + Tq - i) = m + i - j
    np.testing.assert_array_equal(shifted[region], bd[i[region], (j + tq - i)[region]])
    assert (rows[(j + tq - i)[region]] == (memory + i - j)[region]).all()
    if attn_type == "bi":
        np.testing.assert_array_equal(shifted, direct_index(bd, rows, np.arange(memory, tk), np.arange(tk)))


@pytest.mark.parametrize("variant", ["transformer_xl", "xlnet"])
def test_score_equals_the_shift_based_computation_where_the_shift_is_valid(variant):
    tq, tk = 4, 7
    p = _problem(tq, tk, dim=6, dim_r=8, seed=3)
    qp, kp = np.arange(tk - tq, tk), np.arange(tk)
    rows = shift_row_distances(tq, tk, variant=variant)
    shifted, valid = rel_shift(_bd(p, rows), variant=variant, k_len=tk)
    via_shift = (p["q"] + p["u"]) @ p["k"].T + shifted
    score = _score(p, qp, kp)
    mask = valid.astype(bool)
    np.testing.assert_allclose(score[mask], via_shift[mask], rtol=0, atol=1e-12)
    if variant == "xlnet":
        assert mask.all()  # XLNet's "bi" shift is usable bidirectionally (zihangdai/xlnet#97)
    else:
        assert not np.isclose(score[~mask], via_shift[~mask]).any()


def test_shift_functions_on_small_matrices_by_hand():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    # pad [0 1 2 3 | 0 4 5 6], view (4, 2), drop the first row: [2 3 0 4 5 6] -> (2, 3)
    assert rel_shift_transformer_xl(x).tolist() == [[2.0, 3.0, 0.0], [4.0, 5.0, 6.0]]
    y = np.arange(1.0, 9.0).reshape(2, 4)
    # view (4, 2), drop the first row: [3 4 5 6 7 8] -> (2, 3), keep 2 columns
    assert rel_shift_xlnet(y, 2).tolist() == [[3.0, 4.0], [6.0, 7.0]]


def test_clamp_len_clips_distances_both_ways():
    p = _problem(2, 9)
    qp, kp = np.array([7, 8]), np.arange(9)
    clamped = _score(p, qp, kp, clamp_len=3)
    # a key 8 positions back reads the same R row as one 3 back
    np.testing.assert_allclose(clamped[1, 0] - (p["q"][1] + p["u"]) @ p["k"][0],
                               clamped[1, 5] - (p["q"][1] + p["u"]) @ p["k"][5], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(_score(p, qp, kp, clamp_len=-1), _score(p, qp, kp, clamp_len=0))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 4000))
def test_score_depends_on_position_differences_only(shift):
    p = _problem(3, 6, seed=9)
    qp, kp = np.arange(3, 6), np.arange(6)
    np.testing.assert_allclose(_score(p, qp + shift, kp + shift), _score(p, qp, kp), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "change,category,fragment",
    [
        ({"w_r": np.zeros((5, 4))}, "invalid_argument", "dim must be even, got dim=5"),
        ({"qp": [5, 6, 7]}, "invalid_argument", "query position 5 (q_positions[0]) is not among the key positions"),
        ({"u": np.zeros(3)}, "invalid_shape", "u must have shape (4,)"),
        ({"qp": [3, 4]}, "invalid_shape", "q must have shape (2, 4)"),
        ({"k": np.zeros((5, 3))}, "invalid_shape", "k must have shape (5, 4)"),
        ({"clamp_len": -2}, "invalid_argument", "clamp_len must be >= -1"),
    ],
)
def test_bad_input(change, category, fragment):
    p = {**_problem(3, 5), "qp": [2, 3, 4], "kp": np.arange(5), "clamp_len": -1}
    p.update(change)
    with pytest.raises(SpecError) as info:
        xl_score(p["q"], p["k"], p["u"], p["v"], p["w_r"], p["qp"], p["kp"], clamp_len=p["clamp_len"])
    assert info.value.category == category and fragment in str(info.value)


def test_direct_index_refuses_missing_rows():
    with pytest.raises(SpecError, match="distance -1 at \\(0, 2\\) has no row") as info:
        direct_index(np.zeros((2, 3)), [2, 1, 0], [1, 2], [0, 1, 2])
    assert info.value.category == "out_of_range"
    with pytest.raises(SpecError, match="must all differ"):
        direct_index(np.zeros((1, 2)), [1, 1], [1], [0, 1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 12), min_size=0, max_size=4), st.lists(st.integers(-3, 12), min_size=0, max_size=6),
       st.integers(1, 5), st.integers(1, 5), st.integers(-3, 4))
def test_arbitrary_input_raises_only_spec_errors(qp, kp, dim, dim_r, clamp_len):
    rng = np.random.default_rng(0)
    try:
        xl_score(rng.normal(size=(len(qp), dim)), rng.normal(size=(len(kp), dim)), np.zeros(dim), np.zeros(dim),
                 rng.normal(size=(dim_r, dim)), qp, kp, clamp_len=clamp_len)
    except SpecError:
        pass


def test_rel_shift_bad_input():
    with pytest.raises(SpecError, match="takes R = k_len = 5 rows") as info:
        rel_shift(np.zeros((3, 8)), variant="transformer_xl", k_len=5)
    assert info.value.category == "invalid_shape"
    with pytest.raises(SpecError, match="R >= k_len \\+ 1 = 6"):
        rel_shift(np.zeros((3, 5)), variant="xlnet", k_len=5)
    with pytest.raises(SpecError, match="k_len must be >= Tq = 3"):
        rel_shift(np.zeros((3, 2)), variant="transformer_xl", k_len=2)
    with pytest.raises(SpecError, match="variant must be one of"):
        rel_shift(np.zeros((3, 3)), variant="espnet", k_len=3)
