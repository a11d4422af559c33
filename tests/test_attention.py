"""The attention pass: hand-derived answers, masks, policies, plug-in contracts, blockwise path, errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from posenc_ref import oracle
from posenc_ref.attention import ALIGNMENTS, attention
from posenc_ref.attention_pipeline import attention_layer
from posenc_ref.errors import SpecError
from posenc_ref.registry import get_op
from posenc_ref.tolerance import compare, eps, policy

RNG = np.random.default_rng(20240601)


def qkv(b=1, h=2, hkv=2, tq=4, tk=4, d=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(b, h, tq, d)), rng.normal(size=(b, hkv, tk, d)), rng.normal(size=(b, hkv, tk, d))


def weights(*args, **kwargs):
    return attention(*args, return_weights=True, **kwargs)[1]


# --- hand-derived answers -----------------------------------------------------------------

def test_two_keys_known_answer():
    # q = [1, 0], keys [1, 0] and [0, 0], D = 2: logits 1/sqrt(2) and 0; p0 = 1 / (1 + e^{-1/sqrt 2})
    q = np.array([[[[1.0, 0.0]]]])
    k = np.array([[[[1.0, 0.0], [0.0, 0.0]]]])
    v = np.array([[[[2.0, 0.0], [0.0, 4.0]]]])
    out, w = attention(q, k, v, return_weights=True)
    p0 = 1.0 / (1.0 + math.exp(-1.0 / math.sqrt(2.0)))
    assert w[0, 0, 0].tolist() == pytest.approx([p0, 1 - p0], rel=1e-15)
    assert out[0, 0, 0].tolist() == pytest.approx([2 * p0, 4 * (1 - p0)], rel=1e-15)


def test_explicit_scale_and_bias_order():
    # logits = scale * q.k + bias: with q.k = 2, scale 0.5 and bias [0, 1] the logits are [1, 1]
    q = np.array([[[[1.0, 1.0]]]])
    k = np.array([[[[1.0, 1.0], [1.0, 1.0]]]])
    v = np.zeros((1, 1, 2, 2))
    w = weights(q, k, v, scale=0.5, bias=np.array([0.0, 0.0]))
    assert w[0, 0, 0].tolist() == [0.5, 0.5]
    w = weights(q, k, v, scale=0.5, bias=np.array([0.0, math.log(3.0)]))
    assert w[0, 0, 0].tolist() == pytest.approx([0.25, 0.75], rel=1e-15)


def test_gqa_grouping_is_contiguous():
    # four query heads over two kv heads: heads 0, 1 read kv head 0 and heads 2, 3 read kv head 1
    q = np.ones((1, 4, 1, 2))
    k = np.ones((1, 2, 4, 2))
    v = np.stack([np.full((4, 2), 1.0), np.full((4, 2), 7.0)])[None]  # weights 1/4: exact
    out = attention(q, k, v)
    assert out[0, :, 0, 0].tolist() == [1.0, 1.0, 7.0, 7.0]


@pytest.mark.parametrize("alignment,expected", [
    ("top_left", [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0]]),
    ("bottom_right", [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]),
])
def test_causal_alignment_patterns(alignment, expected):
    # flash-attn's docstring example (seqlen_q = 2, seqlen_k = 5) for bottom-right
    q, k, v = qkv(tq=2, tk=5)
    w = weights(q, k, v, causal=True, alignment=alignment)
    assert (w[0, 0] > 0).astype(int).tolist() == expected


def test_bottom_right_with_more_queries_than_keys_empties_rows():
    # flash-attn: seqlen_q = 5, seqlen_k = 2 keeps [0 0], [0 0], [0 0], [1 0], [1 1]
    q, k, v = qkv(tq=5, tk=2)
    out, w = attention(q, k, v, causal=True, alignment="bottom_right", return_weights=True)
    assert (w[0, 0] > 0).astype(int).tolist() == [[0, 0], [0, 0], [0, 0], [1, 0], [1, 1]]
    assert not out[0, :, :3].any()
    assert (w[0, 0, 3] == [1.0, 0.0]).all()


@pytest.mark.parametrize("window,causal,expected", [
    (3, True, [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0], [0, 0, 1, 1, 1]]),
    (1, True, np.eye(5, dtype=int).tolist()),
    (2, False, [[1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0], [0, 0, 1, 1, 1], [0, 0, 0, 1, 1]]),
])
def test_sliding_window_pattern(window, causal, expected):
    # HF transformers sliding_window=3 keeps kv_idx > q_idx - 3 under the causal mask
    q, k, v = qkv(tq=5, tk=5)
    w = weights(q, k, v, causal=causal, window=window)
    assert (w[0, 1] > 0).astype(int).tolist() == expected


def test_masks_combine_and_padding_convention():
    q, k, v = qkv(b=2, tq=3, tk=4)
    padding = np.array([[False, True, True, True], [True, True, True, True]])
    boolean = np.array([True, True, False, True])
    additive = np.array([0.0, 0.0, 0.0, -np.inf])
    w = weights(q, k, v, key_padding_mask=padding, mask=boolean)
    assert (w[0, :, :, 0] == 0).all() and (w[:, :, :, 2] == 0).all() and (w[1, :, :, 0] > 0).all()
    w = weights(q, k, v, mask=additive)
    assert (w[..., 3] == 0).all() and (w[..., :3] > 0).all()
    finite = np.array([0.0, -1.0, 0.0, 0.0])
    shifted = weights(q, k, v, mask=finite)
    plain = weights(q, k, v, bias=finite)
    np.testing.assert_array_equal(shifted, plain)  # a finite additive mask is a bias


@pytest.mark.parametrize("policy_name", ["zeros", "nan", "uniform"])
def test_fully_masked_policies(policy_name):
    q, k, v = qkv(tq=3, tk=4)
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False
    out, w = attention(q, k, v, mask=mask, fully_masked=policy_name, return_weights=True)
    row_out, row_w = out[:, :, 1], w[:, :, 1]
    if policy_name == "zeros":
        assert (row_out == 0).all() and (row_w == 0).all()
    elif policy_name == "nan":
        assert np.isnan(row_out).all() and np.isnan(row_w).all()
    else:
        assert (row_w == 0.25).all()
        np.testing.assert_allclose(row_out, v.mean(axis=2), rtol=1e-15, atol=1e-15)
    assert np.isfinite(np.delete(out, 1, axis=2)).all()
    with pytest.raises(SpecError, match=r"\(b, h, i\) = \(0, 0, 1\)") as info:
        attention(q, k, v, mask=mask, fully_masked="error")
    assert info.value.category == "invalid_argument"


# --- plug-in contracts --------------------------------------------------------------------

def test_qk_transform_receives_positions_and_kv_heads():
    q, k, v = qkv(h=4, hkv=2, tq=2, tk=5)
    seen = {}

    def transform(qq, kk, qp, kp):
        seen.update(q=qq.shape, k=kk.shape, qp=qp.tolist(), kp=kp.tolist())
        return qq * 2.0, kk

    out = attention(q, k, v, qk_transform=transform, q_positions=[3, 4], k_positions=np.arange(5))
    assert seen == {"q": (1, 4, 2, 4), "k": (1, 2, 5, 4), "qp": [3, 4], "kp": [0, 1, 2, 3, 4]}
    np.testing.assert_array_equal(out, attention(q, k, v, scale=1.0))  # 2 q / sqrt(4) = q


def test_logits_term_is_added_before_the_scale_and_value_term_under_the_weights():
    q, k, v = qkv(h=2, hkv=1, tq=3, tk=4)
    qp, kp = np.array([5, 6, 7]), np.array([4, 5, 6, 7])
    distance = (qp[:, None] - kp[None, :]).astype(float)  # (Tq, Tk)
    value_term = np.arange(4.0)[None, None, None, :, None] * np.ones(4)  # u_ij = j in every channel

    def term(qq, kk, qpos, kpos):
        assert kk.shape[1] == 2  # keys arrive mapped to query heads
        return 0.1 * (qpos[:, None] - kpos[None, :]), value_term[..., : len(kpos), :]

    out, w = attention(q, k, v, logits_term=term, q_positions=qp, k_positions=kp, return_weights=True)
    reference, w_ref = attention(q, k, v, bias=0.1 * distance / 2.0, return_weights=True)  # scale 1/sqrt(4)
    np.testing.assert_allclose(w, w_ref, rtol=1e-14)
    np.testing.assert_allclose(out, reference + (w_ref @ np.arange(4.0))[..., None], rtol=1e-13)


def test_plug_ins_need_positions():
    q, k, v = qkv()
    with pytest.raises(SpecError, match="need q_positions and k_positions"):
        attention(q, k, v, qk_transform=lambda a, b, c, d: (a, b))
    with pytest.raises(SpecError, match="k_positions must have shape"):
        attention(q, k, v, logits_term=lambda a, b, c, d: 0.0, q_positions=np.arange(4), k_positions=np.arange(3))


# --- blockwise path -----------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {}, {"causal": True}, {"causal": True, "alignment": "top_left"}, {"window": 3, "causal": True},
    {"bias": RNG.normal(size=(1, 4, 9, 23))}, {"mask": RNG.random((9, 23)) < 0.5},
])
@pytest.mark.parametrize("block", [1, 4, 7, 64])
def test_blockwise_equals_direct_within_a_few_ulp(kwargs, block):
    q, k, v = qkv(b=2, h=4, hkv=2, tq=9, tk=23, d=8, seed=block)
    direct, w = attention(q, k, v, return_weights=True, **kwargs)
    blocked = attention(q, k, v, block_size=block, **kwargs)
    # the scale of each element: sum_j p_ij |v_jd| (no cancellation)
    magnitude = w @ np.abs(np.repeat(v, 2, axis=1))
    assert (np.abs(blocked - direct) <= 4 * eps("float64") * magnitude).all()


def test_blockwise_fully_masked_policies_and_plug_ins():
    q, k, v = qkv(tq=6, tk=3)
    for name in ("zeros", "nan", "uniform"):
        direct = attention(q, k, v, causal=True, fully_masked=name)
        np.testing.assert_allclose(attention(q, k, v, causal=True, fully_masked=name, block_size=2), direct,
                                   rtol=1e-14, atol=1e-15, equal_nan=True)
    with pytest.raises(SpecError, match="fully_masked='error'"):
        attention(q, k, v, causal=True, fully_masked="error", block_size=2)
    qp, kp = np.arange(6), np.arange(3)
    term = lambda a, b, c, d: 0.3 * (c[:, None] - d[None, :])  # noqa: E731
    np.testing.assert_allclose(attention(q, k, v, logits_term=term, q_positions=qp, k_positions=kp, block_size=2),
                               attention(q, k, v, logits_term=term, q_positions=qp, k_positions=kp), rtol=1e-14)
    with pytest.raises(SpecError, match="cannot return weights"):
        attention(q, k, v, block_size=2, return_weights=True)


# --- the one-layer pipeline ---------------------------------------------------------------

def test_pipeline_one_token_and_placements():
    eye = np.eye(2)
    assert attention_layer([[1]], eye, [[0.5, 0.0]], eye, eye, eye, eye, num_heads=1).tolist() == [[[0.5, 1.0]]]
    after = attention_layer([[1]], eye, [[0.5, 0.0]], eye, eye, eye, eye, num_heads=1, pe_placement="after_block")
    assert after.tolist() == [[[0.5, 1.0]]]  # one token: both placements coincide
    rng = np.random.default_rng(3)
    emb, pe = rng.normal(size=(5, 4)), rng.normal(size=(3, 4))
    w = [rng.normal(size=(4, 4)) for _ in range(4)]
    tokens = [[2, 2, 2]]
    # with every token equal and no PE the rows are equal; the PE at the input separates them
    no_pe = attention_layer(tokens, emb, np.zeros((3, 4)), *w, num_heads=2, causal=False)
    assert np.allclose(no_pe[0], no_pe[0, :1], rtol=0, atol=1e-15)
    with_pe = attention_layer(tokens, emb, pe, *w, num_heads=2, causal=False)
    assert not np.allclose(with_pe[0], with_pe[0, :1])


# --- bad input ----------------------------------------------------------------------------

@pytest.mark.parametrize("change,category,fragment", [
    (lambda q, k, v: (q[:, :3], k, v), "invalid_shape", "multiple of the kv heads"),
    (lambda q, k, v: (q[..., :3], k, v), "invalid_shape", "same head dim D"),
    (lambda q, k, v: (q, k, v[:, :, :2]), "invalid_shape", "same shape"),
    (lambda q, k, v: (q[0], k, v), "invalid_shape", "4 dimension"),
    (lambda q, k, v: (np.where(q > 0, np.nan, q), k, v), "invalid_argument", "finite"),
])
def test_bad_arrays(change, category, fragment):
    q, k, v = qkv(h=4, hkv=2)
    with pytest.raises(SpecError, match=fragment) as info:
        attention(*change(q, k, v))
    assert info.value.category == category


@pytest.mark.parametrize("kwargs,error,fragment", [
    ({"window": 0}, SpecError, "window must be >= 1"),
    ({"alignment": "left"}, SpecError, "alignment must be one of"),
    ({"fully_masked": "ignore"}, SpecError, "fully_masked must be one of"),
    ({"scale": float("inf")}, SpecError, "scale must be finite"),
    ({"mask": np.ones((3, 4), dtype=bool)}, SpecError, "broadcastable"),
    ({"mask": np.full((4, 4), np.inf)}, SpecError, "finite values or -inf"),
    ({"bias": np.full((1, 4), np.nan)}, SpecError, "bias must be finite"),
    ({"key_padding_mask": np.ones((1, 4))}, TypeError, "must be boolean"),
    ({"causal": 1}, TypeError, "causal must be a bool"),
    ({"mask": np.array(["a"])}, TypeError, "boolean .True = attend. or float additive"),
    ({"mask": np.ones((4, 4), dtype=np.int64)}, TypeError, "boolean .True = attend. or float additive"),
])
def test_bad_parameters(kwargs, error, fragment):
    q, k, v = qkv()
    with pytest.raises(error, match=fragment):
        attention(q, k, v, **kwargs)


@settings(max_examples=40, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=5, max_side=3), window=st.integers(-2, 3) | st.none(),
       hkv=st.integers(1, 3))
def test_arbitrary_shapes_raise_only_spec_or_type_errors(shape, window, hkv):
    q = np.ones(shape)
    k = np.ones((1, hkv, 2, shape[-1] if shape else 1))
    try:
        attention(q, k, k, window=window)
    except (SpecError, TypeError):
        pass


def test_normwise_policy_catches_small_and_large_slips():
    expected = RNG.normal(size=(2, 3, 5, 8))
    pol = policy("normwise", "float32")
    assert compare(expected.astype(np.float32), expected, pol).passed
    nudged = expected.copy()
    nudged[0, 0, 0, 0] += 1e-3
    assert not compare(nudged, expected, pol).passed
    rows_swapped = expected[:, :, ::-1]
    assert not compare(rows_swapped, expected, policy("normwise", "bfloat16")).passed
    zero_row = expected.copy()
    zero_row[1, 2, 3] = 0.0
    assert compare(zero_row, zero_row, policy("normwise", "float64")).passed
    assert not compare(np.full((1, 4), np.nan), np.zeros((1, 4)), pol).passed
    assert compare(np.full((1, 4), np.nan), np.full((1, 4), np.nan), pol).passed


@settings(max_examples=25, deadline=None)
@given(b=st.integers(1, 2), heads=st.sampled_from([(1, 1), (2, 1), (4, 2), (3, 3)]), tq=st.integers(1, 5),
       tk=st.integers(1, 5), d=st.integers(1, 5), causal=st.booleans(), alignment=st.sampled_from(ALIGNMENTS),
       window=st.none() | st.integers(1, 3), scale=st.none() | st.floats(0.1, 3.0), seed=st.integers(0, 2**32 - 1),
       fully_masked=st.sampled_from(["zeros", "nan", "uniform"]))
def test_reference_meets_the_oracle_on_fresh_inputs(b, heads, tq, tk, d, causal, alignment, window, scale, seed,
                                                    fully_masked):
    rng = np.random.default_rng(seed)
    h, hkv = heads
    inputs = {"q": rng.normal(size=(b, h, tq, d)), "k": rng.normal(size=(b, hkv, tk, d)),
              "v": rng.normal(size=(b, hkv, tk, d)), "mask": rng.random((b, 1, tq, tk)) < 0.8,
              "key_padding_mask": rng.random((b, tk)) < 0.9, "bias": rng.normal(size=(1, h, tq, tk))}
    op = get_op("attention")
    params = op.full_params({"causal": causal, "alignment": alignment, "window": window, "scale": scale,
                             "fully_masked": fully_masked})
    expected = oracle.expected("attention", params, inputs)
    actual = op.call(params, inputs)
    for name in ("output", "weights"):
        assert compare(actual[name], expected[name], policy("normwise", "float64")).passed, name


@pytest.mark.parametrize("change,category,fragment", [
    ({"pe": np.zeros((3, 4))}, "invalid_shape", "pe must have shape"),
    ({"w_q": np.zeros((4, 5))}, "invalid_shape", "w_q must have shape"),
    ({"w_k": np.zeros((4, 2))}, "invalid_shape", "w_k must have shape"),
    ({"tokens": np.array([[0, 9]])}, "out_of_range", "beyond the 5-row embedding"),
    ({"tokens": np.array([0, 1])}, "invalid_shape", "at least 2 dimension"),
    ({"pe_placement": "output"}, "invalid_argument", "pe_placement must be one of"),
])
def test_pipeline_bad_input(change, category, fragment):
    rng = np.random.default_rng(1)
    args = {"tokens": np.array([[0, 1]]), "embedding": rng.normal(size=(5, 4)), "pe": np.zeros((2, 4)),
            "w_q": rng.normal(size=(4, 4)), "w_k": rng.normal(size=(4, 4)), "w_v": rng.normal(size=(4, 4)),
            "w_o": rng.normal(size=(4, 4)), "pe_placement": "input"}
    args.update(change)
    placement = args.pop("pe_placement")
    with pytest.raises(SpecError, match=fragment) as info:
        attention_layer(*args.values(), num_heads=2, pe_placement=placement)
    assert info.value.category == category


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_inputs_still_pass_with_headroom(dtype, corpus_dir):
    """A framework holding q, k, v (and the layer's weights) in float16/bfloat16, accumulating in float32."""
    from posenc_ref import corpus
    from posenc_ref.runner.emulation import emulate, to_dtype

    for entry in corpus.read_manifest(corpus_dir)["cases"]:
        if not entry["op"].startswith("attention") or entry["expected_error"]:
            continue
        golden = corpus.load_case(corpus_dir, entry)
        narrow = {k: to_dtype(a, dtype).astype(np.float64) if a.dtype == np.float64 else a
                  for k, a in golden.inputs.items()}
        outputs = emulate(entry["op"], golden.params, narrow, output_dtype=dtype, angle_dtype="float32")
        for name, out in golden.outputs.items():
            verdict = compare(outputs[name], out.expected, policy("normwise", dtype))
            assert verdict.passed and verdict.headroom >= 2.0, (entry["id"], name, verdict.headroom)
