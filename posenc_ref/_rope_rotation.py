"""Private pieces of :mod:`posenc_ref.rope`: input checks, the in-place rotation, xPos-weighted scores.

:func:`rotate_pairs` is the memory-lean form of :func:`posenc_ref.rope.rope_rotate` (one
half-size temporary instead of four), tested equal to it bit for bit.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError, check_choice, check_float_array

X_LAYOUTS: Final = ("BHTD", "BTHD")


def finite(func: str, result: NDArray[np.float64]) -> NDArray[np.float64]:
    """``result``, or a SpecError when finite inputs overflowed (an enormous attention_factor or x)."""
    if not np.isfinite(result).all():
        raise SpecError(f"{func}: the result overflows float64 (x or attention_factor too large)")
    return result


def validate_x(func: str, name: str, x: Any, x_layout: str) -> NDArray[np.float64]:
    check_choice(func, "x_layout", x_layout, X_LAYOUTS)
    if isinstance(x, np.ndarray) and x.dtype == np.float64 and x.ndim == 4 and x.size:
        if not np.isfinite(x).all():  # Note: no float64 copy of x just to validate it
            where = tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0])
            raise SpecError(f"{func}: {name} must be finite, got {x[where]!r} at index {where}")
        return x
    return check_float_array(func, name, x, ndim=4)


def rotate_pairs(x: NDArray[np.float64], angle: NDArray[np.float64], space: int, layout: str,
                  factor: float) -> NDArray[np.float64]:
    """The in-place form of :func:`rope_rotate`: the same products and sums, in the same order."""
    n = space // 2
    cos, sin = np.cos(angle), np.sin(angle)
    if factor != 1.0:
        cos *= factor
        sin *= factor
    if layout == "half":
        u, v = x[..., :n], x[..., n:space]
    else:
        u, v = x[..., 0:space:2], x[..., 1:space:2]
    out = np.empty_like(x)
    out[..., space:] = x[..., space:]  # Note: prefix pass-through channels are copied untouched
    out_u, out_v = (out[..., :n], out[..., n:space]) if layout != "interleaved" else (
        out[..., 0:space:2], out[..., 1:space:2])
    scratch = v * sin  # (.., P): the only temporary, half the size of x
    np.multiply(u, cos, out=out_u)
    out_u -= scratch
    np.multiply(u, sin, out=scratch)
    np.multiply(v, cos, out=out_v)
    out_v += scratch
    return out


def xpos_scores(func: str, qr: NDArray[np.float64], kr: NDArray[np.float64], qp: NDArray[np.int64],
                kp: NDArray[np.int64], space: int, layout: str, scale_base: float) -> NDArray[np.float64]:
    """Scores of rotated (B, H, T, D) q and k with pair ``i`` weighted by ``zeta_i ** ((m - n) / B)``."""
    from posenc_ref.rope_variants import xpos_zeta  # here: rope_variants builds on posenc_ref.rope

    n = space // 2
    zeta = xpos_zeta(space)  # (P,)
    offset = (qp[:, :, None] - kp[:, None, :]).astype(np.float64)[:, None, :, :, None]  # (B|1, 1, Tq, Tk, 1)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        weight = zeta ** (offset / scale_base)  # (B|1, 1, Tq, Tk, P)
    if not np.isfinite(weight).all():  # Note: underflow to 0 is the correctly rounded tiny weight
        raise SpecError(f"{func}: xpos_scale_base={scale_base!r} is too small for offsets up to "
                        f"{int(np.abs(offset).max())}: the xPos weights zeta**((m - n)/B) overflow")
    with np.errstate(over="ignore", invalid="ignore"):  # overflow (inf - inf too) is reported by _finite
        if layout == "half":
            pairs = np.einsum("bhqp,bhkp->bhqkp", qr[..., :n], kr[..., :n]) + np.einsum(
                "bhqp,bhkp->bhqkp", qr[..., n:space], kr[..., n:space])
        else:
            pairs = np.einsum("bhqp,bhkp->bhqkp", qr[..., 0:space:2], kr[..., 0:space:2]) + np.einsum(
                "bhqp,bhkp->bhqkp", qr[..., 1:space:2], kr[..., 1:space:2])
        rest = np.einsum("bhqd,bhkd->bhqk", qr[..., space:], kr[..., space:])
        scores = np.asarray((pairs * weight).sum(axis=-1) + rest, dtype=np.float64)
    return scores
