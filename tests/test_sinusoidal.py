"""1-D sinusoidal tables and the fairseq rule: known answers, properties, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_ref import SpecError
from posenc_ref.sinusoidal import (
    LADDERS,
    LAYOUTS,
    fairseq_positions,
    fairseq_sinusoidal,
    sinusoidal_angles,
    sinusoidal_frequencies,
    sinusoidal_table,
)

# d = 6, p = 1, from the formulas written out by hand:
# paper w = (1, 10000^(-1/3), 10000^(-2/3)); t2t w = (1, 1e-2, 1e-4).
W_PAPER = [1.0, 10000 ** (-1 / 3), 10000 ** (-2 / 3)]
W_T2T = [1.0, 1e-2, 1e-4]


def test_paper_row_d6_p1():
    expect = [f(w) for w in W_PAPER for f in (math.sin, math.cos)]
    np.testing.assert_allclose(sinusoidal_table([1], dim=6)[0], expect, rtol=0, atol=1e-15)
    # the values quoted in the reference notes, to 6 decimals
    quoted = [0.841471, 0.540302, 0.046399, 0.998923, 0.002154, 0.999998]
    np.testing.assert_allclose(sinusoidal_table([1], dim=6)[0], quoted, atol=5e-7)


def test_t2t_concat_row_d6_p1():
    expect = [math.sin(w) for w in W_T2T] + [math.cos(w) for w in W_T2T]
    got = sinusoidal_table([1], dim=6, ladder="t2t", layout="concat_sin_cos")[0]
    np.testing.assert_allclose(got, expect, rtol=0, atol=1e-15)


def test_hf_marian_is_paper_ladder_concatenated():
    expect = [math.sin(w) for w in W_PAPER] + [math.cos(w) for w in W_PAPER]
    got = sinusoidal_table([1], dim=6, layout="concat_sin_cos")[0]
    np.testing.assert_allclose(got, expect, rtol=0, atol=1e-15)


def test_cos_sin_layout_puts_cosines_first():
    got = sinusoidal_table([1], dim=6, layout="concat_cos_sin")[0]
    np.testing.assert_allclose(got, [math.cos(w) for w in W_PAPER] + [math.sin(w) for w in W_PAPER], atol=1e-15)


def test_fairseq_first_real_token_reads_row_two():
    rows, emb = fairseq_sinusoidal([[1, 1, 9]], dim=6, padding_idx=1)
    assert rows.tolist() == [[1, 1, 2]]
    assert not emb[0, :2].any()
    np.testing.assert_allclose(emb[0, 2], [0.909297, 0.019999, 0.0002, -0.416147, 0.9998, 1.0], atol=5e-7)


def test_odd_width_policies():
    zero = sinusoidal_table([1, 2], dim=5, ladder="t2t", layout="concat_sin_cos", odd_width="zero_pad_last")
    assert (zero[:, -1] == 0).all()
    np.testing.assert_array_equal(zero[:, :4], sinusoidal_table([1, 2], dim=4, ladder="t2t", layout="concat_sin_cos"))
    extra = sinusoidal_table([1], dim=5, odd_width="sin_gets_extra")[0]
    w = [10000 ** (-2 * k / 5) for k in range(3)]
    expect = [math.sin(w[0]), math.cos(w[0]), math.sin(w[1]), math.cos(w[1]), math.sin(w[2])]
    np.testing.assert_allclose(extra, expect, atol=1e-15)
    with pytest.raises(SpecError, match="dim must be even"):
        sinusoidal_table([1], dim=5)


def test_t2t_guard_for_a_single_frequency():
    assert sinusoidal_frequencies(dim=2, ladder="t2t").tolist() == [1.0]


def test_position_offset_and_scale():
    base = sinusoidal_table(np.arange(3, 8), dim=8)
    np.testing.assert_array_equal(sinusoidal_table(np.arange(5), dim=8, position_offset=3), base)
    np.testing.assert_array_equal(sinusoidal_table(np.arange(3, 8), dim=8, scale=2.0), 2.0 * base)


def test_positions_keep_their_shape():
    pos = np.array([[0, 5], [7, 100]])
    table = sinusoidal_table(pos, dim=4)
    assert table.shape == (2, 2, 4) and table.dtype == np.float64
    np.testing.assert_array_equal(table[1, 1], sinusoidal_table([100], dim=4)[0])


@settings(max_examples=60, deadline=None)
@given(
    dim=st.integers(2, 64).filter(lambda d: d % 2 == 0),
    ladder=st.sampled_from(LADDERS),
    layout=st.sampled_from(LAYOUTS),
    positions=st.lists(st.integers(0, 10**6), min_size=1, max_size=8),
)
def test_properties(dim, ladder, layout, positions):
    table = sinusoidal_table(positions, dim=dim, ladder=ladder, layout=layout)
    assert np.all(np.abs(table) <= 1.0)
    np.testing.assert_allclose((table**2).sum(axis=-1), dim / 2, rtol=1e-12)  # ||PE(p)||^2 = d/2
    angles = sinusoidal_angles(positions, dim=dim, ladder=ladder, layout=layout)
    assert angles.shape == table.shape
    # every column is sin or cos of its own phase
    assert np.allclose(np.minimum(np.abs(table - np.sin(angles)), np.abs(table - np.cos(angles))), 0, atol=1e-12)


def test_layouts_are_permutations_of_each_other():
    pos = np.arange(20)
    inter = sinusoidal_table(pos, dim=8)
    concat = sinusoidal_table(pos, dim=8, layout="concat_sin_cos")
    np.testing.assert_array_equal(inter[:, [0, 2, 4, 6, 1, 3, 5, 7]], concat)


@pytest.mark.parametrize(
    "kwargs,positions,match",
    [
        ({"dim": 7}, [0], "dim must be even under odd_width='error', got dim=7"),
        ({"dim": 8, "base": 0.0}, [0], "base must be > 0"),
        ({"dim": 8, "base": float("nan")}, [0], "base must be finite"),
        ({"dim": 8, "ladder": "geo"}, [0], "ladder must be one of 'paper', 't2t', got ladder='geo'"),
        ({"dim": 8, "layout": "x"}, [0], "layout must be one of 'interleaved', 'concat_sin_cos', 'concat_cos_sin'"),
        ({"dim": 8}, [1.5], "positions must be whole numbers, got 1.5 at index"),
        ({"dim": 8}, [float("inf")], "positions must be finite"),
        ({"dim": 8}, [-1], "positions must be >= 0|positions \\+ position_offset must be >= 0"),
        ({"dim": 8}, np.zeros((0,)), "positions must not be empty"),
        ({"dim": 0}, [0], "dim must be >= 1"),
    ],
)
def test_bad_input_names_function_argument_and_value(kwargs, positions, match):
    with pytest.raises(SpecError, match=match) as info:
        sinusoidal_table(positions, **kwargs)
    assert str(info.value).startswith("sinusoidal_table: ")


@pytest.mark.parametrize("bad", ["abc", None, [[1, "a"]], True])
def test_wrong_kinds_of_object_are_type_errors(bad):
    with pytest.raises(TypeError):
        sinusoidal_table([0], dim=bad) if bad is True else sinusoidal_table(bad, dim=4)


def test_fairseq_rules():
    assert fairseq_positions([[5, 1, 6]], padding_idx=1).tolist() == [[2, 1, 3]]
    assert fairseq_positions([[5], [1]], padding_idx=1, past_length=4).tolist() == [[6], [6]]
    with pytest.raises(SpecError, match="one token per row"):
        fairseq_positions([[5, 6]], padding_idx=1, past_length=2)
    with pytest.raises(SpecError, match=r"shape \(B, T\)") as info:
        fairseq_positions([5, 6], padding_idx=1)
    assert info.value.category == "invalid_shape"
    with pytest.raises(SpecError, match="dim must be >= 4"):
        fairseq_sinusoidal([[5]], dim=2, padding_idx=1)
