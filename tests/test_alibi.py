"""ALiBi slopes, bias forms and mask positions: known answers, properties, bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_ref import SpecError
from posenc_ref.alibi import FORMS, alibi_bias, alibi_mask_positions, alibi_slope_ladder, alibi_slopes

# -log2 of the slopes, from the reference notes (A7) and the authors' rule worked by hand.
KNOWN_LOG2 = {
    1: [8.0],
    2: [4.0, 8.0],
    3: [4.0, 8.0, 2.0],
    5: [2.0, 4.0, 6.0, 8.0, 1.0],
    6: [2.0, 4.0, 6.0, 8.0, 1.0, 3.0],
    8: [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
    12: [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 0.5, 1.5, 2.5, 3.5],
    # Baichuan2-13B: 32 heads of 2^(-h/4), then 8 from the 64-head ladder: 2^(-(2t+1)/8)
    40: [h / 4 for h in range(1, 33)] + [(2 * t + 1) / 8 for t in range(8)],
    # BLOOM-176B: 64 heads of 2^(-h/8), then 48 from the 128-head ladder: 2^(-(2t+1)/16)
    112: [h / 8 for h in range(1, 65)] + [(2 * t + 1) / 16 for t in range(48)],
}


@pytest.mark.parametrize("heads", sorted(KNOWN_LOG2))
def test_press_slopes_known_answers(heads):
    expect = np.exp2(-np.array(KNOWN_LOG2[heads]))
    np.testing.assert_allclose(alibi_slopes(num_heads=heads), expect, rtol=2**-52, atol=0)
    exponents, _ = alibi_slope_ladder(num_heads=heads)
    assert exponents.tolist() == KNOWN_LOG2[heads]  # exponents are exact dyadic rationals


def test_geometric_rule_is_the_paper_text_and_differs_for_non_powers_of_two():
    np.testing.assert_allclose(-np.log2(alibi_slopes(num_heads=12, slope_rule="geometric")),
                               [8 * h / 12 for h in range(1, 13)], rtol=1e-14)
    assert not np.allclose(alibi_slopes(num_heads=12), alibi_slopes(num_heads=12, slope_rule="geometric"))
    for heads in (1, 2, 4, 8, 16, 32, 64):
        np.testing.assert_array_equal(alibi_slopes(num_heads=heads),
                                      alibi_slopes(num_heads=heads, slope_rule="geometric"))


def _mpt_slopes(heads, bias_max):
    """llm-foundry gen_slopes as its docs describe it, written independently."""
    padded = 1 << (heads - 1).bit_length()
    slopes = [2.0 ** (-t * bias_max / padded) for t in range(1, padded + 1)]
    if padded != heads:
        slopes = slopes[1::2] + slopes[0::2]
    return slopes[:heads]


@pytest.mark.parametrize("bias_max", [8.0, 16.0])
def test_mpt_rule_with_bias_max_equals_press(bias_max):
    for heads in [*range(1, 41), 48, 64, 71, 96, 112, 128]:
        np.testing.assert_allclose(alibi_slopes(num_heads=heads, bias_max=bias_max), _mpt_slopes(heads, bias_max),
                                   rtol=1e-15)


def test_press_order_is_non_monotone_by_design():
    slopes = alibi_slopes(num_heads=12)
    assert slopes[8] > slopes[0]  # the "jump" to 0.707 of ofirpress/attention_with_linear_biases#17
    assert float(slopes[8]) == pytest.approx(2**-0.5)


def test_bloom_float32_pow_error_grows_with_the_ladder_power():
    """BLOOM raises a float32 base to the power k_h (notes: ~5e-7 relative at H=112)."""
    slopes = alibi_slopes(num_heads=112)
    base = np.float32(2.0 ** (-8 / 64))
    extra = np.float32(2.0 ** (-8 / 128))
    bloom = np.concatenate([np.power(base, np.arange(1, 65, dtype=np.float32)),
                            np.power(extra, np.arange(1, 96, 2, dtype=np.float32))]).astype(np.float64)
    relative = np.abs(bloom / slopes - 1)
    _, powers = alibi_slope_ladder(num_heads=112)
    assert relative.max() < 1e-6 and np.all(relative <= (powers + 1) * 2.0**-24)
    assert relative.max() > 4 * 2.0**-24  # far more than the 2 ulp a correctly rounded slope would need


def test_bias_forms_by_hand():
    q, k = [1, 3], [0, 2, 3]
    m = 0.5  # one head, bias_max=1
    cases = {
        "relative_causal": [[-m * (i - j) for j in k] for i in q],
        "key_only": [[m * j for j in k] for i in q],
        "symmetric": [[-m * abs(i - j) for j in k] for i in q],
        "bottom_right": [[-m * abs(i + 1 - j) for j in k] for i in q],  # Tk - Tq = 1
    }
    for form, expect in cases.items():
        got = alibi_bias(q, k, num_heads=1, bias_max=1.0, form=form)
        assert got.shape == (1, 2, 3)
        np.testing.assert_array_equal(got[0], expect)


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@settings(max_examples=40, deadline=None)
@given(heads=st.integers(1, 20), shift=st.integers(0, 500), t=st.integers(1, 12), offset=st.integers(0, 50))
def test_relative_forms_depend_only_on_i_minus_j_and_key_only_is_a_row_shift(heads, shift, t, offset):
    q = np.arange(t) + offset
    k = np.arange(t + offset)
    for form in ("relative_causal", "symmetric", "bottom_right"):
        np.testing.assert_array_equal(alibi_bias(q, k, num_heads=heads, form=form),
                                      alibi_bias(q + shift, k + shift, num_heads=heads, form=form))
    rel = alibi_bias(q, k, num_heads=heads)
    key = alibi_bias(q, k, num_heads=heads, form="key_only")
    row_constant = key - rel  # m_h * i, the same for every key of a row
    np.testing.assert_allclose(row_constant, np.broadcast_to(row_constant[..., :1], row_constant.shape),
                               rtol=1e-12, atol=1e-9)
    causal = k[None, :] <= q[:, None]
    masked = np.where(causal, 0.0, -np.inf)
    np.testing.assert_allclose(_softmax(rel + masked), _softmax(key + masked), rtol=1e-9, atol=1e-12)


def test_decoding_step_equals_the_last_row_of_the_full_matrix():
    full = alibi_bias(np.arange(10), np.arange(10), num_heads=12)
    step = alibi_bias([9], np.arange(10), num_heads=12)
    np.testing.assert_array_equal(step[:, 0], full[:, 9])


def test_bloom_bias_from_a_left_padded_mask():
    mask = [[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]]
    positions = alibi_mask_positions(mask)
    assert positions.tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]]
    bias = alibi_bias(np.zeros((2, 1), dtype=int), positions, num_heads=4, form="key_only")  # (B, H, 1, T)
    slopes = alibi_slopes(num_heads=4)
    np.testing.assert_array_equal(bias[:, :, 0, :], slopes[None, :, None] * positions[:, None, :])
    # left padding shifts nothing: the real tokens of row 0 read the positions of a 3-token row
    np.testing.assert_array_equal(bias[0, :, 0, 2:], alibi_bias([0], [0, 1, 2], num_heads=4, form="key_only")[:, 0])


@pytest.mark.parametrize(
    "call,match,category",
    [
        (lambda: alibi_slopes(num_heads=0), "alibi_slopes: num_heads must be >= 1, got num_heads=0",
         "invalid_argument"),
        (lambda: alibi_slopes(num_heads=8, bias_max=-1.0), "bias_max must be > 0", "invalid_argument"),
        (lambda: alibi_slopes(num_heads=8, slope_rule="mono"),
         "slope_rule must be one of 'press', 'geometric', got slope_rule='mono'", "invalid_argument"),
        (lambda: alibi_bias([0], [0], num_heads=2, form="causal"), "form must be one of 'relative_causal'",
         "invalid_argument"),
        (lambda: alibi_bias([[0, 1]], [[0], [1]], num_heads=2),
         r"must share their leading \(batch\) shape, got query_positions shape \(1, 2\)", "invalid_shape"),
        (lambda: alibi_bias(3, [0, 1], num_heads=2), "query_positions must have at least 1 dimension",
         "invalid_shape"),
        (lambda: alibi_bias([0, -2], [0], num_heads=2), "query_positions must be >= 0, got -2", "invalid_argument"),
        (lambda: alibi_bias([0.5], [0], num_heads=2), "whole numbers", "invalid_argument"),
        (lambda: alibi_mask_positions([[1, 2]]), "attention_mask must hold 0 or 1, got 2", "invalid_argument"),
        (lambda: alibi_mask_positions([1, 0]), r"attention_mask must have shape \(B, T\)", "invalid_shape"),
    ],
)
def test_bad_input(call, match, category):
    with pytest.raises(SpecError, match=match) as info:
        call()
    assert info.value.category == category


def test_wrong_kinds_are_type_errors():
    with pytest.raises(TypeError):
        alibi_slopes(num_heads=8.0)
    with pytest.raises(TypeError):
        alibi_bias("abc", [0], num_heads=2)
    with pytest.raises(TypeError):
        alibi_bias([True], [0], num_heads=2)


@settings(max_examples=60, deadline=None)
@given(heads=st.integers(-3, 300), form=st.sampled_from((*FORMS, "x")), bias_max=st.floats(-2, 20),
       q=st.lists(st.integers(-2, 100), max_size=5), k=st.lists(st.integers(-2, 100), max_size=5))
def test_any_input_gives_a_finite_bias_or_a_spec_error(heads, form, bias_max, q, k):
    try:
        bias = alibi_bias(q, k, num_heads=heads, form=form, bias_max=bias_max)
    except SpecError:
        return
    assert bias.shape == (heads, len(q), len(k)) and np.isfinite(bias).all()
