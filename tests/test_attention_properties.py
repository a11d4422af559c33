"""Why positional encoding exists, as properties of the attention pass (docs/attention.md cites these).

* Without positions attention is permutation-equivariant: permuting the tokens permutes the
  outputs, and a token attends to its copy at another position exactly as to itself.
* An absolute encoding at the input, or a position-dependent bias, breaks both.
* A bias that depends only on ``i - j`` (and any plug-in that reads only position
  differences) is unchanged when every position shifts by the same constant.
* A decode step against a KV cache equals the matching row of the full causal pass.
* Weight rows sum to 1 and masked entries are exactly 0.
"""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from posenc_ref.attention import attention
from posenc_ref.attention_pipeline import attention_layer
from posenc_ref.sinusoidal import sinusoidal_table
from posenc_ref.tolerance import eps

SETTINGS = settings(max_examples=30, deadline=None)
shapes = st.tuples(st.integers(1, 2), st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 2)]), st.integers(2, 7),
                   st.integers(1, 6))
seeds = st.integers(0, 2**32 - 1)


def _qkv(shape, seed, tq=None):
    b, (h, hkv), t, d = shape
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(b, h, tq or t, d)), rng.normal(size=(b, hkv, t, d)), rng.normal(size=(b, hkv, t, d)))


def _scale(w, v, group):
    """sum_j p_ij |v_jd|: the size of each output element before cancellation."""
    return w @ np.abs(np.repeat(v, group, axis=1))


@SETTINGS
@given(shape=shapes, seed=seeds, data=st.data())
def test_permuting_tokens_permutes_outputs_without_positions(shape, seed, data):
    q, k, v = _qkv(shape, seed)
    t = q.shape[2]
    perm = np.array(data.draw(st.permutations(range(t))))
    out, w = attention(q, k, v, return_weights=True)
    moved = attention(q[:, :, perm], k[:, :, perm], v[:, :, perm])
    group = q.shape[1] // k.shape[1]
    bound = 8 * eps("float64") * _scale(w, v, group)[:, :, perm]
    assert (np.abs(moved - out[:, :, perm]) <= bound).all()


@SETTINGS
@given(seed=seeds, t=st.integers(3, 6))
def test_absolute_pe_at_the_input_breaks_equivariance(seed, t):
    rng = np.random.default_rng(seed)
    width = 8
    emb, w = rng.normal(size=(10, width)), [rng.normal(size=(width, width)) for _ in range(4)]
    tokens = rng.permutation(10)[:t][None]  # distinct tokens
    perm = np.roll(np.arange(t), 1)
    pe = sinusoidal_table(np.arange(t), dim=width)

    def layer(tok, table, placement="input"):
        return attention_layer(tok, emb, table, *w, num_heads=2, causal=False, pe_placement=placement)

    zero = np.zeros((t, width))
    np.testing.assert_allclose(layer(tokens[:, perm], zero), layer(tokens, zero)[:, perm], rtol=1e-12, atol=1e-12)
    assert not np.allclose(layer(tokens[:, perm], pe), layer(tokens, pe)[:, perm], rtol=1e-6, atol=1e-6)
    # added after the block, the encoding never reaches attention: equivariance up to the added rows
    after, after_moved = layer(tokens, pe, "after_block"), layer(tokens[:, perm], pe, "after_block")
    np.testing.assert_allclose(after_moved - pe, (after - pe)[:, perm], rtol=1e-12, atol=1e-12)


@SETTINGS
@given(shape=shapes, seed=seeds, slope=st.floats(0.1, 2.0))
def test_a_position_bias_breaks_equivariance(shape, seed, slope):
    q, k, v = _qkv(shape, seed)
    t = q.shape[2]
    assume(t >= 3)  # with two tokens -|i - j| is symmetric under the swap itself
    k[:, :, 0] = k[:, :, 1] + 1.0  # keys differ, so moving the bias moves the weights
    positions = np.arange(t)
    bias = -slope * np.abs(positions[:, None] - positions[None, :])
    perm = np.roll(np.arange(t), 1)
    w = attention(q, k, v, bias=bias, return_weights=True)[1]
    w_moved = attention(q[:, :, perm], k[:, :, perm], v[:, :, perm], bias=bias, return_weights=True)[1]
    assert not np.allclose(w_moved, w[:, :, perm][..., perm], rtol=1e-9, atol=1e-12)


