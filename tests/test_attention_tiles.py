"""Tiled attention (query-row tiles on threads) against the untiled call it replaces."""

import numpy as np
import pytest

from posenc_ref import _attention_tiles as attention_tiles
from posenc_ref.attention import attention
from posenc_ref.errors import SpecError
from posenc_ref.tolerance import eps

RNG = np.random.default_rng(20261130)


def qkv(b, h, hkv, tq, tk, d, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(b, h, tq, d)), rng.normal(size=(b, hkv, tk, d)), rng.normal(size=(b, hkv, tk, d))


def untiled(monkeypatch, *args, **kwargs):
    with monkeypatch.context() as patch:
        patch.setattr(attention_tiles, "TILING_MIN", 2**62)
        return attention(*args, **kwargs)


@pytest.fixture
def small_tiles(monkeypatch):
    """Tile every call, with tiles of a few rows, so that small inputs have many tiles."""
    monkeypatch.setattr(attention_tiles, "TILING_MIN", 0)
    monkeypatch.setattr(attention_tiles, "TILE_LOGITS", 64)


def close(a, b, w, v, groups):
    """Within 8 float64 ulp of each element's scale sum_j p_ij |v_jd| (BLAS may round a row's products differently
    depending on where the row falls in the product)."""
    magnitude = w @ np.abs(np.repeat(v, groups, axis=1))
    return bool((np.abs(a - b) <= 8 * eps("float64") * magnitude).all())


CASES = [
    {},
    {"causal": True},
    {"causal": True, "alignment": "top_left", "window": 5},
    {"bias": RNG.normal(size=(1, 6, 1, 23))},
    {"bias": RNG.normal(size=(2, 1, 11, 23)), "key_padding_mask": RNG.random((2, 23)) > 0.2},
    {"mask": RNG.random((11, 23)) < 0.6},
    {"mask": np.where(RNG.random((2, 6, 11, 23)) < 0.3, -np.inf, RNG.normal(size=(2, 6, 11, 23)))},
    {"softmax_multiplier": 1.3, "scale": 0.2},
]


@pytest.mark.parametrize("kwargs", CASES)
def test_tiled_weights_and_output_match_the_untiled_call(small_tiles, monkeypatch, kwargs):
    q, k, v = qkv(2, 6, 3, 11, 23, 8)
    out, w = attention(q, k, v, return_weights=True, **kwargs)
    out_ref, w_ref = untiled(monkeypatch, q, k, v, return_weights=True, **kwargs)
    assert out.shape == out_ref.shape and w.shape == w_ref.shape
    assert close(out, out_ref, w_ref, v, 2)
    np.testing.assert_allclose(w, w_ref, rtol=1e-13, atol=1e-300)
    np.testing.assert_array_equal(w == 0, w_ref == 0)  # masked entries stay exactly 0


@pytest.mark.parametrize("kwargs", CASES[:4])
@pytest.mark.parametrize("block", [3, 64])
def test_tiled_blockwise_matches_the_untiled_blockwise_call(small_tiles, monkeypatch, kwargs, block):
    q, k, v = qkv(2, 6, 3, 11, 23, 8, seed=block)
    w_ref = untiled(monkeypatch, q, k, v, return_weights=True, **kwargs)[1]
    tiled = attention(q, k, v, block_size=block, **kwargs)
    assert close(tiled, untiled(monkeypatch, q, k, v, block_size=block, **kwargs), w_ref, v, 2)


