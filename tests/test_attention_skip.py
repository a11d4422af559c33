"""Causal and windowed attention skip the keys every query row of a tile masks.

The skipped computation is compared with the same call computing every key (the skip turned
off): the blockwise path is equal element for element (a skipped block adds exp(-inf) = 0 to
every sum), the direct path within the bound stated in ``posenc_ref/_attention_blockwise.py``.
"""

import numpy as np
import pytest

from posenc_ref import _attention_blockwise as core
from posenc_ref import _attention_tiles as tiles
from posenc_ref.attention import attention, prepare_pass
from posenc_ref.tolerance import eps


def qkv(h, tq, tk, d, scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(scale * rng.normal(size=shape) for shape in ((1, h, tq, d), (1, h, tk, d), (1, h, tk, d)))


def every_key(monkeypatch, *args, **kwargs):
    """The call with the skip turned off: every key of every tile computed."""
    with monkeypatch.context() as patch:
        patch.setattr(core, "_live_span", lambda p: (0, p.k.shape[2]))
        patch.setattr(core, "_kept_keys", lambda p: None)
        return attention(*args, **kwargs)


def bound(q, k, weights, v):
    """``(16 + 4 max|s|)`` float64 ulp of ``sum_j p_ij |v_jd|``, s the scaled logits."""
    s_max = float(np.abs(q @ np.swapaxes(k, -1, -2)).max()) / np.sqrt(q.shape[-1])
    return (16 + 4 * s_max) * eps("float64") * (weights @ np.abs(v))


@pytest.fixture
def tiled(monkeypatch):
    monkeypatch.setattr(tiles, "TILING_MIN", 0)
    monkeypatch.setattr(tiles, "TILE_LOGITS", 2**14)


MASKS = [
    {"causal": True},
    {"causal": True, "alignment": "top_left"},
    {"window": 37},
    {"window": 100, "causal": True},
]


@pytest.mark.parametrize("masks", MASKS)
@pytest.mark.parametrize("scale", [1.0, 3.0, 10.0])
def test_direct_path_within_the_stated_bound(tiled, monkeypatch, masks, scale):
    q, k, v = qkv(2, 700, 900, 64, scale, seed=int(scale))
    out, weights = attention(q, k, v, return_weights=True, **masks)
    full_out, full_weights = every_key(monkeypatch, q, k, v, return_weights=True, **masks)
    assert np.all(weights[full_weights == 0] == 0)
    assert np.allclose(weights.sum(axis=-1), 1.0, rtol=1e-14)
    assert (np.abs(out - full_out) <= bound(q, k, full_weights, v)).all()
    assert (np.abs(attention(q, k, v, **masks) - full_out) <= bound(q, k, full_weights, v)).all()


@pytest.mark.parametrize("masks", MASKS)
def test_blockwise_path_equal_element_for_element(monkeypatch, masks):
    q, k, v = qkv(2, 300, 333, 16, 3.0)
    out = attention(q, k, v, block_size=32, **masks)
    assert np.array_equal(out, every_key(monkeypatch, q, k, v, block_size=32, **masks))


@pytest.mark.parametrize("policy", ["zeros", "nan", "uniform"])
def test_fully_masked_rows_keep_their_policy(tiled, monkeypatch, policy):
    q, k, v = qkv(1, 300, 200, 8)
    kwargs = {"causal": True, "alignment": "top_left", "window": 50, "fully_masked": policy,
              "key_padding_mask": np.arange(200)[None, :] >= 20}
    out, weights = attention(q, k, v, return_weights=True, **kwargs)
    full_out, full_weights = every_key(monkeypatch, q, k, v, return_weights=True, **kwargs)
    i, j = np.arange(300)[:, None], np.arange(200)[None, :]
    empty = ~((i >= j) & (i - j < 50) & (j >= 20)).any(axis=1)  # rows 0 .. 19 and 249 .. 299 see no key
    assert empty[:20].all() and empty[249:].all() and not empty[20:249].any()
    assert np.array_equal(weights[0, 0, empty], full_weights[0, 0, empty], equal_nan=True)
    assert np.array_equal(out[0, 0, empty], full_out[0, 0, empty], equal_nan=True)
    expected_row = {"zeros": 0.0, "nan": np.nan, "uniform": 1 / 200}[policy]
    assert np.array_equal(weights[0, 0, 0], np.full(200, expected_row), equal_nan=True)
    kept = np.where(empty[:, None], 0.0, full_weights[0, 0])[None, None]
    assert (np.abs(out - full_out)[0, 0, ~empty] <= bound(q, k, kept, v)[0, 0, ~empty]).all()


def test_a_fully_masked_row_under_error_is_named_as_before(tiled, monkeypatch):
    q, k, v = qkv(1, 64, 64, 8)
    kwargs = {"causal": True, "key_padding_mask": np.arange(64)[None, :] >= 10, "fully_masked": "error"}
    with pytest.raises(Exception, match=r"\(b, h, i\) = \(0, 0, 0\)"):
        attention(q, k, v, **kwargs)


def test_the_live_span_of_causal_and_windowed_tiles():
    q, k, v = qkv(1, 512, 512, 8)
    p = prepare_pass(q, k, v, causal=True)
    assert core._live_span(p) == (0, 512)  # all the rows at once: every key is some row's
    for rows, (lo, hi) in zip(range(0, 512, 100), [core._live_span(tile) for _, tile in _row_tiles(p, 100)]):
        last = min(rows + 100, 512)  # causal, square: row i sees keys 0 .. i
        assert lo == 0 and hi == min(-(-last // core.SPAN_ALIGN) * core.SPAN_ALIGN, 512)
    windowed = prepare_pass(q, k, v, window=8)
    lo, hi = core._live_span(next(t for (_, _, r), t in _row_tiles(windowed, 100) if r.start == 300))
    assert lo == (300 - 7) // core.SPAN_ALIGN * core.SPAN_ALIGN and hi >= 400 + 7


def _row_tiles(p, rows):
    from dataclasses import replace

    for start in range(0, p.q.shape[2], rows):
        part = slice(start, min(start + rows, p.q.shape[2]))
        yield (0, 0, part), replace(p, q=p.q[:, :, part], keep=None if p.keep is None else p.keep[:, :, part])