@SETTINGS
@given(shape=shapes, seed=seeds, copy=st.integers(1, 6))
def test_a_token_attends_to_its_copy_as_to_itself_without_positions(shape, seed, copy):
    q, k, v = _qkv(shape, seed)
    t = q.shape[2]
    copy = copy % t or 1
    k[:, :, copy] = k[:, :, 0]
    w = attention(q, k, v, return_weights=True)[1]
    assert (w[..., copy] == w[..., 0]).all()  # identical logits, identical weights, bit for bit
    pe_bias = np.arange(t, dtype=float) * 0.25  # any key-position term separates the copies
    w_pe = attention(q, k, v, bias=pe_bias, return_weights=True)[1]
    assert (w_pe[..., copy] != w_pe[..., 0]).all()


def _rotate(x, positions):
    """A rotary-style stand-in: rotate channel pairs (2m, 2m+1) by position * 0.3^m (test-local)."""
    pairs = x.shape[-1] // 2
    angle = positions[..., :, None] * 0.3 ** np.arange(pairs)  # (T, P)
    cos, sin = np.cos(angle), np.sin(angle)
    out = x.copy()
    a, b = x[..., 0:2 * pairs:2], x[..., 1:2 * pairs:2]
    out[..., 0:2 * pairs:2] = a * cos - b * sin
    out[..., 1:2 * pairs:2] = a * sin + b * cos
    return out


@SETTINGS
@given(shape=shapes, seed=seeds, shift=st.integers(0, 10**4), slope=st.floats(0.05, 1.0))
def test_relative_terms_are_shift_invariant(shape, seed, shift, slope):
    q, k, v = _qkv(shape, seed)
    t = q.shape[2]
    qp = kp = np.arange(t)

    def bias_of(qpos, kpos):
        return -slope * (qpos[:, None] - kpos[None, :]) ** 2 / t  # a function of i - j only

    def term(qq, kk, qpos, kpos):
        return 0.1 * np.cos(qpos[:, None] - kpos[None, :])

    def rotary(qq, kk, qpos, kpos):
        return _rotate(qq, qpos), _rotate(kk, kpos)

    for kwargs in ({"bias": bias_of(qp, kp)}, {"logits_term": term}, {"qk_transform": rotary}):
        base = attention(q, k, v, q_positions=qp, k_positions=kp, return_weights=True, **kwargs)[1]
        if "bias" in kwargs:
            kwargs = {"bias": bias_of(qp + shift, kp + shift)}
        shifted = attention(q, k, v, q_positions=qp + shift, k_positions=kp + shift, return_weights=True,
                            **kwargs)[1]
        # the bias and term are bit-identical after the shift; rotations agree to rounding in the angle
        tol = 0 if "qk_transform" not in kwargs else 1e-9
        np.testing.assert_allclose(shifted, base, rtol=0, atol=tol)


@SETTINGS
@given(shape=shapes, seed=seeds, window=st.none() | st.integers(1, 4), data=st.data())
def test_decode_step_equals_the_row_of_the_full_causal_pass(shape, seed, window, data):
    q, k, v = _qkv(shape, seed)
    t = q.shape[2]
    step = data.draw(st.integers(0, t - 1))
    full, w = attention(q, k, v, causal=True, window=window, return_weights=True)
    one = attention(q[:, :, step:step + 1], k[:, :, :step + 1], v[:, :, :step + 1], causal=True, window=window,
                    alignment="bottom_right")
    group = q.shape[1] // k.shape[1]
    bound = 8 * eps("float64") * _scale(w, v, group)[:, :, step:step + 1]
    assert (np.abs(one - full[:, :, step:step + 1]) <= bound).all()


@SETTINGS
@given(shape=shapes, seed=seeds, density=st.floats(0.1, 0.9), causal=st.booleans(),
       alignment=st.sampled_from(["top_left", "bottom_right"]), tq=st.integers(1, 7))
def test_rows_sum_to_one_and_masked_entries_are_exactly_zero(shape, seed, density, causal, alignment, tq):
    q, k, v = _qkv(shape, seed, tq=tq)
    rng = np.random.default_rng(seed)
    mask = rng.random((q.shape[0], 1, tq, k.shape[2])) < density
    w = attention(q, k, v, mask=mask, causal=causal, alignment=alignment, return_weights=True)[1]
    offset = k.shape[2] - tq if alignment == "bottom_right" else 0
    kept = mask & ((np.arange(tq)[:, None] + offset >= np.arange(k.shape[2])) if causal else True)
    kept = np.broadcast_to(kept, w.shape)
    assert (w[~kept] == 0.0).all()
    assert (w[kept] > 0.0).all()
    sums = w.sum(axis=-1)
    nonempty = kept.any(axis=-1)
    assert (np.abs(sums[nonempty] - 1.0) <= k.shape[2] * eps("float64")).all()
    assert (sums[~nonempty] == 0.0).all()
