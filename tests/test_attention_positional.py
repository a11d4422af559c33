"""The real schemes inside attention (posenc_ref/attention_positional.py and its records).

* With RoPE, ALiBi, T5 and Shaw, shifting every position by the same constant leaves the
  output unchanged; with each scheme (and Transformer-XL), permuting the tokens no longer
  permutes the outputs.
* A decode step against a KV cache under RoPE equals the matching row of the full causal pass.
* The Shaw and Transformer-XL plug-ins equal their own modules' scores; the DeepSeek multiplier
  multiplies the scale.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_ref.alibi import alibi_bias
from posenc_ref.attention import attention
from posenc_ref.attention_positional import rope_qk, shaw_terms, xl_terms
from posenc_ref.errors import SpecError
from posenc_ref.rope_scaling import rope_inv_freq
from posenc_ref.shaw import shaw_logits, shaw_output
from posenc_ref.t5 import t5_bias
from posenc_ref.transformer_xl import xl_score

SETTINGS = settings(max_examples=12, deadline=None)
seeds = st.integers(0, 2**32 - 1)
SCHEMES = ("rope_half", "rope_interleaved", "alibi", "t5", "shaw")


def _plug_in(scheme, rng, heads, dim, q_pos, k_pos):
    """attention keyword arguments that plug ``scheme`` in at the given positions."""
    positions = {"q_positions": q_pos, "k_positions": k_pos}
    if scheme.startswith("rope"):
        return {"qk_transform": rope_qk(layout=scheme[5:]), **positions}
    if scheme == "alibi":
        return {"bias": alibi_bias(q_pos, k_pos, num_heads=heads, form="symmetric")}
    if scheme == "t5":
        return {"bias": t5_bias(q_pos, k_pos, rng.normal(size=(16, heads)), num_buckets=16, max_distance=20)}
    if scheme == "shaw":
        term = shaw_terms(rng.normal(size=(5, dim)), rng.normal(size=(5, dim)), max_relative_position=2)
        return {"logits_term": term, **positions}
    u, v, w_r = rng.normal(size=(heads, dim)), rng.normal(size=(heads, dim)), rng.normal(size=(heads, 4, dim))
    return {"logits_term": xl_terms(u, v, w_r), **positions}


@pytest.mark.parametrize("scheme", SCHEMES)
@SETTINGS
@given(seed=seeds, t=st.integers(2, 6), shift=st.integers(1, 500), causal=st.booleans())
def test_shifting_every_position_leaves_the_output_unchanged(scheme, seed, t, shift, causal):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(1, 4, t, 8)) for _ in range(3))
    tables = np.random.default_rng(seed + 1)
    at_zero = attention(q, k, v, causal=causal, **_plug_in(scheme, tables, 4, 8, np.arange(t), np.arange(t)))
    tables = np.random.default_rng(seed + 1)  # the same tables
    shifted = attention(q, k, v, causal=causal,
                        **_plug_in(scheme, tables, 4, 8, np.arange(t) + shift, np.arange(t) + shift))
    # RoPE rounds the angles p * w differently at other p: ~eps * |p * w| per angle
    tol = 64 * np.finfo(float).eps * (1 + shift) if scheme.startswith("rope") else 16 * np.finfo(float).eps
    np.testing.assert_allclose(shifted, at_zero, rtol=0, atol=tol * np.abs(v).max() * 8)


def test_shifting_the_keys_alone_changes_the_output():
    """The control of the shift test: the positions do reach the output."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(1, 2, 5, 4)) for _ in range(3))
    base = attention(q, k, v, bias=alibi_bias(np.arange(5), np.arange(5), num_heads=2, form="symmetric"))
    moved = attention(q, k, v, bias=alibi_bias(np.arange(5), np.arange(5) + 2, num_heads=2, form="symmetric"))
    assert np.abs(moved - base).max() > 1e-3


@pytest.mark.parametrize("scheme", (*SCHEMES, "xl"))
def test_each_scheme_breaks_permutation_equivariance(scheme):
    rng = np.random.default_rng(11)
    t = 6
    q, k, v = (rng.normal(size=(1, 2, t, 8)) for _ in range(3))
    perm = np.roll(np.arange(t), 2)
    positions = np.arange(t)
    plain = attention(q, k, v)
    assert np.allclose(attention(q[:, :, perm], k[:, :, perm], v[:, :, perm]), plain[:, :, perm], atol=1e-12)
    tables = np.random.default_rng(5)
    out = attention(q, k, v, **_plug_in(scheme, tables, 2, 8, positions, positions))
    tables = np.random.default_rng(5)
    moved = attention(q[:, :, perm], k[:, :, perm], v[:, :, perm],
                      **_plug_in(scheme, tables, 2, 8, positions, positions))
    assert np.abs(moved - out[:, :, perm]).max() > 1e-3


@SETTINGS
@given(seed=seeds, t=st.integers(2, 9), heads=st.sampled_from([(2, 2), (4, 2), (4, 1)]),
       layout=st.sampled_from(["half", "interleaved"]), start=st.integers(0, 50), data=st.data())
def test_rope_decode_step_equals_the_row_of_the_full_causal_pass(seed, t, heads, layout, start, data):
    rng = np.random.default_rng(seed)
    h, hkv = heads
    q, k, v = rng.normal(size=(1, h, t, 8)), rng.normal(size=(1, hkv, t, 8)), rng.normal(size=(1, hkv, t, 8))
    positions = np.arange(t) + start
    rope = rope_qk(layout=layout)
    full = attention(q, k, v, causal=True, qk_transform=rope, q_positions=positions, k_positions=positions)
    i = data.draw(st.integers(0, t - 1))
    step = attention(q[:, :, i:i + 1], k[:, :, :i + 1], v[:, :, :i + 1], causal=True, qk_transform=rope,
                     q_positions=positions[i:i + 1], k_positions=positions[:i + 1])
    np.testing.assert_allclose(step[:, :, 0], full[:, :, i], rtol=0, atol=1e-13)