def test_tiles_cover_every_row_once_in_batch_head_row_order(monkeypatch):
    monkeypatch.setattr(attention_tiles, "TILE_LOGITS", 50)
    from posenc_ref.attention import prepare_pass

    q, k, v = qkv(2, 4, 2, 13, 10, 4)
    spec = prepare_pass(q, k, v, bias=RNG.normal(size=(4, 13, 1)))
    tiles = list(attention_tiles.tiles(spec, 10))
    keys = [(i, j, rows.start) for (i, j, rows), _ in tiles]
    assert keys == sorted(keys)
    covered = np.zeros((2, 4, 13), dtype=int)
    for (i, j, rows), tile in tiles:
        covered[i, j, rows] += 1
        assert rows.stop - rows.start <= 5 and tile.q.shape[:2] == (1, 1)
        np.testing.assert_array_equal(tile.k[0, 0], k[i, j // 2])  # query head j reads kv head j // G
        np.testing.assert_array_equal(tile.bias[0, 0], spec.bias[j, rows])
    assert (covered == 1).all()


def test_fully_masked_error_names_the_first_row_as_the_untiled_call_does(small_tiles, monkeypatch):
    q, k, v = qkv(1, 4, 2, 9, 6, 4)
    mask = np.ones((1, 4, 9, 6), dtype=bool)
    mask[0, 1, 7] = False  # head 1, row 7 ...
    mask[0, 2, 0] = False  # ... comes before head 2, row 0, which a later tile of another head holds
    with pytest.raises(SpecError) as tiled:
        attention(q, k, v, mask=mask, fully_masked="error")
    with pytest.raises(SpecError) as plain:
        untiled(monkeypatch, q, k, v, mask=mask, fully_masked="error")
    assert str(tiled.value) == str(plain.value) and "(0, 1, 7)" in str(tiled.value)


@pytest.mark.parametrize("policy", ["zeros", "nan", "uniform"])
def test_fully_masked_policies_under_tiling(small_tiles, monkeypatch, policy):
    q, k, v = qkv(1, 2, 1, 9, 5, 4)
    out, w = attention(q, k, v, causal=True, fully_masked=policy, return_weights=True)
    out_ref, w_ref = untiled(monkeypatch, q, k, v, causal=True, fully_masked=policy, return_weights=True)
    np.testing.assert_allclose(out, out_ref, rtol=1e-14, atol=1e-15, equal_nan=True)
    np.testing.assert_allclose(w, w_ref, rtol=1e-14, atol=1e-300, equal_nan=True)


def test_logits_terms_are_never_row_tiled(small_tiles):
    q, k, v = qkv(1, 1, 1, 4, 4, 2)
    seen = []

    def term(q_, k_, qp, kp):
        seen.append(q_.shape)
        return np.zeros((1, 1, q_.shape[2], k_.shape[2]))

    attention(q, k, v, logits_term=term, q_positions=np.arange(4), k_positions=np.arange(4))
    assert seen == [(1, 1, 4, 2)]  # the term sees every query row at once, as its contract says


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_thread_count_does_not_change_results(small_tiles, monkeypatch, threads):
    q, k, v = qkv(2, 4, 4, 17, 19, 8)
    monkeypatch.setenv("POSENC_REF_THREADS", threads)
    out, w = attention(q, k, v, causal=True, return_weights=True)
    out_ref, w_ref = untiled(monkeypatch, q, k, v, causal=True, return_weights=True)
    assert close(out, out_ref, w_ref, v, 1)


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_bad_thread_setting_is_a_clear_error(small_tiles, monkeypatch, value):
    monkeypatch.setenv("POSENC_REF_THREADS", value)
    q, k, v = qkv(1, 1, 1, 4, 4, 2)
    with pytest.raises(ValueError, match=f"POSENC_REF_THREADS must be a whole number >= 1, got '{value}'"):
        attention(q, k, v)


def test_real_size_call_is_tiled_and_close_to_untiled(monkeypatch):
    import posenc_ref.attention as module

    q, k, v = qkv(1, 2, 1, 1024, 1100, 16)
    out_ref, w_ref = untiled(monkeypatch, q, k, v, return_weights=True)
    calls = []
    monkeypatch.setattr(module, "run", lambda *a, **kw: calls.append(kw) or attention_tiles.run(*a, **kw))
    out = attention(q, k, v)
    assert calls == [{"width": 1100, "weights": False}]
    assert close(out, out_ref, w_ref, v, 2)
