"""The two computations behind :func:`posenc_ref.attention.attention`: direct and blockwise.

Inputs arrive validated (see :mod:`posenc_ref.attention`, whose docstring is the spec). Both
paths build the same logits in the same order, ``(q . k + t) * scale + bias + additive mask``,
then drop the entries the boolean keep-mask removes; they differ only in how the softmax is
accumulated.

Both skip the keys that every query row of the call (or of its tile, see
:mod:`posenc_ref._attention_tiles`) masks, as causal and windowed rows do: the direct path
computes only the span of keys from the first to the last kept one (``_live_span``), the
blockwise path skips every key block with no kept key. A skipped block adds exp(-inf) = 0 to
each sum, so the blockwise path gives the values it gives computing every key. The direct
path's products and sums run over fewer keys, which can change their last bits; an ulp of a
logit ``s`` becomes ``|s|`` ulp of its weight through exp. Skipped and unskipped results agree
within ``(16 + 4 max|s|)`` float64 ulp of each element's magnitude ``sum_j p_ij |v_jd|``, ``s``
the scaled logits (``tests/test_attention_skip.py``, inputs up to ten times unit scale).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, cast

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError

F64 = NDArray[np.float64]
LogitsTerm = Callable[[F64, F64, NDArray[np.int64], NDArray[np.int64]], Any]
DEFAULT_BLOCK: Final = 256
SPAN_ALIGN: Final = 64
"""The live key span of the direct path starts and ends on multiples of this: BLAS then computes
each logit the same way whether the keys around the span are in the product or not."""


@dataclass(frozen=True)
class Pass:
    """One validated attention call: arrays in float64, masks combined, plug-ins resolved."""

    q: F64  # (B, H, Tq, D), already through the q/k transform
    k: F64  # (B, Hkv, Tk, D)
    v: F64  # (B, Hkv, Tk, D)
    scale: float
    keep: NDArray[np.bool_] | None  # broadcastable to (B, H, Tq, Tk); None keeps everything
    additive: F64 | None  # broadcastable to (B, H, Tq, Tk): 0, finite or -inf
    bias: F64 | None  # broadcastable to (B, H, Tq, Tk)
    q_positions: NDArray[np.int64] | None
    k_positions: NDArray[np.int64] | None
    logits_term: LogitsTerm | None
    fully_masked: str
    origin: tuple[int, int, int] = (0, 0, 0)  # (b, h, row) of q[0, 0, 0] in the whole call (a tile's offset)

    @property
    def groups(self) -> int:
        return int(self.q.shape[1] // self.k.shape[1])


def _keys(array: Any, start: int, stop: int) -> Any:
    """Key slice ``[start, stop)`` of an array broadcastable along its last axis."""
    if array is None or array.shape[-1] == 1:
        return array
    return array[..., start:stop]


def _fits(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``shape`` broadcasts to ``target`` without growing it."""
    return len(shape) <= len(target) and all(a in (1, t) for a, t in zip(shape[::-1], target[::-1]))


def _term(p: Pass, start: int, stop: int, shape: tuple[int, ...]) -> tuple[F64 | None, F64 | None]:
    """The logits term ``t`` (B, H, Tq, n) and value term ``u`` (B, H, Tq, n, D) of keys [start, stop)."""
    if p.logits_term is None or p.q_positions is None or p.k_positions is None:
        return None, None
    k_heads = np.repeat(p.k[:, :, start:stop], p.groups, axis=1)  # (B, H, n, D): key heads as query heads see them
    result = p.logits_term(p.q, k_heads, p.q_positions, p.k_positions[..., start:stop])
    t, u = result if isinstance(result, tuple) else (result, None)
    t = np.asarray(t, dtype=np.float64)
    if not _fits(t.shape, shape):
        raise SpecError(f"attention: logits_term must return a term broadcastable to {shape}, got {t.shape}",
                        category="invalid_shape")
    if u is not None:
        u = np.asarray(u, dtype=np.float64)
        full = shape + (p.q.shape[-1],)
        if not _fits(u.shape, full):
            raise SpecError(f"attention: logits_term's value term must be broadcastable to {full}, got {u.shape}",
                            category="invalid_shape")
    if not np.isfinite(t).all() or (u is not None and not np.isfinite(u).all()):
        raise SpecError("attention: logits_term returned non-finite values")
    return t, u


def _logits(p: Pass, start: int, stop: int) -> tuple[F64, F64 | None]:
    """Masked logits (B, H, Tq, n) of keys [start, stop) (-inf where removed) and the value term."""
    b, h, tq, d = p.q.shape
    hkv, n = p.k.shape[1], stop - start
    grouped = p.q.reshape(b, hkv, p.groups * tq, d)  # query head h = kv head h // G, group member h % G
    s: F64 = (grouped @ p.k[:, :, start:stop].transpose(0, 1, 3, 2)).reshape(b, h, tq, n)
    t, u = _term(p, start, stop, (b, h, tq, n))
    if t is not None:
        s += t
    s *= p.scale
    if p.bias is not None:
        s += _keys(p.bias, start, stop)
    if p.additive is not None:
        s += _keys(p.additive, start, stop)
    if p.keep is not None:
        np.copyto(s, -np.inf, where=~np.broadcast_to(_keys(p.keep, start, stop), s.shape))  # in place
    return s, u


