"""RoPE: known answers derived by hand or quoted from the original code, properties, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_ref.errors import SpecError
from posenc_ref.rope import rope_apply, rope_cos_sin, rope_layout_permutation, rope_scores
from posenc_ref.rope_scaling import ROPE_TYPES, longrope_inv_freq, rope_inv_freq, yarn_correction_range
from posenc_ref.rope_variants import mrope_cos_sin, rope_xpos

RNG = np.random.default_rng(7)


def plain(dim, base=10000.0):
    return rope_inv_freq(dim=dim, base=base)[0]


# --- frequencies: the sanity values of the reference note, recomputed by hand ----------------

def test_default_frequencies_by_hand():
    assert rope_inv_freq(dim=4, base=100.0)[0].tolist() == [1.0, 0.1]
    w = plain(128)
    assert w[0] == 1.0 and math.isclose(w[32], 0.01, rel_tol=1e-15)  # 1e4 ** (-64/128)


def test_yarn_sanity_values():
    assert yarn_correction_range(dim=128, base=1e4, original_max_position=4096) == (20, 46)
    w, a, softmax = rope_inv_freq(dim=128, rope_type="yarn", factor=16.0, original_max_position=4096)
    assert a[0] == 0.1 * math.log(16) + 1 == 1.2772588722239782 and softmax[0] == 1.0
    base = plain(128)
    assert np.array_equal(w[:21], base[:21])  # ramp 0 up to low = 20: extrapolated
    assert np.allclose(w[46:], base[46:] / 16, rtol=1e-15)  # ramp 1 from high = 46: interpolated
    gamma = (30 - 20) / (46 - 20)
    assert math.isclose(w[30], base[30] * (1 - gamma) + base[30] / 16 * gamma, rel_tol=1e-15)


def test_deepseek_v3_softmax_multiplier():
    _, a, softmax = rope_inv_freq(dim=64, rope_type="yarn", factor=40.0, original_max_position=4096,
                                  mscale=1.0, mscale_all_dim=1.0)
    assert a[0] == 1.0 and softmax[0] == (0.1 * math.log(40) + 1) ** 2 == 1.8738542070926265


def test_yarn_gpt_oss_fractional_bounds_and_qwen():
    low, high = yarn_correction_range(dim=64, base=150000.0, original_max_position=4096, truncate=False)
    assert math.isclose(low, 8.0928, abs_tol=1e-4) and math.isclose(high, 17.3980, abs_tol=1e-4)
    _, a, _ = rope_inv_freq(dim=64, base=150000.0, rope_type="yarn", factor=32.0, original_max_position=4096,
                            truncate=False)
    assert a[0] == 1.3465735902799727
    assert yarn_correction_range(dim=128, base=1e6, original_max_position=32768) == (23, 40)


def test_yarn_attention_factor_rules_and_vllm_convention():
    common = {"dim": 64, "rope_type": "yarn", "factor": 40.0, "original_max_position": 4096}
    assert rope_inv_freq(**common, attention_factor=1.0)[1][0] == 1.0
    g1 = 0.1 * math.log(40) + 1
    assert rope_inv_freq(**common, mscale=0.707)[1][0] == g1  # mscale_all_dim unset: g(s, 1)
    vllm = rope_inv_freq(**common, mscale=0.707, yarn_convention="vllm_deepseek")[1][0]
    assert math.isclose(vllm, 0.1 * 0.707 * math.log(40) + 1, rel_tol=1e-15)
    assert rope_inv_freq(**common, attention_factor=1.0, yarn_convention="vllm_deepseek")[1][0] == g1


def test_llama3_band_split():
    w, a, _ = rope_inv_freq(dim=128, base=5e5, rope_type="llama3", factor=8.0, original_max_position=8192,
                            low_freq_factor=1.0, high_freq_factor=4.0)
    ratio = w / plain(128, 5e5)
    assert np.all(ratio[:29] == 1.0) and np.allclose(ratio[35:], 1 / 8, rtol=1e-15)
    assert np.all((ratio[29:35] < 1.0) & (ratio[29:35] > 1 / 8)) and a[0] == 1.0


def test_llama3_is_continuous_at_its_band_edges():
    base = plain(128, 5e5)
    wavelength = 2 * math.pi / base[29]
    just_in = rope_inv_freq(dim=128, base=5e5, rope_type="llama3", factor=8.0, original_max_position=8192,
                            low_freq_factor=1.0, high_freq_factor=8192 / wavelength * (1 - 1e-12))[0]
    assert math.isclose(just_in[29], base[29], rel_tol=1e-10)


def test_dynamic_ntk_threshold_and_sanity_base():
    common = {"dim": 128, "rope_type": "dynamic", "factor": 2.0, "original_max_position": 4096}
    for length in (1, 4095, 4096):
        assert np.array_equal(rope_inv_freq(**common, context_length=length)[0], plain(128))
    w = rope_inv_freq(**common, context_length=8192)[0]
    assert math.isclose(1 / w[1] ** 64, 1e4 * 3 ** (128 / 126), rel_tol=1e-12)
    assert math.isclose(1e4 * 3 ** (128 / 126), 30527.74, rel_tol=1e-6)
    above = rope_inv_freq(**common, context_length=4097)[0]
    assert above[-1] < plain(128)[-1]
    shrunk = rope_inv_freq(**common, context_length=3072, dynamic_convention="vllm_static")[0]
    assert shrunk[-1] > plain(128)[-1]  # vLLM's static bracket lowers the base below M


def test_ntk_base_change_keeps_highest_and_scales_lowest_by_exactly_1_over_s():
    w = rope_inv_freq(dim=64, rope_type="ntk_aware", factor=4.0)[0]
    assert w[0] == 1.0 and math.isclose(w[-1], plain(64)[-1] / 4, rel_tol=1e-13)


def test_linear_scaling_equals_positions_divided_by_s():
    w = rope_inv_freq(dim=16, rope_type="linear", factor=4.0)[0]
    c1, s1 = rope_cos_sin([8, 400], w)
    c2, s2 = rope_cos_sin([2, 100], plain(16))
    assert np.allclose(c1, c2, atol=1e-13) and np.allclose(s1, s2, atol=1e-13)


def test_longrope_selection_and_attention_factor():
    short, long = np.full(48, 1.5), np.full(48, 7.0)
    kw = {"dim": 96, "factor": 32.0, "original_max_position": 4096}
    for length, ext in ((4095, 1.5), (4096, 1.5), (4097, 7.0)):
        w, a = longrope_inv_freq(short, long, **kw, context_length=length)
        assert np.allclose(w, plain(96) / ext, rtol=1e-15)
        assert a[0] == math.sqrt(1 + math.log(32) / math.log(4096)) == 1.1902380714238083


def test_proportional_zero_pairs_and_head_dim_denominator():
    w = rope_inv_freq(dim=96, rope_type="proportional", partial_rotary_factor=0.25)[0]
    assert w.shape == (48,) and np.count_nonzero(w) == 12
    assert np.array_equal(w[:12], plain(96)[:12])  # exponent 2i/96, not 2i/24


@pytest.mark.parametrize(
    "kwargs,fragment",
    [
        ({"dim": 8, "rope_type": "su"}, "'default', 'linear'"),
        ({"dim": 8, "rope_type": "linear"}, "requires factor"),
        ({"dim": 8, "rope_type": "yarn", "factor": 4.0}, "original_max_position_embeddings"),
        ({"dim": 8, "rope_type": "linear", "factor": 0.5}, "factor must be >= 1"),
        ({"dim": 7}, "dim must be even"),
        ({"dim": 8, "rope_type": "longrope", "factor": 4.0, "original_max_position": 16, "context_length": 4,
          "short_factor": [1.0, 1.0, 1.0]}, "short_factor must have length dim/2 = 4"),
    ],
)
def test_inv_freq_errors_name_the_problem(kwargs, fragment):
    with pytest.raises(SpecError, match="rope_inv_freq") as info:
        rope_inv_freq(**kwargs)
    assert fragment in str(info.value)


def test_every_rope_type_is_listed_in_the_unknown_type_message():
    with pytest.raises(SpecError) as info:
        rope_inv_freq(dim=8, rope_type="nope")
    assert all(repr(t) in str(info.value) for t in ROPE_TYPES)


# --- tables and rotation --------------------------------------------------------------------

def test_table_widths_by_hand():
    c, s = rope_cos_sin([1], [1.0, 0.5], width="half", attention_factor=2.0)
    assert np.allclose(c, [[2 * math.cos(1), 2 * math.cos(0.5)]]) and np.allclose(s, [[2 * math.sin(1),
                                                                                       2 * math.sin(0.5)]])
    assert rope_cos_sin([1], [1.0, 0.5], width="full")[0].tolist()[0][2] == math.cos(1)
    assert rope_cos_sin([1], [1.0, 0.5], width="full_interleaved")[0].tolist()[0][1] == math.cos(1)


def test_apply_by_hand_in_both_layouts():
    x = np.array([1.0, 2.0, 3.0, 4.0]).reshape(1, 1, 1, 4)
    a = 1.0  # position 1, pair 0 frequency 1; pair 1 frequency base**-0.5 = 0.1 with base 100
    half = rope_apply(x, [1], base=100.0)[0, 0, 0]
    expected_half = [1 * math.cos(a) - 3 * math.sin(a), 2 * math.cos(0.1) - 4 * math.sin(0.1),
                     3 * math.cos(a) + 1 * math.sin(a), 4 * math.cos(0.1) + 2 * math.sin(0.1)]
    assert np.allclose(half, expected_half, atol=1e-15)
    inter = rope_apply(x, [1], base=100.0, layout="interleaved")[0, 0, 0]
    expected_inter = [1 * math.cos(a) - 2 * math.sin(a), 2 * math.cos(a) + 1 * math.sin(a),
                      3 * math.cos(0.1) - 4 * math.sin(0.1), 4 * math.cos(0.1) + 3 * math.sin(0.1)]
    assert np.allclose(inter, expected_inter, atol=1e-15)
    deepseek = rope_apply(x, [1], base=100.0, layout="interleaved_to_half")[0, 0, 0]
    assert np.array_equal(deepseek, inter[[0, 2, 1, 3]])


def test_layouts_are_related_by_a_fixed_permutation_and_scores_survive_it():
    q, k = RNG.normal(size=(1, 2, 3, 16)), RNG.normal(size=(1, 2, 4, 16))
    to_half = rope_layout_permutation(16, from_layout="interleaved", to_layout="half")
    back = rope_layout_permutation(16, from_layout="half", to_layout="interleaved")
    assert np.array_equal(to_half[back], np.arange(16))
    y_inter = rope_apply(q, [0, 5, 9], layout="interleaved")
    assert np.allclose(rope_apply(q[..., to_half], [0, 5, 9], layout="half"), y_inter[..., to_half], atol=1e-13)
    s_inter = rope_scores(q, k, [0, 5, 9], [1, 2, 3, 4], layout="interleaved")
    s_half = rope_scores(q[..., to_half], k[..., to_half], [0, 5, 9], [1, 2, 3, 4], layout="half")
    assert np.allclose(s_inter, s_half, atol=1e-12)
    deepseek = rope_apply(q, [0, 5, 9], layout="interleaved_to_half")
    assert np.allclose(np.einsum("bhqd,bhkd->bhqk", deepseek, deepseek),
                       np.einsum("bhqd,bhkd->bhqk", y_inter, y_inter), atol=1e-12)


def test_partial_prefix_leaves_the_tail_and_uses_the_rotary_denominator():
    x = RNG.normal(size=(1, 1, 2, 96))
    y = rope_apply(x, [3, 4095], rotary_dim=24)
    assert np.array_equal(y[..., 24:], x[..., 24:])
    assert np.allclose(y[..., :24], rope_apply(x[..., :24], [3, 4095]), atol=0)


def test_proportional_pairs_span_the_head_and_zero_pairs_are_identity():
    x = RNG.normal(size=(1, 1, 2, 96))
    y = rope_apply(x, [3, 4095], rotary_dim=24, partial="proportional")
    untouched = np.r_[12:48, 60:96]
    assert np.array_equal(y[..., untouched], x[..., untouched])
    c, s = math.cos(3 * 1.0), math.sin(3 * 1.0)  # pair 0 = channels (0, 48) at frequency 1
    assert np.allclose(y[0, 0, 0, [0, 48]], [x[0, 0, 0, 0] * c - x[0, 0, 0, 48] * s,
                                             x[0, 0, 0, 48] * c + x[0, 0, 0, 0] * s])


def test_bthd_equals_bhtd_transposed():
    x = RNG.normal(size=(2, 3, 5, 8))
    pos = [[0, 1, 2, 3, 4], [7, 7, 8, 9, 10]]
    y = rope_apply(x, pos)
    assert np.array_equal(rope_apply(x.transpose(0, 2, 1, 3), pos, x_layout="BTHD"), y.transpose(0, 2, 1, 3))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 10**6), st.sampled_from(["half", "interleaved"]),
       st.sampled_from([8, 16, 24]))
def test_rotation_is_orthogonal_and_scores_depend_on_the_offset(m, n, layout, dim):
    """R_m^T R_n = R_{n-m}: norms kept, scores a function of n - m."""
    rng = np.random.default_rng(m ^ n)
    q, k = rng.normal(size=(1, 1, 1, dim)), rng.normal(size=(1, 1, 1, dim))
    y = rope_apply(q, [m], layout=layout)
    assert math.isclose(np.linalg.norm(y), np.linalg.norm(q), rel_tol=1e-12)
    shifted = rope_scores(q, k, [m], [n], layout=layout)
    if n >= m:
        origin = rope_scores(q, k, [0], [n - m], layout=layout)
    else:
        origin = rope_scores(q, k, [m - n], [0], layout=layout)
    assert np.allclose(shifted, origin, atol=1e-9 * (1 + max(m, n)) * 1e-3 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["rotary_dim", "base", "layout", "partial", "x_layout", "attention_factor"]),
                       st.one_of(st.integers(-3, 20), st.floats(allow_nan=True), st.text(max_size=4), st.none())))
def test_bad_parameters_raise_spec_or_type_errors_only(kwargs):
    try:
        rope_apply(np.ones((1, 1, 2, 8)), [0, 1], **kwargs)
    except (SpecError, TypeError):
        pass


def test_apply_errors():
    x = np.ones((1, 1, 2, 8))
    with pytest.raises(SpecError, match="rotary_dim must be even, got rotary_dim=5"):
        rope_apply(x, [0, 1], rotary_dim=5)
    with pytest.raises(SpecError, match="rotary_dim must be <= the head dim 8"):
        rope_apply(x, [0, 1], rotary_dim=10)
    with pytest.raises(SpecError, match="'half', 'interleaved', 'interleaved_to_half'"):
        rope_apply(x, [0, 1], layout="neox")
    with pytest.raises(SpecError) as info:
        rope_apply(x, [0, 1, 2])
    assert info.value.category == "invalid_shape"
    with pytest.raises(SpecError, match="finite"):
        rope_apply(np.full((1, 1, 2, 8), np.nan), [0, 1])


# --- xPos and MRoPE -------------------------------------------------------------------------

def test_xpos_scores_agree_across_centrings_and_match_rope_scores():
    q, k = RNG.normal(size=(1, 2, 5, 16)), RNG.normal(size=(1, 2, 5, 16))
    pos = list(range(5))
    logits = []
    for centring in ("lucidrains", "torchscale"):
        qr, kr = rope_xpos(q, k, pos, centring=centring)
        logits.append(np.einsum("bhqd,bhkd->bhqk", qr, kr))
    assert not np.allclose(rope_xpos(q, k, pos, centring="lucidrains")[0],
                           rope_xpos(q, k, pos, centring="torchscale")[0])
    assert np.allclose(logits[0], logits[1], atol=1e-12)
    expected = rope_scores(q, k, pos, pos, layout="interleaved", xpos_scale_base=512.0)
    assert np.allclose(logits[0], expected, atol=1e-12)


def test_xpos_scale_by_hand():
    zeta = [(2 * i + 0.4 * 4) / (1.4 * 4) for i in range(2)]  # [0.2857.., 0.6428..]
    q = np.ones((1, 1, 3, 4))
    qr, kr = rope_xpos(q, q, [0, 0, 0], scale_base=1.0)  # rotation 0; power (0 - 1)/1 = -1
    assert np.allclose(qr[0, 0, 0], [1 / zeta[0], 1 / zeta[0], 1 / zeta[1], 1 / zeta[1]])
    assert np.allclose(kr[0, 0, 0], [zeta[0], zeta[0], zeta[1], zeta[1]])


def test_mrope_text_only_reduces_to_plain_rope():
    pos = np.arange(7)
    for layout in ("chunked", "interleaved"):
        c, s = mrope_cos_sin(np.stack([pos, pos, pos]), [16, 24, 24], dim=128, base=1e6, mrope_layout=layout)
        c0, s0 = rope_cos_sin(pos, plain(128, 1e6))
        assert np.array_equal(c, c0) and np.array_equal(s, s0)


def test_mrope_streams_by_hand():
    c, _ = mrope_cos_sin([[1], [2], [3]], [1, 1, 1], dim=6, base=1.0, width="half")
    assert np.allclose(c, [[math.cos(1), math.cos(2), math.cos(3)]])
    with pytest.raises(SpecError, match="summing to dim/2 = 3"):
        mrope_cos_sin([[1], [2], [3]], [1, 1, 2], dim=6)


WILD = st.one_of(st.integers(-5, 10**7), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3),
                 st.none(), st.booleans())
INV_FREQ_NAMES = ["dim", "base", "rope_type", "factor", "original_max_position", "context_length", "low_freq_factor",
                  "high_freq_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor",
                  "truncate", "partial_rotary_factor", "dynamic_convention", "yarn_convention"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(ROPE_TYPES), st.dictionaries(st.sampled_from(INV_FREQ_NAMES), WILD, max_size=5))
def test_inv_freq_bad_input_gives_spec_or_type_errors_and_never_non_finite(rope_type, kwargs):
    arguments = {"dim": 16, "rope_type": rope_type, "factor": 2.0, "original_max_position": 64,
                 "context_length": 100, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                 "short_factor": np.ones(8), "long_factor": np.full(8, 2.0), **kwargs}
    try:
        outputs = rope_inv_freq(**arguments)
    except (SpecError, TypeError):
        return
    assert all(np.isfinite(part).all() for part in outputs)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["base", "rotary_dim", "partial", "layout", "x_layout", "attention_factor",
                                        "xpos_scale_base"]), WILD, max_size=3),
       st.lists(st.integers(-2, 10**6), min_size=1, max_size=3))
def test_scores_bad_input_gives_spec_or_type_errors(kwargs, k_positions):
    q, k = np.ones((1, 1, 2, 8)), np.ones((1, 1, len(k_positions), 8))
    try:
        out = rope_scores(q, k, [0, 1], k_positions, **kwargs)
    except (SpecError, TypeError):
        return
    assert np.isfinite(out).all()


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_xpos_scores_overflowing_pairs_are_a_spec_error_not_a_numpy_warning(layout):
    # Found by the property test above: attention_factor ~1e154 makes each pair product inf and their sum
    # inf - inf; NumPy's "invalid value" warning escaped before the finite check (an error under -W error).
    q, k = np.ones((1, 1, 2, 8)), np.ones((1, 1, 1, 8))
    with pytest.raises(SpecError, match="overflows float64"):
        rope_scores(q, k, [0, 1], [0], attention_factor=2.4431654488773117e154, xpos_scale_base=1, layout=layout)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["base", "scale_base", "centring", "layout", "x_layout"]), WILD, max_size=3),
       st.dictionaries(st.sampled_from(["dim", "base", "mrope_layout", "width"]), WILD, max_size=2),
       st.lists(st.integers(-1, 40), min_size=3, max_size=3))
def test_xpos_and_mrope_bad_input_gives_spec_or_type_errors(xpos_kwargs, mrope_kwargs, section):
    try:
        rope_xpos(np.ones((1, 1, 3, 8)), np.ones((1, 1, 3, 8)), [0, 1, 5000], **xpos_kwargs)
    except (SpecError, TypeError):
        pass
    try:
        mrope_cos_sin([[0, 1], [0, 1], [0, 1]], section, **{"dim": 16, **mrope_kwargs})
    except (SpecError, TypeError):
        pass