def test_shaw_plug_in_equals_the_shaw_module():
    rng = np.random.default_rng(7)
    q, k, v = rng.normal(size=(4, 6)), rng.normal(size=(6, 6)), rng.normal(size=(6, 6))
    a_k, a_v = rng.normal(size=(5, 6)), rng.normal(size=(5, 6))
    q_pos, k_pos = np.array([3, 4, 5, 6]), np.array([0, 3, 4, 5, 6, 9])  # a gap, distances beyond K=2
    logits = shaw_logits(q, k, a_k, q_pos, k_pos, max_relative_position=2) / np.sqrt(6)
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    expected = shaw_output(weights, v, a_v, q_pos, k_pos, max_relative_position=2)
    out, w = attention(q[None, None], k[None, None], v[None, None], q_positions=q_pos, k_positions=k_pos,
                       logits_term=shaw_terms(a_k, a_v, max_relative_position=2), return_weights=True)
    np.testing.assert_allclose(w[0, 0], weights, rtol=0, atol=1e-14)
    np.testing.assert_allclose(out[0, 0], expected, rtol=0, atol=1e-14)


def test_xl_plug_in_equals_the_xl_score():
    rng = np.random.default_rng(8)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(7, 4)), rng.normal(size=(7, 4))
    u, vb, w_r = rng.normal(size=4), rng.normal(size=4), rng.normal(size=(6, 4))
    q_pos, k_pos = np.arange(4, 7), np.arange(7)
    score = xl_score(q, k, u, vb, w_r, q_pos, k_pos) / 2.0  # scale D**-0.5 = 1/2
    weights = np.exp(score - score.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    _, w = attention(q[None, None], k[None, None], v[None, None], q_positions=q_pos, k_positions=k_pos,
                     logits_term=xl_terms(u[None], vb[None], w_r[None]), return_weights=True)
    np.testing.assert_allclose(w[0, 0], weights, rtol=0, atol=1e-14)


def test_deepseek_multiplier_multiplies_the_scale():
    multiplier = float(rope_inv_freq(dim=64, rope_type="yarn", factor=40.0, original_max_position=4096,
                                     beta_fast=32.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0)[2][0])
    assert multiplier == pytest.approx((0.1 * np.log(40.0) + 1) ** 2, rel=1e-15)  # mscale**2 by hand
    rng = np.random.default_rng(2)
    q, k, v = (rng.normal(size=(1, 2, 5, 16)) for _ in range(3))
    with_multiplier = attention(q, k, v, softmax_multiplier=multiplier, return_weights=True)[1]
    explicit = attention(q, k, v, scale=16**-0.5 * multiplier, return_weights=True)[1]
    np.testing.assert_array_equal(with_multiplier, explicit)
    assert np.abs(with_multiplier - attention(q, k, v, return_weights=True)[1]).max() > 1e-2


@pytest.mark.parametrize("value, error", [(0.0, SpecError), (-1.0, SpecError), (float("nan"), SpecError),
                                          ("2", TypeError)])
def test_bad_softmax_multiplier(value, error):
    q = np.ones((1, 1, 2, 4))
    with pytest.raises(error, match="softmax_multiplier"):
        attention(q, q, q, softmax_multiplier=value)


def test_bad_plug_in_tables():
    with pytest.raises(SpecError, match=r"shaw_terms: rel_keys and rel_values must both have shape \(2K \+ 1, D\)"):
        shaw_terms(np.zeros((4, 2)), np.zeros((4, 2)), max_relative_position=2)
    with pytest.raises(SpecError, match="xl_terms: u and v must have shape"):
        xl_terms(np.zeros((2, 4)), np.zeros((2, 3)), np.zeros((2, 4, 4)))
    q = np.ones((2, 1, 3, 2))
    term = shaw_terms(np.zeros((3, 2)), np.zeros((3, 2)), max_relative_position=1)
    with pytest.raises(SpecError, match="shaw_terms: q_positions must be 1-D") as info:
        attention(q, q, q, q_positions=np.array([[0, 1, 2], [1, 2, 3]]), k_positions=np.arange(3),
                  logits_term=term)
    assert info.value.category == "invalid_shape"
    with pytest.raises(SpecError, match="xl_terms: u, v and w_r are for H=2"):
        attention(q, q, q, q_positions=np.arange(3), k_positions=np.arange(3),
                  logits_term=xl_terms(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros((2, 2, 2))))


@pytest.mark.parametrize("scheme", (*SCHEMES, "xl"))
def test_blockwise_path_with_each_scheme_equals_the_direct_path(scheme):
    """Key blocks hand the plug-ins key-position slices; the term of key j must not depend on the block."""
    rng = np.random.default_rng(4)
    q, k, v = (rng.normal(size=(2, 2, 7, 8)) for _ in range(3))
    positions = np.arange(7) + 3
    kwargs = _plug_in(scheme, np.random.default_rng(6), 2, 8, positions, positions)
    direct = attention(q, k, v, causal=True, **kwargs)
    blocks = attention(q, k, v, causal=True, block_size=3, **kwargs)
    np.testing.assert_allclose(blocks, direct, rtol=0, atol=64 * np.finfo(float).eps)