def _weighted_values(p: Pass, weights: F64, start: int, stop: int, u: F64 | None) -> F64:
    """``sum_j weights[..., j] * (v_j + u_j)`` over keys [start, stop); (B, H, Tq, D)."""
    b, h, tq, n = weights.shape
    hkv = p.k.shape[1]
    out: F64 = (weights.reshape(b, hkv, p.groups * tq, n) @ p.v[:, :, start:stop]).reshape(b, h, tq, -1)
    if u is not None:
        out += np.einsum("bhqk,bhqkd->bhqd", weights, np.broadcast_to(u, weights.shape + (out.shape[-1],)))
    return out


def _empty_rows(p: Pass, empty: NDArray[np.bool_], out: F64, weights: F64 | None) -> None:
    """Apply the fully-masked-row policy in place (``empty`` is (B, H, Tq, 1))."""
    if not empty.any():
        return
    rows = empty[..., 0]
    if p.fully_masked == "error":
        first = tuple(int(i) + o for i, o in zip(np.argwhere(rows)[0], p.origin))
        raise SpecError(f"attention: query row (b, h, i) = {first} has every key masked under fully_masked='error'")
    if p.fully_masked == "nan":
        out[rows] = np.nan
        if weights is not None:
            weights[rows] = np.nan
    elif p.fully_masked == "uniform":
        tk = p.k.shape[2]
        uniform = np.full((1, 1, 1, tk), 1.0 / tk)
        mean = _weighted_values(p, np.broadcast_to(uniform, rows.shape + (tk,)).copy(), 0, tk, None)
        out[rows] = mean[rows]
        if weights is not None:
            weights[rows] = 1.0 / tk
    # "zeros": the weights are exp(-inf) = 0 already, and so is the output


def _kept_keys(p: Pass) -> NDArray[np.bool_] | None:
    """(Tk,): whether any query row of ``p`` keeps each key; ``None`` when the keep-mask does not vary by key."""
    if p.keep is None or p.keep.shape[-1] == 1:
        return None
    kept: NDArray[np.bool_] = np.asarray(p.keep.reshape(-1, p.keep.shape[-1]).any(axis=0))
    return kept


def _live_span(p: Pass) -> tuple[int, int]:
    """``[lo, hi)``: the keys from the first to the last that some query row of ``p`` keeps.

    Keys outside it are masked in every row: their weights are exp(-inf) = 0, so they are not
    computed (causal and windowed rows of a tile see a band of keys). The span is widened to
    multiples of ``SPAN_ALIGN``. ``(0, Tk)`` when the mask does not vary by key or masks every
    key (the fully-masked policy then needs all of them).
    """
    tk = p.k.shape[2]
    kept = _kept_keys(p)
    where = np.flatnonzero(kept) if kept is not None else np.empty(0, dtype=np.int64)
    if where.size == 0:
        return 0, tk
    lo, hi = int(where[0]) // SPAN_ALIGN * SPAN_ALIGN, -(-(int(where[-1]) + 1) // SPAN_ALIGN) * SPAN_ALIGN
    return lo, min(hi, tk)


def direct(p: Pass) -> tuple[F64, F64]:
    """The whole (B, H, Tq, Tk) weight matrix at once; returns ``(output, weights)``.

    Only the keys of ``_live_span`` are computed; the weights of the others are exact zeros.
    """
    out, weights = _direct(p, weights=True)
    return out, cast(F64, weights)  # built when asked for


def direct_output(p: Pass) -> tuple[F64, None]:
    """:func:`direct` without building the (B, H, Tq, Tk) weights; returns ``(output, None)``."""
    return _direct(p, weights=False)[0], None


def _direct(p: Pass, *, weights: bool) -> tuple[F64, F64 | None]:
    b, h, tq, _ = p.q.shape
    tk = p.k.shape[2]
    lo, hi = _live_span(p)
    s, u = _logits(p, lo, hi)
    m = s.max(axis=-1, keepdims=True)  # (B, H, Tq, 1)
    empty = m == -np.inf
    if p.keep is not None or p.additive is not None:
        m[empty] = 0.0
    s -= m
    np.exp(s, out=s)
    total = s.sum(axis=-1, keepdims=True)
    total[empty] = 1.0  # a fully masked row holds zeros; 0 / 1 keeps them
    s /= total
    out = _weighted_values(p, s, lo, hi, u)
    full: F64 | None = None
    if weights and (lo, hi) == (0, tk):
        full = s
    elif weights:
        full = np.zeros((b, h, tq, tk))
        full[..., lo:hi] = s
    _empty_rows(p, empty, out, full)
    return out, full


def blockwise(p: Pass, block: int) -> F64:
    """Online softmax over key blocks: running max ``m``, running sum ``l``, rescaled accumulator."""
    b, h, tq, d = p.q.shape
    tk = p.k.shape[2]
    m = np.full((b, h, tq, 1), -np.inf)
    total = np.zeros((b, h, tq, 1))
    acc = np.zeros((b, h, tq, d))
    kept = _kept_keys(p)
    for start in range(0, tk, block):
        stop = min(start + block, tk)
        if kept is not None and not kept[start:stop].any():
            continue  # every row masks the whole block: it would add exp(-inf) = 0 to the sums
        s, u = _logits(p, start, stop)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        shift = np.where(m_new == -np.inf, 0.0, m_new)  # rows with nothing kept so far stay at zero weight
        alpha = np.exp(m - shift)  # rescales what was accumulated under the old maximum
        s -= shift
        np.exp(s, out=s)
        total = total * alpha + s.sum(axis=-1, keepdims=True)
        acc = acc * alpha + _weighted_values(p, s, start, stop, u)
        m = m_new
    empty = total == 0.0  # the row maximum contributes exp(0) = 1 to every row with a kept key
    acc /= np.where(empty, 1.0, total)
    _empty_rows(p, empty, acc, None)
    return acc
